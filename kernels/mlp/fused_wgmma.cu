// fused_wgmma: the Hopper gate/up kernel, h = silu(x G^T) * (x U^T) in one
// persistent, warp-specialised kernel (sm_90a): TMA loads into a ring of
// shared-memory stages, m64 n(2 BN) k16 wgmmas whose B operand is G's tile
// stacked on U's, so one accumulator holds g in its first BN columns and u in
// its last BN: the same thread holds g[r][c] and u[r][c] and the epilogue is
// register-local. Clusters of 2 CTAs multicast the G and U tiles. The tile
// (warpgroups, BN, cluster, m-group walk, TMA stores) is the planner's
// (plan.c); fused.cu makes the tensor maps. Compiled into the sm_90a image
// only: the sm_80 image gets empty kernels the host never launches there
// (the planner takes wgmma on compute capability 9.x only).
#include <cuda.h> // CUtensorMap
#include <cuda_runtime.h>
#include <stdint.h>

#include <type_traits>

#include "../common.cuh"
#include "../ptx/barrier.cuh"
#include "../ptx/mbarrier.cuh"
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
using kb::mlp::store2;

#ifdef KB_PTX_SM90A
// Tile t of the persistent loop -> (m-group, n-block): `group` m-groups walk
// the n-blocks together, m fastest, so the CTAs running at once share the
// weight tiles they read, and x's rows of the group stay in L2.
__device__ __forceinline__ void tile_coords(int t, int m_groups, int n_blocks, int group, int &mg, int &nb)
{
    const int per = group * n_blocks, first = t / per * group;
    const int size = min(m_groups - first, group), w = t - first * n_blocks;
    mg = first + w % size;
    nb = w / size;
}

#endif // KB_PTX_SM90A

// The dynamic scheduler's counters (dyn): the next tile to hand out, and
// the CTAs whose producer has taken its last; the last CTA sets both back to
// 0 for the next launch. One launch at a time may use them (kbench runs one;
// two at once on different streams would share them). Declared in every
// compilation pass: the host registers the variables of the last one.
__device__ unsigned int g_next_tile, g_ctas_done;

// h [M, N] = silu(x G^T) * (x U^T), x [M, K], G and U [N, K] (TMA maps tmx,
// tmg, tmu, boxes of 64 columns and BM or BN rows). NWG consumer
// warpgroups (64 rows of the BM = 64 NWG row tile each) and one producer
// warpgroup (the last); BN columns of h per tile, so the B operand is
// 2 BN rows (G's BN, then U's BN) and each wgmma is m64 n(2 BN) k16.
// STAGES stages of [x tile | G tile | U tile], 64 columns (128 bytes) deep.
// CL = 2: clusters of two CTAs take m-blocks 2i and 2i+1 of one n-block;
// CTA r loads the G (r = 0) or U (r = 1) tile for both (multicast), so
// each stage's empty barrier waits for the consumer warps of both CTAs.
//
// dyn (clusters of 1): tiles go out in order from a global counter as CTAs
// free up, not tile t to CTA t mod the grid, so the m-blocks of an n-block
// start together however long each tile takes (with a short last m-block,
// the static walk drifts apart and G and U are read from DRAM about 1.5
// times: ncu, H100, 2026-11-25). The producer thread takes the next tile
// when it starts loading one and passes it to the consumers through a
// two-slot ring in shared memory.
//
// The epilogue (tma_store, where h's rows are 16-byte multiples): once both
// warpgroups' wgmmas are done with the tile's last stage, each writes its 64
// rows of h into that stage's shared memory as BN/16 boxes of 64 x 16 (rows of
// 32 bytes: a warp's 4-byte writes, 8 rows x 4 lanes, meet 2-way bank
// conflicts at most) and one thread stores them by TMA (tmh); the stage goes
// back to the producer once the stores have read it, after the next tile's
// first wgmmas are issued. Otherwise every thread stores its h values,
// guarded at the edges (the register-bound path ncu showed stalling on the
// stores: H100, 2026-11-23, 14% of the kernel's warp samples).
template <typename T, int NWG, int BN, int STAGES, int CL>
__global__ void __launch_bounds__(128 * (NWG + 1), 1)
    gate_up_wgmma(const __grid_constant__ CUtensorMap tmx, const __grid_constant__ CUtensorMap tmg,
                  const __grid_constant__ CUtensorMap tmu, const __grid_constant__ CUtensorMap tmh, T *__restrict__ h,
                  int M, int N, int K, int group, int tma_store_h, int dyn)
{
#ifdef KB_PTX_SM90A
    static_assert(CL == 1 || CL == 2, "clusters of 1 or 2 CTAs");
    // a down_splitk launched after this kernel may start now: its blocks load
    // D as SMs free up, and wait for this grid before they load h (down_splitk.cu)
    asm volatile("griddepcontrol.launch_dependents;");
    if (CL > 1) dyn = 0; // the host plans dyn with clusters of 1 only
    constexpr int BM = 64 * NWG, A_BYTES = BM * 128, B_HALF = BN * 128, STAGE = A_BYTES + 2 * B_HALF;
    static_assert(STAGE % 1024 == 0, "stages keep the 1024-byte alignment of 128B swizzle");
    static_assert(BN % 16 == 0 && NWG * 64 * BN * (int)sizeof(T) <= STAGE, "h's tile fits in a stage, in 16-column boxes");
    extern __shared__ uint8_t smem_raw[];
    __shared__ __align__(8) uint64_t full[STAGES], empty[STAGES], tfull[2], tempty[2];
    __shared__ volatile int tile_ring[2];
    const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    uint32_t rank = 0;
    if (CL > 1) asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    const int m_blocks = (M + BM - 1) / BM, m_groups = (m_blocks + CL - 1) / CL, n_blocks = (N + BN - 1) / BN;
    const int tiles = m_groups * n_blocks, cluster = blockIdx.x / CL, clusters = gridDim.x / CL;
    const int nk = (K + 63) / 64;
    const int xrows = KB_MLP_WG_XROWS(M, BM); // x's box (plan.h), as fused.cu's map

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) {
            mbar_init(smem_u32(&full[s]), 1);
            mbar_init(smem_u32(&empty[s]), CL * NWG * 4);
        }
        for (int s = 0; s < 2; s++) {
            mbar_init(smem_u32(&tfull[s]), 1);
            mbar_init(smem_u32(&tempty[s]), NWG * 128);
        }
        fence_mbar_init();
    }
    if (CL > 1)
        cluster_sync();
    else
        __syncthreads();

    if (wg == NWG) { // producer
        if (NWG == 2) asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (tid == 0) {
            prefetch_tensormap(&tmx);
            prefetch_tensormap(&tmg);
            prefetch_tensormap(&tmu);
            int stage = 0, slot = 0;
            uint32_t phase = 0, tphase = 0;
            // the next tile: static, or the counter's next, handed on through the ring
            auto next_tile = [&](int t) {
                if (!dyn) return t < 0 ? cluster : t + clusters;
                const int v = (int)atomicAdd(&g_next_tile, 1u); // >= tiles: the end, for the consumers too
                mbar_wait(smem_u32(&tempty[slot]), tphase ^ 1);
                tile_ring[slot] = v;
                mbar_arrive(smem_u32(&tfull[slot])); // release: the consumers' acquire sees v
                if (++slot == 2) {
                    slot = 0;
                    tphase ^= 1;
                }
                return v;
            };
            for (int t = next_tile(-1); t < tiles; t = next_tile(t)) {
                int mg, nb;
                tile_coords(t, m_groups, n_blocks, group, mg, nb);
                const int m0 = (mg * CL + (int)rank) * BM, n0 = nb * BN;
                for (int kb = 0; kb < nk; kb++) {
                    mbar_wait(smem_u32(&empty[stage]), phase ^ 1);
                    const uint32_t a = base + stage * STAGE, b = a + A_BYTES, fb = smem_u32(&full[stage]);
                    mbar_expect_tx(fb, STAGE - (BM - xrows) * 128);
                    tma_load(a, &tmx, kb * 64, m0, fb);
                    if (CL == 1) {
                        tma_load(b, &tmg, kb * 64, n0, fb);
                        tma_load(b + B_HALF, &tmu, kb * 64, n0, fb);
                    } else {
                        tma_load_multicast(b + rank * B_HALF, rank ? &tmu : &tmg, kb * 64, n0, fb, (1u << CL) - 1);
                    }
                    if (++stage == STAGES) {
                        stage = 0;
                        phase ^= 1;
                    }
                }
            }
            if (dyn) { // this CTA takes no more tiles; the last to get here resets the counters
                __threadfence(); // release: this CTA's takes come before its count
                if (atomicAdd(&g_ctas_done, 1u) == gridDim.x - 1) {
                    __threadfence(); // acquire: every CTA's takes come before the reset
                    g_next_tile = 0;
                    g_ctas_done = 0; // the kernel's end makes both visible to the next launch
                }
            }
        }
        __syncwarp();
    } else { // consumers
        if (NWG == 2) asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
        const int warp = tid / 32, lane = tid % 32;
        int stage = 0;
        uint32_t phase = 0;
        float d[BN];
#pragma unroll
        for (int i = 0; i < BN; i++) d[i] = 0.f;
        auto release = [&](int s) {
            if (lane == 0) {
                if (CL == 1)
                    mbar_arrive(smem_u32(&empty[s]));
                else
                    for (int c = 0; c < CL; c++) mbar_arrive_cluster(smem_u32(&empty[s]), (uint32_t)c);
            }
        };
        // d[4j + 2r + c]: row warp*16 + lane/4 + 8r, column 8j + 2(lane%4) + c; g in
        // columns 0..BN-1, u in BN..2BN-1, BN/2 registers further on
        auto epilogue = [&](const float(&d)[BN], int m0, int n0) {
            const int row = m0 + wg * 64 + warp * 16 + lane / 4, col = n0 + (lane % 4) * 2;
#pragma unroll
            for (int j = 0; j < BN / 8; j++) {
                const float *g = d + 4 * j, *u = d + BN / 2 + 4 * j;
                store2<T>(h, M, N, row, col + 8 * j, silu_mul<T>(g[0], u[0]), silu_mul<T>(g[1], u[1]));
                store2<T>(h, M, N, row + 8, col + 8 * j, silu_mul<T>(g[2], u[2]), silu_mul<T>(g[3], u[3]));
            }
        };
        // this warpgroup's 64 x BN of h into stage `s` (box b of 16 columns at
        // 64 x 32 bytes each), then one thread's TMA stores of its boxes
        auto epilogue_tma = [&](const float(&d)[BN], int m0, int n0, int s) {
            const uint32_t hs = base + s * STAGE + wg * (64 * BN * 2);
            const int r = warp * 16 + lane / 4, c = (lane % 4) * 4; // byte offset in a box row
#pragma unroll
            for (int j = 0; j < BN / 8; j++) {
                const float *g = d + 4 * j, *u = d + BN / 2 + 4 * j;
                const uint32_t box = hs + (j / 2) * (64 * 32) + (j % 2) * 16 + c;
                st_shared_u32(box + r * 32, pack2<T>(silu_mul<T>(g[0], u[0]), silu_mul<T>(g[1], u[1])));
                st_shared_u32(box + (r + 8) * 32, pack2<T>(silu_mul<T>(g[2], u[2]), silu_mul<T>(g[3], u[3])));
            }
            fence_proxy_async();
            named_barrier(2 + wg, 128);
            if (tid == 0) {
#pragma unroll
                for (int b = 0; b < BN / 16; b++)
                    if (n0 + 16 * b < N) tma_store(&tmh, hs + b * (64 * 32), n0 + 16 * b, m0 + wg * 64);
                bulk_commit();
            }
        };
        // k-block kb's wgmmas on the current stage, once its bytes landed (kb 0 overwrites d)
        auto issue = [&](int kb) {
            mbar_wait(smem_u32(&full[stage]), phase);
            const uint32_t a = base + stage * STAGE;
            const uint64_t da = desc_sw128(a + wg * 64 * 128), db = desc_sw128(a + A_BYTES);
            wgmma_fence();
#pragma unroll
            for (int k = 0; k < 4; k++) wgmma<2 * BN, T>(d, da + 2 * k, db + 2 * k, kb > 0 || k > 0);
            wgmma_commit();
        };
        auto finish = [&] { // the tile's wgmmas done: d final
            wgmma_wait<0>();
#pragma unroll
            for (int i = 0; i < BN; i++) reg_fence(d[i]);
        };
        int slot = 0;
        uint32_t tphase = 0;
        // the next tile: static, or the producer's from the ring (each thread
        // reads it, then hands the slot back: its own arrive releases its own
        // read, so the producer's next write to the slot waits for every read)
        auto next_tile = [&](int t) {
            if (!dyn) return t < 0 ? cluster : t + clusters;
            mbar_wait(smem_u32(&tfull[slot]), tphase);
            const int v = tile_ring[slot];
            mbar_arrive(smem_u32(&tempty[slot]));
            if (++slot == 2) {
                slot = 0;
                tphase ^= 1;
            }
            return v;
        };
        int pending = -1; // the stage h's TMA stores read from, handed back once they have
        auto drain = [&] { kb::mlp::drain_stores(pending, tid, 2 + wg, release); };
        for (int t = next_tile(-1); t < tiles; t = next_tile(t)) {
            int mg, nb;
            tile_coords(t, m_groups, n_blocks, group, mg, nb);
            const int m0 = (mg * CL + (int)rank) * BM, n0 = nb * BN;
            const int prev = kb::mlp::consume_tile<STAGES>(nk, stage, phase, issue, drain, release);
            finish();
            if (tma_store_h) {
                if (NWG > 1) named_barrier(1, 128 * NWG); // every warpgroup's wgmmas are done with stage prev
                epilogue_tma(d, m0, n0, prev);
                pending = prev;
            } else {
                release(prev);
                epilogue(d, m0, n0);
            }
        }
        drain();
        if (tid == 0) bulk_wait(); // h written before the kernel ends
    }
    if (CL > 1) cluster_sync(); // no CTA leaves while its peer may still signal its barriers
#else
    (void)&g_next_tile, (void)&g_ctas_done; // used in the sm_90a pass only
#endif
}

template <int NWG, int BN> struct Shape {
    static constexpr int BM = 64 * NWG, STAGE = KB_MLP_WG_STAGE(NWG, BN);
    // as many stages as fit in 220 KiB (of the 227 a block may have), 12 at most
    // (BN 128: 4 stages of 48 KiB; 112: 5 of 44; 96: 5 of 40): plan.h's macros,
    // which the planner's occupancy model reads too
    static constexpr int STAGES = KB_MLP_WG_STAGES(NWG, BN);
    static constexpr int SMEM = KB_MLP_WG_SMEM(NWG, BN); // + alignment to 1024
    static_assert(STAGE == BM * 128 + 2 * BN * 128, "a stage is x's BM rows and G's and U's BN rows, 128 bytes each");
};

template <typename T, int NWG, int BN, int CL> cudaLaunchConfig_t launch_config(cudaLaunchAttribute *attr)
{
    cudaLaunchConfig_t cfg = {};
    attr->id = cudaLaunchAttributeClusterDimension;
    attr->val.clusterDim.x = CL;
    attr->val.clusterDim.y = 1;
    attr->val.clusterDim.z = 1;
    cfg.blockDim = dim3(128 * (NWG + 1));
    cfg.dynamicSmemBytes = Shape<NWG, BN>::SMEM;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    return cfg;
}

// How many clusters of this kernel fit on the device at once (asked once;
// kbench uses one device); 0: it cannot run here.
template <typename T, int NWG, int BN, int CL> int max_clusters(int sms)
{
    static int n = -1;
    if (n < 0) {
        n = 0;
        auto kern = gate_up_wgmma<T, NWG, BN, Shape<NWG, BN>::STAGES, CL>;
        cudaLaunchAttribute attr;
        cudaLaunchConfig_t cfg = launch_config<T, NWG, BN, CL>(&attr);
        cfg.gridDim = dim3(CL * (sms > 0 ? sms : 132));
        if (cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, Shape<NWG, BN>::SMEM) != cudaSuccess ||
            cudaOccupancyMaxActiveClusters(&n, kern, &cfg) != cudaSuccess || n < 1) {
            cudaGetLastError();
            n = 0;
        }
    }
    return n;
}

template <typename T, int NWG, int BN, int CL> int launch(const kb::mlp::WgmmaLaunch &L, cudaStream_t s)
{
    cudaLaunchAttribute attr;
    cudaLaunchConfig_t cfg = launch_config<T, NWG, BN, CL>(&attr);
    cfg.gridDim = dim3((unsigned)L.grid);
    cfg.stream = s;
    return (int)cudaLaunchKernelEx(&cfg, gate_up_wgmma<T, NWG, BN, Shape<NWG, BN>::STAGES, CL>, L.mx, L.mg, L.mu, L.mh,
                                   (T *)L.h, L.M, L.N, L.K, L.group, L.tma_store, L.dyn);
}

template <int V> using ic = std::integral_constant<int, V>;

// f(T{}, NWG, BN, CL) for the kernels there are: one consumer warpgroup with
// BN 128, 112, 96 or 64 in clusters of 1; two with those BN in clusters of 1
// or 2. -1: no such kernel.
template <typename T, typename F> int with_tile(int wg, int bn, int cl, F &&f)
{
    if (wg == 1 && cl == 1) {
        switch (bn) {
        case 128: return f(T{}, ic<1>{}, ic<128>{}, ic<1>{});
        case 112: return f(T{}, ic<1>{}, ic<112>{}, ic<1>{});
        case 96: return f(T{}, ic<1>{}, ic<96>{}, ic<1>{});
        case 64: return f(T{}, ic<1>{}, ic<64>{}, ic<1>{});
        }
        return -1;
    }
    if (wg != 2 || (cl != 1 && cl != 2)) return -1;
    switch (bn) {
    case 128: return cl == 2 ? f(T{}, ic<2>{}, ic<128>{}, ic<2>{}) : f(T{}, ic<2>{}, ic<128>{}, ic<1>{});
    case 112: return cl == 2 ? f(T{}, ic<2>{}, ic<112>{}, ic<2>{}) : f(T{}, ic<2>{}, ic<112>{}, ic<1>{});
    case 96: return cl == 2 ? f(T{}, ic<2>{}, ic<96>{}, ic<2>{}) : f(T{}, ic<2>{}, ic<96>{}, ic<1>{});
    case 64: return cl == 2 ? f(T{}, ic<2>{}, ic<64>{}, ic<2>{}) : f(T{}, ic<2>{}, ic<64>{}, ic<1>{});
    }
    return -1;
}

template <typename F> int with_kernel(int dtype, int wg, int bn, int cl, F &&f)
{
    switch (dtype) {
    case 1: return with_tile<__half>(wg, bn, cl, f);
    case 2: return with_tile<__nv_bfloat16>(wg, bn, cl, f);
    }
    return -1; // fp32: no wgmma kernel
}

} // namespace

int kb::mlp::wgmma_clusters(int dtype, int wg, int bn, int cl, int sm_count)
{
    const int n = with_kernel(dtype, wg, bn, cl, [&](auto t, auto nwg, auto nbn, auto ncl) {
        return max_clusters<decltype(t), decltype(nwg)::value, decltype(nbn)::value, decltype(ncl)::value>(sm_count);
    });
    return n > 0 ? n : 0;
}

int kb::mlp::wgmma_launch(const WgmmaLaunch &L, cudaStream_t s)
{
    const int rc = with_kernel(L.dtype, L.wg, L.bn, L.cl, [&](auto t, auto nwg, auto nbn, auto ncl) {
        return launch<decltype(t), decltype(nwg)::value, decltype(nbn)::value, decltype(ncl)::value>(L, s);
    });
    return rc < 0 ? (int)cudaErrorInvalidValue : rc;
}
