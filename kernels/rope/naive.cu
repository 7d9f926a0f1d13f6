// RoPE's textbook kernel: one thread per element, the formula as written
// (cos and sin per element, the partner element read again).
#include "common.cuh"

namespace {

using kb::from_f;
using kb::to_f;

template <typename T>
__global__ void rope_naive_kernel(const T *__restrict__ in, T *__restrict__ out, kb_rope_args a, long n)
{
    long idx = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= n) return;
    long row = idx / a.dim;
    int j = (int)(idx - row * a.dim);
    if (j >= a.rot) {
        out[idx] = in[idx];
        return;
    }
    int half = a.rot / 2, i, partner;
    float sign;
    if (a.style == KB_ROPE_NEOX) {
        i = j < half ? j : j - half;
        partner = j < half ? j + half : j - half;
        sign = j < half ? -1.f : 1.f;
    } else {
        i = j / 2;
        partner = j ^ 1;
        sign = (j & 1) ? 1.f : -1.f;
    }
    if (a.backward) sign = -sign;
    int pos = kb::rope::row_position(a, row);
    float theta = a.angles[(long)pos * half + i];
    float x = to_f(in[idx]), y = to_f(in[row * a.dim + partner]);
    out[idx] = from_f<T>(x * cosf(theta) + sign * y * sinf(theta));
}

template <typename T> int launch_naive(const kb_rope_args *a, cudaStream_t s)
{
    long rows = a->layout == KB_ROPE_THD ? a->tokens * a->heads : (long)a->seq * a->batch * a->heads;
    long n = rows * a->dim;
    if (n == 0) return 0;
    int threads = 256;
    long blocks = (n + threads - 1) / threads;
    rope_naive_kernel<T><<<(unsigned)blocks, threads, 0, s>>>((const T *)a->in, (T *)a->out, *a, n);
    return (int)cudaGetLastError();
}

} // namespace

extern "C" int kb_rope_naive(const kb_rope_args *a, void *stream)
{
    if (!kb::rope::args_ok(a)) return (int)cudaErrorInvalidValue;
    cudaStream_t s = (cudaStream_t)stream;
    return kb::by_dtype(a->dtype, [&](auto t) { return launch_naive<decltype(t)>(a, s); });
}
