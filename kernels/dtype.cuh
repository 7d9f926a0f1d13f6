// Element types on the device: fp32 (float), fp16 (__half), bf16
// (__nv_bfloat16), to and from float with round-to-nearest-even. kbench's
// dtype codes: 0 fp32, 1 fp16, 2 bf16.
#ifndef KB_DTYPE_CUH
#define KB_DTYPE_CUH
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace kb {

template <typename T> __device__ __forceinline__ float to_f(T x);
template <> __device__ __forceinline__ float to_f<float>(float x) { return x; }
template <> __device__ __forceinline__ float to_f<__half>(__half x) { return __half2float(x); }
template <> __device__ __forceinline__ float to_f<__nv_bfloat16>(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T> __device__ __forceinline__ T from_f(float x);
template <> __device__ __forceinline__ float from_f<float>(float x) { return x; }
template <> __device__ __forceinline__ __half from_f<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

} // namespace kb
#endif
