// naive: the MLP as a textbook shared-memory tiled GEMM (CUDA cores, fp32
// accumulation) three times and cublas.cu's silu(g) * u kernel; the
// baseline every other implementation's speedup is measured against.
//
// Every path stores g and u in the dtype (rounded from the fp32 accumulator),
// computes h = silu(g) * u in fp32 and rounds it to the dtype, so the CPU
// reference (refs/mlp.c) rounds at the same three places.
#include <cuda_runtime.h>
#include <stdint.h>

#include "../common.cuh"
#include "mlp.h"

namespace {

using kb::from_f;
using kb::to_f;

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
    if ((rc = kb_mlp_silu_mul(a->dtype, g, u, a->h, T, I, I, a->sm_count, s))) return rc;
    return gemm_naive_any(a->dtype, a->h, a->D, a->y, T, H, I, s);
}
