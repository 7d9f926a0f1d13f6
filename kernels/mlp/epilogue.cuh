// The fused gate/up kernels' epilogue (fused_wgmma, fused_mma, fused_f32):
// h = silu(g) * u from fp32 g and u, rounded to the dtype once, and the
// guarded stores of h's pairs.
#pragma once
#include <stdint.h>
#include <string.h>

#include "../common.cuh"

namespace kb::mlp {

// silu(g) * u in fp32. bf16: sigmoid through one tanh.approx (abs error
// ~2^-11, far under bf16's 2^-8 step); fp16 and fp32: exp and a divide.
template <typename T> __device__ __forceinline__ float silu_mul(float g, float u)
{
    return g / (1.0f + expf(-g)) * u;
}
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
template <> __device__ __forceinline__ float silu_mul<__nv_bfloat16>(float g, float u)
{
    float t; // sigmoid(g) = (1 + tanh(g/2)) / 2
    asm("tanh.approx.f32 %0, %1;" : "=f"(t) : "f"(0.5f * g));
    return g * fmaf(0.5f, t, 0.5f) * u;
}
template <> __device__ __forceinline__ float silu_mul<__half>(float g, float u)
{
    return __fdividef(g, 1.0f + __expf(-g)) * u;
}
#endif

// two 16-bit values in one 32-bit word, the first in the low half
template <typename T> __device__ __forceinline__ uint32_t pack2(float a, float b)
{
    T e[2] = {from_f<T>(a), from_f<T>(b)};
    uint32_t v;
    memcpy(&v, e, 4);
    return v;
}

// Two adjacent h values of row `row` at column `col` (col even), guarded; a
// pair store where the row pitch keeps it 4-byte aligned.
template <typename T>
__device__ __forceinline__ void store2(T *__restrict__ h, int M, int N, int row, int col, float h0, float h1)
{
    if (row >= M || col >= N) return;
    T *p = h + (size_t)row * N + col;
    if constexpr (sizeof(T) == 2) {
        if ((N & 1) == 0) { // col even, N even: 4-byte aligned, and col + 1 < N
            *reinterpret_cast<uint32_t *>(p) = pack2<T>(h0, h1);
            return;
        }
    }
    p[0] = from_f<T>(h0);
    if (col + 1 < N) p[1] = from_f<T>(h1);
}

} // namespace kb::mlp
