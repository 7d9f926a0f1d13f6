// down_splitk: the down projection at decode on Hopper, y [M, H] = h [M, I]
// D^T for M <= 16 tokens (bf16/fp16, I % 8 == 0, h and D 16-byte aligned),
// in one kernel where cuBLAS runs two (its split-K GEMM and a reduce kernel:
// 4 us of the 16 x 4096 x 11008 MLP's 102, ncu, H100, 2026-11-27).
//
// Swap-AB on wgmma: D's rows are the 64-row A operand, the tokens the N
// operand (m64n8k16 for 1-8 tokens, m64n16k16 for 9-16), so no row of the
// tensor-core tile is padding. A block takes 64 rows of D over one K range
// (split s of `splits`, sized so the grid is about one block an SM, or two
// with half the ring where one an SM splits K already: plan.c): one
// producer thread streams 64 x 64 boxes of D and 8- or 16-row boxes of h by
// TMA into a ring of shared-memory stages (zeros past every edge), one
// consumer warpgroup runs the wgmmas.
//
// D does not depend on the gate/up kernel before it, h does: the kernel is
// launched as that kernel's programmatic dependent (fused.cu), and the
// producer loads the ring's first stages of D, then waits for the gate/up
// grid (griddepcontrol.wait) before it loads any h. Blocks land on SMs as
// the gate/up kernel's blocks finish, so D streams while its last tiles run.
//
// With splits > 1 each block writes its 64 x 16 partial to the workspace, and
// the last of a row block's splits to arrive (a counter it sets back to 0)
// adds them in split order and stores y: the result does not depend on the
// blocks' order. The workspace and counters are one prepared case's: one
// launch of it at a time (kbench runs one), as for the gate/up kernel's.
#include <cuda.h> // CUtensorMap
#include <cuda_runtime.h>
#include <stdint.h>

#include <type_traits>

#include "../common.cuh"
#include "../ptx/barrier.cuh"
#include "../ptx/mbarrier.cuh"
#include "../ptx/tma.cuh"
#include "../ptx/wgmma.cuh"
#include "gate_up.cuh"
#include "plan.h"

namespace {

using namespace kb::ptx;
using kb::from_f;

// a stage: D's 64 x 64 box, then h's NC x 64 box (rows of 128 bytes, 128B swizzle);
// PS blocks an SM: 200 KiB of stages for one, 100 for two
template <int NT, int PS> struct DownShape {
    static constexpr int NC = 8 * NT, A_BYTES = 64 * 128, STAGE = A_BYTES + NC * 128;
    static constexpr int STAGES = 200 / PS * 1024 / STAGE; // PS 1: 20 (NT 2) or 22 (NT 1); PS 2: 10 or 11
    static constexpr int SMEM = STAGES * STAGE + 1024;
    static_assert(STAGE % 1024 == 0, "stages keep the 1024-byte alignment of 128B swizzle");
};

// MS: the most splits the last block adds (KB_MLP_DOWN_SPLITS, or
// KB_MLP_DOWN_MAX_SPLITS where the planner takes more: two blocks an SM)
template <typename T, int NT, int PS, int MS>
__global__ void __launch_bounds__(160, PS)
    down_tma(const __grid_constant__ CUtensorMap tmd, const __grid_constant__ CUtensorMap tmh, T *__restrict__ y,
             float *__restrict__ ws, unsigned *__restrict__ count, int M, int H, int I, int splits, int kchunk)
{
#ifdef KB_PTX_SM90A
    using S = DownShape<NT, PS>;
    constexpr int NC = S::NC, STAGES = S::STAGES;
    extern __shared__ uint8_t smem_raw[];
    __shared__ __align__(8) uint64_t full[STAGES], empty[STAGES];
    __shared__ int last;
    const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;
    const int rb = blockIdx.x / splits, s = blockIdx.x % splits, r0 = rb * 64;
    const int kb0 = s * (kchunk / 64), kb1 = min((I + 63) / 64, kb0 + kchunk / 64), nk = kb1 - kb0;

    if (threadIdx.x == 0) {
        for (int i = 0; i < STAGES; i++) {
            mbar_init(smem_u32(&full[i]), 1);
            mbar_init(smem_u32(&empty[i]), 4); // a consumer warp's lane 0 each
        }
        fence_mbar_init();
    }
    __syncthreads();

    if (threadIdx.x >= 128) { // producer warp: one thread
        if (threadIdx.x == 128) {
            prefetch_tensormap(&tmd);
            prefetch_tensormap(&tmh);
            const int pre = min(nk, STAGES);
            for (int i = 0; i < pre; i++) { // D first: it does not wait for the gate/up kernel
                const uint32_t fb = smem_u32(&full[i]);
                mbar_expect_tx(fb, S::STAGE);
                tma_load(base + i * S::STAGE, &tmd, (kb0 + i) * 64, r0, fb);
            }
            asm volatile("griddepcontrol.wait;" ::: "memory"); // h is the gate/up kernel's
            for (int i = 0; i < pre; i++)
                tma_load(base + i * S::STAGE + S::A_BYTES, &tmh, (kb0 + i) * 64, 0, smem_u32(&full[i]));
            int stage = pre % STAGES;
            uint32_t phase = pre / STAGES;
            for (int i = pre; i < nk; i++) {
                mbar_wait(smem_u32(&empty[stage]), phase ^ 1);
                const uint32_t a = base + stage * S::STAGE, fb = smem_u32(&full[stage]);
                mbar_expect_tx(fb, S::STAGE);
                tma_load(a, &tmd, (kb0 + i) * 64, r0, fb);
                tma_load(a + S::A_BYTES, &tmh, (kb0 + i) * 64, 0, fb);
                if (++stage == STAGES) {
                    stage = 0;
                    phase ^= 1;
                }
            }
        }
        return; // the consumers synchronise among themselves (named barrier 1)
    }

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    float d[NC / 2];
#pragma unroll
    for (int i = 0; i < NC / 2; i++) d[i] = 0.f;
    // up to DS_LAG stages' wgmma groups in flight: a group is a few short
    // wgmmas, and waiting for each before the next left the tensor pipe idle
    constexpr int DS_LAG = 4;
    int stage = 0;
    uint32_t phase = 0;
    for (int i = 0; i < nk; i++) {
        mbar_wait(smem_u32(&full[stage]), phase);
        const uint32_t a = base + stage * S::STAGE;
        const uint64_t da = desc_sw128(a), db = desc_sw128(a + S::A_BYTES);
        wgmma_fence();
#pragma unroll
        for (int k = 0; k < 4; k++) wgmma<NC, T>(d, da + 2 * k, db + 2 * k, 1);
        wgmma_commit();
        if (i >= DS_LAG) { // stage i - DS_LAG's wgmmas are done: hand it back
            wgmma_wait<DS_LAG>();
            if (lane == 0) mbar_arrive(smem_u32(&empty[(stage + STAGES - DS_LAG) % STAGES]));
        }
        if (++stage == STAGES) {
            stage = 0;
            phase ^= 1;
        }
    }
    wgmma_wait<0>();
#pragma unroll
    for (int i = 0; i < NC / 2; i++) reg_fence(d[i]);

    // d[4j + 2r + c]: row 16 warp + lane / 4 + 8r of the block (y's column r0 + row), token 8j + 2 (lane % 4) + c
    const int row0 = 16 * warp + lane / 4, col0 = 2 * (lane % 4);
    if (splits == 1) {
#pragma unroll
        for (int q = 0; q < NC / 2; q++) {
            const int row = row0 + 8 * ((q >> 1) & 1), col = col0 + 8 * (q >> 2) + (q & 1);
            if (col < M && r0 + row < H) y[(size_t)col * H + r0 + row] = from_f<T>(d[q]);
        }
        return;
    }
    float *mine = ws + (size_t)blockIdx.x * (64 * 16);
#pragma unroll
    for (int q = 0; q < NC / 2; q++) {
        const int row = row0 + 8 * ((q >> 1) & 1), col = col0 + 8 * (q >> 2) + (q & 1);
        mine[col * 64 + row] = d[q];
    }
    __threadfence(); // release: this block's partial before its count
    named_barrier(1, 128);
    if (threadIdx.x == 0) last = atomicAdd(&count[rb], 1u) == (unsigned)splits - 1;
    named_barrier(1, 128);
    if (!last) return;
    __threadfence(); // acquire: every split's partial after the count
    // thread t adds units t and t + 128 (NT 2) of 4 rows of one token (unit u:
    // token u / 16, rows 4 (u % 16)..+3), tokens past M skipped; every split's
    // loads are issued before the adds, so the block's tail is one L2 round
    // trip, not one a unit (a loop of 4-byte loads took 8 in turn at 9-16 tokens)
    const float4 *all = reinterpret_cast<const float4 *>(ws + (size_t)rb * splits * (64 * 16));
    float4 v[NT][MS];
#pragma unroll
    for (int j = 0; j < NT; j++)
#pragma unroll
        for (int q = 0; q < MS; q++)
            if (q < splits && (threadIdx.x + 128 * j) / 16 < M) v[j][q] = __ldcg(all + q * (64 * 16 / 4) + threadIdx.x + 128 * j);
#pragma unroll
    for (int j = 0; j < NT; j++) {
        const int u = threadIdx.x + 128 * j, col = u / 16, row = r0 + (u % 16) * 4;
        if (col >= M) continue;
        float4 x = v[j][0];
#pragma unroll
        for (int q = 1; q < MS; q++)
            if (q < splits) x.x += v[j][q].x, x.y += v[j][q].y, x.z += v[j][q].z, x.w += v[j][q].w;
        const float o[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
        for (int e = 0; e < 4; e++)
            if (row + e < H) y[(size_t)col * H + row + e] = from_f<T>(o[e]);
    }
    if (threadIdx.x == 0) count[rb] = 0; // for the next launch (the kernel's end makes it visible)
#endif
}

template <typename T, int NT, int PS, int MS> int launch(const kb::mlp::DownSplitK &L, cudaStream_t s)
{
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cfg.gridDim = dim3((unsigned)L.grid);
    cfg.blockDim = dim3(160);
    cfg.dynamicSmemBytes = DownShape<NT, PS>::SMEM;
    cfg.stream = s;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    return (int)cudaLaunchKernelEx(&cfg, down_tma<T, NT, PS, MS>, L.md, L.mh, (T *)L.y, L.ws, L.count, L.M, L.H, L.I, L.splits,
                                   L.kchunk);
}

template <typename T, int NT, int PS, int MS> int setup()
{
    return (int)cudaFuncSetAttribute(down_tma<T, NT, PS, MS>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     DownShape<NT, PS>::SMEM);
}

// f(T{}, NT, PS, MS) for the dtype's element type, the tokens' n8 blocks
// (NT 1: 1-8 tokens, 2: 9-16, down_splitk_hrows), the blocks an SM (1 or 2)
// and the splits' most (8; 16 two an SM only, which down_workspace checks
// once with the split count); fp32, other token counts and other PS: none
template <typename F> int with_kernel(int dtype, int M, int per_sm, int splits, F &&f)
{
    if (M < 1 || M > 16 || per_sm < 1 || per_sm > 2) return (int)cudaErrorInvalidValue;
    using one = std::integral_constant<int, 1>;
    using two = std::integral_constant<int, 2>;
    using ms = std::integral_constant<int, KB_MLP_DOWN_SPLITS>;
    using wide = std::integral_constant<int, KB_MLP_DOWN_MAX_SPLITS>;
    return kb::by_dtype(dtype, [&](auto t) -> int {
        if constexpr (std::is_same_v<decltype(t), float>) return (int)cudaErrorInvalidValue; // fp32: cuBLAS
        else {
            auto by_ps = [&](auto nt) {
                if (per_sm == 1) return f(t, nt, one{}, ms{});
                return splits > KB_MLP_DOWN_SPLITS ? f(t, nt, two{}, wide{}) : f(t, nt, two{}, ms{});
            };
            return kb::mlp::down_splitk_hrows(M) == 8 ? by_ps(one{}) : by_ps(two{});
        }
    });
}

} // namespace

int kb::mlp::down_splitk_setup(int dtype, int M, int per_sm, int splits)
{
    return with_kernel(dtype, M, per_sm, splits, [](auto t, auto nt, auto ps, auto ms) {
        return setup<decltype(t), decltype(nt)::value, decltype(ps)::value, decltype(ms)::value>();
    });
}

int kb::mlp::down_splitk(const DownSplitK &L, cudaStream_t s)
{
    return with_kernel(L.dtype, L.M, L.per_sm, L.splits, [&](auto t, auto nt, auto ps, auto ms) {
        return launch<decltype(t), decltype(nt)::value, decltype(ps)::value, decltype(ms)::value>(L, s);
    });
}
