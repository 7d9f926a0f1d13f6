// The inputs' fill on the device: kernels/fill.h's draw, the host's bits
// (a case's inputs made where they are used: no host fill and upload before
// the GPU can start; the host fills its copies for the reference meanwhile).
#include <cuda_runtime.h>

#include "fill.h"
#include "kernels.h"

namespace {
__global__ void fill16_kernel(uint16_t *h, size_t n, uint64_t s0, double lo, double hi, int bf, uint16_t qalt)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        h[i] = kb_fill_16(s0, i, lo, hi, bf, qalt);
}

__global__ void fill32_kernel(float *f, size_t n, uint64_t s0, double lo, double hi, float alt)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        f[i] = kb_fill_32(s0, i, lo, hi, alt);
}
} // namespace

extern "C" int kb_fill_uniform_dev(void *dev, size_t n, int dtype, uint64_t seed, double lo, double hi)
{
    if (n == 0) return 0;
    const uint64_t s0 = seed ^ KB_FILL_GAMMA;
    const double alt = kb_fill_alt(lo, hi);
    size_t blocks = (n + 255) / 256;
    if (blocks > 132 * 16) blocks = 132 * 16;
    if (dtype == 0) {
        fill32_kernel<<<(unsigned)blocks, 256>>>((float *)dev, n, s0, lo, hi, (float)alt);
    } else {
        const int bf = dtype == 2;
        const float a = kb_fill_float_odd(alt);
        fill16_kernel<<<(unsigned)blocks, 256>>>((uint16_t *)dev, n, s0, lo, hi, bf, bf ? kb_fill_bf16(a) : kb_fill_f16(a));
    }
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaDeviceSynchronize(); // before any stream of the harness reads it
    return (int)e;
}
