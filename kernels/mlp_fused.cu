// The SwiGLU MLP's fused gate/up projection: h = silu(x G^T) * (x U^T), one
// kernel, g and u kept in fp32 registers and never stored; then the down
// projection y = h D^T through cuBLAS (kb_linear_cublas).
//
// Three gate/up kernels, chosen at run time:
//  - Hopper (compute capability 9.x, bf16/fp16, hidden * 2 bytes a multiple
//    of 16 so TMA can address the rows): a persistent, warp-specialised
//    wgmma kernel. One producer warp issues TMA loads (128-byte swizzle) of
//    x's [BM x 64] tile and G's and U's [BN x 64] tiles into a ring of
//    shared-memory stages guarded by mbarriers (full: the bytes landed;
//    empty: every consumer warp is done reading). Each consumer warpgroup
//    owns 64 rows of the tile and issues m64 n(2 BN) k16 wgmmas whose B
//    operand is G's tile stacked on U's, so one accumulator holds g in its
//    first BN columns and u in its last BN: the same thread holds g[r][c]
//    and u[r][c], and the epilogue computes silu(g) * u in registers and
//    stores h. With a cluster of 2 CTAs (two m-blocks of the same n-block)
//    each CTA loads one of the G/U halves and multicasts it to both.
//  - Elsewhere (sm_80+, bf16/fp16, any shape): mma.sync m16n8k16 with
//    cp.async staging (scalar loads where rows are not 16-byte aligned) and
//    the same epilogue.
//  - fp32: a CUDA-core register-tiled kernel (true fp32, whatever tf32 says).
//
// Defaults (measured and verified on the H100, 2026-11-23): tokens > 64:
// two consumer warpgroups, BM 128, BN 128, 112 or 96 (m64n(2 BN)k16) by
// pick_bn's wave model (4 or 5 stages of up to 48 KiB), clusters of 2 when
// tokens > 128 make an even number of 128-row blocks;
// tokens <= 64: one consumer warpgroup,
// BM 64, BN 64, 8 stages.
//
// KBENCH_FUSED (environment, read once; comma-separated) steers it for
// experiments: "mma" the portable kernel on Hopper; "c1"/"c2" the cluster
// size; "w1"/"w2" consumer warpgroups; "n<BN>" the tile width (w2: 128,
// 112, 96, 64; w1: 128, 64; unset: pick_bn's for w2, 64 for w1);
// "g<N>" m-groups walking the n-blocks together; "s0" the epilogue's
// register stores instead of TMA stores from shared memory.
#include <cuda.h> // CUtensorMap and its enums only: the encoder comes from cudaGetDriverEntryPoint, no -lcuda
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.cuh"
#include "kernels.h"

namespace {

using kb::from_f;
using kb::to_f;

// silu(g) * u in fp32. bf16: sigmoid through one tanh.approx (abs error
// ~2^-11, far under bf16's 2^-8 step); fp16 and fp32: exp and a divide.
template <typename T> __device__ __forceinline__ float silu_mul(float g, float u)
{
    return g / (1.0f + expf(-g)) * u;
}
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
template <> __device__ __forceinline__ float silu_mul<__nv_bfloat16>(float g, float u)
{
    float t; // sigmoid(g) = (1 + tanh(g/2)) / 2
    asm("tanh.approx.f32 %0, %1;" : "=f"(t) : "f"(0.5f * g));
    return g * fmaf(0.5f, t, 0.5f) * u;
}
template <> __device__ __forceinline__ float silu_mul<__half>(float g, float u)
{
    return __fdividef(g, 1.0f + __expf(-g)) * u;
}
#endif

// two 16-bit values in one 32-bit word, the first in the low half
template <typename T> __device__ __forceinline__ uint32_t pack2(float a, float b)
{
    T e[2] = {from_f<T>(a), from_f<T>(b)};
    uint32_t v;
    memcpy(&v, e, 4);
    return v;
}

// Two adjacent h values of row `row` at column `col` (col even), guarded; a
// pair store where the row pitch keeps it 4-byte aligned.
template <typename T>
__device__ __forceinline__ void store2(T *__restrict__ h, int M, int N, int row, int col, float h0, float h1)
{
    if (row >= M || col >= N) return;
    T *p = h + (size_t)row * N + col;
    if constexpr (sizeof(T) == 2) {
        if ((N & 1) == 0) { // col even, N even: 4-byte aligned, and col + 1 < N
            *reinterpret_cast<uint32_t *>(p) = pack2<T>(h0, h1);
            return;
        }
    }
    p[0] = from_f<T>(h0);
    if (col + 1 < N) p[1] = from_f<T>(h1);
}

// ---- Hopper: TMA + wgmma, warp-specialised, persistent -----------------------
// Compiled into the sm_90a image only; the sm_80 image gets an empty kernel
// the host never launches there (it checks the compute capability).
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define KB_SM90A 1
#endif

// d (m64 x N, fp32, the wgmma accumulator layout) += A (64 x 16, descriptor
// da) * B (N x 16, K-major, descriptor db)^T; acc = 0: d = A * B^T.
template <int N, typename T> __device__ void wgmma(float (&d)[N / 2], uint64_t da, uint64_t db, int acc);

#ifdef KB_SM90A
// The accumulator operands: KB_ACC<n> lists "+f"(d[0]) .. "+f"(d[n-1]) and
// KB_REG<n> the matching "%0,...,%<n-1>" of the instruction.
#define KB_REG64 \
    "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15" ","\
    "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31" ","\
    "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47" ","\
    "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63"
#define KB_ACC64 \
    "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
    "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
    "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
    "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
    "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
    "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
    "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
    "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#define KB_REG96 KB_REG64 "," \
    "%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79" ","\
    "%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95"
#define KB_ACC96 KB_ACC64, \
    "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
    "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
    "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
    "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
#define KB_REG112 KB_REG96 "," \
    "%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111"
#define KB_ACC112 KB_ACC96, \
    "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), \
    "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111])
#define KB_REG128 KB_REG112 "," \
    "%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127"
#define KB_ACC128 KB_ACC112, \
    "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), \
    "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])

// wgmma.mma_async m64nNk16, fp32 accumulators, A and B from shared memory
// (descriptors), both K-major; acc = 0 overwrites d.
#define KB_WGMMA(N, T, TS, REGS, NR, DESC, PRED, ...)                                                             \
    template <> __device__ __forceinline__ void wgmma<N, T>(float(&d)[NR], uint64_t da, uint64_t db, int acc)       \
    {                                                                                                              \
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " PRED ", 0;\n"                                              \
                     "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TS "." TS " "                               \
                     "{" REGS "}, " DESC ", p, 1, 1, 0, 0;\n}\n"                                                     \
                     : __VA_ARGS__                                                                                 \
                     : "l"(da), "l"(db), "r"(acc));                                                               \
    }
KB_WGMMA(128, __nv_bfloat16, "bf16", KB_REG64, 64, "%64, %65", "%66", KB_ACC64)
KB_WGMMA(128, __half, "f16", KB_REG64, 64, "%64, %65", "%66", KB_ACC64)
KB_WGMMA(192, __nv_bfloat16, "bf16", KB_REG96, 96, "%96, %97", "%98", KB_ACC96)
KB_WGMMA(192, __half, "f16", KB_REG96, 96, "%96, %97", "%98", KB_ACC96)
KB_WGMMA(224, __nv_bfloat16, "bf16", KB_REG112, 112, "%112, %113", "%114", KB_ACC112)
KB_WGMMA(224, __half, "f16", KB_REG112, 112, "%112, %113", "%114", KB_ACC112)
KB_WGMMA(256, __nv_bfloat16, "bf16", KB_REG128, 128, "%128, %129", "%130", KB_ACC128)
KB_WGMMA(256, __half, "f16", KB_REG128, 128, "%128, %129", "%130", KB_ACC128)
#undef KB_WGMMA

__device__ __forceinline__ uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity)
{
    uint32_t done;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(bar), "r"(parity)
                     : "memory");
    } while (!done);
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
// arrive on the barrier at the same shared-memory offset in CTA `cta` of the cluster
__device__ __forceinline__ void mbar_arrive_cluster(uint32_t bar, uint32_t cta)
{
    uint32_t remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(bar), "r"(cta));
    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(remote) : "memory");
}
__device__ __forceinline__ void cluster_sync()
{
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// a [rows x 64-element] box at (c0 = column, c1 = row) into shared memory, 128B-swizzled
__device__ __forceinline__ void tma_load(uint32_t dst, const CUtensorMap *map, int c0, int c1, uint32_t bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 ::"r"(dst), "l"((uint64_t)map), "r"(c0), "r"(c1), "r"(bar)
                 : "memory");
}
// the same box written to every CTA of `mask` in the cluster (same offsets), each CTA's barrier told
__device__ __forceinline__ void tma_load_multicast(uint32_t dst, const CUtensorMap *map, int c0, int c1, uint32_t bar,
                                                   uint16_t mask)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%2, %3}], [%4], %5;"
                 ::"r"(dst), "l"((uint64_t)map), "r"(c0), "r"(c1), "r"(bar), "h"(mask)
                 : "memory");
}
// h's 64 x 16 box at (c0 = column, c1 = row) from shared memory (rows of 32
// bytes, no swizzle) to global memory, in this thread's bulk group; TMA
// writes only the part inside the tensor
__device__ __forceinline__ void tma_store(const CUtensorMap *map, uint32_t src, int c0, int c1)
{
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];" ::"l"((uint64_t)map),
                 "r"(src), "r"(c0), "r"(c1)
                 : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
// this thread's bulk stores have read their shared memory (it may be reused)
__device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); }
// ... and written global memory
__device__ __forceinline__ void bulk_wait() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }
// this thread's shared-memory writes visible to the async proxy (TMA)
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
__device__ __forceinline__ void named_barrier(int id, int threads)
{
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void st_shared_u32(uint32_t addr, uint32_t v)
{
    asm volatile("st.shared.u32 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N> __device__ __forceinline__ void wgmma_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
// keeps the compiler from moving register reads or writes of v across it
__device__ __forceinline__ void reg_fence(float &v) { asm volatile("" : "+f"(v)::"memory"); }

// A K-major operand of 8-row groups 1024 bytes apart, rows of 128 bytes,
// 128-byte swizzle (what TMA's CU_TENSOR_MAP_SWIZZLE_128B writes): start
// address >> 4 in bits 0-13, leading byte offset (unused here) 1, stride
// byte offset 1024 >> 4 in bits 32-45, swizzle mode 1 (128B) in bits 62-63.
// The tile is 1024-byte aligned (base offset 0); the next k16 slice is 32
// bytes on: +2 in the address field.
__device__ __forceinline__ uint64_t desc_sw128(uint32_t addr)
{
    return (uint64_t)((addr & 0x3FFFF) >> 4) | (1ull << 16) | ((uint64_t)(1024 >> 4) << 32) | (1ull << 62);
}
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

#endif // KB_SM90A

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
                  int M, int N, int K, int group, int tma_store_h)
{
#ifdef KB_SM90A
    static_assert(CL == 1 || CL == 2, "clusters of 1 or 2 CTAs");
    constexpr int BM = 64 * NWG, A_BYTES = BM * 128, B_HALF = BN * 128, STAGE = A_BYTES + 2 * B_HALF;
    static_assert(STAGE % 1024 == 0, "stages keep the 1024-byte alignment of 128B swizzle");
    static_assert(BN % 16 == 0 && NWG * 64 * BN * (int)sizeof(T) <= STAGE, "h's tile fits in a stage, in 16-column boxes");
    extern __shared__ uint8_t smem_raw[];
    __shared__ __align__(8) uint64_t full[STAGES], empty[STAGES];
    const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    uint32_t rank = 0;
    if (CL > 1) asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    const int m_blocks = (M + BM - 1) / BM, m_groups = (m_blocks + CL - 1) / CL, n_blocks = (N + BN - 1) / BN;
    const int tiles = m_groups * n_blocks, cluster = blockIdx.x / CL, clusters = gridDim.x / CL;
    const int nk = (K + 63) / 64;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) {
            mbar_init(smem_u32(&full[s]), 1);
            mbar_init(smem_u32(&empty[s]), CL * NWG * 4);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    if (CL > 1)
        cluster_sync();
    else
        __syncthreads();

    if (wg == NWG) { // producer
        if (NWG == 2) asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (tid == 0) {
            asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)&tmx) : "memory");
            asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)&tmg) : "memory");
            asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)&tmu) : "memory");
            int stage = 0;
            uint32_t phase = 0;
            for (int t = cluster; t < tiles; t += clusters) {
                int mg, nb;
                tile_coords(t, m_groups, n_blocks, group, mg, nb);
                const int m0 = (mg * CL + (int)rank) * BM, n0 = nb * BN;
                for (int kb = 0; kb < nk; kb++) {
                    mbar_wait(smem_u32(&empty[stage]), phase ^ 1);
                    const uint32_t a = base + stage * STAGE, b = a + A_BYTES, fb = smem_u32(&full[stage]);
                    mbar_expect_tx(fb, STAGE);
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
        auto advance = [&] {
            if (++stage == STAGES) {
                stage = 0;
                phase ^= 1;
            }
        };
        auto finish = [&] { // the tile's wgmmas done: d final
            wgmma_wait<0>();
#pragma unroll
            for (int i = 0; i < BN; i++) reg_fence(d[i]);
        };
        int pending = -1; // the stage h's TMA stores read from, handed back once they have
        auto drain = [&] {
            if (pending < 0) return;
            if (tid == 0) bulk_wait_read();
            named_barrier(2 + wg, 128);
            release(pending);
            pending = -1;
        };
        for (int t = cluster; t < tiles; t += clusters) {
            int mg, nb;
            tile_coords(t, m_groups, n_blocks, group, mg, nb);
            const int m0 = (mg * CL + (int)rank) * BM, n0 = nb * BN;
            int prev = 0;
            for (int kb = 0; kb < nk; kb++) {
                issue(kb);
                if (kb == 0) drain(); // the last tile's h stored while this one's first wgmmas run
                if (kb > 0) { // the previous stage's wgmmas are done: hand it back
                    wgmma_wait<1>();
                    release(prev);
                }
                prev = stage;
                advance();
            }
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
#endif
}

// ---- portable: mma.sync m16n8k16, cp.async ------------------------------------
// A 64 x 64 tile of h per block of 4 warps (2 x 2, 32 x 32 each, for g and
// for u), k-steps of 32 through a 3-stage ring: x's 64 rows and the 128 rows
// of G's and U's tiles, rows padded to 40 elements (80 bytes: ldmatrix's 8
// row addresses hit distinct 16-byte bank groups). VEC: rows are 16-byte
// aligned (K % 8 == 0), cp.async 16 bytes at a time, zero-filled past the
// edges; else element loads through registers.
constexpr int P_BM = 64, P_BN = 64, P_BK = 32, P_LD = P_BK + 8, P_STAGES = 3;

__device__ __forceinline__ void cp_async16(void *dst, const void *src, int bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"((uint32_t)__cvta_generic_to_shared(dst)),
                 "l"(src), "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}
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
                cp_async16(&As[st][r][c], ok ? x + (size_t)gr * K + gk : x, ok ? 16 : 0);
            }
#pragma unroll
            for (int i = tid; i < 2 * P_BN * 4; i += 128) {
                const int r = i / 4, c = (i % 4) * 8, wr = n0 + r % P_BN, gk = k0 + c;
                const T *W = r < P_BN ? G : U;
                const bool ok = wr < N && gk < K;
                cp_async16(&Bs[st][r][c], ok ? W + (size_t)wr * K + gk : W, ok ? 16 : 0);
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

// ---- fp32: CUDA cores --------------------------------------------------------
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

// ---- host ----------------------------------------------------------------------
struct Device {
    int major = 0, sms = 0;
};

const Device &device()
{
    static Device d;
    static bool asked;
    if (!asked) {
        asked = true;
        int dev = 0;
        cudaGetDevice(&dev);
        if (cudaDeviceGetAttribute(&d.major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&d.sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
            d = Device{};
            cudaGetLastError();
        }
    }
    return d;
}

// KBENCH_FUSED: testing knobs (see the top of the file); 0 = automatic
struct Knobs {
    bool mma = false, no_tma_store = false;
    int cl = 0, bn = 0, wg = 0, group = 0;
};

const Knobs &knobs()
{
    static Knobs k;
    static bool read;
    if (!read) {
        read = true;
        const char *e = getenv("KBENCH_FUSED");
        char buf[128];
        snprintf(buf, sizeof buf, "%s", e ? e : "");
        for (char *tok = strtok(buf, ","); tok; tok = strtok(nullptr, ",")) {
            if (!strcmp(tok, "mma")) k.mma = true;
            else if (tok[0] == 'c') k.cl = atoi(tok + 1);
            else if (!strcmp(tok, "s0")) k.no_tma_store = true;
            else if (tok[0] == 'n') k.bn = atoi(tok + 1);
            else if (tok[0] == 'w') k.wg = atoi(tok + 1);
            else if (tok[0] == 'g') k.group = atoi(tok + 1);
            else fprintf(stderr, "kbench: KBENCH_FUSED: '%s' ignored (mma, c<N>, w<N>, n<BN>, g<N>, s0)\n", tok);
        }
    }
    return k;
}

typedef CUresult (*encode_tiled_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                                    const cuuint64_t *, const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave,
                                    CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

// cuTensorMapEncodeTiled from the driver the runtime already loaded (no -lcuda)
encode_tiled_fn encoder()
{
    static encode_tiled_fn fn;
    static bool asked;
    if (!asked) {
        asked = true;
        void *p = nullptr;
        cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
        cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q);
#else
        cudaError_t e = cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &p, cudaEnableDefault, &q);
#endif
        if (e == cudaSuccess && q == cudaDriverEntryPointSuccess && p)
            fn = (encode_tiled_fn)p;
        else
            cudaGetLastError();
    }
    return fn;
}

// rows x cols (cols contiguous, 2-byte elements), boxes of box_rows x box_cols;
// loads (x, G, U): 64 columns, 128B swizzle, zeros past the edges; stores (h):
// 16 columns, no swizzle, nothing written past the edges
bool tensor_map(CUtensorMap *m, const void *p, int dtype, int rows, int cols, int box_rows, bool store)
{
    encode_tiled_fn enc = encoder();
    if (!enc) return false;
    const cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows}, strides[1] = {(cuuint64_t)cols * 2};
    const cuuint32_t box[2] = {store ? 16u : 64u, (cuuint32_t)box_rows}, estr[2] = {1, 1};
    return enc(m, dtype == 2 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2,
               const_cast<void *>(p), dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
               store ? CU_TENSOR_MAP_SWIZZLE_NONE : CU_TENSOR_MAP_SWIZZLE_128B,
               store ? CU_TENSOR_MAP_L2_PROMOTION_NONE : CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// The maps of the last call (the harness launches one case many times); mh
// only where `store` (h's rows are 16-byte multiples, h 16-byte aligned).
struct MapCache {
    const void *x = nullptr, *G = nullptr, *U = nullptr, *h = nullptr;
    int M = 0, N = 0, K = 0, dtype = -1, bm = 0, bn = 0;
    bool store = false;
    CUtensorMap mx, mg, mu, mh;
};

bool maps_for(const kb_mlp_args *a, int bm, int bn, bool store, MapCache **out)
{
    static MapCache c;
    if (c.x != a->x || c.G != a->G || c.U != a->U || c.h != a->h || c.M != a->tokens || c.N != a->inter ||
        c.K != a->hidden || c.dtype != a->dtype || c.bm != bm || c.bn != bn || c.store != store) {
        c.x = nullptr; // invalid until all are made
        if (!tensor_map(&c.mx, a->x, a->dtype, a->tokens, a->hidden, bm, false) ||
            !tensor_map(&c.mg, a->G, a->dtype, a->inter, a->hidden, bn, false) ||
            !tensor_map(&c.mu, a->U, a->dtype, a->inter, a->hidden, bn, false))
            return false;
        if (store && !tensor_map(&c.mh, a->h, a->dtype, a->tokens, a->inter, 64, true)) return false;
        if (!store) c.mh = c.mx; // a valid map the kernel never uses
        c.x = a->x, c.G = a->G, c.U = a->U, c.h = a->h, c.M = a->tokens, c.N = a->inter, c.K = a->hidden;
        c.dtype = a->dtype, c.bm = bm, c.bn = bn, c.store = store;
    }
    *out = &c;
    return true;
}

template <int NWG, int BN> struct Shape {
    static constexpr int BM = 64 * NWG, STAGE = BM * 128 + 2 * BN * 128;
    // as many stages as fit in 220 KiB (of the 227 a block may have), 12 at most
    // (BN 128: 4 stages of 48 KiB; 112: 5 of 44; 96: 5 of 40)
    static constexpr int STAGES = (220 * 1024 / STAGE) < 12 ? (220 * 1024 / STAGE) : 12;
    static constexpr int SMEM = STAGES * STAGE + 1024; // + alignment to 1024
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

// How many clusters of this kernel fit on the device at once (asked once);
// 0: it cannot run here.
template <typename T, int NWG, int BN, int CL> int max_clusters()
{
    static int n = -1;
    if (n < 0) {
        n = 0;
        auto kern = gate_up_wgmma<T, NWG, BN, Shape<NWG, BN>::STAGES, CL>;
        cudaLaunchAttribute attr;
        cudaLaunchConfig_t cfg = launch_config<T, NWG, BN, CL>(&attr);
        cfg.gridDim = dim3(CL * (device().sms > 0 ? device().sms : 132));
        if (cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, Shape<NWG, BN>::SMEM) != cudaSuccess ||
            cudaOccupancyMaxActiveClusters(&n, kern, &cfg) != cudaSuccess || n < 1) {
            cudaGetLastError();
            n = 0;
        }
    }
    return n;
}

// tiles of BM x BN over h, counted in clusters' units (CL m-blocks of one n-block)
long cluster_tiles(int M, int N, int BM, int BN, int CL)
{
    return ((long)(M + BM - 1) / BM + CL - 1) / CL * ((N + BN - 1) / BN);
}

// 1: launched; 0: this configuration cannot run here (fall back); < 0: -cudaError
template <typename T, int NWG, int BN, int CL> int launch_wgmma(const kb_mlp_args *a, int group, cudaStream_t s)
{
    constexpr int BM = Shape<NWG, BN>::BM;
    const int clusters_max = max_clusters<T, NWG, BN, CL>();
    if (!clusters_max) return 0;
    MapCache *m;
    const bool store = !knobs().no_tma_store && a->inter % 8 == 0 && (uintptr_t)a->h % 16 == 0;
    if (!maps_for(a, BM, BN, store, &m)) return 0;
    const int M = a->tokens, N = a->inter, K = a->hidden;
    const long m_groups = ((M + BM - 1) / BM + CL - 1) / CL, tiles = cluster_tiles(M, N, BM, BN, CL);
    const long clusters = tiles < clusters_max ? tiles : clusters_max;
    cudaLaunchAttribute attr;
    cudaLaunchConfig_t cfg = launch_config<T, NWG, BN, CL>(&attr);
    cfg.gridDim = dim3((unsigned)(CL * clusters));
    cfg.stream = s;
    if (group < 1) group = (16 + CL - 1) / CL; // 16 m-blocks of BM rows walk the n-blocks together
    if (group > m_groups) group = (int)m_groups;
    cudaError_t e = cudaLaunchKernelEx(&cfg, gate_up_wgmma<T, NWG, BN, Shape<NWG, BN>::STAGES, CL>, m->mx, m->mg, m->mu,
                                       m->mh, (T *)a->h, M, N, K, group, store ? 1 : 0);
    return e == cudaSuccess ? 1 : -(int)e;
}

// The tile width for two consumer warpgroups (BM = 128): the fewest rounds
// of tiles over the clusters that fit, weighted by the tile's width and by
// how well its wgmma (N = 2 BN) keeps the tensor cores fed. The weights are
// a guess from one measurement: at 2048 x 1024 x 11008, BN 64 (21 rounds,
// the last 85% full) ran as fast as BN 128 (11 rounds, the last 42% full),
// so per FLOP about 4.5% slower. 112 fills 12 rounds exactly there, if 66
// clusters of 2 fit. Measured there (H100, 2026-11-23, two runs each, ms):
// BN 128 0.2250 / 0.2260, 112 0.2203 / 0.2224, 96 0.2197 / 0.2211, this
// model (112) 0.2215 / 0.2224: 2% faster than a fixed 128.
template <typename T, int CL> int pick_bn(int M, int N)
{
    static const int bns[] = {128, 112, 96, 64};
    static const double eff[] = {1.0, 0.99, 0.98, 0.955};
    const int clusters[] = {max_clusters<T, 2, 128, CL>(), max_clusters<T, 2, 112, CL>(), max_clusters<T, 2, 96, CL>(),
                            max_clusters<T, 2, 64, CL>()};
    int best = 0;
    double best_cost = 0;
    for (int i = 0; i < 4; i++) {
        if (!clusters[i]) continue;
        const long rounds = (cluster_tiles(M, N, 128, bns[i], CL) + clusters[i] - 1) / clusters[i];
        const double cost = (double)rounds * bns[i] / eff[i];
        if (!best || cost < best_cost * 0.999) best = bns[i], best_cost = cost;
    }
    return best ? best : 128;
}

template <typename T> int gate_up_hopper(const kb_mlp_args *a, cudaStream_t s)
{
    const Knobs &k = knobs();
    const int M = a->tokens, N = a->inter;
    int wg = k.wg, bn = k.bn, cl = k.cl;
    if (!wg) wg = M <= 64 ? 1 : 2;
    // clusters of 2 only over an even number of 128-row m-blocks: an odd count
    // leaves one CTA a tile wholly past the last token (TMA zero-fills it,
    // the stores are guarded), a case no GPU run has verified yet
    if (!cl) cl = wg == 2 && M > 128 && (M + 127) / 128 % 2 == 0 ? 2 : 1;
    if (!bn && wg == 2) bn = cl == 2 ? pick_bn<T, 2>(M, N) : pick_bn<T, 1>(M, N);
    if (bn <= 0) bn = wg == 1 ? 64 : 128;
    const int g = k.group;
    if (wg == 1) return bn == 128 ? launch_wgmma<T, 1, 128, 1>(a, g, s) : launch_wgmma<T, 1, 64, 1>(a, g, s);
    switch (bn) {
    case 112: return cl == 2 ? launch_wgmma<T, 2, 112, 2>(a, g, s) : launch_wgmma<T, 2, 112, 1>(a, g, s);
    case 96: return cl == 2 ? launch_wgmma<T, 2, 96, 2>(a, g, s) : launch_wgmma<T, 2, 96, 1>(a, g, s);
    case 64: return cl == 2 ? launch_wgmma<T, 2, 64, 2>(a, g, s) : launch_wgmma<T, 2, 64, 1>(a, g, s);
    default: return cl == 2 ? launch_wgmma<T, 2, 128, 2>(a, g, s) : launch_wgmma<T, 2, 128, 1>(a, g, s);
    }
}

template <typename T> int gate_up_portable(const kb_mlp_args *a, cudaStream_t s)
{
    const int M = a->tokens, N = a->inter, K = a->hidden;
    const dim3 grid((unsigned)((N + P_BN - 1) / P_BN), (unsigned)((M + P_BM - 1) / P_BM));
    const bool vec = K % 8 == 0 && (uintptr_t)a->x % 16 == 0 && (uintptr_t)a->G % 16 == 0 && (uintptr_t)a->U % 16 == 0;
    if (vec)
        gate_up_mma<T, true><<<grid, 128, 0, s>>>((const T *)a->x, (const T *)a->G, (const T *)a->U, (T *)a->h, M, N, K);
    else
        gate_up_mma<T, false><<<grid, 128, 0, s>>>((const T *)a->x, (const T *)a->G, (const T *)a->U, (T *)a->h, M, N, K);
    return (int)cudaGetLastError();
}

template <typename T> int gate_up(const kb_mlp_args *a, cudaStream_t s)
{
    // TMA: row pitch a multiple of 16 bytes, base 16-byte aligned
    if (device().major == 9 && !knobs().mma && a->hidden % 8 == 0 && (uintptr_t)a->x % 16 == 0 &&
        (uintptr_t)a->G % 16 == 0 && (uintptr_t)a->U % 16 == 0) {
        const int rc = gate_up_hopper<T>(a, s);
        if (rc > 0) return 0;
        if (rc < 0) return -rc;
    }
    return gate_up_portable<T>(a, s);
}

bool args_ok(const kb_mlp_args *a)
{
    return a->tokens > 0 && a->hidden > 0 && a->inter > 0 && a->dtype >= 0 && a->dtype <= 2 && a->x && a->G && a->U &&
           a->D && a->y && a->h;
}

} // namespace

extern "C" int kb_mlp_fused(const kb_mlp_args *a, void *stream)
{
    if (!args_ok(a)) return (int)cudaErrorInvalidValue;
    cudaStream_t s = (cudaStream_t)stream;
    const int M = a->tokens, N = a->inter, K = a->hidden;
    int rc;
    switch (a->dtype) {
    case 0: {
        const dim3 grid((unsigned)((N + 63) / 64), (unsigned)((M + 63) / 64));
        gate_up_f32<<<grid, 256, 0, s>>>((const float *)a->x, (const float *)a->G, (const float *)a->U, (float *)a->h, M,
                                         N, K);
        rc = (int)cudaGetLastError();
        break;
    }
    case 1: rc = gate_up<__half>(a, s); break;
    default: rc = gate_up<__nv_bfloat16>(a, s); break;
    }
    if (rc) return rc;
    return kb_linear_cublas(a->h, a->D, a->y, M, K, N, a->dtype, a->tf32, s);
}
