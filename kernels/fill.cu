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
    size_t blocks = (n + 255) / 256;
    if (blocks > 2048) blocks = 2048; // a grid-stride loop: enough blocks for any GPU's SMs
    if (dtype == 0)
        fill32_kernel<<<(unsigned)blocks, 256>>>((float *)dev, n, s0, lo, hi, (float)kb_fill_alt(lo, hi));
    else
        fill16_kernel<<<(unsigned)blocks, 256>>>((uint16_t *)dev, n, s0, lo, hi, dtype == 2, kb_fill_alt16(lo, hi, dtype == 2));
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaDeviceSynchronize(); // before any stream of the harness reads it
    return (int)e;
}
