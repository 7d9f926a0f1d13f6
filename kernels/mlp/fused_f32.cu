// fused_f32: the fp32 gate/up kernel on CUDA cores, h = silu(x G^T) *
// (x U^T) in true fp32 whatever tf32 says (tf32 applies to the down GEMM
// only); fused's choice for every fp32 case (plan.c).
#include <cuda_runtime.h>

#include "epilogue.cuh"
#include "gate_up.cuh"

namespace {

using kb::mlp::silu_mul;

// 64 x 64 tile of h per 256 threads, 4 x 4 outputs each (rows ty + 16 i,
// columns tx + 16 j) for g and for u, k-steps of 16 staged transposed.
__global__ void __launch_bounds__(256) gate_up_f32(const float *__restrict__ x, const float *__restrict__ G,
                                                    const float *__restrict__ U, float *__restrict__ h, int M, int N,
                                                    int K)
{
    constexpr int BM = 64, BN = 64, BK = 16;
    __shared__ float As[BK][BM + 4], Gs[BK][BN + 4], Us[BK][BN + 4];
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    float g[4][4] = {}, u[4][4] = {};
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int i = threadIdx.x; i < BM * BK; i += 256) {
            const int r = i / BK, k = i % BK, gk = k0 + k;
            As[k][r] = m0 + r < M && gk < K ? x[(size_t)(m0 + r) * K + gk] : 0.f;
            const bool w = n0 + r < N && gk < K;
            Gs[k][r] = w ? G[(size_t)(n0 + r) * K + gk] : 0.f;
            Us[k][r] = w ? U[(size_t)(n0 + r) * K + gk] : 0.f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; k++) {
            float a[4], bg[4], bu[4];
#pragma unroll
            for (int i = 0; i < 4; i++) {
                a[i] = As[k][ty + 16 * i];
                bg[i] = Gs[k][tx + 16 * i];
                bu[i] = Us[k][tx + 16 * i];
            }
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    g[i][j] = fmaf(a[i], bg[j], g[i][j]);
                    u[i][j] = fmaf(a[i], bu[j], u[i][j]);
                }
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const int row = m0 + ty + 16 * i, col = n0 + tx + 16 * j;
            if (row < M && col < N) h[(size_t)row * N + col] = silu_mul<float>(g[i][j], u[i][j]);
        }
}

int launch(const kb_mlp_args *a, cudaStream_t s)
{
    const int M = a->tokens, N = a->inter, K = a->hidden;
    const dim3 grid((unsigned)((N + 63) / 64), (unsigned)((M + 63) / 64));
    gate_up_f32<<<grid, 256, 0, s>>>((const float *)a->x, (const float *)a->G, (const float *)a->U, (float *)a->h, M, N, K);
    return (int)cudaGetLastError();
}

} // namespace

int kb::mlp::gate_up_f32(const kb_mlp_args *a, cudaStream_t s)
{
    return a->dtype == 0 ? launch(a, s) : (int)cudaErrorInvalidValue;
}
