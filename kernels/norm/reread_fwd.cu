// RMSNorm forward, fp32 rows past 64 KiB to 128 KiB on sm_90 (block.reread): a row a
// block of 1024 threads, every vector of the row loaded at once (kept in L2:
// evict_last), the sum of squares from registers and one block barrier
// (block_sum), then y from x read again through L2 (read-only, evict_first),
// the output's loads issued ahead of its stores: torch.compile's shape for
// these rows. The clusters (cluster_fwd.cu) hold the row in registers through
// a cluster's meeting instead; DESIGN.md has the A/B. The body computes
// LayerNorm too (its statistics as the family's other kernels: lane means
// merged by Chan's update), as its arguments say; the planner takes it for
// RMSNorm alone, and test_norm_outliers runs the LayerNorm side. That
// run-time branch matters to the machine code: with the sums behind it, in a
// basic block of their own, ptxas issues every load of the row into registers
// of its own before any is used (8 LDG.E.EL.128 within 9 instructions at 8
// vectors a thread, nvdisasm 13.5); an RMSNorm-only body, loads and sums one
// block, had 6-8 loads interleaved into 4-5 registers and ran 1.06-1.22x
// slower (DESIGN.md). Check the SASS when changing it.
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

// NV vectors a thread, TPB threads (the plan's block, rr_fwd_kernel checks),
// vector k of thread t at k TPB + t: all but the last lie inside the row (the
// plan's NV is the fewest that cover it), so their addresses are one base and
// constant offsets; the last is clamped to the row, what lies past zeroed or
// not stored, so no branch surrounds a load (with one around each, the
// output's loads waited behind the previous vector's store: 283.6 against
// 257.2 us at 4096 x 32768). G: gamma or none, each a straight-line kernel of
// its own (the affine cases as run-time branches of one kernel spilled). No
// beta: prepare refuses one.
constexpr int TPB = KB_NORM_RR_BLOCK;
template <typename T, int NV, bool G>
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
        // the block's threads at run time: a constant unrolls group_merge's loop over
        // the warps, 32 float4 reads at once (spilled)
        const float2 m = group_merge(w, q, (int)blockDim.x, red, 0);
        mean = m.x;
        var = m.y / (float)cols;
    }
    const float rstd = rsqrtf(var + a.eps);
    const uint4 *gm = reinterpret_cast<const uint4 *>(a.gamma) + t;
    uint4 *y = reinterpret_cast<uint4 *>((T *)a.y + row * cols) + t;
    uint4 gr[NV];
#pragma unroll
    for (int k = 0; k < NV; k++) {
        const int o = k < NV - 1 ? k * TPB : ol;
        p[k] = ldx<1>(x + o, drop);
        if constexpr (G) gr[k] = ldx<2>(gm + o, keep);
    }
#pragma unroll
    for (int k = 0; k < NV; k++) {
        float f[W], gv[W];
        unpack_w<T>(p[k], f);
        if constexpr (G) unpack_w<T>(gr[k], gv);
#pragma unroll
        for (int j = 0; j < W; j++) f[j] = (f[j] - mean) * rstd * (G ? gv[j] : 1.f);
        if (k < NV - 1 || last) y[k < NV - 1 ? k * TPB : ol] = pack_w<T>(f);
    }
    if (t == 0) {
        if (a.mean) a.mean[row] = mean;
        a.rstd[row] = rstd;
    }
}
template <typename T, int NV, bool G> __global__ void __launch_bounds__(TPB) rr_fwd(kb_norm_args a)
{
    __shared__ float4 red[32];
    unsigned long long keep, drop;
    asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(keep));
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(drop));
    rr_body<T, NV, G>(a, red, keep, drop);
}

} // namespace

// fp32 only (block.reread: the 16-bit rows spilled and lost); gamma: the kernel with it
template <typename T> const void *rr_fwd_kernel(const kb_norm_plan &p, bool gamma)
{
    if constexpr (!std::is_same<T, float>::value) return nullptr;
    else {
        if (!p.rr || p.backward || p.w != 4 || p.block != TPB) return nullptr;
        switch (p.nv) {
        case 5: return gamma ? (const void *)rr_fwd<float, 5, true> : (const void *)rr_fwd<float, 5, false>;
        case 6: return gamma ? (const void *)rr_fwd<float, 6, true> : (const void *)rr_fwd<float, 6, false>;
        case 7: return gamma ? (const void *)rr_fwd<float, 7, true> : (const void *)rr_fwd<float, 7, false>;
        case 8: return gamma ? (const void *)rr_fwd<float, 8, true> : (const void *)rr_fwd<float, 8, false>;
        }
        return nullptr;
    }
}
template const void *rr_fwd_kernel<float>(const kb_norm_plan &, bool);
template const void *rr_fwd_kernel<__half>(const kb_norm_plan &, bool);
template const void *rr_fwd_kernel<__nv_bfloat16>(const kb_norm_plan &, bool);

} // namespace kb::norm
