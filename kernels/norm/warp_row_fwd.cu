// The warp_row forward kernels (warp_row.cuh), every dtype: one row a group
// of warps, a grid over the rows.
#include "kernels.cuh"
#include "warp_row.cuh"

namespace kb::norm {
namespace { // internal linkage, as one file had it: inlined helpers emit no copy of their own

// Rows of 16 warps of 8 vectors (wr.nv8w's widest: fp32 cols 15361-16384,
// 16-bit 30721-32768) run in blocks of 512: BPS 1 holds x, gamma and beta
// (125 registers), one block an SM; BPS 2 holds x alone (60-64 registers),
// two blocks an SM, where the memory is fast enough that the second row's
// loads pay (plan.c: wr.fwd2). Every other instance fits 64 registers at up
// to 1024 threads.
template <int NV, int WPR> __host__ __device__ constexpr int wr_fwd_threads() { return NV == 8 && WPR == 16 ? 512 : 1024; }

template <typename T, int NV, int WPR, int BPS = 1>
__global__ void __launch_bounds__(wr_fwd_threads<NV, WPR>(), BPS) wr_fwd(kb_norm_args a, int wpr)
{
    if constexpr (WPR > 0) wpr = WPR;
    constexpr int W = 16 / sizeof(T);
    __shared__ WrRed red;
    const int tpr = wpr * 32, g = threadIdx.x / tpr, t = threadIdx.x - g * tpr, nvec = (int)(a.cols / W);
    const long row = (long)blockIdx.x * (blockDim.x / tpr) + g;
    if (row >= a.rows) return; // the whole group: its barrier counts no one else
    const long cols = a.cols;
    const uint4 *xr = reinterpret_cast<const uint4 *>((const T *)a.x + row * cols);
    uint4 xv[NV]; // the row's bits (unpack_w)
#pragma unroll
    for (int k = 0; k < NV; k++) {
        const int c = k * tpr + t;
        xv[k] = c < nvec ? xr[c] : make_uint4(0, 0, 0, 0); // 0.f in every type
    }
    // gamma and beta loaded with x, ahead of the sums, where the registers
    // allow it (4 vectors a lane, the warps a row known at compile time; 8
    // vectors over 16 warps at one block of 512 an SM): the row's output then waits for
    // no load after its meetings. fp32 LayerNorm 4096 x 1024: 13.4 -> 12.5 us,
    // 4096 x 16384 181.3 -> 179.7; 8 vectors in blocks of up to 1024, or wpr
    // passed at run time, spilled (DESIGN.md, wr.ahead).
    constexpr bool AHEAD = WPR > 0 && (NV == 4 || (wr_fwd_threads<NV, WPR>() == 512 && BPS == 1));
    const uint4 *gm = reinterpret_cast<const uint4 *>(a.gamma), *bt = reinterpret_cast<const uint4 *>(a.beta);
    uint4 ga[NV], ba[NV]; // read only where AHEAD (else dead)
    if constexpr (AHEAD) {
#pragma unroll
        for (int k = 0; k < NV; k++) {
            const int c = k * tpr + t;
            if (gm && c < nvec) ga[k] = gm[c];
            if (bt && c < nvec) ba[k] = bt[c];
        }
    }
    // each pass widens one vector at a time (fp16 rows of 8 vectors a lane:
    // 11.7 us at cols 2048 against 12.4-12.8 with the element-wise loops)
    const float inv_n = 1.f / (float)cols;
    float mean = 0.f;
    if (!a.rms) { // two passes over registers: the mean, then squared deviations from it
        float s = 0.f;
#pragma unroll
        for (int k = 0; k < NV; k++) {
            float xf[W];
            unpack_w<T>(xv[k], xf);
#pragma unroll
            for (int j = 0; j < W; j++) s += xf[j];
        }
        mean = wr_sum<WPR, 1>(make_float2(s, 0.f), wpr, red, 0).x * inv_n;
    }
    float q = 0.f;
#pragma unroll
    for (int k = 0; k < NV; k++)
        if (k * tpr + t < nvec) {
            float xf[W];
            unpack_w<T>(xv[k], xf);
#pragma unroll
            for (int j = 0; j < W; j++) {
                const float d = xf[j] - mean;
                q = fmaf(d, d, q);
            }
        }
    const float rstd = rsqrtf(wr_sum<WPR, 1>(make_float2(q, 0.f), wpr, red, 1).x * inv_n + a.eps);
    uint4 *y = reinterpret_cast<uint4 *>((T *)a.y + row * cols);
    // one loop for each affine case (gamma and beta, gamma alone, neither):
    // no select an element, no registers held for loads that may not happen
    // (the one loop with `gm ?` selects spilled at 8 vectors a lane)
    auto out = [&](auto G, auto B) {
#pragma unroll
        for (int k = 0; k < NV; k++) {
            const int c = k * tpr + t;
            if (c >= nvec) continue;
            float gv[W], bv[W], o[W], xf[W];
            if constexpr (decltype(G)::value) unpack_w<T>(AHEAD ? ga[k] : gm[c], gv);
            if constexpr (decltype(B)::value) unpack_w<T>(AHEAD ? ba[k] : bt[c], bv);
            unpack_w<T>(xv[k], xf);
#pragma unroll
            for (int j = 0; j < W; j++) {
                o[j] = (xf[j] - mean) * rstd;
                if constexpr (decltype(G)::value) o[j] *= gv[j];
                if constexpr (decltype(B)::value) o[j] += bv[j];
            }
            y[c] = pack_w<T>(o);
        }
    };
    using yes = std::true_type;
    using no = std::false_type;
    if (gm && bt) out(yes{}, yes{});
    else if (gm) out(yes{}, no{});
    else if (bt) out(no{}, yes{});
    else out(no{}, no{});
    if (t == 0) {
        if (a.mean) a.mean[row] = mean;
        a.rstd[row] = rstd;
    }
}

} // namespace
} // namespace kb::norm

namespace kb::norm {

// Warps a row known at compile time where they are a power of two (the
// common hidden sizes) or 10 (DESIGN.md, wr.w10: 9 mixed, 11-13 lost), else
// passed (WPR 0; plan.c's wr.pad runs rows of 3, 5-7 and 13-15 warps, fp32
// 14-15, on 4, 8 and 16); NV 1 and 2 only for rows of one warp, NV 8 for 16-bit rows of
// one warp, rows of 16 warps (gamma and beta early) and (WPR 0) rows of 2-32
// warps (plan.c).
template <typename T, int NV> static const void *by_wpr(int wpr)
{
    if constexpr (NV == 4) {
        switch (wpr) {
        case 2: return (const void *)wr_fwd<T, NV, 2>;
        case 4: return (const void *)wr_fwd<T, NV, 4>;
        case 8: return (const void *)wr_fwd<T, NV, 8>;
        case 10: return (const void *)wr_fwd<T, NV, 10>;
        case 16: return (const void *)wr_fwd<T, NV, 16>;
        }
    }
    if (wpr == 1) return (const void *)wr_fwd<T, NV, 1>;
    if constexpr (NV == 4) return (const void *)wr_fwd<T, NV, 0>;
    return nullptr; // NV 1, 2: one-warp rows only (plan.c)
}

template <typename T> const void *wr_fwd_kernel(const kb_norm_plan &p)
{
    const int wpr = p.tpr / 32;
    switch (p.nv) {
    case 1: return by_wpr<T, 1>(wpr);
    case 2: return by_wpr<T, 2>(wpr);
    case 4: return by_wpr<T, 4>(wpr);
    case 8: // 16-bit rows of one warp (plan.c: wr.nv8); rows of 2-32 warps (wr.nv8w, the vec tunable)
        if (wpr == 16 && p.block == wr_fwd_threads<8, 16>()) // one block an SM, or two (lb 1024: wr.fwd2)
            return p.lb == 1024 ? (const void *)wr_fwd<T, 8, 16, 2> : (const void *)wr_fwd<T, 8, 16>;
        if (wpr > 1) return (const void *)wr_fwd<T, 8, 0>;
        if constexpr (sizeof(T) == 2) return (const void *)wr_fwd<T, 8, 1>;
        return nullptr;
    }
    return nullptr;
}
template const void *wr_fwd_kernel<float>(const kb_norm_plan &);
template const void *wr_fwd_kernel<__half>(const kb_norm_plan &);
template const void *wr_fwd_kernel<__nv_bfloat16>(const kb_norm_plan &);

} // namespace kb::norm
