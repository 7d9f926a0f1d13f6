// LayerNorm / RMSNorm: what the kernel families share (device code only).
// Statistics and sums in fp32; every sum runs in a fixed order, so results
// are the same bits on every run.
//
// forward:  mean = sum(x)/N, rstd = 1/sqrt(sum((x-mean)^2)/N + eps) (RMSNorm:
//           mean = 0), y = (x - mean)*rstd*gamma + beta
// backward: xh = (x - mean)*rstd, g = dy*gamma,
//           dx = rstd*(g - mean(g) - xh*mean(g*xh)) (RMSNorm: no mean(g)),
//           dgamma = sum over rows of dy*xh, dbeta = sum over rows of dy.
//
// The backward kernels (but naive's; sums.cuh) run a persistent grid: each thread keeps
// dgamma/dbeta partial sums for its columns in registers over the rows its
// group visits; the groups of a block add theirs in group order
// (block_partials; warp_row: wr_partials); each block writes one partial row to `work`; after a
// grid-wide barrier (cooperative launch) all blocks add the partial rows
// column by column, in block order (column_sums).
#pragma once
#include <cstring>
#include <type_traits>
#include <cuda_runtime.h>

#include "../common.cuh"
#include "../kernels.h"
#include "../ptx/cp_async.cuh"
#include "plan.h"

namespace kb::norm {
namespace { // internal linkage, as one file had it: inlined helpers emit no copy of their own

using kb::from_f;
using kb::to_f;
using kb::Vec;

// v[i] summed over `lanes` adjacent lanes (a power of two, up to 32) by a
// butterfly: every lane gets the same bits (it adds the same two values on
// both sides).
template <int N> __device__ __forceinline__ void lane_sums(float *v, int lanes = 32)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        if (o < lanes)
#pragma unroll
            for (int i = 0; i < N; i++) v[i] += __shfl_xor_sync(0xffffffffu, v[i], o);
}

// Sum v over the group of tpr threads; every thread of the group gets the
// same bits (a butterfly adds the same two values on both sides). Must be
// reached by every thread of the block when tpr > 32. buf < 0: red holds 32
// entries and is freed by a barrier first; buf 0 or 1: red holds 2 x 32 and
// the caller alternates buf row by row (a buffer is rewritten two rows later,
// after a barrier that every thread passes only once done reading it), so
// a row costs one barrier.
__device__ __forceinline__ float2 group_sum(float2 v, int tpr, float2 *red, int buf = -1)
{
    lane_sums<2>(&v.x, tpr < 32 ? tpr : 32);
    if (tpr <= 32) return v;
    const int warp = threadIdx.x >> 5, nw = tpr >> 5, first = warp & ~(nw - 1);
    if (buf < 0)
        __syncthreads(); // red is free again
    else
        red += 32 * buf;
    if ((threadIdx.x & 31) == 0) red[warp] = v;
    __syncthreads();
    float2 s = red[first];
    for (int k = 1; k < nw; k++) {
        s.x += red[first + k].x;
        s.y += red[first + k].y;
    }
    return s;
}

// Chan's update: a part's (n, sum, M2 about m, m) share of M2 about `mean`.
__device__ __forceinline__ float chan_term(float4 part, float mean)
{
    const float d = part.w - mean;
    return fmaf(part.x * d, d, part.z);
}
// LayerNorm's row statistics in one meeting, with no cancellation whatever
// the row holds (Chan's parallel merge), in two steps around the caller's
// pass over its values:
// - lane_mean(s, n, tpr): s and n, a thread's sum and count of values, added
//   by butterflies over its warp (or its tpr < 32 lanes; the same bits in
//   every lane); returns (n_w, s_w, m_w = s_w / n_w). The caller then sums
//   q = (x - m_w)^2 over its values.
// - group_merge(w, q, tpr, red, buf): q added over the lanes alike (q_w);
//   across warps each warp's (n_w, s_w, q_w, m_w) goes to red and every
//   thread adds in warp order: mean = sum s_w / sum n_w, M2 = sum (q_w +
//   n_w (m_w - mean)^2), every term non-negative. Returns (mean, M2).
// Sums shifted by a value K of the row (x - K, (x - K)^2, one reduction)
// lost 2-3 digits when K was an outlier, a massive activation in the row's
// first column: fp32 rstd 22-26x past the op's tolerance (block 37 x 8191,
// bulk 37 x 12288; tests/test_norm_outliers.c, H200, 2026-11-28). red and buf as
// group_sum's (red: 2 x 32 float4). __fdividef: '/' calls a subroutine
// (spills at 64 registers); m_w need not be exact (M2 holds for any m_w up
// to n_w (m_w - exact)^2).
__device__ __forceinline__ float3 lane_mean(float s, float n, int tpr)
{
    float2 v = make_float2(s, n);
    lane_sums<2>(&v.x, tpr < 32 ? tpr : 32);
    return make_float3(v.y, v.x, v.y > 0.f ? __fdividef(v.x, v.y) : 0.f);
}
__device__ __forceinline__ float2 group_merge(float3 w, float q, int tpr, float4 *red, int buf)
{
    lane_sums<1>(&q, tpr < 32 ? tpr : 32);
    if (tpr <= 32) return make_float2(w.z, q);
    const int warp = threadIdx.x >> 5, nw = tpr >> 5, first = warp & ~(nw - 1);
    red += 32 * buf;
    if ((threadIdx.x & 31) == 0) red[warp] = make_float4(w.x, w.y, q, w.z);
    __syncthreads();
    float nt = 0.f, st = 0.f;
    for (int k = 0; k < nw; k++) {
        const float4 r = red[first + k];
        nt += r.x;
        st += r.y;
    }
    const float mean = nt > 0.f ? __fdividef(st, nt) : 0.f;
    float m2 = 0.f;
    for (int k = 0; k < nw; k++) m2 += chan_term(red[first + k], mean);
    return make_float2(mean, m2);
}

// A 16-byte vector's bits as floats, 16-bit types by 32-bit words (two
// elements a word). wr_fwd holds its row as uint4: a Vec of __half /
// __nv_bfloat16 structs taken element by element (unpack) became one 16-bit
// value a register there (bf16 rows of 8 vectors a lane spilled 592 bytes at
// 64 registers). The other kernels keep unpack: by words their bulk and
// loop kernels spilled more (bulk_bwd bf16 8 -> 156 bytes).
template <typename T> __device__ __forceinline__ float2 widen2(unsigned w);
template <> __device__ __forceinline__ float2 widen2<__half>(unsigned w)
{
    __half2 h;
    memcpy(&h, &w, 4);
    return __half22float2(h);
}
template <> __device__ __forceinline__ float2 widen2<__nv_bfloat16>(unsigned w)
{
    return make_float2(__uint_as_float(w << 16), __uint_as_float(w & 0xffff0000u)); // exact
}
template <typename T> __device__ __forceinline__ unsigned narrow2(float lo, float hi)
{
    unsigned w;
    if constexpr (std::is_same<T, __half>::value) {
        const __half2 h = __floats2half2_rn(lo, hi);
        memcpy(&w, &h, 4);
    } else {
        const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
        memcpy(&w, &h, 4);
    }
    return w;
}

// One 32-bit word: one fp32 value or two 16-bit ones (f[0], f[1]). unpack_w
// keeps its own loop: built on unpack_word, warp_row_bwd_16's PTX changed.
template <typename T> __device__ __forceinline__ void unpack_word(unsigned w, float *f)
{
    if constexpr (sizeof(T) == 4) f[0] = __uint_as_float(w);
    else {
        const float2 p = widen2<T>(w);
        f[0] = p.x, f[1] = p.y;
    }
}
template <typename T> __device__ __forceinline__ unsigned pack_word(const float *f)
{
    if constexpr (sizeof(T) == 4) return __float_as_uint(f[0]);
    else return narrow2<T>(f[0], f[1]);
}

template <typename T> __device__ __forceinline__ void unpack_w(const uint4 u, float *f)
{
    const unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int i = 0; i < 4; i++) {
        if constexpr (sizeof(T) == 4) {
            f[i] = __uint_as_float(w[i]);
        } else {
            const float2 p = widen2<T>(w[i]);
            f[2 * i] = p.x;
            f[2 * i + 1] = p.y;
        }
    }
}

template <typename T> __device__ __forceinline__ uint4 pack_w(const float *f)
{
    unsigned w[4];
#pragma unroll
    for (int i = 0; i < 4; i++) w[i] = pack_word<T>(f + i * (4 / sizeof(T)));
    return make_uint4(w[0], w[1], w[2], w[3]);
}

// By value: the copy is one 16-byte load (a reference would read element by element).
template <typename T, int W> __device__ __forceinline__ void unpack(const Vec<T, W> v, float *f)
{
#pragma unroll
    for (int i = 0; i < W; i++) f[i] = to_f(v.v[i]);
}

template <typename T, int W> __device__ __forceinline__ void load_f(const T *p, float *f)
{
    unpack<T, W>(*reinterpret_cast<const Vec<T, W> *>(p), f);
}

template <typename T, int W> __device__ __forceinline__ void store_f(T *p, const float *f)
{
    Vec<T, W> v;
#pragma unroll
    for (int i = 0; i < W; i++) v.v[i] = from_f<T>(f[i]);
    *reinterpret_cast<Vec<T, W> *>(p) = v;
}

// The rows of a thread group: row0 + i*stride, i < iters (a persistent grid,
// G groups a block, stride gridDim.x*G).
// wr_bwd's group g of block b starts at row g*gridDim.x + b (group_row0): the
// groups interleave across blocks, so block row counts differ by one at most.
// From b*G + g they differed by G - 1 (4096 rows, 132 blocks of 2 groups:
// blocks 0-67 did 32 rows, 68-131 30; now 31, four 32). H100, LayerNorm bwd
// 4096 x 4096 fp16 38.14/38.11 -> 37.28/37.38 us (norm DESIGN.md).
// The block kernels keep b*G + g: interleaved they ran 0.991-1.006 of it.
__device__ __forceinline__ long group_row0(int g) { return (long)g * gridDim.x + blockIdx.x; }
// Vector k of thread t sits at column (k*tpr + t)*W, and in stage s at slot
// ((s*rpb + g)*NV + k)*tpr + t of a tensor's staging area.
// The opt kernels' dynamic shared memory starts with the reductions' [2][32]
// float4 (group_merge; group_sum's [2][32] float2 fits), in float2 units.
constexpr int RED_F2 = 128;

template <typename T, int W, int NV, int S> struct Stager {
    Vec<T, W> *buf; // [S][rpb][NV][tpr]
    int g, t, tpr, rpb, iters;
    long row0, stride, rows, cols;
    // interleave: group_row0's order (wr_bwd); else b*rpb + g (the block kernels)
    __device__ __forceinline__ void init(void *area, int tpr_, int iters_, const kb_norm_args &a, bool interleave)
    {
        buf = reinterpret_cast<Vec<T, W> *>(area);
        tpr = tpr_;
        g = threadIdx.x / tpr;
        t = threadIdx.x - g * tpr;
        rpb = blockDim.x / tpr;
        iters = iters_;
        row0 = interleave ? group_row0(g) : (long)blockIdx.x * rpb + g;
        stride = (long)gridDim.x * rpb;
        rows = a.rows;
        cols = a.cols;
    }
    __device__ __forceinline__ int slot(int s, int k) const { return ((s * rpb + g) * NV + k) * tpr + t; }
    // Stage i's row of `base` (one or two tensors, the second `second` vectors on).
    __device__ __forceinline__ void issue(int i, const T *base, const T *base2, int second) const
    {
        if constexpr (S > 0) {
            const long row = row0 + (long)i * stride;
            if (i < iters && row < rows) {
#pragma unroll
                for (int k = 0; k < NV; k++) {
                    const long c = ((long)k * tpr + t) * W;
                    if (c < cols) {
                        ptx::cp_async16(&buf[slot(i % S, k)], base + row * cols + c);
                        if (base2) ptx::cp_async16(&buf[second + slot(i % S, k)], base2 + row * cols + c);
                    }
                }
            }
            ptx::cp_async_commit();
        }
    }
    // Vector k of row i: its slot of stage i % S, or memory when S = 0
    __device__ __forceinline__ const Vec<T, W> *at(int i, int k, const T *base, int second) const
    {
        if constexpr (S > 0) return &buf[second + slot(i % S, k)];
        else return reinterpret_cast<const Vec<T, W> *>(base + (row0 + (long)i * stride) * cols + ((long)k * tpr + t) * W);
    }
    // Vector k of row i; zeros past the row.
    __device__ __forceinline__ Vec<T, W> get(int i, int k, const T *base, int second, bool live) const
    {
        const long c = ((long)k * tpr + t) * W;
        Vec<T, W> v;
        if (live && c < cols) {
            v = *at(i, k, base, second);
        } else {
#pragma unroll
            for (int j = 0; j < W; j++) v.v[j] = from_f<T>(0.f);
        }
        return v;
    }
    // get's bits as one uint4 (16-byte vectors only), for the kernels that
    // unpack by words (unpack_w)
    __device__ __forceinline__ uint4 get_w(int i, int k, const T *base, int second, bool live) const
    {
        static_assert(W * sizeof(T) == 16, "16-byte vectors");
        const long c = ((long)k * tpr + t) * W;
        if (!live || c >= cols) return make_uint4(0, 0, 0, 0); // 0.f in every type
        return *reinterpret_cast<const uint4 *>(at(i, k, base, second));
    }
};

} // namespace
} // namespace kb::norm

namespace kb::norm {
namespace { // internal linkage, as one file had it: inlined helpers emit no copy of their own
static_assert(RED_F2 * sizeof(float2) == KB_NORM_RED_BYTES, "plan.h's block layout");
} // namespace
} // namespace kb::norm
