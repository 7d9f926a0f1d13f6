// cublas and cublas_cat: the MLP's GEMMs by cuBLAS (kb_linear_cublas,
// kernels/gemm.cu) and a separate silu(g) * u kernel (naive uses it too).
//
// cublas:     what PyTorch eager does: three cuBLAS GEMMs (nn.Linear's layout)
//             and one elementwise silu(g) * u kernel (eager runs two).
// cublas_cat: one cuBLAS GEMM over the stacked [G; U], one silu(g) * u kernel
//             reading both halves of its [tokens, 2*inter] product, the down GEMM.
//
// Every path stores g and u in the dtype (rounded from the fp32 accumulator),
// computes h = silu(g) * u in fp32 and rounds it to the dtype, so the CPU
// reference (refs/mlp.c) rounds at the same three places.
#include <cuda_runtime.h>
#include <stdint.h>

#include "../common.cuh"
#include "../kernels.h"
#include "mlp.h"

namespace {

using kb::from_f;
using kb::to_f;
using kb::Vec;

// ---- h = silu(g) * u ---------------------------------------------------------
// h [rows, cols] contiguous; g and u rows `ld` elements apart (ld = cols for
// separate g and u, 2*cols for the halves of the stacked product). In fp32:
// silu(a) = a / (1 + exp(-a)), as PyTorch computes it (exp overflowing to inf
// for a < -88 gives -0, the limit).
__device__ __forceinline__ float silu_mul(float g, float u) { return g / (1.0f + expf(-g)) * u; }

template <typename T>
__global__ void silu_mul_kernel(const T *__restrict__ g, const T *__restrict__ u, T *__restrict__ h, long rows, int cols,
                                long ld)
{
    const long n = rows * cols;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        const long r = i / cols, c = i - r * cols;
        h[i] = from_f<T>(silu_mul(to_f(g[r * ld + c]), to_f(u[r * ld + c])));
    }
}

// The same, 16 bytes at a time (cols and ld multiples of V, pointers aligned).
template <typename T, int V>
__global__ void silu_mul_vec_kernel(const T *__restrict__ g, const T *__restrict__ u, T *__restrict__ h, long rows,
                                    int cols, long ld)
{
    const int vc = cols / V;
    const long n = rows * vc;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        const long r = i / vc, c = (i - r * vc) * V;
        const Vec<T, V> a = *reinterpret_cast<const Vec<T, V> *>(g + r * ld + c);
        const Vec<T, V> b = *reinterpret_cast<const Vec<T, V> *>(u + r * ld + c);
        Vec<T, V> o;
#pragma unroll
        for (int k = 0; k < V; k++) o.v[k] = from_f<T>(silu_mul(to_f(a.v[k]), to_f(b.v[k])));
        *reinterpret_cast<Vec<T, V> *>(h + r * cols + c) = o;
    }
}

// Blocks for a grid-stride loop: enough to fill the device (16 per SM), no more.
int grid_for(long work, int threads, int sms)
{
    long blocks = (work + threads - 1) / threads, cap = (long)(sms > 0 ? sms : 132) * 16;
    if (blocks > cap) blocks = cap;
    return (int)(blocks > 0 ? blocks : 1);
}

template <typename T>
int silu_mul_launch(const void *g, const void *u, void *h, long rows, int cols, long ld, int sms, cudaStream_t s)
{
    constexpr int V = 16 / sizeof(T);
    constexpr int THREADS = 256;
    const bool vec = cols % V == 0 && ld % V == 0 && (uintptr_t)g % 16 == 0 && (uintptr_t)u % 16 == 0 &&
                     (uintptr_t)h % 16 == 0;
    if (vec)
        silu_mul_vec_kernel<T, V><<<grid_for(rows * (cols / V), THREADS, sms), THREADS, 0, s>>>(
            (const T *)g, (const T *)u, (T *)h, rows, cols, ld);
    else
        silu_mul_kernel<T><<<grid_for(rows * cols, THREADS, sms), THREADS, 0, s>>>((const T *)g, (const T *)u, (T *)h, rows,
                                                                               cols, ld);
    return (int)cudaGetLastError();
}

size_t esize(int dtype) { return dtype == 0 ? 4 : 2; }

bool args_ok(const kb_mlp_args *a)
{
    return a->tokens > 0 && a->hidden > 0 && a->inter > 0 && a->dtype >= 0 && a->dtype <= 2 && a->x && a->G && a->U &&
           a->D && a->y && a->gu && a->h;
}

} // namespace

extern "C" int kb_mlp_silu_mul(int dtype, const void *g, const void *u, void *h, long rows, int cols, long ld,
                               int sm_count, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    return kb::by_dtype(dtype,
                        [&](auto t) { return silu_mul_launch<decltype(t)>(g, u, h, rows, cols, ld, sm_count, s); });
}

extern "C" int kb_mlp_cublas(const kb_mlp_args *a, void *stream)
{
    if (!args_ok(a)) return (int)cudaErrorInvalidValue;
    cudaStream_t s = (cudaStream_t)stream;
    const int T = a->tokens, H = a->hidden, I = a->inter;
    char *g = (char *)a->gu, *u = g + (size_t)T * I * esize(a->dtype);
    int rc;
    if ((rc = kb_linear_cublas(a->x, a->G, g, T, I, H, a->dtype, a->tf32, s))) return rc;
    if ((rc = kb_linear_cublas(a->x, a->U, u, T, I, H, a->dtype, a->tf32, s))) return rc;
    if ((rc = kb_mlp_silu_mul(a->dtype, g, u, a->h, T, I, I, a->sm_count, s))) return rc;
    return kb_linear_cublas(a->h, a->D, a->y, T, H, I, a->dtype, a->tf32, s);
}

extern "C" int kb_mlp_cublas_cat_h(const kb_mlp_args *a, void *stream)
{
    if (!args_ok(a) || !a->GU || (long)2 * a->inter > 0x7fffffffL) return (int)cudaErrorInvalidValue;
    cudaStream_t s = (cudaStream_t)stream;
    const int T = a->tokens, H = a->hidden, I = a->inter;
    // gu [T, 2I]: row t holds g_t (columns 0..I-1), then u_t (I..2I-1)
    char *gu = (char *)a->gu;
    int rc = kb_linear_cublas(a->x, a->GU, gu, T, 2 * I, H, a->dtype, a->tf32, s);
    if (rc) return rc;
    return kb_mlp_silu_mul(a->dtype, gu, gu + (size_t)I * esize(a->dtype), a->h, T, I, 2L * I, a->sm_count, s);
}

extern "C" int kb_mlp_cublas_cat(const kb_mlp_args *a, void *stream)
{
    int rc = kb_mlp_cublas_cat_h(a, stream);
    if (rc) return rc;
    return kb_linear_cublas(a->h, a->D, a->y, a->tokens, a->hidden, a->inter, a->dtype, a->tf32, stream);
}
