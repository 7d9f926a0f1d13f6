// The SwiGLU MLP of the LLaMA decoder: y = (silu(x G^T) * (x U^T)) D^T.
//
// naive:      a textbook shared-memory tiled GEMM (CUDA cores, fp32
//             accumulation) three times, and a silu(g) * u kernel.
// cublas:     what PyTorch eager does: three cuBLAS GEMMs (nn.Linear's layout)
//             and a separate elementwise silu(g) * u kernel.
// cublas_cat: one cuBLAS GEMM over the stacked [G; U], one silu(g) * u kernel
//             reading both halves of its [tokens, 2*inter] product, the down GEMM.
//
// Every path stores g and u in the dtype (rounded from the fp32 accumulator),
// computes h = silu(g) * u in fp32 and rounds it to the dtype, so the CPU
// reference (refs/mlp.c) rounds at the same three places.
#include <cuda_runtime.h>
#include <stdint.h>

#include "common.cuh"
#include "kernels.h"

namespace {

using kb::from_f;
using kb::to_f;
using kb::Vec;

// ---- naive GEMM --------------------------------------------------------------
// C[m, n] = sum_k A[m, k] * B[n, k]: A [M, K] and B [N, K] row-major (B is an
// nn.Linear weight, out x in), C [M, N]. A TILE x TILE block of threads, one
// output element each; per step of TILE along k, the block stages A's and B's
// tiles in shared memory (zeros past the edges), then each thread runs its dot
// product over the tile. Row blocks past gridDim.y are walked in a loop.
constexpr int TILE = 16;

template <typename T>
__global__ void __launch_bounds__(TILE *TILE) gemm_naive_kernel(const T *__restrict__ A, const T *__restrict__ B,
                                                                 T *__restrict__ C, int M, int N, int K)
{
    __shared__ float As[TILE][TILE + 1], Bs[TILE][TILE + 1]; // +1: Bs[tx][k] across a warp hits distinct banks
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int n = blockIdx.x * TILE + tx;
    const int nrow = blockIdx.x * TILE + ty; // the row of B this thread stages
    for (int mb = blockIdx.y; mb * TILE < M; mb += gridDim.y) {
        const int m = mb * TILE + ty;
        float acc = 0.f;
        for (int k0 = 0; k0 < K; k0 += TILE) {
            const int k = k0 + tx;
            As[ty][tx] = m < M && k < K ? to_f(A[(size_t)m * K + k]) : 0.f;
            Bs[ty][tx] = nrow < N && k < K ? to_f(B[(size_t)nrow * K + k]) : 0.f;
            __syncthreads();
#pragma unroll
            for (int kk = 0; kk < TILE; kk++) acc = fmaf(As[ty][kk], Bs[tx][kk], acc);
            __syncthreads();
        }
        if (m < M && n < N) C[(size_t)m * N + n] = from_f<T>(acc);
    }
}

template <typename T> int gemm_naive(const void *A, const void *B, void *C, int M, int N, int K, cudaStream_t s)
{
    dim3 block(TILE, TILE);
    unsigned gy = (unsigned)((M + TILE - 1) / TILE);
    dim3 grid((unsigned)((N + TILE - 1) / TILE), gy < 65535 ? gy : 65535);
    gemm_naive_kernel<T><<<grid, block, 0, s>>>((const T *)A, (const T *)B, (T *)C, M, N, K);
    return (int)cudaGetLastError();
}

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
int grid_for(long work, int threads)
{
    static int sms; // the SM count, asked once (kbench uses device 0 throughout)
    if (!sms) {
        int dev = 0;
        cudaGetDevice(&dev);
        if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) sms = 0;
    }
    long blocks = (work + threads - 1) / threads, cap = (long)(sms > 0 ? sms : 132) * 16;
    if (blocks > cap) blocks = cap;
    return (int)(blocks > 0 ? blocks : 1);
}

template <typename T> int silu_mul_launch(const void *g, const void *u, void *h, long rows, int cols, long ld, cudaStream_t s)
{
    constexpr int V = 16 / sizeof(T);
    constexpr int THREADS = 256;
    const bool vec = cols % V == 0 && ld % V == 0 && (uintptr_t)g % 16 == 0 && (uintptr_t)u % 16 == 0 &&
                     (uintptr_t)h % 16 == 0;
    if (vec)
        silu_mul_vec_kernel<T, V><<<grid_for(rows * (cols / V), THREADS), THREADS, 0, s>>>(
            (const T *)g, (const T *)u, (T *)h, rows, cols, ld);
    else
        silu_mul_kernel<T><<<grid_for(rows * cols, THREADS), THREADS, 0, s>>>((const T *)g, (const T *)u, (T *)h, rows,
                                                                               cols, ld);
    return (int)cudaGetLastError();
}

int silu_mul(int dtype, const void *g, const void *u, void *h, long rows, int cols, long ld, cudaStream_t s)
{
    return kb::by_dtype(dtype, [&](auto t) { return silu_mul_launch<decltype(t)>(g, u, h, rows, cols, ld, s); });
}

int gemm_naive_any(int dtype, const void *A, const void *B, void *C, int M, int N, int K, cudaStream_t s)
{
    return kb::by_dtype(dtype, [&](auto t) { return gemm_naive<decltype(t)>(A, B, C, M, N, K, s); });
}

size_t esize(int dtype) { return dtype == 0 ? 4 : 2; }

bool args_ok(const kb_mlp_args *a)
{
    return a->tokens > 0 && a->hidden > 0 && a->inter > 0 && a->dtype >= 0 && a->dtype <= 2 && a->x && a->G && a->U &&
           a->D && a->y && a->gu && a->h;
}

} // namespace

extern "C" int kb_mlp_naive(const kb_mlp_args *a, void *stream)
{
    if (!args_ok(a)) return (int)cudaErrorInvalidValue;
    cudaStream_t s = (cudaStream_t)stream;
    const int T = a->tokens, H = a->hidden, I = a->inter;
    char *g = (char *)a->gu, *u = g + (size_t)T * I * esize(a->dtype);
    int rc;
    if ((rc = gemm_naive_any(a->dtype, a->x, a->G, g, T, I, H, s))) return rc;
    if ((rc = gemm_naive_any(a->dtype, a->x, a->U, u, T, I, H, s))) return rc;
    if ((rc = silu_mul(a->dtype, g, u, a->h, T, I, I, s))) return rc;
    return gemm_naive_any(a->dtype, a->h, a->D, a->y, T, H, I, s);
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
    if ((rc = silu_mul(a->dtype, g, u, a->h, T, I, I, s))) return rc;
    return kb_linear_cublas(a->h, a->D, a->y, T, H, I, a->dtype, a->tf32, s);
}

extern "C" int kb_mlp_cublas_cat(const kb_mlp_args *a, void *stream)
{
    if (!args_ok(a) || !a->GU || (long)2 * a->inter > 0x7fffffffL) return (int)cudaErrorInvalidValue;
    cudaStream_t s = (cudaStream_t)stream;
    const int T = a->tokens, H = a->hidden, I = a->inter;
    // gu [T, 2I]: row t holds g_t (columns 0..I-1), then u_t (I..2I-1)
    char *gu = (char *)a->gu;
    int rc;
    if ((rc = kb_linear_cublas(a->x, a->GU, gu, T, 2 * I, H, a->dtype, a->tf32, s))) return rc;
    if ((rc = silu_mul(a->dtype, gu, gu + (size_t)I * esize(a->dtype), a->h, T, I, 2L * I, s))) return rc;
    return kb_linear_cublas(a->h, a->D, a->y, T, H, I, a->dtype, a->tf32, s);
}
