// gate_up_swap: the Hopper gate/up kernel with the operands swapped (swap-AB):
// the weights are wgmma's 64-row A operand and the tokens its N, so a tile
// is 128 columns of h (rows of G and of U) by BN tokens, and a token count
// that is not a multiple of 128 wastes at most BN - 1 rows of a tile, not up
// to 127 (300 tokens: three tiles of 104, against fused_wgmma's three
// m-blocks of 128). Persistent and warp-specialised as fused_wgmma (one
// producer thread's TMA loads into a ring of stages, two consumer
// warpgroups); each consumer warpgroup owns 64 rows of G and the same 64 of
// U and issues two m64 nBN k16 wgmmas a k16 step, one a weight, so g and u
// of one (column, token) sit in the same register of its two accumulators.
// h leaves transposed: stmatrix .trans writes each 8 x 8 block into the
// tile's last stage in the 128-byte swizzle TMA reads, and one thread a
// warpgroup stores the [BN x 64] box. In clusters of 2 (CL) the two CTAs
// take token blocks 2i and 2i+1 of one weight tile, and each loads G's or U's
// 128 rows and multicasts them to both, halving the weights' L2 reads. Compiled
// into the sm_90a image only (the planner takes it on compute capability 9.x
// only).
#include <cuda.h> // CUtensorMap
#include <cuda_runtime.h>
#include <stdint.h>

#include <type_traits>

#include "../common.cuh"
#include "../ptx/barrier.cuh"
#include "../ptx/mbarrier.cuh"
#include "../ptx/stmatrix.cuh"
#include "../ptx/tma.cuh"
#include "../ptx/wgmma.cuh"
#include "epilogue.cuh"
#include "gate_up.cuh"
#include "plan.h"
#include "ring.cuh"

namespace {

using namespace kb::ptx;
using kb::mlp::pack2;
using kb::mlp::silu_mul;

// h [M, N] = silu(x G^T) * (x U^T), x [M, K], G and U [N, K]: TMA maps tmx
// (boxes of 64 columns x BN rows), tmg and tmu (64 x 128), tmh (64 columns x
// BN rows, 128-byte swizzle). A stage is [G's 128 rows | U's 128 rows | x's
// BN rows], 128 bytes each. Tile t (of a cluster): columns (t / m_groups)
// 128 of h, tokens ((t % m_groups) CL + rank) BN, so the CTAs running at once
// read the same weight tile; tile t on cluster t mod the clusters.
template <typename T, int BN, int STAGES, int CL>
__global__ void __launch_bounds__(384, 1)
    gate_up_swap(const __grid_constant__ CUtensorMap tmx, const __grid_constant__ CUtensorMap tmg,
                 const __grid_constant__ CUtensorMap tmu, const __grid_constant__ CUtensorMap tmh, int M, int N, int K)
{
#ifdef KB_PTX_SM90A
    asm volatile("griddepcontrol.launch_dependents;");
    constexpr int W_BYTES = 128 * 128, STAGE = 2 * W_BYTES + BN * 128;
    static_assert(BN % 8 == 0 && STAGE % 1024 == 0, "stages keep the 1024-byte alignment of 128B swizzle");
    static_assert(2 * BN * 128 <= STAGE, "both warpgroups' boxes of h fit in a stage");
    static_assert(CL == 1 || CL == 2, "clusters of 1 or 2 CTAs");
    extern __shared__ uint8_t smem_raw[];
    __shared__ __align__(8) uint64_t full[STAGES], empty[STAGES];
    const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    uint32_t rank = 0;
    if (CL > 1) asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    const int m_blocks = (M + BN - 1) / BN, m_groups = (m_blocks + CL - 1) / CL, n_blocks = (N + 127) / 128;
    const int tiles = m_groups * n_blocks, cluster = blockIdx.x / CL, clusters = gridDim.x / CL;
    const int nk = (K + 63) / 64;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) {
            mbar_init(smem_u32(&full[s]), 1);
            mbar_init(smem_u32(&empty[s]), CL * 2 * 4); // every consumer warp of the cluster
        }
        fence_mbar_init();
    }
    if (CL > 1)
        cluster_sync();
    else
        __syncthreads();

    if (wg == 2) { // producer
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (tid == 0) {
            prefetch_tensormap(&tmx);
            prefetch_tensormap(&tmg);
            prefetch_tensormap(&tmu);
            int stage = 0;
            uint32_t phase = 0;
            for (int t = cluster; t < tiles; t += clusters) {
                const int n0 = t / m_groups * 128, m0 = (t % m_groups * CL + (int)rank) * BN;
                for (int kb = 0; kb < nk; kb++) {
                    mbar_wait(smem_u32(&empty[stage]), phase ^ 1);
                    const uint32_t a = base + stage * STAGE, fb = smem_u32(&full[stage]);
                    mbar_expect_tx(fb, STAGE);
                    if (CL == 1) {
                        tma_load(a, &tmg, kb * 64, n0, fb);
                        tma_load(a + W_BYTES, &tmu, kb * 64, n0, fb);
                    } else { // G's rows from rank 0, U's from rank 1, into both CTAs' stage
                        tma_load_multicast(a + rank * W_BYTES, rank ? &tmu : &tmg, kb * 64, n0, fb, (1u << CL) - 1);
                    }
                    tma_load(a + 2 * W_BYTES, &tmx, kb * 64, m0, fb);
                    if (++stage == STAGES) {
                        stage = 0;
                        phase ^= 1;
                    }
                }
            }
        }
        __syncwarp();
    } else { // consumers
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
        const int warp = tid / 32, lane = tid % 32;
        int stage = 0;
        uint32_t phase = 0;
        float dg[BN / 2], du[BN / 2];
#pragma unroll
        for (int i = 0; i < BN / 2; i++) dg[i] = du[i] = 0.f;
        auto release = [&](int s) { // the stage is free once every CTA of the cluster is done with it
            if (lane == 0) {
                if (CL == 1)
                    mbar_arrive(smem_u32(&empty[s]));
                else
                    for (int c = 0; c < CL; c++) mbar_arrive_cluster(smem_u32(&empty[s]), (uint32_t)c);
            }
        };
        // d[4j + 2r + c]: column (of h) warp*16 + lane/4 + 8r of this warpgroup's
        // 64, token 8j + 2(lane%4) + c. Matrix q of a pair of token groups j, j + 1
        // is (j + q/2, r = q%2); lane l gives the address of its row l%8, token
        // 8(j + q/2) + l%8, whose 16 bytes are columns 8(2 warp + r) on, the
        // 16-byte chunk 2 warp + r swizzled by the row (token % 8).
        auto epilogue = [&](int m0, int n0, int s) {
            const uint32_t hs = base + s * STAGE + wg * (BN * 128);
            const int q = lane / 8, rr = lane % 8, chunk = warp * 2 + (q & 1);
            const uint32_t row_off = (uint32_t)(((chunk ^ rr) << 4));
            auto hv = [&](int j, int r) {
                const int i = 4 * j + 2 * r;
                return pack2<T>(silu_mul<T>(dg[i], du[i]), silu_mul<T>(dg[i + 1], du[i + 1]));
            };
#pragma unroll
            for (int j = 0; j + 1 < BN / 8; j += 2) {
                const int token = 8 * (j + q / 2) + rr;
                stmatrix_x4_trans(hs + token * 128 + row_off, hv(j, 0), hv(j, 1), hv(j + 1, 0), hv(j + 1, 1));
            }
            if constexpr (BN / 8 % 2) {
                constexpr int j = BN / 8 - 1;
                stmatrix_x2_trans(hs + (8 * j + rr) * 128 + row_off, hv(j, 0), hv(j, 1));
            }
            fence_proxy_async();
            named_barrier(2 + wg, 128);
            if (tid == 0) {
                if (n0 + wg * 64 < N && m0 < M) tma_store(&tmh, hs, n0 + wg * 64, m0);
                bulk_commit();
            }
        };
        auto issue = [&](int kb) {
            mbar_wait(smem_u32(&full[stage]), phase);
            const uint32_t a = base + stage * STAGE;
            const uint64_t dag = desc_sw128(a + wg * 64 * 128), dau = desc_sw128(a + W_BYTES + wg * 64 * 128),
                           db = desc_sw128(a + 2 * W_BYTES);
            wgmma_fence();
#pragma unroll
            for (int k = 0; k < 4; k++) {
                wgmma<BN, T>(dg, dag + 2 * k, db + 2 * k, kb > 0 || k > 0);
                wgmma<BN, T>(du, dau + 2 * k, db + 2 * k, kb > 0 || k > 0);
            }
            wgmma_commit();
        };
        int pending = -1; // the stage h's TMA stores read from, handed back once they have
        auto drain = [&] { kb::mlp::drain_stores(pending, tid, 2 + wg, release); };
        for (int t = cluster; t < tiles; t += clusters) {
            const int n0 = t / m_groups * 128, m0 = (t % m_groups * CL + (int)rank) * BN;
            const int prev = kb::mlp::consume_tile<STAGES>(nk, stage, phase, issue, drain, release);
            wgmma_wait<0>();
#pragma unroll
            for (int i = 0; i < BN / 2; i++) reg_fence(dg[i]), reg_fence(du[i]);
            named_barrier(1, 256); // both warpgroups' wgmmas are done with stage prev
            epilogue(m0, n0, prev);
            pending = prev;
        }
        drain();
        if (tid == 0) bulk_wait(); // h written before the kernel ends
    }
    if (CL > 1) cluster_sync(); // no CTA leaves while its peer may still signal its barriers
#endif
}

template <int BN> constexpr int stages() { return KB_MLP_SW_STAGES(BN); }

// Clusters of 1 launch as a plain grid, with no cluster attribute: the
// attribute (clusterDim 1) made the same kernel 20-24% slower at 256 x 4096 x
// 11008 (0.1656 ms against 0.1331), the CTAs placed otherwise.
template <typename T, int BN, int CL> cudaLaunchConfig_t launch_config(cudaLaunchAttribute *attr)
{
    cudaLaunchConfig_t cfg = {};
    cfg.blockDim = dim3(384);
    cfg.dynamicSmemBytes = KB_MLP_SW_SMEM(BN);
    if (CL > 1) {
        attr->id = cudaLaunchAttributeClusterDimension;
        attr->val.clusterDim.x = CL;
        attr->val.clusterDim.y = 1;
        attr->val.clusterDim.z = 1;
        cfg.attrs = attr;
        cfg.numAttrs = 1;
    }
    return cfg;
}

// clusters of this kernel (CTAs, for clusters of 1) that fit on the device at
// once (asked once; kbench uses one device); 0: none
template <typename T, int BN, int CL> int max_clusters(int sms)
{
    static int n = -1;
    if (n < 0) {
        auto kern = gate_up_swap<T, BN, stages<BN>(), CL>;
        int per_sm = 0;
        if (cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, KB_MLP_SW_SMEM(BN)) != cudaSuccess) {
            n = 0;
        } else if (CL == 1) {
            if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, 384, KB_MLP_SW_SMEM(BN)) != cudaSuccess)
                per_sm = 0;
            n = per_sm * (sms > 0 ? sms : 132);
        } else {
            cudaLaunchAttribute attr;
            cudaLaunchConfig_t cfg = launch_config<T, BN, CL>(&attr);
            cfg.gridDim = dim3(CL * (sms > 0 ? sms : 132));
            if (cudaOccupancyMaxActiveClusters(&n, kern, &cfg) != cudaSuccess || n < 1) n = 0;
        }
        cudaGetLastError();
    }
    return n;
}

template <typename T, int BN, int CL> int launch(const kb::mlp::WgmmaLaunch &L, cudaStream_t s)
{
    cudaLaunchAttribute attr;
    cudaLaunchConfig_t cfg = launch_config<T, BN, CL>(&attr);
    cfg.gridDim = dim3((unsigned)L.grid);
    cfg.stream = s;
    return (int)cudaLaunchKernelEx(&cfg, gate_up_swap<T, BN, stages<BN>(), CL>, L.mx, L.mg, L.mu, L.mh, L.M, L.N, L.K);
}

template <int V> using ic = std::integral_constant<int, V>;

// f(T{}, BN) for the kernels there are (KB_MLP_SW_BNS); -1: no such kernel
template <typename T, typename F> int with_bn(int bn, F &&f)
{
    switch (bn) {
    case 80: return f(T{}, ic<80>{});
    case 96: return f(T{}, ic<96>{});
    case 104: return f(T{}, ic<104>{});
    case 112: return f(T{}, ic<112>{});
    case 128: return f(T{}, ic<128>{});
    }
    return -1;
}

template <typename F> int with_kernel(int dtype, int bn, F &&f)
{
    switch (dtype) {
    case 1: return with_bn<__half>(bn, f);
    case 2: return with_bn<__nv_bfloat16>(bn, f);
    }
    return -1;
}

} // namespace

int kb::mlp::swap_ctas(int dtype, int bn, int cl, int sm_count)
{
    const int n = with_kernel(dtype, bn, [&](auto t, auto nbn) {
        using T = decltype(t);
        constexpr int BN = decltype(nbn)::value;
        return cl == 2 ? max_clusters<T, BN, 2>(sm_count) : cl == 1 ? max_clusters<T, BN, 1>(sm_count) : 0;
    });
    return n > 0 ? n : 0;
}

int kb::mlp::swap_launch(const WgmmaLaunch &L, cudaStream_t s)
{
    const int rc = with_kernel(L.dtype, L.bn, [&](auto t, auto nbn) {
        using T = decltype(t);
        constexpr int BN = decltype(nbn)::value;
        return L.cl == 2 ? launch<T, BN, 2>(L, s) : L.cl == 1 ? launch<T, BN, 1>(L, s) : -1;
    });
    return rc < 0 ? (int)cudaErrorInvalidValue : rc;
}
