// warp_row backward kernels of one dtype (warp_row_bwd_<dtype>.cu include
// this: the backward's instantiations are the heaviest to compile).
#pragma once
#include "kernels.cuh"
#include "sums.cuh"
#include "warp_row.cuh"

namespace kb::norm {
namespace { // internal linkage, as one file had it: inlined helpers emit no copy of their own

// Backward: a persistent grid of blocks of at most 512 threads (128 registers;
// 640 at 96 for rows of 17-20 warps, wr_wide);
// group g of block b takes rows (g*gridDim.x + b) + i*gridDim.x*G (G groups a
// block; group_row0), the next row's x, dy, mean and rstd loaded while this one is computed.
// S > 0 (2 by default for rows of 4 and 8 warps, 3 for the other rows of 4
// warps or more, wr.stages):
// the rows' x and dy staged S rows ahead by cp.async (Stager: each thread
// copies and reads back only its own vectors, so no barrier guards them)
// instead of one row ahead in registers: more bytes in flight, fewer registers;
// 16-bit rows of 16 warps, and bf16 rows of warps at run time at LB 320 and
// 640, refill a row's slot after its meeting (LATE, below).
// LB < 512 (wr_occ): blocks of at most LB threads, two of them an SM by
// registers (LB 320: 96 registers); LB 640 (wr_wide): one group of up to 20
// warps, 96 registers.
template <typename T, int NV, int WPR, int S = 0, int LB = 512>
__global__ void __launch_bounds__(LB, LB < 512 ? 2 : 1) wr_bwd(kb_norm_args a, int wpr, int iters)
{
    if constexpr (WPR > 0) wpr = WPR;
    constexpr int W = 16 / sizeof(T);
    // the staging (S > 0), then the end's partial rows and column_sums' slices;
    // 16-byte aligned for cp.async and the vector stores
    extern __shared__ __align__(16) float2 smem[];
    __shared__ WrRed red;
    const int tpr = wpr * 32, G = blockDim.x / tpr, g = threadIdx.x / tpr, t = threadIdx.x - g * tpr,
              nvec = (int)(a.cols / W);
    const long cols = a.cols, row0 = group_row0(g), stride = (long)gridDim.x * G;
    // rows, gamma and dx as 16-byte words (unpack_w, pack_w): a Vec of 16-bit
    // structs taken element by element became one value a register, with a
    // convert and a byte permute for each (31% more instructions at 4096 x
    // 1024 bf16, 11.6 against 10.3 us under ncu; norm DESIGN.md)
    const uint4 *gm = reinterpret_cast<const uint4 *>(a.gamma);
    float dg[NV][W], db[NV][W];
#pragma unroll
    for (int k = 0; k < NV; k++)
#pragma unroll
        for (int j = 0; j < W; j++) dg[k][j] = db[k][j] = 0.f;
    uint4 xv[NV], dv[NV];
    float mean = 0.f, rstd = 0.f;
    // gamma in registers, loaded once for all the block's rows (1 past the row
    // or without gamma), except bf16 under a register cap (LB 320, 640), where
    // the 8 registers more spilled (H100, rows 4096, % of copy: bf16 5120 71
    // -> 59, 10240 72 -> 59); elsewhere it saved the L1/L2 reloads of gamma
    // (fp16 6144 69 -> 76, 10240 75 -> 86, 8192 77 -> 82; bf16 6144 69 -> 76)
    constexpr bool GREG = LB == 512 || !std::is_same<T, __nv_bfloat16>::value;
    float one[W];
#pragma unroll
    for (int j = 0; j < W; j++) one[j] = 1.f;
    const uint4 ONE = pack_w<T>(one);
    [[maybe_unused]] uint4 gk[NV];
#pragma unroll
    for (int k = 0; k < NV && GREG; k++) {
        const int c = k * tpr + t;
        gk[k] = gm && c < nvec ? gm[c] : ONE;
    }
    auto gamma_of = [&](int k, float *gv) { // vector k's gamma (1 past the row or without gamma)
        const int c = k * tpr + t;
        if (GREG) unpack_w<T>(gk[k], gv);
        else unpack_w<T>(gm && c < nvec ? gm[c] : ONE, gv);
    };
    [[maybe_unused]] Stager<T, W, NV, S> st;
    [[maybe_unused]] const int second = S * (int)blockDim.x * NV; // dy's staging area, in vectors
    auto stats = [&](int i) { // row i's saved statistics
        const long row = row0 + (long)i * stride;
        const bool live = i < iters && row < a.rows;
        mean = live && !a.rms ? a.mean[row] : 0.f;
        rstd = live ? a.rstd[row] : 0.f;
    };
    auto fetch = [&](int i) { // row i's vectors (zeros past the row or the rows)
        const long row = row0 + (long)i * stride;
        const bool live = i < iters && row < a.rows;
        const uint4 *xr = reinterpret_cast<const uint4 *>((const T *)a.x + row * cols);
        const uint4 *dr = reinterpret_cast<const uint4 *>((const T *)a.dy + row * cols);
#pragma unroll
        for (int k = 0; k < NV; k++) {
            const int c = k * tpr + t;
            const bool in = live && c < nvec;
            xv[k] = in ? xr[c] : make_uint4(0, 0, 0, 0); // 0.f in every type
            dv[k] = in ? dr[c] : make_uint4(0, 0, 0, 0);
        }
        stats(i);
    };
    // LATE (16-bit rows of 16 warps): a row's stage refilled after its meeting,
    // and the next row's copies waited for before it, not at the row's top:
    // bf16 8-14% faster (no spill left: 128 registers; ptxas counted 4 bytes
    // before, four LDL a row), fp16 3.5-4.7% at 7696, 7744 and 8192 columns,
    // 0.5-0.8% behind at 16384 x 7688 and RMSNorm 16384 x 8184 (H200, wr.late
    // in norm DESIGN.md); with lines-shifted copies it lost at fp32 (2-4%).
    // And bf16 rows of warps at run time capped at 96 registers (9-10 warps at
    // LB 320, 17-20 at 640): cols 10240 6-9% faster (4096 and 16384 rows), 5120
    // level; fp16 level at 10240, 1.1-1.5% behind at 5120. Not LB 512 (5 warps,
    // a fixed stages): unmeasured at 5, and at 4 warps 3 ahead the order lost 1.3-3.2%
    constexpr bool LATE = S > 1 && ((WPR == 16 && sizeof(T) == 2) ||
                                    (WPR == 0 && LB != 512 && std::is_same<T, __nv_bfloat16>::value));
    if constexpr (S > 0) {
        st.init(smem, tpr, iters, a, true);
#pragma unroll
        for (int q = 0; q < S; q++) st.issue(q, (const T *)a.x, (const T *)a.dy, second);
        stats(0);
        if constexpr (LATE) ptx::cp_async_wait<S - 1>(); // row 0's copies
    } else {
        fetch(0);
    }
    for (int i = 0; i < iters; i++) {
        const long row = row0 + (long)i * stride;
        uint4 x[NV], d[NV]; // this row's, kept while the next row's loads land in xv, dv
        if constexpr (S > 0) {
            if constexpr (!LATE) ptx::cp_async_wait<S - 1>();
#pragma unroll
            for (int k = 0; k < NV; k++) {
                x[k] = st.get_w(i, k, (const T *)a.x, 0, row < a.rows);
                d[k] = st.get_w(i, k, (const T *)a.dy, second, row < a.rows);
            }
            if constexpr (!LATE) st.issue(i + S, (const T *)a.x, (const T *)a.dy, second); // this thread's copies of row i are read
        } else {
#pragma unroll
            for (int k = 0; k < NV; k++) {
                x[k] = xv[k];
                d[k] = dv[k];
            }
        }
        const float m = mean, r = rstd;
        if constexpr (S > 0) stats(i + 1);
        else fetch(i + 1);
        float sg = 0.f, sgx = 0.f;
#pragma unroll
        for (int k = 0; k < NV; k++) {
            float gv[W], xf[W], df[W];
            gamma_of(k, gv);
            unpack_w<T>(x[k], xf);
            unpack_w<T>(d[k], df);
#pragma unroll
            for (int j = 0; j < W; j++) {
                const float gd = df[j] * gv[j]; // 0 past the row (d is)
                sg += gd;
                sgx = fmaf(gd, (xf[j] - m) * r, sgx);
            }
        }
        if constexpr (LATE) ptx::cp_async_wait<S - 2>(); // S + i groups committed: row i+1's copies
        const float2 s = wr_sum<WPR>(make_float2(sg, sgx), wpr, red, i & 1);
        if constexpr (LATE) st.issue(i + S, (const T *)a.x, (const T *)a.dy, second);
        if (row >= a.rows) continue; // the group's rows end together; its barriers stay matched
        const float c1 = s.y / (float)cols, c2 = a.rms ? 0.f : s.x / (float)cols;
        uint4 *dx = reinterpret_cast<uint4 *>((T *)a.y + row * cols);
#pragma unroll
        for (int k = 0; k < NV; k++) {
            const int c = k * tpr + t;
            if (c >= nvec) continue;
            float gv[W], xf[W], df[W], o[W];
            gamma_of(k, gv);
            unpack_w<T>(x[k], xf);
            unpack_w<T>(d[k], df);
#pragma unroll
            for (int j = 0; j < W; j++) {
                const float xh = (xf[j] - m) * r;
                o[j] = r * (df[j] * gv[j] - c2 - xh * c1);
                dg[k][j] = fmaf(df[j], xh, dg[k][j]);
                db[k][j] += df[j];
            }
            dx[c] = pack_w<T>(o);
        }
    }
    if constexpr (S > 0) ptx::cp_async_wait<0>();
    if (!a.dgamma) return;
    wr_partials<NV, W>(a, dg, db, tpr, reinterpret_cast<float *>(smem)); // smem: G * 2*cols floats
    end_sums<true>(a, smem);
}

} // namespace
} // namespace kb::norm

namespace kb::norm {

// WPR > 0: the warps a row at compile time, staged S rows ahead as the
// caller matched (wr_bwd_by_wpr: plan.c's wr.stages); WPR 0: both at run time.
template <typename T, int NV, int WPR, int S = 0> const void *wr_bwd_pick(const kb_norm_plan &p)
{
    if constexpr (WPR == 0) { // rows of 9-10 and 17-20 warps: capped at 96 registers (plan.c: wr.lb)
        if (p.stages == 3 && p.lb == 320) return (const void *)wr_bwd<T, NV, 0, 3, 320>;
        if (p.stages == 3 && p.lb == 640) return (const void *)wr_bwd<T, NV, 0, 3, 640>;
        if (p.lb != 512) return nullptr;
        return p.stages == 3 ? (const void *)wr_bwd<T, NV, 0, 3> : p.stages == 0 ? (const void *)wr_bwd<T, NV, 0> : nullptr;
    } else {
        return p.lb == 512 ? (const void *)wr_bwd<T, NV, WPR, S> : nullptr;
    }
}

// Compile-time warps a row where the planner's automatic choice runs them
// (NV 2: 1-2 warps unstaged, 4 and 8 staged 2 rows ahead, 16 staged 3; rows of
// 6-7 and 11-15 warps run as 8 and 16: plan.c's wr.pad); any other combination (9-10 and
// 17-20 warps, a fixed stages) runs the kernel that takes them at run time (WPR 0): the same
// code, half the instantiations to compile. NV 1: one-warp rows only, unstaged
// (staged lost under 4 warps, wr.stages: not built).
template <typename T, int NV> const void *wr_bwd_by_wpr(const kb_norm_plan &p)
{
    const int wpr = p.tpr / 32, s = p.stages;
    if constexpr (NV == 1) { // one-warp rows only, unstaged (plan.c)
        if (wpr != 1 || p.lb != 512 || s != 0) return nullptr;
        return (const void *)wr_bwd<T, 1, 1>;
    } else {
        if (wpr == 1 && s == 0) return wr_bwd_pick<T, NV, 1>(p);
        if (wpr == 2 && s == 0) return wr_bwd_pick<T, NV, 2>(p);
        if (wpr == 4 && s == 2) return wr_bwd_pick<T, NV, 4, 2>(p);
        if (wpr == 8 && s == 2) return wr_bwd_pick<T, NV, 8, 2>(p);
        if (wpr == 16 && s == 3) return wr_bwd_pick<T, NV, 16, 3>(p);
        return wr_bwd_pick<T, NV, 0>(p);
    }
}

template <typename T> const void *wr_bwd_kernel(const kb_norm_plan &p)
{
    return p.nv == 1 ? wr_bwd_by_wpr<T, 1>(p) : p.nv == 2 ? wr_bwd_by_wpr<T, 2>(p) : nullptr;
}

} // namespace kb::norm
