// The warp-row kernels: whole warps a row, the row in registers, no
// block-wide barrier.
#pragma once
#include "../ptx/barrier.cuh"
#include "common.cuh"

namespace kb::norm {
namespace { // internal linkage, as one file had it: inlined helpers emit no copy of their own

// A row belongs to a group of wpr warps (tpr = 32 wpr threads, any wpr from 1
// to 32, so rows of 5 or 10 warps' worth need no idle warps); lane t of the
// group holds vectors t, t + tpr, ... (NV of them, 16 bytes each) in
// registers. Sums: shuffles within a warp; across the group's warps, shared
// memory and a named barrier (bar.sync 1 + group, tpr) that only this group's
// warps wait on, so the block's other rows go on. The cross-warp sum adds the
// warps' values in warp order: the same bits in every thread and on every
// run. The forward takes one row per group (a grid over the rows, as many
// groups resident as registers allow); the backward is persistent (its
// dgamma/dbeta partials stay in registers across rows).
// Needs cols a multiple of the vector width and 16-byte aligned tensors; a
// block holds at most 16 groups (named barriers 1..15; one-warp groups need none).

// Sum v over the group: red[2][32] holds one value per warp of the block, buf
// picks the half; a half is rewritten two calls later, after a named barrier
// that each of the group's warps passes only once done reading it.
using WrRed = float2[2][32]; // one sum a warp of the block, two rows' worth (wr_sum's buf)
static_assert(sizeof(WrRed) == KB_NORM_WR_RED_BYTES, "plan.h's static shared memory");

// N = 1: v.x alone (the forward's sums are one value each; shuffling a .y of
// zero cost 5 shuffles a meeting); N = 2: v.x and v.y.
template <int WPR, int N = 2> __device__ __forceinline__ float2 wr_sum(float2 v, int wpr, float2 (*red)[32], int buf)
{
    static_assert(N == 1 || N == 2, "v.x, or v.x and v.y");
    if constexpr (WPR > 0) wpr = WPR;
    lane_sums<N>(&v.x);
    if (wpr == 1) return v;
    const int warp = threadIdx.x >> 5, g = warp / wpr, first = g * wpr;
    if ((threadIdx.x & 31) == 0) red[buf][warp] = v;
    ptx::named_barrier(1 + g, wpr * 32);
    float2 s = N > 1 ? red[buf][first] : make_float2(red[buf][first].x, 0.f);
#pragma unroll
    for (int k = 1; k < (WPR > 0 ? WPR : wpr); k++) {
        s.x += red[buf][first + k].x;
        if constexpr (N > 1) s.y += red[buf][first + k].y;
    }
    return s;
}

} // namespace
} // namespace kb::norm
