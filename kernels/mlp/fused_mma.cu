// fused_mma: the portable gate/up kernel (sm_80+, bf16/fp16, any shape),
// h = silu(x G^T) * (x U^T) by mma.sync m16n8k16 with cp.async staging
// (element loads where rows are not 16-byte aligned) and the wgmma kernel's
// epilogue; g and u stay in fp32 registers. Where fused runs it: every
// 16-bit case off Hopper, and hidden % 8 != 0 on Hopper (plan.c).
#include <cuda_runtime.h>
#include <stdint.h>

#include "../common.cuh"
#include "../ptx/cp_async.cuh"
#include "epilogue.cuh"
#include "gate_up.cuh"

namespace {

using kb::from_f;
using kb::ptx::cp_async16_zfill;
using kb::ptx::cp_async_commit;
using kb::ptx::cp_async_wait;
using kb::mlp::silu_mul;
using kb::mlp::store2;

// A 64 x 64 tile of h per block of 4 warps (2 x 2, 32 x 32 each, for g and
// for u), k-steps of 32 through a 3-stage ring: x's 64 rows and the 128 rows
// of G's and U's tiles, rows padded to 40 elements (80 bytes: ldmatrix's 8
// row addresses hit distinct 16-byte bank groups). VEC: rows are 16-byte
// aligned (K % 8 == 0), cp.async 16 bytes at a time, zero-filled past the
// edges; else element loads through registers.
constexpr int P_BM = 64, P_BN = 64, P_BK = 32, P_LD = P_BK + 8, P_STAGES = 3;

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void *p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"((uint32_t)__cvta_generic_to_shared(p)));
}
template <typename T> __device__ __forceinline__ void mma16816(float (&c)[4], const uint32_t (&a)[4], const uint32_t *b);
template <> __device__ __forceinline__ void mma16816<__nv_bfloat16>(float (&c)[4], const uint32_t (&a)[4], const uint32_t *b)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
template <> __device__ __forceinline__ void mma16816<__half>(float (&c)[4], const uint32_t (&a)[4], const uint32_t *b)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

template <typename T, bool VEC>
__global__ void __launch_bounds__(128) gate_up_mma(const T *__restrict__ x, const T *__restrict__ G,
                                                    const T *__restrict__ U, T *__restrict__ h, int M, int N, int K)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    __shared__ __align__(16) T As[P_STAGES][P_BM][P_LD];
    __shared__ __align__(16) T Bs[P_STAGES][2 * P_BN][P_LD]; // rows 0..63: G's tile, 64..127: U's
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wm = warp / 2, wn = warp % 2;
    const int m0 = blockIdx.y * P_BM, n0 = blockIdx.x * P_BN;
    const int nk = (K + P_BK - 1) / P_BK;

    auto load = [&](int st, int kb) {
        const int k0 = kb * P_BK;
        if (VEC) {
#pragma unroll
            for (int i = tid; i < P_BM * 4; i += 128) {
                const int r = i / 4, c = (i % 4) * 8, gr = m0 + r, gk = k0 + c;
                const bool ok = gr < M && gk < K;
                cp_async16_zfill(&As[st][r][c], ok ? x + (size_t)gr * K + gk : x, ok ? 16 : 0);
            }
#pragma unroll
            for (int i = tid; i < 2 * P_BN * 4; i += 128) {
                const int r = i / 4, c = (i % 4) * 8, wr = n0 + r % P_BN, gk = k0 + c;
                const T *W = r < P_BN ? G : U;
                const bool ok = wr < N && gk < K;
                cp_async16_zfill(&Bs[st][r][c], ok ? W + (size_t)wr * K + gk : W, ok ? 16 : 0);
            }
        } else {
            for (int i = tid; i < P_BM * P_BK; i += 128) {
                const int r = i / P_BK, c = i % P_BK, gr = m0 + r, gk = k0 + c;
                As[st][r][c] = gr < M && gk < K ? x[(size_t)gr * K + gk] : from_f<T>(0.f);
            }
            for (int i = tid; i < 2 * P_BN * P_BK; i += 128) {
                const int r = i / P_BK, c = i % P_BK, wr = n0 + r % P_BN, gk = k0 + c;
                const T *W = r < P_BN ? G : U;
                Bs[st][r][c] = wr < N && gk < K ? W[(size_t)wr * K + gk] : from_f<T>(0.f);
            }
        }
    };

    float acc[2][2][4][4]; // [g, u][m16 block][n8 block][fragment]
#pragma unroll
    for (int q = 0; q < 2; q++)
#pragma unroll
        for (int i = 0; i < 2; i++)
#pragma unroll
            for (int j = 0; j < 4; j++)
#pragma unroll
                for (int e = 0; e < 4; e++) acc[q][i][j][e] = 0.f;

#pragma unroll
    for (int s = 0; s < P_STAGES - 1; s++) {
        if (s < nk) load(s, s);
        cp_async_commit();
    }
    for (int kb = 0; kb < nk; kb++) {
        cp_async_wait<P_STAGES - 2>();
        __syncthreads();
        const int st = kb % P_STAGES;
#pragma unroll
        for (int kk = 0; kk < P_BK; kk += 16) {
            uint32_t a[2][4];
#pragma unroll
            for (int i = 0; i < 2; i++) ldmatrix_x4(a[i], &As[st][wm * 32 + i * 16 + lane % 16][kk + (lane / 16) * 8]);
#pragma unroll
            for (int q = 0; q < 2; q++) {
                uint32_t b[4][2];
#pragma unroll
                for (int p = 0; p < 2; p++) {
                    uint32_t r[4];
                    ldmatrix_x4(r, &Bs[st][q * P_BN + wn * 32 + p * 16 + lane % 8 + (lane / 16) * 8]
                                      [kk + ((lane / 8) % 2) * 8]);
                    b[2 * p][0] = r[0];
                    b[2 * p][1] = r[1];
                    b[2 * p + 1][0] = r[2];
                    b[2 * p + 1][1] = r[3];
                }
#pragma unroll
                for (int i = 0; i < 2; i++)
#pragma unroll
                    for (int j = 0; j < 4; j++) mma16816<T>(acc[q][i][j], a[i], b[j]);
            }
        }
        const int next = kb + P_STAGES - 1; // into the stage computed last iteration (all past the barrier)
        if (next < nk) load(next % P_STAGES, next);
        cp_async_commit();
    }
    cp_async_wait<0>();
    // c[e]: row lane/4 + 8 (e / 2), column 2 (lane % 4) + e % 2 of the 16 x 8 block
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const int row = m0 + wm * 32 + i * 16 + lane / 4, col = n0 + wn * 32 + j * 8 + (lane % 4) * 2;
            const float *g = acc[0][i][j], *u = acc[1][i][j];
            store2<T>(h, M, N, row, col, silu_mul<T>(g[0], u[0]), silu_mul<T>(g[1], u[1]));
            store2<T>(h, M, N, row + 8, col, silu_mul<T>(g[2], u[2]), silu_mul<T>(g[3], u[3]));
        }
#endif
}


template <typename T> int launch(const kb_mlp_args *a, bool vec, cudaStream_t s)
{
    const int M = a->tokens, N = a->inter, K = a->hidden;
    const dim3 grid((unsigned)((N + P_BN - 1) / P_BN), (unsigned)((M + P_BM - 1) / P_BM));
    if (vec)
        gate_up_mma<T, true><<<grid, 128, 0, s>>>((const T *)a->x, (const T *)a->G, (const T *)a->U, (T *)a->h, M, N, K);
    else
        gate_up_mma<T, false><<<grid, 128, 0, s>>>((const T *)a->x, (const T *)a->G, (const T *)a->U, (T *)a->h, M, N, K);
    return (int)cudaGetLastError();
}

} // namespace

int kb::mlp::gate_up_mma(const kb_mlp_args *a, bool vec, cudaStream_t s)
{
    switch (a->dtype) {
    case 1: return launch<__half>(a, vec, s);
    case 2: return launch<__nv_bfloat16>(a, vec, s);
    }
    return (int)cudaErrorInvalidValue; // fp32: fused_f32
}
