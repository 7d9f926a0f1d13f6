// Device helpers the kernels share: dtype conversions and aligned vectors.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace kb {

template <typename T> __device__ __forceinline__ float to_f(T x);
template <> __device__ __forceinline__ float to_f<float>(float x) { return x; }
template <> __device__ __forceinline__ float to_f<__half>(__half x) { return __half2float(x); }
template <> __device__ __forceinline__ float to_f<__nv_bfloat16>(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T> __device__ __forceinline__ T from_f(float x);
template <> __device__ __forceinline__ float from_f<float>(float x) { return x; }
template <> __device__ __forceinline__ __half from_f<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

// f(T{}) for the element type of a dtype code (0 fp32, 1 fp16, 2 bf16), for
// the launchers: by_dtype(a->dtype, [&](auto t) { return run<decltype(t)>(a); });
// an unknown code gives cudaErrorInvalidValue.
template <typename F> inline int by_dtype(int dtype, F &&f)
{
    switch (dtype) {
    case 0: return f(float{});
    case 1: return f(__half{});
    case 2: return f(__nv_bfloat16{});
    }
    return (int)cudaErrorInvalidValue;
}

// V elements of T as one aligned access (16 bytes at most).
template <typename T, int V> struct alignas(sizeof(T) * V) Vec {
    T v[V];
};

} // namespace kb
