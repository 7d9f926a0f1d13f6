// LayerNorm and RMSNorm forward, fp32 rows past 64 KiB to 128 KiB on sm_90
// (block.reread, block.reread_ln): a row a block of 1024 threads, every vector
// of the row loaded at once (kept in L2: evict_last), the statistics from
// registers and one block barrier (block_sum, block_merge), then y from x read
// again through L2 (read-only, evict_first), the output's loads issued ahead
// of its stores: torch.compile's shape for these rows. The clusters
// (cluster_fwd.cu) hold the row in registers through a cluster's meeting
// instead; DESIGN.md has the A/B. The body keeps the run-time LayerNorm /
// RMSNorm branch (a.rms) even in the kernels built for one op: with the sums
// behind it, in a basic block of their own, ptxas issues every load of the
// row into registers of its own before any is used (8 LDG.E.EL.128 within 9
// instructions at 8 vectors a thread, nvdisasm 13.5); an RMSNorm-only body,
// loads and sums one block, had 6-8 loads interleaved into 4-5 registers and
// ran 1.06-1.22x slower (DESIGN.md). Check the SASS when changing it.
#include "../ptx/mbarrier.cuh" // bulk_prefetch_l2 (sm_90 only: called under __CUDA_ARCH__ >= 900)
#include "common.cuh"
#include "kernels.cuh"

namespace kb::norm {
namespace { // internal linkage, as one file had it: inlined helpers emit no copy of their own

// 16 bytes under an L2 policy: H 0 evict_last; 1 evict_first and 2 evict_last read-only (.nc: may move past stores)
template <int H> __device__ __forceinline__ uint4 ldx(const uint4 *p, unsigned long long pol)
{
    uint4 v;
    if constexpr (H == 0)
        asm("ld.global.L1::evict_last.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
            : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p), "l"(pol));
    else if constexpr (H == 1)
        asm("ld.global.nc.L1::evict_first.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
            : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p), "l"(pol));
    else
        asm("ld.global.nc.L1::evict_last.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
            : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p), "l"(pol));
    return v;
}

// v summed over the block (blockDim.x a multiple of 32): the warps' sums
// through red (32 floats), then each warp adds the 32 by its own butterfly,
// so every thread gets the same bits after one barrier, against group_sum's
// two and its 32 shared-memory reads a thread in turn.
__device__ __forceinline__ float block_sum(float v, int tpb, float *red)
{
    lane_sums<1>(&v);
    const int lane = threadIdx.x & 31;
    if (lane == 0) red[threadIdx.x >> 5] = v;
    __syncthreads();
    v = lane < tpb >> 5 ? red[lane] : 0.f;
    lane_sums<1>(&v);
    return v;
}

// LayerNorm's (mean, M2) over the block in one barrier, as group_merge
// (common.cuh: Chan's update, every term non-negative): each warp's (n, sum,
// M2 about its mean, mean) through red, then each warp merges the 32 with
// shuffles, against group_merge's two loops of 32 shared-memory reads a thread.
__device__ __forceinline__ float2 block_merge(float3 w, float q, float4 *red)
{
    lane_sums<1>(&q);
    const int lane = threadIdx.x & 31;
    if (lane == 0) red[threadIdx.x >> 5] = make_float4(w.x, w.y, q, w.z);
    __syncthreads();
    const float4 r = lane < (int)(blockDim.x >> 5) ? red[lane] : make_float4(0.f, 0.f, 0.f, 0.f);
    float ns[2] = {r.x, r.y};
    lane_sums<2>(ns);
    const float mean = ns[0] > 0.f ? __fdividef(ns[1], ns[0]) : 0.f;
    float m2 = chan_term(r, mean);
    lane_sums<1>(&m2);
    return make_float2(mean, m2);
}

// NV vectors a thread, TPB threads (the plan's block, rr_fwd_kernel checks),
// vector k of thread t at k TPB + t: all but the last lie inside the row (the
// plan's NV is the fewest that cover it), so their addresses are one base and
// constant offsets; the last is clamped to the row, what lies past zeroed or
// not stored, so no branch surrounds a load (with one around each, the
// output's loads waited behind the previous vector's store: 283.6 against
// 257.2 us at 4096 x 32768). AFF: 0 none, 1 gamma, 2 gamma and beta, each a
// straight-line kernel of its own (the affine cases as run-time branches of
// one kernel spilled). LN: the kernels the planner takes for LayerNorm, whose
// statistics meet in block_merge; the RMSNorm kernels keep group_merge in
// their LayerNorm branch, never taken, because their machine code with it is
// what ran fastest (block_merge there: 1.3-1.9% slower at 4096 x 16400-20480,
// H200, 2026-11-28; DESIGN.md).
constexpr int TPB = KB_NORM_RR_BLOCK;
template <typename T, int NV, int AFF, bool LN>
__device__ __forceinline__ void rr_body(const kb_norm_args &a, float4 *red, unsigned long long keep,
                                        unsigned long long drop)
{
    constexpr int W = 16 / sizeof(T);
    const long row = blockIdx.x, cols = a.cols;
    const int t = threadIdx.x, nvec = (int)(cols / W), vl = (NV - 1) * TPB + t;
    const bool last = vl < nvec; // the last vector inside the row
    const int ol = (last ? vl : nvec - 1) - t; // its offset from the thread's first
    const uint4 *x = reinterpret_cast<const uint4 *>((const T *)a.x + row * cols) + t;
    uint4 p[NV];
#pragma unroll
    for (int k = 0; k < NV - 1; k++) p[k] = ldx<0>(x + k * TPB, keep);
    p[NV - 1] = ldx<0>(x + ol, keep);
    if (!last) p[NV - 1] = make_uint4(0, 0, 0, 0);
    float mean = 0.f, var;
    if (a.rms) {
        float ss = 0.f;
#pragma unroll
        for (int k = 0; k < NV; k++) {
            float f[W];
            unpack_w<T>(p[k], f);
#pragma unroll
            for (int j = 0; j < W; j++) ss = fmaf(f[j], f[j], ss);
        }
        var = block_sum(ss, TPB, reinterpret_cast<float *>(red)) / (float)cols;
    } else {
        float s = 0.f;
#pragma unroll
        for (int k = 0; k < NV; k++) {
            float f[W];
            unpack_w<T>(p[k], f);
#pragma unroll
            for (int j = 0; j < W; j++) s += f[j];
        }
        const float3 w = lane_mean(s, (float)(W * (NV - 1)) + (last ? (float)W : 0.f), 32);
        float q = 0.f;
#pragma unroll
        for (int k = 0; k < NV; k++) {
            const float on = k < NV - 1 || last ? 1.f : 0.f;
            float f[W];
            unpack_w<T>(p[k], f);
#pragma unroll
            for (int j = 0; j < W; j++) {
                const float d = (f[j] - w.z) * on;
                q = fmaf(d, d, q);
            }
        }
        float2 m;
        if constexpr (LN) m = block_merge(w, q, red);
        else m = group_merge(w, q, (int)blockDim.x, red, 0); // blockDim: a constant unrolled its loop and spilled
        mean = m.x;
        var = m.y / (float)cols;
    }
    const float rstd = rsqrtf(var + a.eps);
    const uint4 *gm = reinterpret_cast<const uint4 *>(a.gamma) + t, *bt = reinterpret_cast<const uint4 *>(a.beta) + t;
    uint4 *y = reinterpret_cast<uint4 *>((T *)a.y + row * cols) + t;
    uint4 gr[NV], br[NV];
#pragma unroll
    for (int k = 0; k < NV; k++) {
        const int o = k < NV - 1 ? k * TPB : ol;
        p[k] = ldx<1>(x + o, drop);
        if constexpr (AFF >= 1) gr[k] = ldx<2>(gm + o, keep);
        if constexpr (AFF >= 2) br[k] = ldx<2>(bt + o, keep);
    }
#pragma unroll
    for (int k = 0; k < NV; k++) {
        float f[W], gv[W], bv[W];
        unpack_w<T>(p[k], f);
        if constexpr (AFF >= 1) unpack_w<T>(gr[k], gv);
        if constexpr (AFF >= 2) unpack_w<T>(br[k], bv);
#pragma unroll
        for (int j = 0; j < W; j++) {
            f[j] = (f[j] - mean) * rstd;
            if constexpr (AFF >= 1) f[j] *= gv[j];
            if constexpr (AFF >= 2) f[j] += bv[j];
        }
        if (k < NV - 1 || last) y[k < NV - 1 ? k * TPB : ol] = pack_w<T>(f);
    }
    if (t == 0) {
        if (a.mean) a.mean[row] = mean;
        a.rstd[row] = rstd;
    }
}
// ahead: the row that many rows on is asked of L2 first, by one bulk
// prefetch under x's policy (block.reread_ln_pf, _rms_pf; 0: none)
template <typename T, int NV, int AFF, bool LN> __global__ void __launch_bounds__(TPB) rr_fwd(kb_norm_args a, int ahead)
{
    __shared__ float4 red[32];
    unsigned long long keep, drop;
    asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(keep));
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(drop));
#if __CUDA_ARCH__ >= 900
    if (threadIdx.x == 0 && ahead > 0 && (long)blockIdx.x + ahead < a.rows) // a row of 16-byte vectors
        ptx::bulk_prefetch_l2((const T *)a.x + ((long)blockIdx.x + ahead) * a.cols, (uint32_t)(a.cols * sizeof(T)), keep);
#endif
    rr_body<T, NV, AFF, LN>(a, red, keep, drop);
}

} // namespace

// fp32 only (block.reread: the 16-bit rows spilled and lost); aff: 0 none, 1
// gamma, 2 gamma and beta (RMSNorm has no beta); rms: the op of the arguments
template <typename T> const void *rr_fwd_kernel(const kb_norm_plan &p, int aff, bool rms)
{
    if constexpr (!std::is_same<T, float>::value) return nullptr;
    else {
        if (!p.rr || p.backward || p.w != 4 || p.block != TPB) return nullptr;
#define KB_RR(NV)                                                                                                  \
    rms ? (aff == 2 ? nullptr : aff ? (const void *)rr_fwd<float, NV, 1, false> : (const void *)rr_fwd<float, NV, 0, false>) \
        : aff == 2 ? (const void *)rr_fwd<float, NV, 2, true>                                                          \
        : aff      ? (const void *)rr_fwd<float, NV, 1, true>                                                          \
                   : (const void *)rr_fwd<float, NV, 0, true>
        switch (p.nv) {
        case 5: return KB_RR(5);
        case 6: return KB_RR(6);
        case 7: return KB_RR(7);
        case 8: return KB_RR(8);
        }
#undef KB_RR
        return nullptr;
    }
}
template const void *rr_fwd_kernel<float>(const kb_norm_plan &, int, bool);
template const void *rr_fwd_kernel<__half>(const kb_norm_plan &, int, bool);
template const void *rr_fwd_kernel<__nv_bfloat16>(const kb_norm_plan &, int, bool);

} // namespace kb::norm
