// LayerNorm and RMSNorm, forward and backward: the textbook kernels and the
// optimized ones. Statistics and sums in fp32.
//
// forward:  mean = sum(x)/N, rstd = 1/sqrt(sum((x-mean)^2)/N + eps) (RMSNorm:
//           mean = 0), y = (x - mean)*rstd*gamma + beta
// backward: xh = (x - mean)*rstd, g = dy*gamma,
//           dx = rstd*(g - mean(g) - xh*mean(g*xh)) (RMSNorm: no mean(g)),
//           dgamma = sum over rows of dy*xh, dbeta = sum over rows of dy.
#include <cooperative_groups.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <cuda_runtime.h>

#include "common.cuh"
#include "kernels.h"

namespace {

using kb::from_f;
using kb::to_f;
using kb::Vec;

// ---- naive: one thread per row (dx: per row; dgamma/dbeta: per column) ----
template <typename T> __global__ void naive_fwd(kb_norm_args a)
{
    const long r = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= a.rows) return;
    const T *x = (const T *)a.x + r * a.cols, *gm = (const T *)a.gamma, *bt = (const T *)a.beta;
    T *y = (T *)a.y + r * a.cols;
    float mean = 0.f, ss = 0.f;
    if (!a.rms) {
        for (long j = 0; j < a.cols; j++) mean += to_f(x[j]);
        mean /= (float)a.cols;
    }
    for (long j = 0; j < a.cols; j++) {
        float d = to_f(x[j]) - mean;
        ss += d * d;
    }
    const float rstd = rsqrtf(ss / (float)a.cols + a.eps);
    for (long j = 0; j < a.cols; j++) {
        float v = (to_f(x[j]) - mean) * rstd;
        if (gm) v *= to_f(gm[j]);
        if (bt) v += to_f(bt[j]);
        y[j] = from_f<T>(v);
    }
    if (a.mean) a.mean[r] = mean;
    a.rstd[r] = rstd;
}

template <typename T> __global__ void naive_bwd_dx(kb_norm_args a)
{
    const long r = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= a.rows) return;
    const T *x = (const T *)a.x + r * a.cols, *dy = (const T *)a.dy + r * a.cols, *gm = (const T *)a.gamma;
    T *dx = (T *)a.y + r * a.cols;
    const float mean = a.rms ? 0.f : a.mean[r], rstd = a.rstd[r];
    float sg = 0.f, sgx = 0.f;
    for (long j = 0; j < a.cols; j++) {
        float xh = (to_f(x[j]) - mean) * rstd, g = to_f(dy[j]) * (gm ? to_f(gm[j]) : 1.f);
        sg += g;
        sgx += g * xh;
    }
    const float c1 = sgx / (float)a.cols, c2 = a.rms ? 0.f : sg / (float)a.cols;
    for (long j = 0; j < a.cols; j++) {
        float xh = (to_f(x[j]) - mean) * rstd, g = to_f(dy[j]) * (gm ? to_f(gm[j]) : 1.f);
        dx[j] = from_f<T>(rstd * (g - c2 - xh * c1));
    }
}

template <typename T> __global__ void naive_bwd_dgamma(kb_norm_args a)
{
    const long j = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= a.cols) return;
    const T *x = (const T *)a.x, *dy = (const T *)a.dy;
    float dg = 0.f, db = 0.f;
    for (long r = 0; r < a.rows; r++) {
        float xh = (to_f(x[r * a.cols + j]) - (a.rms ? 0.f : a.mean[r])) * a.rstd[r], d = to_f(dy[r * a.cols + j]);
        dg += d * xh;
        db += d;
    }
    a.dgamma[j] = dg;
    if (a.dbeta) a.dbeta[j] = db;
}

// ---- opt -------------------------------------------------------------------
// A row belongs to a group of `tpr` consecutive threads (a power of two, 1 to
// 1024); a block holds blockDim/tpr rows. Thread t of a group owns the vectors
// t, t + tpr, t + 2 tpr, ... of W elements (W = 16 bytes when cols allows it,
// else 1), NV of them, kept in registers between the statistics and the
// output, so x is read once. Row sums: shuffles within a warp, shared memory
// across the warps of a group. Every sum runs in a fixed order, so results
// are the same bits on every run.
//
// The backward runs a persistent grid (as many blocks as fit on the device):
// each thread keeps dgamma/dbeta partial sums for its columns in registers
// over the rows its group visits; the groups of a block add theirs in shared
// memory in group order; each block writes one partial row to `work`; after
// a grid-wide barrier (cooperative launch) all blocks add the partial rows
// column by column, in block order.

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

// LayerNorm's row statistics in one reduction. Each thread passes
// (n, s1, s2, K): its count of values and the sums of (x - K) and (x - K)^2,
// K being one value of the row that every thread of its warp shares (so s2
// suffers no cancellation from a large mean). Lanes add by a butterfly (same
// bits everywhere); across warps each warp's sums are moved to the first
// warp's K (x - K0 = (x - Kw) + d) and added in warp order. Returns
// (n, sum of x - K0, sum of (x - K0)^2, K0). red and buf as group_sum's.
__device__ __forceinline__ float4 group_shifted(float4 m, int tpr, float4 *red, int buf)
{
    lane_sums<3>(&m.x, tpr < 32 ? tpr : 32);
    if (tpr <= 32) return m;
    const int warp = threadIdx.x >> 5, nw = tpr >> 5, first = warp & ~(nw - 1);
    red += 32 * buf;
    if ((threadIdx.x & 31) == 0) red[warp] = m;
    __syncthreads();
    const float k0 = red[first].w;
    float n = 0.f, t1 = 0.f, t2 = 0.f;
    for (int k = 0; k < nw; k++) {
        const float4 r = red[first + k];
        const float d = r.w - k0;
        n += r.x;
        t1 += fmaf(r.x, d, r.y);
        t2 += fmaf(d, fmaf(r.x, d, 2.f * r.y), r.z);
    }
    return make_float4(n, t1, t2, k0);
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
    for (int i = 0; i < 4; i++) w[i] = sizeof(T) == 4 ? __float_as_uint(f[i]) : narrow2<T>(f[2 * i], f[2 * i + 1]);
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

// Staging (S > 0 stages, 16-byte vectors): a thread copies its vectors of the
// next S rows into shared memory with cp.async, which holds no register while
// the bytes are in flight, and reads back only its own copies, so no barrier
// guards them. S = 0: plain loads into registers.
#ifndef KB_NORM_STAGES
#define KB_NORM_STAGES 2
#endif

__device__ __forceinline__ void cp_async16(void *smem, const void *gmem)
{
    unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async4(void *smem, const void *gmem)
{
    unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

// The rows of a thread group: row0 + i*stride, i < iters (a persistent grid).
// Vector k of thread t sits at column (k*tpr + t)*W, and in stage s at slot
// ((s*rpb + g)*NV + k)*tpr + t of a tensor's staging area.
// The opt kernels' dynamic shared memory starts with the reductions' [2][32]
// float4 (group_shifted; group_sum's [2][32] float2 fits), in float2 units.
constexpr int RED_F2 = 128;

template <typename T, int W, int NV, int S> struct Stager {
    Vec<T, W> *buf; // [S][rpb][NV][tpr]
    int g, t, tpr, rpb, iters;
    long row0, stride, rows, cols;
    __device__ __forceinline__ void init(void *area, int tpr_, int iters_, const kb_norm_args &a)
    {
        buf = reinterpret_cast<Vec<T, W> *>(area);
        tpr = tpr_;
        g = threadIdx.x / tpr;
        t = threadIdx.x - g * tpr;
        rpb = blockDim.x / tpr;
        iters = iters_;
        row0 = (long)blockIdx.x * rpb + g;
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
                        cp_async16(&buf[slot(i % S, k)], base + row * cols + c);
                        if (base2) cp_async16(&buf[second + slot(i % S, k)], base2 + row * cols + c);
                    }
                }
            }
            cp_async_commit();
        }
    }
    // Vector k of row i (stage i % S, or memory when S = 0); zeros past the row.
    __device__ __forceinline__ Vec<T, W> get(int i, int k, const T *base, int second, bool live) const
    {
        const long c = ((long)k * tpr + t) * W;
        Vec<T, W> v;
        if (live && c < cols) {
            if constexpr (S > 0) v = buf[second + slot(i % S, k)];
            else v = *reinterpret_cast<const Vec<T, W> *>(base + (row0 + (long)i * stride) * cols + c);
        } else {
#pragma unroll
            for (int j = 0; j < W; j++) v.v[j] = from_f<T>(0.f);
        }
        return v;
    }
};

template <typename T, int W, int NV, int S>
__global__ void __launch_bounds__(1024) opt_fwd(kb_norm_args a, int tpr, int iters)
{
    extern __shared__ float2 smem[];
    Stager<T, W, NV, S> st;
    st.init(smem + RED_F2, tpr, iters, a);
    const int t = st.t;
    const long cols = a.cols;
    const T *xg = (const T *)a.x, *gm = (const T *)a.gamma, *bt = (const T *)a.beta;
#pragma unroll
    for (int s = 0; s < S; s++) st.issue(s, xg, nullptr, 0);
    const float inv_n = 1.f / (float)cols;
    for (int i = 0; i < iters; i++) {
        const long row = st.row0 + (long)i * st.stride;
        const bool live = row < a.rows;
        if constexpr (S > 0) cp_async_wait<S - 1>();
        float v[NV][W];
        int n = 0; // this thread's values in the row
#pragma unroll
        for (int k = 0; k < NV; k++) {
            Vec<T, W> p = st.get(i, k, xg, 0, live);
            if (((long)k * tpr + t) * W < cols) n += W;
#pragma unroll
            for (int j = 0; j < W; j++) v[k][j] = to_f(p.v[j]);
        }
        // one reduction per row: sums shifted by a value of the row (LayerNorm), or of squares (RMSNorm)
        float mean = 0.f, var;
        if (!a.rms) {
            const int lanes = tpr < 32 ? tpr : 32;
            const float K = __shfl_sync(0xffffffffu, v[0][0], (threadIdx.x & 31) & ~(lanes - 1));
            float s1 = 0.f, s2 = 0.f;
#pragma unroll
            for (int k = 0; k < NV; k++)
                if (((long)k * tpr + t) * W < cols)
#pragma unroll
                    for (int j = 0; j < W; j++) {
                        const float d = v[k][j] - K;
                        s1 += d;
                        s2 = fmaf(d, d, s2);
                    }
            const float4 m = group_shifted(make_float4((float)n, s1, s2, K), tpr, reinterpret_cast<float4 *>(smem), i & 1);
            mean = fmaf(m.y, inv_n, m.w);
            var = fmaxf(fmaf(-m.y * inv_n, m.y, m.z) * inv_n, 0.f);
        } else {
            float ss = 0.f;
#pragma unroll
            for (int k = 0; k < NV; k++)
#pragma unroll
                for (int j = 0; j < W; j++) ss = fmaf(v[k][j], v[k][j], ss);
            var = group_sum(make_float2(ss, 0.f), tpr, smem, i & 1).x * inv_n;
        }
        const float rstd = rsqrtf(var + a.eps);
        st.issue(i + S, xg, nullptr, 0); // every staged value is consumed: refill this stage
        if (!live) continue;
        T *y = (T *)a.y + row * cols;
#pragma unroll
        for (int k = 0; k < NV; k++) {
            const long c = ((long)k * tpr + t) * W;
            if (c >= cols) continue;
            float gv[W], bv[W], o[W];
            if (gm) load_f<T, W>(gm + c, gv);
            if (bt) load_f<T, W>(bt + c, bv);
#pragma unroll
            for (int j = 0; j < W; j++) o[j] = (v[k][j] - mean) * rstd * (gm ? gv[j] : 1.f) + (bt ? bv[j] : 0.f);
            store_f<T, W>(y + c, o);
        }
        if (t == 0) {
            if (a.mean) a.mean[row] = mean;
            a.rstd[row] = rstd;
        }
    }
    if constexpr (S > 0) cp_async_wait<0>();
}

// Forward for rows too long for registers: one row per block, x read three
// times (the second and third reads mostly hit L2).
template <typename T, int W> __global__ void __launch_bounds__(1024) loop_fwd(kb_norm_args a)
{
    __shared__ float2 red[32];
    const long row = blockIdx.x, cols = a.cols, step = (long)blockDim.x * W;
    const T *x = (const T *)a.x + row * cols, *gm = (const T *)a.gamma, *bt = (const T *)a.beta;
    float mean = 0.f, ss = 0.f, f[W];
    if (!a.rms) {
        float s = 0.f;
        for (long c = (long)threadIdx.x * W; c < cols; c += step) {
            load_f<T, W>(x + c, f);
#pragma unroll
            for (int i = 0; i < W; i++) s += f[i];
        }
        mean = group_sum(make_float2(s, 0.f), blockDim.x, red).x / (float)cols;
    }
    for (long c = (long)threadIdx.x * W; c < cols; c += step) {
        load_f<T, W>(x + c, f);
#pragma unroll
        for (int i = 0; i < W; i++) ss += (f[i] - mean) * (f[i] - mean);
    }
    const float rstd = rsqrtf(group_sum(make_float2(ss, 0.f), blockDim.x, red).x / (float)cols + a.eps);
    T *y = (T *)a.y + row * cols;
    for (long c = (long)threadIdx.x * W; c < cols; c += step) {
        float gv[W], bv[W];
        load_f<T, W>(x + c, f);
        if (gm) load_f<T, W>(gm + c, gv);
        if (bt) load_f<T, W>(bt + c, bv);
#pragma unroll
        for (int i = 0; i < W; i++) f[i] = (f[i] - mean) * rstd * (gm ? gv[i] : 1.f) + (bt ? bv[i] : 0.f);
        store_f<T, W>(y + c, f);
    }
    if (threadIdx.x == 0) {
        if (a.mean) a.mean[row] = mean;
        a.rstd[row] = rstd;
    }
}

// After the grid barrier: dgamma[j] (dbeta[j]) = sum over blocks b, in order
// of b, of work[b][0][j] (work[b][1][j]). The 2*cols sums (dgamma's columns,
// then dbeta's: value v of a partial row) go in tiles of 8 units of VW values
// (VW = 4, float4 loads, when cols % 4 == 0); a block takes tiles; lane l of
// warp w loads unit l & 7 of the partial rows b = s, s + ns, ... (slice
// s = 4w + (l >> 3), ns = 4 x warps), four rows' loads in flight before their
// adds (in order of b), so a tile costs about one L2 round trip, not one per
// row; then the slices' sums are added in order of s (part: blockDim * 16
// bytes of shared memory). Every sum's order is fixed: the same bits on every run.
constexpr size_t COLSUM_SMEM_PER_THREAD = 16;
template <int VW> struct CgVec { // VW floats by one L2 (.cg) load
    float v[VW];
    __device__ __forceinline__ CgVec() {}
    __device__ __forceinline__ explicit CgVec(const float *p)
    {
        if constexpr (VW == 4) {
            const float4 f = __ldcg(reinterpret_cast<const float4 *>(p));
            v[0] = f.x, v[1] = f.y, v[2] = f.z, v[3] = f.w;
        } else {
            v[0] = __ldcg(p);
        }
    }
};
// The column sums, in one pass: block b takes the units (VW values) [b*upb,
// (b+1)*upb) of the 2*cols sums, in chunks of cu <= blockDim units; thread
// (s, u) of a chunk adds the partial rows s, s + ns, ... of unit u in order of
// b, eight loads in flight before their adds (zeros past the last row, which
// change no sum), so a chunk costs one or two L2 round trips; then the ns
// slices' sums are added in order of s (part: blockDim * VW floats). ns is
// at most ceil(nblk / 8), so each slice has about 8 rows and the last adds
// stay short. Every order is fixed: the same bits on every run.
template <int VW> __device__ void column_sums(const kb_norm_args &a, const float *work, float *part)
{
    using F = CgVec<VW>;
    const long cols = a.cols, n2 = 2 * cols, U = n2 / VW;
    const int T = blockDim.x, nblk = gridDim.x;
    const long upb = (U + nblk - 1) / nblk, u0 = (long)blockIdx.x * upb, u1 = u0 + upb < U ? u0 + upb : U;
    for (long c0 = u0; c0 < u1; c0 += T) {
        const int cu = (int)(u1 - c0 < T ? u1 - c0 : T);
        int ns = T / cu;
        if (ns > (nblk + 7) / 8) ns = (nblk + 7) / 8;
        const int s = threadIdx.x / cu, u = threadIdx.x - s * cu;
        if (s < ns) {
            const long v = (c0 + u) * VW;
            float acc[VW];
#pragma unroll
            for (int q = 0; q < VW; q++) acc[q] = 0.f;
            for (int b = s; b < nblk; b += 8 * ns) {
                F r[8];
#pragma unroll
                for (int k = 0; k < 8; k++) {
                    const int bb = b + k * ns;
                    if (bb < nblk) r[k] = F(work + (long)bb * n2 + v);
                    else
#pragma unroll
                        for (int q = 0; q < VW; q++) r[k].v[q] = 0.f;
                }
#pragma unroll
                for (int k = 0; k < 8; k++)
#pragma unroll
                    for (int q = 0; q < VW; q++) acc[q] += r[k].v[q];
            }
#pragma unroll
            for (int q = 0; q < VW; q++) part[(s * cu + u) * VW + q] = acc[q];
        }
        __syncthreads();
        for (int t = threadIdx.x; t < cu * VW; t += T) {
            float tot = part[t];
            for (int k = 1; k < ns; k++) tot += part[k * cu * VW + t];
            const long vv = c0 * VW + t;
            if (vv < cols) a.dgamma[vv] = tot;
            else if (a.dbeta) a.dbeta[vv - cols] = tot;
        }
        __syncthreads();
    }
}

// After every block wrote its partial row: the grid barrier, then the column sums.
__device__ void end_sums(const kb_norm_args &a, void *part)
{
    cooperative_groups::this_grid().sync();
    if (a.cols % 4 == 0) column_sums<4>(a, (const float *)a.work, (float *)part);
    else column_sums<1>(a, (const float *)a.work, (float *)part);
}

// The block's dgamma/dbeta partial row (per thread: columns (k*tpr + t)*W + j)
// into work[blockIdx.x]. One group a block: its vectors stored whole (16-byte
// stores, two for a vector of 8; element by element they were a scattered
// 4-byte store per value).
// Several groups: with `wide`, acc holds rpb * 2*cols floats: each group writes
// its row there, then every thread adds columns over the groups in group
// order; else acc holds 2*cols floats and the groups add theirs in turn, a
// barrier each.
template <int NV, int W>
__device__ void block_partials(const kb_norm_args &a, const float (&dg)[NV][W], const float (&db)[NV][W], int tpr,
                               float *acc, bool wide = false)
{
    const long cols = a.cols;
    const int g = threadIdx.x / tpr, t = threadIdx.x - g * tpr, rpb = blockDim.x / tpr;
    __syncthreads(); // the staging area becomes the accumulator
    float *work = (float *)a.work + (long)blockIdx.x * 2 * cols;
    if (rpb == 1 || wide) {
        float *mine = rpb == 1 ? work : acc + (long)g * 2 * cols;
#pragma unroll
        for (int k = 0; k < NV; k++) {
            const long c = (long)(k * tpr + t) * W;
            if (c < cols) {
                Vec<float, W> vg, vb;
#pragma unroll
                for (int j = 0; j < W; j++) vg.v[j] = dg[k][j], vb.v[j] = db[k][j];
                *reinterpret_cast<Vec<float, W> *>(mine + c) = vg;
                *reinterpret_cast<Vec<float, W> *>(mine + cols + c) = vb;
            }
        }
        if (rpb == 1) return;
        __syncthreads();
        for (long j = threadIdx.x; j < 2 * cols; j += blockDim.x) {
            float v = acc[j];
            for (int q = 1; q < rpb; q++) v += acc[(long)q * 2 * cols + j];
            work[j] = v;
        }
        __syncthreads(); // acc is reused next
        return;
    }
    for (int gg = 0; gg < rpb; gg++) { // the groups of the block add theirs in order
        if (g == gg)
#pragma unroll
            for (int k = 0; k < NV; k++) {
                const long c = (long)(k * tpr + t) * W;
                if (c < cols)
#pragma unroll
                    for (int j = 0; j < W; j++) {
                        acc[c + j] = gg ? acc[c + j] + dg[k][j] : dg[k][j];
                        acc[cols + c + j] = gg ? acc[cols + c + j] + db[k][j] : db[k][j];
                    }
            }
        __syncthreads();
    }
    for (long j = threadIdx.x; j < 2 * cols; j += blockDim.x) work[j] = acc[j];
    __syncthreads(); // acc is reused next
}

constexpr int BWD_BLOCK = 512;

// smem: red (RED_F2), then the staging area of x and dy, which the end reuses for
// the block's dgamma/dbeta accumulator (several rows per block) and
// column_sums' slices (bwd_smem sizes it for all three).
template <typename T, int W, int NV, int S>
__global__ void __launch_bounds__(BWD_BLOCK) opt_bwd(kb_norm_args a, int tpr, int iters)
{
    extern __shared__ float2 smem[];
    float2 *red = smem;
    Stager<T, W, NV, S> st;
    st.init(smem + RED_F2, tpr, iters, a);
    const int g = st.g, t = st.t, rpb = st.rpb, second = S * blockDim.x * NV; // dy's staging area
    const long cols = a.cols;
    const T *xg = (const T *)a.x, *dyg = (const T *)a.dy, *gm = (const T *)a.gamma;
    float dg[NV][W], db[NV][W];
#pragma unroll
    for (int k = 0; k < NV; k++)
#pragma unroll
        for (int i = 0; i < W; i++) dg[k][i] = db[k][i] = 0.f;
#pragma unroll
    for (int s = 0; s < S; s++) st.issue(s, xg, dyg, second);
    for (int it = 0; it < iters; it++) {
        const long row = st.row0 + (long)it * st.stride;
        const bool live = row < a.rows;
        if constexpr (S > 0) cp_async_wait<S - 1>();
        Vec<T, W> xv[NV], dv[NV];
#pragma unroll
        for (int k = 0; k < NV; k++) {
            xv[k] = st.get(it, k, xg, 0, live);
            dv[k] = st.get(it, k, dyg, second, live);
        }
        const float mean = live && !a.rms ? a.mean[row] : 0.f, rstd = live ? a.rstd[row] : 0.f;
        float sg = 0.f, sgx = 0.f;
#pragma unroll
        for (int k = 0; k < NV; k++) {
            const long c = ((long)k * tpr + t) * W;
            float gv[W];
            if (gm && c < cols) load_f<T, W>(gm + c, gv);
#pragma unroll
            for (int i = 0; i < W; i++) {
                const float gd = to_f(dv[k].v[i]) * (gm && c < cols ? gv[i] : 1.f); // 0 past the row
                sg += gd;
                sgx += gd * (to_f(xv[k].v[i]) - mean) * rstd;
            }
        }
        const float2 s = group_sum(make_float2(sg, sgx), tpr, red, it & 1);
        st.issue(it + S, xg, dyg, second); // every staged value is consumed: refill this stage
        if (!live) continue;
        const float c1 = s.y / (float)cols, c2 = a.rms ? 0.f : s.x / (float)cols;
        T *dx = (T *)a.y + row * cols;
#pragma unroll
        for (int k = 0; k < NV; k++) {
            const long c = ((long)k * tpr + t) * W;
            if (c >= cols) continue;
            float gv[W], o[W];
            if (gm) load_f<T, W>(gm + c, gv);
#pragma unroll
            for (int i = 0; i < W; i++) {
                const float d = to_f(dv[k].v[i]), xh = (to_f(xv[k].v[i]) - mean) * rstd;
                o[i] = rstd * (d * (gm ? gv[i] : 1.f) - c2 - xh * c1);
                dg[k][i] += d * xh;
                db[k][i] += d;
            }
            store_f<T, W>(dx + c, o);
        }
    }
    if constexpr (S > 0) cp_async_wait<0>();
    if (!a.dgamma) return;
    block_partials<NV, W>(a, dg, db, tpr, reinterpret_cast<float *>(smem + RED_F2));
    end_sums(a, smem + RED_F2);
}

// ---- Hopper: whole chunks of rows by the copy engine -----------------------
// On sm_90 a persistent block keeps a ring of S slots, each holding a chunk of
// R consecutive rows (R * cols elements, contiguous in memory, so one bulk
// copy: cp.async.bulk completing on the slot's mbarrier). One thread issues
// the copies, S chunks ahead; no register holds a byte in flight, so every
// SM has many rows in flight whatever the kernel's register count. A row of
// the chunk belongs to a group of tpr threads (as above); thread t reads
// vectors t, t + tpr, ... of its row from the slot. After the last read of a
// slot (a block barrier), the slot is refilled with the chunk S ahead.
// Needs cols * sizeof(T) a multiple of 16 and 16-byte aligned tensors.

#if __CUDA_ARCH__ >= 900
__device__ __forceinline__ unsigned smem_u32(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }
#endif

__device__ __forceinline__ void mbar_init(unsigned long long *b, unsigned count)
{
#if __CUDA_ARCH__ >= 900
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(b)), "r"(count) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}

// Thread 0: bytes of `n` copies (each `bytes` long) will complete on b.
__device__ __forceinline__ void bulk_load(unsigned long long *b, void *dst0, const void *src0, void *dst1,
                                          const void *src1, unsigned bytes)
{
#if __CUDA_ARCH__ >= 900
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); // the slot's generic reads come first
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(b)),
                 "r"(src1 ? 2 * bytes : bytes)
                 : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                     smem_u32(dst0)),
                 "l"(src0), "r"(bytes), "r"(smem_u32(b))
                 : "memory");
    if (src1)
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                         smem_u32(dst1)),
                     "l"(src1), "r"(bytes), "r"(smem_u32(b))
                     : "memory");
#endif
}

__device__ __forceinline__ void mbar_wait(unsigned long long *b, unsigned parity)
{
#if __CUDA_ARCH__ >= 900
    asm volatile("{\n"
                 ".reg .pred P1;\n"
                 "LAB_WAIT:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n"
                 "@P1 bra DONE;\n"
                 "bra LAB_WAIT;\n"
                 "DONE:\n"
                 "}\n" ::"r"(smem_u32(b)),
                 "r"(parity)
                 : "memory");
#endif
}

// The ring's shared memory: its barriers at 0 (8 at most), the reductions'
// [2][32] float4 at 64 (bulk_bwd's float2 take half; its saved statistics,
// two iterations of at most 32 rows' mean and rstd, the other half, from
// STATS_OFF), the slots from RING_OFF (16-byte aligned, as bulk copies need).
constexpr int STATS_OFF = 64 + 2 * 32 * 8, RING_OFF = 64 + 2 * 32 * 16, STATS_ROWS = 32;
static_assert(STATS_OFF + 2 * 2 * STATS_ROWS * 4 <= RING_OFF, "bulk_bwd's statistics fit below the ring");

// The ring of one block: chunk ch holds rows ch*R .. ch*R + R - 1 (fewer at
// the end) of one tensor (src0) or two (src1: the slot holds src0's rows, then
// src1's); this block's iteration i takes chunk blockIdx.x + i*gridDim.x.
struct Ring {
    // nothing but the kernel's parameters (constant bank) and shared-memory
    // addresses: every thread holds a Ring, so a field kept in a register
    // costs all of them (bulk_bwd runs 1024 threads at 64 registers)
    unsigned char *sm;
    const char *src0, *src1;
    int S, R;
    long rows, row_bytes;
    // every thread: the ring's layout; thread 0 also sets up the barriers and
    // issues the first S chunks; then a block barrier.
    __device__ __forceinline__ void start(unsigned char *smem, int S_, int R_, long rows_, long row_bytes_, const void *a, const void *b)
    {
        sm = smem;
        src0 = (const char *)a;
        src1 = (const char *)b;
        S = S_;
        R = R_;
        rows = rows_;
        row_bytes = row_bytes_;
        if (threadIdx.x == 0) {
            for (int s = 0; s < S; s++) mbar_init(bar(s), 1);
            for (int s = 0; s < S; s++) issue(s);
        }
        __syncthreads();
    }
    __device__ __forceinline__ unsigned long long *bar(int s) const { return reinterpret_cast<unsigned long long *>(sm) + s; }
    __device__ __forceinline__ long chunk(int i) const { return blockIdx.x + (long)i * gridDim.x; }
    __device__ __forceinline__ char *slot(int i, int tensor) const
    {
        return reinterpret_cast<char *>(sm) + RING_OFF + ((size_t)(i % S) * (src1 ? 2 : 1) + tensor) * (size_t)R * row_bytes;
    }
    // thread 0: fill iteration i's slot (nothing past the last chunk)
    __device__ __forceinline__ void issue(int i) const
    {
        const long r0 = chunk(i) * R;
        if (r0 >= rows) return;
        const long nr = rows - r0 < R ? rows - r0 : R;
        const size_t off = (size_t)r0 * row_bytes;
        bulk_load(bar(i % S), slot(i, 0), src0 + off, src1 ? slot(i, 1) : nullptr, src1 ? src1 + off : nullptr,
                  (unsigned)(nr * row_bytes));
    }
    // every thread: until iteration i's slot is full
    __device__ __forceinline__ void wait(int i) const { mbar_wait(bar(i % S), (unsigned)(i / S) & 1u); }
    __device__ __forceinline__ int iters() const
    {
        const long nchunks = (rows + R - 1) / R;
        return (int)((nchunks - (long)blockIdx.x + gridDim.x - 1) / gridDim.x);
    }
};

template <typename T, int NV> __global__ void __launch_bounds__(1024) bulk_fwd(kb_norm_args a, int tpr, int S)
{
    constexpr int W = 16 / sizeof(T);
    using V = Vec<T, W>;
    extern __shared__ __align__(128) unsigned char sm[];
    float2 *red = reinterpret_cast<float2 *>(sm + 64);
    const int R = blockDim.x / tpr, g = threadIdx.x / tpr, t = threadIdx.x - g * tpr, nvec = (int)(a.cols / W);
    const long cols = a.cols;
    Ring ring;
    ring.start(sm, S, R, a.rows, cols * (long)sizeof(T), a.x, nullptr);
    const T *gm = (const T *)a.gamma, *bt = (const T *)a.beta;
    float4 *red4 = reinterpret_cast<float4 *>(red);
    const float inv_n = 1.f / (float)cols;
    const int iters = ring.iters();
    for (int i = 0; i < iters; i++) {
        const long row = ring.chunk(i) * R + g;
        const bool live = row < a.rows;
        ring.wait(i);
        const V *mine = reinterpret_cast<const V *>(ring.slot(i, 0)) + (long)g * nvec + t; // vector k at mine[k * tpr]
        // one reduction per row, as opt_fwd's
        float mean = 0.f, var, f[W];
        if (!a.rms) {
            const int lanes = tpr < 32 ? tpr : 32;
            float k0 = 0.f;
            if (live) {
                unpack<T, W>(mine[0], f);
                k0 = f[0];
            }
            const float K = __shfl_sync(0xffffffffu, k0, (threadIdx.x & 31) & ~(lanes - 1));
            float s1 = 0.f, s2 = 0.f, cnt = 0.f;
#pragma unroll
            for (int k = 0; k < NV; k++)
                if (live && k * tpr + t < nvec) {
                    unpack<T, W>(mine[k * tpr], f);
                    cnt += (float)W;
#pragma unroll
                    for (int j = 0; j < W; j++) {
                        const float d = f[j] - K;
                        s1 += d;
                        s2 = fmaf(d, d, s2);
                    }
                }
            const float4 m = group_shifted(make_float4(cnt, s1, s2, K), tpr, red4, i & 1);
            mean = fmaf(m.y, inv_n, m.w);
            var = fmaxf(fmaf(-m.y * inv_n, m.y, m.z) * inv_n, 0.f);
        } else {
            float ss = 0.f;
#pragma unroll
            for (int k = 0; k < NV; k++)
                if (live && k * tpr + t < nvec) {
                    unpack<T, W>(mine[k * tpr], f);
#pragma unroll
                    for (int j = 0; j < W; j++) ss = fmaf(f[j], f[j], ss);
                }
            var = group_sum(make_float2(ss, 0.f), tpr, red, i & 1).x * inv_n;
        }
        const float rstd = rsqrtf(var + a.eps);
        if (live) {
            T *y = (T *)a.y + row * cols;
#pragma unroll
            for (int k = 0; k < NV; k++) {
                const int c = k * tpr + t;
                if (c >= nvec) continue;
                float gv[W], bv[W];
                unpack<T, W>(mine[k * tpr], f);
                if (gm) load_f<T, W>(gm + (long)c * W, gv);
                if (bt) load_f<T, W>(bt + (long)c * W, bv);
#pragma unroll
                for (int j = 0; j < W; j++) f[j] = (f[j] - mean) * rstd * (gm ? gv[j] : 1.f) + (bt ? bv[j] : 0.f);
                store_f<T, W>(y + (long)c * W, f);
            }
            if (t == 0) {
                if (a.mean) a.mean[row] = mean;
                a.rstd[row] = rstd;
            }
        }
        __syncthreads(); // the slot is read: refill it
        if (threadIdx.x == 0) ring.issue(i + S);
    }
}

template <typename T, int NV, bool GS, bool SST>
__global__ void __launch_bounds__(1024) bulk_bwd(kb_norm_args a, int tpr, int S)
{
    constexpr int W = 16 / sizeof(T);
    using V = Vec<T, W>;
    extern __shared__ __align__(128) unsigned char sm[];
    float2 *red = reinterpret_cast<float2 *>(sm + 64);
    const int R = blockDim.x / tpr, g = threadIdx.x / tpr, t = threadIdx.x - g * tpr, nvec = (int)(a.cols / W);
    const long cols = a.cols;
    const T *gm = (const T *)a.gamma;
    V *gs = reinterpret_cast<V *>(sm + RING_OFF + (size_t)S * 2 * R * cols * sizeof(T));
    if (GS) // gamma in shared memory past the ring (ring.start's barrier orders the copy)
        for (int c = threadIdx.x; c < nvec; c += blockDim.x) gs[c] = reinterpret_cast<const V *>(gm)[c];
    Ring ring;
    ring.start(sm, S, R, a.rows, cols * (long)sizeof(T), a.x, a.dy);
    const int iters = ring.iters();
    float dg[NV][W], db[NV][W];
#pragma unroll
    for (int k = 0; k < NV; k++)
#pragma unroll
        for (int j = 0; j < W; j++) dg[k][j] = db[k][j] = 0.f;
    // the saved statistics, one iteration ahead. SST: by cp.async into
    // shared memory (st[i & 1]: R means, then R rstds), threads j < 2R
    // copying one value each and waiting for it before the barrier that ends
    // the iteration before the one that reads it. Else in registers (nmean,
    // nrstd): fp16 and fp32 at 64 registers spill them, and the spill's
    // store waits for the load: its latency paid once a row (see bulk_plan).
    float *st = reinterpret_cast<float *>(sm + STATS_OFF); // SST: R <= STATS_ROWS, 2R <= blockDim.x (bulk_plan)
    auto fetch = [&](int i) {
        const int j = threadIdx.x;
        if (j >= 2 * R || i >= iters) return;
        const long row = ring.chunk(i) * R + (j < R ? j : j - R);
        if (row >= a.rows || (j < R && a.rms)) return;
        cp_async4(st + (i & 1) * 2 * R + j, j < R ? a.mean + row : a.rstd + row);
        cp_async_commit();
    };
    auto stats = [&](int i, float &mean, float &rstd) {
        const long row = ring.chunk(i) * R + g;
        mean = 0.f;
        rstd = 0.f;
        if (i < iters && row < a.rows) {
            if (!a.rms) mean = a.mean[row];
            rstd = a.rstd[row];
        }
    };
    float mean, rstd;
    if constexpr (SST) {
        fetch(0);
        cp_async_wait<0>();
        __syncthreads();
    } else {
        stats(0, mean, rstd);
    }
    for (int i = 0; i < iters; i++) {
        const long row = ring.chunk(i) * R + g;
        const bool live = row < a.rows;
        float nmean, nrstd;
        if constexpr (SST) {
            mean = a.rms ? 0.f : st[(i & 1) * 2 * R + g];
            rstd = st[(i & 1) * 2 * R + R + g];
            fetch(i + 1); // into the half read last iteration (its readers passed the barrier since)
        } else {
            stats(i + 1, nmean, nrstd);
        }
        ring.wait(i);
        const V *xs = reinterpret_cast<const V *>(ring.slot(i, 0)) + (long)g * nvec + t;
        const V *ds = reinterpret_cast<const V *>(ring.slot(i, 1)) + (long)g * nvec + t;
        float sg = 0.f, sgx = 0.f;
#pragma unroll
        for (int k = 0; k < NV; k++) {
            const int c = k * tpr + t;
            if (!live || c >= nvec) continue;
            float xf[W], df[W], gv[W];
            unpack<T, W>(xs[k * tpr], xf);
            unpack<T, W>(ds[k * tpr], df);
            if (GS) unpack<T, W>(gs[c], gv);
            else if (gm) load_f<T, W>(gm + (long)c * W, gv);
#pragma unroll
            for (int j = 0; j < W; j++) {
                const float gd = df[j] * (gm ? gv[j] : 1.f);
                sg += gd;
                sgx += gd * (xf[j] - mean) * rstd;
            }
        }
        const float2 sum = group_sum(make_float2(sg, sgx), tpr, red, i & 1);
        if (live) {
            const float c1 = sum.y / (float)cols, c2 = a.rms ? 0.f : sum.x / (float)cols;
            T *dx = (T *)a.y + row * cols;
#pragma unroll
            for (int k = 0; k < NV; k++) {
                const int c = k * tpr + t;
                if (c >= nvec) continue;
                float xf[W], df[W], gv[W], o[W];
                unpack<T, W>(xs[k * tpr], xf);
                unpack<T, W>(ds[k * tpr], df);
                if (GS) unpack<T, W>(gs[c], gv);
                else if (gm) load_f<T, W>(gm + (long)c * W, gv);
#pragma unroll
                for (int j = 0; j < W; j++) {
                    const float xh = (xf[j] - mean) * rstd;
                    o[j] = rstd * (df[j] * (gm ? gv[j] : 1.f) - c2 - xh * c1);
                    dg[k][j] += df[j] * xh;
                    db[k][j] += df[j];
                }
                store_f<T, W>(dx + (long)c * W, o);
            }
        }
        if constexpr (SST) {
            cp_async_wait<0>(); // the next iteration's statistics
        } else {
            mean = nmean;
            rstd = nrstd;
        }
        __syncthreads(); // the slot is read: refill it
        if (threadIdx.x == 0) ring.issue(i + S);
    }
    if (!a.dgamma) return;
    block_partials<NV, W>(a, dg, db, tpr, reinterpret_cast<float *>(sm + RING_OFF));
    end_sums(a, reinterpret_cast<float2 *>(sm + RING_OFF));
}

// Backward for rows too long for registers: one row per block at a time, x and
// dy read twice; the block's partial sums accumulate in its row of `work`.
template <typename T, int W> __global__ void __launch_bounds__(BWD_BLOCK) loop_bwd(kb_norm_args a, int iters)
{
    extern __shared__ float2 smem[];
    const long cols = a.cols, step = (long)blockDim.x * W;
    const T *gm = (const T *)a.gamma;
    float *work = a.dgamma ? (float *)a.work + (long)blockIdx.x * 2 * cols : nullptr;
    if (work)
        for (long c = (long)threadIdx.x * W; c < cols; c += step)
            for (int i = 0; i < W; i++) work[c + i] = work[cols + c + i] = 0.f;
    for (int it = 0; it < iters; it++) {
        const long row = (long)it * gridDim.x + blockIdx.x;
        if (row >= a.rows) break; // uniform over the block
        const T *x = (const T *)a.x + row * cols, *dy = (const T *)a.dy + row * cols;
        const float mean = a.rms ? 0.f : a.mean[row], rstd = a.rstd[row];
        float sg = 0.f, sgx = 0.f, xf[W], df[W], gv[W];
        for (long c = (long)threadIdx.x * W; c < cols; c += step) {
            load_f<T, W>(x + c, xf);
            load_f<T, W>(dy + c, df);
            if (gm) load_f<T, W>(gm + c, gv);
#pragma unroll
            for (int i = 0; i < W; i++) {
                const float gd = df[i] * (gm ? gv[i] : 1.f);
                sg += gd;
                sgx += gd * (xf[i] - mean) * rstd;
            }
        }
        const float2 s = group_sum(make_float2(sg, sgx), blockDim.x, smem);
        const float c1 = s.y / (float)cols, c2 = a.rms ? 0.f : s.x / (float)cols;
        T *dx = (T *)a.y + row * cols;
        for (long c = (long)threadIdx.x * W; c < cols; c += step) {
            float o[W];
            load_f<T, W>(x + c, xf);
            load_f<T, W>(dy + c, df);
            if (gm) load_f<T, W>(gm + c, gv);
#pragma unroll
            for (int i = 0; i < W; i++) {
                const float xh = (xf[i] - mean) * rstd;
                o[i] = rstd * (df[i] * (gm ? gv[i] : 1.f) - c2 - xh * c1);
                if (work) {
                    work[c + i] += df[i] * xh;
                    work[cols + c + i] += df[i];
                }
            }
            store_f<T, W>(dx + c, o);
        }
    }
    if (!work) return;
    __syncthreads();
    end_sums(a, smem + 32);
}

// ---- warp-row kernels: whole warps per row, no block-wide barrier ----------
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

__device__ __forceinline__ void group_bar(int id, int threads)
{
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// Sum v over the group: red[2][32] holds one value per warp of the block, buf
// picks the half; a half is rewritten two calls later, after a named barrier
// that each of the group's warps passes only once done reading it.
using WrRed = float2[2][32]; // one sum a warp of the block, two rows' worth (wr_sum's buf)

template <int WPR> __device__ __forceinline__ float2 wr_sum(float2 v, int wpr, float2 (*red)[32], int buf)
{
    if constexpr (WPR > 0) wpr = WPR;
    lane_sums<2>(&v.x);
    if (wpr == 1) return v;
    const int warp = threadIdx.x >> 5, g = warp / wpr, first = g * wpr;
    if ((threadIdx.x & 31) == 0) red[buf][warp] = v;
    group_bar(1 + g, wpr * 32);
    float2 s = red[buf][first];
#pragma unroll
    for (int k = 1; k < (WPR > 0 ? WPR : wpr); k++) {
        s.x += red[buf][first + k].x;
        s.y += red[buf][first + k].y;
    }
    return s;
}

template <typename T, int NV, int WPR> __global__ void __launch_bounds__(1024) wr_fwd(kb_norm_args a, int wpr)
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
        mean = wr_sum<WPR>(make_float2(s, 0.f), wpr, red, 0).x * inv_n;
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
    const float rstd = rsqrtf(wr_sum<WPR>(make_float2(q, 0.f), wpr, red, 1).x * inv_n + a.eps);
    const uint4 *gm = reinterpret_cast<const uint4 *>(a.gamma), *bt = reinterpret_cast<const uint4 *>(a.beta);
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
            if constexpr (decltype(G)::value) unpack_w<T>(gm[c], gv);
            if constexpr (decltype(B)::value) unpack_w<T>(bt[c], bv);
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

// Backward: a persistent grid of blocks of at most 512 threads (128 registers;
// 640 at 96 for rows of 17-20 warps, wr_wide);
// group g of block b takes rows (b*G + g) + i*gridDim.x*G (G groups a block), the next row's x, dy, mean and rstd loaded while this one is computed.
// S > 0 (3 by default for rows of 4 warps or more, wr_stages):
// the rows' x and dy staged S rows ahead by cp.async (Stager: each thread
// copies and reads back only its own vectors, so no barrier guards them)
// instead of one row ahead in registers: more bytes in flight, fewer registers.
// LB < 512 (wr_occ): blocks of at most LB threads, two of them an SM by
// registers (LB 320: 96 registers); LB 640 (wr_wide): one group of up to 20
// warps, 96 registers.
template <typename T, int NV, int WPR, int S = 0, int LB = 512>
__global__ void __launch_bounds__(LB, LB < 512 ? 2 : 1) wr_bwd(kb_norm_args a, int wpr, int iters)
{
    if constexpr (WPR > 0) wpr = WPR;
    constexpr int W = 16 / sizeof(T);
    using V = Vec<T, W>;
    // the staging (S > 0), then the end's partial rows and column_sums' slices;
    // 16-byte aligned for cp.async and the vector stores
    extern __shared__ __align__(16) float2 smem[];
    __shared__ WrRed red;
    const int tpr = wpr * 32, G = blockDim.x / tpr, g = threadIdx.x / tpr, t = threadIdx.x - g * tpr,
              nvec = (int)(a.cols / W);
    const long cols = a.cols, row0 = (long)blockIdx.x * G + g, stride = (long)gridDim.x * G;
    const V *gm = reinterpret_cast<const V *>(a.gamma);
    float dg[NV][W], db[NV][W];
#pragma unroll
    for (int k = 0; k < NV; k++)
#pragma unroll
        for (int j = 0; j < W; j++) dg[k][j] = db[k][j] = 0.f;
    V xv[NV], dv[NV];
    float mean = 0.f, rstd = 0.f;
    // gamma in registers, loaded once for all the block's rows (1 past the row
    // or without gamma), except bf16 under a register cap (LB 320, 640), where
    // the 8 registers more spilled (H100, rows 4096, % of copy: bf16 5120 71
    // -> 59, 10240 72 -> 59); elsewhere it saved the L1/L2 reloads of gamma
    // (fp16 6144 69 -> 76, 10240 75 -> 86, 8192 77 -> 82; bf16 6144 69 -> 76)
    constexpr bool GREG = LB == 512 || !std::is_same<T, __nv_bfloat16>::value;
    [[maybe_unused]] V gk[NV];
#pragma unroll
    for (int k = 0; k < NV && GREG; k++) {
        const int c = k * tpr + t;
        if (gm && c < nvec) gk[k] = gm[c];
        else
#pragma unroll
            for (int j = 0; j < W; j++) gk[k].v[j] = from_f<T>(1.f);
    }
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
        const V *xr = reinterpret_cast<const V *>((const T *)a.x + row * cols);
        const V *dr = reinterpret_cast<const V *>((const T *)a.dy + row * cols);
#pragma unroll
        for (int k = 0; k < NV; k++) {
            const int c = k * tpr + t;
            if (live && c < nvec) {
                xv[k] = xr[c];
                dv[k] = dr[c];
            } else {
#pragma unroll
                for (int j = 0; j < W; j++) xv[k].v[j] = dv[k].v[j] = from_f<T>(0.f);
            }
        }
        stats(i);
    };
    if constexpr (S > 0) {
        st.init(smem, tpr, iters, a);
#pragma unroll
        for (int q = 0; q < S; q++) st.issue(q, (const T *)a.x, (const T *)a.dy, second);
        stats(0);
    } else {
        fetch(0);
    }
    for (int i = 0; i < iters; i++) {
        const long row = row0 + (long)i * stride;
        V x[NV], d[NV]; // this row's, kept while the next row's loads land in xv, dv
        if constexpr (S > 0) {
            cp_async_wait<S - 1>();
#pragma unroll
            for (int k = 0; k < NV; k++) {
                x[k] = st.get(i, k, (const T *)a.x, 0, row < a.rows);
                d[k] = st.get(i, k, (const T *)a.dy, second, row < a.rows);
            }
            st.issue(i + S, (const T *)a.x, (const T *)a.dy, second); // this thread's copies of row i are read
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
            const int c = k * tpr + t;
            float gv[W];
            if (GREG) unpack<T, W>(gk[k], gv);
            else if (gm && c < nvec) unpack<T, W>(gm[c], gv);
            else
#pragma unroll
                for (int j = 0; j < W; j++) gv[j] = 1.f;
#pragma unroll
            for (int j = 0; j < W; j++) {
                const float gd = to_f(d[k].v[j]) * gv[j]; // 0 past the row (d is)
                sg += gd;
                sgx = fmaf(gd, (to_f(x[k].v[j]) - m) * r, sgx);
            }
        }
        const float2 s = wr_sum<WPR>(make_float2(sg, sgx), wpr, red, i & 1);
        if (row >= a.rows) continue; // the group's rows end together; its barriers stay matched
        const float c1 = s.y / (float)cols, c2 = a.rms ? 0.f : s.x / (float)cols;
        V *dx = reinterpret_cast<V *>((T *)a.y + row * cols);
#pragma unroll
        for (int k = 0; k < NV; k++) {
            const int c = k * tpr + t;
            if (c >= nvec) continue;
            float gv[W], o[W];
            if (GREG) unpack<T, W>(gk[k], gv);
            else if (gm && c < nvec) unpack<T, W>(gm[c], gv);
            else
#pragma unroll
                for (int j = 0; j < W; j++) gv[j] = 1.f;
#pragma unroll
            for (int j = 0; j < W; j++) {
                const float dd = to_f(d[k].v[j]), xh = (to_f(x[k].v[j]) - m) * r;
                o[j] = r * (dd * gv[j] - c2 - xh * c1);
                dg[k][j] = fmaf(dd, xh, dg[k][j]);
                db[k][j] += dd;
            }
            store_f<T, W>(reinterpret_cast<T *>(dx + c), o);
        }
    }
    if constexpr (S > 0) cp_async_wait<0>();
    if (!a.dgamma) return;
    block_partials<NV, W>(a, dg, db, tpr, reinterpret_cast<float *>(smem), true); // smem: G * 2*cols floats
    end_sums(a, smem);
}

// ---- launch plans ----------------------------------------------------------
long pow2ceil(long n)
{
    long p = 1;
    while (p < n) p <<= 1;
    return p;
}

struct Plan {
    int w, nv, tpr, block; // nv = 0: the loop kernels
    int stages;            // cp.async stages (16-byte vectors), 0: plain loads; bulk: slots of the ring
    bool bulk;             // the sm_90 kernels: chunks of block/tpr rows by bulk copies
    bool wr;               // the warp-row kernels: tpr = 32 x warps per row, nv vectors per lane
    int lb;                // wr_bwd's LB (0: 512)
    int gsm;               // bulk_bwd: gamma in shared memory, past the ring
    int sst;               // bulk_bwd: the saved statistics by cp.async into shared memory (STATS_OFF)
    long grid;
    int iters;
    size_t smem;
};

int device_sms()
{
    int dev = 0, sms = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    return sms;
}

#ifndef KB_NORM_ELEMS
#define KB_NORM_ELEMS 16
#endif
#ifndef KB_NORM_FWD_BLOCK
#define KB_NORM_FWD_BLOCK 256
#endif

// Elements per thread: about KB_NORM_ELEMS (enough bytes in flight, few
// registers), at most 32 (16 for the fp32 backward, which holds x, dy and two sums).
template <typename T> Plan shape_plan(const kb_norm_args *a)
{
    const int es = (int)sizeof(T), wv = 16 / es;
    Plan p{};
    p.w = a->cols % wv == 0 ? wv : 1;
    p.stages = p.w == wv ? KB_NORM_STAGES : 0;
    const long nvec = (a->cols + p.w - 1) / p.w;
    const int emax = a->backward && es == 4 ? 16 : 32;
    const int nvmax = emax / p.w < 8 ? emax / p.w : 8;
    const int nvt = KB_NORM_ELEMS / p.w < 1 ? 1 : KB_NORM_ELEMS / p.w < nvmax ? KB_NORM_ELEMS / p.w : nvmax;
    const long tmax = a->backward ? BWD_BLOCK : 1024;
    long tpr = pow2ceil((nvec + nvt - 1) / nvt);
    if (tpr > tmax) tpr = tmax;
    const long nv = pow2ceil((nvec + tpr - 1) / tpr);
    p.tpr = (int)tpr;
    p.nv = nv <= nvmax ? (int)nv : 0;
    if (!p.nv) {
        p.tpr = (int)tmax;
        p.stages = 0;
    }
    p.block = a->backward ? BWD_BLOCK : (p.tpr > KB_NORM_FWD_BLOCK ? p.tpr : KB_NORM_FWD_BLOCK);
    // staging that would leave room for only one block per SM is not worth it
    if ((size_t)p.stages * p.block * p.nv * 16 * (a->backward ? 2 : 1) > 100 * 1024) p.stages = 0;
    return p;
}

size_t plan_smem(const Plan &p, const kb_norm_args *a);
bool smem_fits(const Plan &p, const kb_norm_args *a, size_t static_bytes = 0);

int device_attr(cudaDeviceAttr attr)
{
    int dev = 0, v = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&v, attr, dev);
    return v;
}

bool aligned16(const void *p) { return ((unsigned long)p & 15) == 0; }

// The bulk kernels are built for sm_90a, which runs on compute capability 9.0
// alone. They beat the default kernels on long rows (kernels/NOTES.md: at
// 32 KiB rows, +13 points of copy forward, +15 backward; below 16 KiB they
// lose forward, and gain 1-7 points backward), so by default they take the
// backward, and forward rows of at least KB_NORM_BULK_BYTES.
// KBENCH_NORM_BULK=1 takes them for every row they can do, 0 never.
// Decided once, at the first launch (not on every timed launch): -1 by row
// bytes, 0 never, 1 always.
#ifndef KB_NORM_BULK_BYTES
#define KB_NORM_BULK_BYTES 32768
#endif
// An environment knob of the kernels (callers read it once): its value when it
// is one of the comma-separated integers `vals`, unset or empty: dflt; anything
// else is said on stderr, with `help`, and gives dflt.
int env_knob(const char *name, const char *vals, int dflt, const char *help)
{
    const char *e = getenv(name);
    if (!e || !*e) return dflt;
    const size_t n = strlen(e);
    for (const char *v = vals; *v;) {
        const size_t len = strcspn(v, ",");
        if (len == n && !strncmp(v, e, n)) return atoi(e);
        v += len + (v[len] == ',');
    }
    fprintf(stderr, "kbench: %s=%s ignored (%s)\n", name, e, help);
    return dflt;
}

int bulk_mode()
{
    static const int mode =
        device_attr(cudaDevAttrComputeCapabilityMajor) != 9 || device_attr(cudaDevAttrComputeCapabilityMinor) != 0
            ? 0
            : env_knob("KBENCH_NORM_BULK", "0,1", -1, "0: never, 1: always, unset: by row length");
    return mode;
}

// The bulk plan: rows whose bytes are a multiple of 16, 16-byte aligned
// tensors; thread t of a row's group takes vectors t, t + tpr, ...: 4 of
// them forward (they wait in shared memory, so more only costs passes), 8
// elements backward (gamma and two sums per element stay in registers), up
// to 8 vectors forward and 16 elements backward; chunks of R rows, about 16
// KiB of each tensor and at most 1024 threads; 2 to 4 slots in the ring (a
// backward block of 1024 threads: 1 or 2, and gamma in shared memory).
// The bulk backward's knobs, read once for the process (not once a dtype:
// a bad value is reported once). sst -1: by dtype (bulk_plan).
struct BulkKnobs {
    int smax, gsm, sst;
};
const BulkKnobs &bulk_knobs()
{
    static const BulkKnobs k = {env_knob("KBENCH_NORM_BULK_S", "1,2,3,4", 2, "1-4 slots at most"),
                                env_knob("KBENCH_NORM_BULK_GS", "0,1", 1, "0 or 1"),
                                env_knob("KBENCH_NORM_BULK_ST", "0,1", -1, "0 or 1")};
    return k;
}

template <typename T> bool bulk_plan(const kb_norm_args *a, Plan &p)
{
    const int es = (int)sizeof(T), w = 16 / es;
    const int mode = bulk_mode();
    if (!mode || (mode < 0 && !a->backward && a->cols * es < KB_NORM_BULK_BYTES) || a->cols % w || !aligned16(a->x) || !aligned16(a->y) || !aligned16(a->gamma) ||
        !aligned16(a->beta) || !aligned16(a->dy))
        return false;
    const long nvec = a->cols / w, nv0 = a->backward ? (8 / w > 0 ? 8 / w : 1) : 4;
    long tpr = pow2ceil((nvec + nv0 - 1) / nv0);
    if (tpr > 1024) tpr = 1024;
    const long nv = pow2ceil((nvec + tpr - 1) / tpr);
    if (nv > (a->backward ? 16 / w : 8)) return false;
    // by default not where a quarter or more of a row's threads would idle
    // (bf16 cols 5120 backward: 44-50% of copy against the default's 48-56),
    // forward; a backward the warp-row kernels did not take is past 8192
    // 16-bit columns, where the default kernels fall far behind (H100, rows
    // 4096, cols 10240: fp16 38%, fp32 23% of copy)
    if (mode < 0 && !a->backward && 4 * nvec < 3 * tpr * nv) return false;
    const long row_bytes = a->cols * es, tens = a->backward ? 2 : 1;
    long R = 1;
    while (R * 2 * tpr <= 1024 && R * 2 * row_bytes <= 16 * 1024 && R < a->rows) R *= 2;
    while (R * tpr < 32) R *= 2; // whole warps: group_sum shuffles over all 32 lanes
    const size_t chunk = (size_t)(tens * R * row_bytes);
    p = Plan{};
    p.bulk = true;
    p.w = w;
    p.tpr = (int)tpr;
    p.nv = (int)nv;
    p.block = (int)(R * tpr);
    p.stages = 4 * chunk <= 64 * 1024 ? 4 : 3 * chunk <= 120 * 1024 ? 3 : 2;
    if (a->backward && p.block == 1024) {
        // One block an SM (by registers): at most 2 slots in the ring, and
        // gamma in shared memory past it where 2 slots still fit, else the
        // slots that fit (1 for fp32 rows of 16384). H100, rows 4096, % of
        // copy, fp16 cols 12288 / 16384: 2 slots, gamma by L1 67 / 67; the
        // whole shared memory in slots (3-4) 51 / 54 (less L1 for gamma and
        // spills); 2 slots + gamma in shared memory 70 / 73 (bf16 65 / 66
        // -> 75 / 83); fp32 16384 went from the loop kernel (723 GB/s) to 1
        // slot (2180 GB/s). KBENCH_NORM_BULK_S (1-4) and _GS=0 for the A/B.
        const int smax = bulk_knobs().smax, gsm_on = bulk_knobs().gsm;
        const size_t room = (size_t)device_attr(cudaDevAttrMaxSharedMemoryPerBlockOptin) - RING_OFF,
                     gb = a->gamma ? (size_t)a->cols * es : 0;
        auto fit = [&](size_t r) { return (int)(r / chunk < (size_t)smax ? r / chunk : (size_t)smax); };
        p.gsm = gsm_on && gb && gb < room && fit(room - gb) >= 2;
        p.stages = fit(room - (p.gsm ? gb : 0));
        if (p.stages < 1) return false;
    }
    // The saved statistics by cp.async into shared memory (bulk_bwd's SST),
    // fp16 and fp32: H100, rows 4096, bwd % of copy, two runs each, SST /
    // registers: fp16 12288 76.2 76.0 / 70.1 69.0, 14336 81.6 81.0 / 71.1
    // 71.3, 16384 79.0 80.3 / 73.1 72.4; fp32 10240 84.1 84.3 / 61.0 60.6,
    // 16384 86.6 86.9 / 72.5 72.3. Not bf16, which did not spill them and
    // lost with SST (12288 71.5 71.3 / 75.4 74.5, 16384 75.3 75.8 / 83.7
    // 82.8). KBENCH_NORM_BULK_ST=0 / 1 forces registers / shared memory.
    if (a->backward) {
        const int sst = bulk_knobs().sst;
        p.sst = (sst >= 0 ? sst == 1 : !std::is_same<T, __nv_bfloat16>::value) && R <= STATS_ROWS && 2 * R <= p.block;
    }
    return smem_fits(p, a);
}

// Dynamic shared memory: red[32] + the larger of the staging area (x; the
// backward also dy), the backward's block accumulator of dgamma/dbeta (several
// rows per block) and column_sums' slices.
size_t plan_smem(const Plan &p, const kb_norm_args *a)
{
    if (p.wr) { // backward: the staging of x and dy, the groups' partial rows, column_sums' slices
        if (!a->backward) return 0;
        const size_t acc = p.tpr < p.block ? (size_t)(p.block / p.tpr) * 2 * (size_t)a->cols * sizeof(float) : 0,
                     part = (size_t)p.block * COLSUM_SMEM_PER_THREAD,
                     stage = (size_t)p.stages * p.block * p.nv * 16 * 2, m = acc > part ? acc : part;
        return m > stage ? m : stage;
    }
    if (p.bulk) { // the ring; the backward's end reuses it as above
        const size_t es = a->dtype == 0 ? 4 : 2;
        size_t m = (size_t)p.stages * (a->backward ? 2 : 1) * (p.block / p.tpr) * a->cols * es + (p.gsm ? a->cols * es : 0);
        if (a->backward) {
            const size_t acc = p.tpr < p.block ? 2 * (size_t)a->cols * sizeof(float) : 0,
                         part = (size_t)p.block * COLSUM_SMEM_PER_THREAD;
            m = m > acc ? m : acc;
            m = m > part ? m : part;
        }
        return RING_OFF + m;
    }
    size_t stage = (size_t)p.stages * p.block * (p.nv ? p.nv : 1) * 16 * (a->backward ? 2 : 1);
    size_t acc = a->backward && p.nv && p.tpr < p.block ? 2 * (size_t)a->cols * sizeof(float) : 0;
    size_t part = a->backward ? (size_t)p.block * COLSUM_SMEM_PER_THREAD : 0;
    size_t m = stage > acc ? stage : acc;
    return RED_F2 * sizeof(float2) + (m > part ? m : part);
}

// Whether a plan's dynamic shared memory, with the kernel's static, fits a block of this device.
bool smem_fits(const Plan &p, const kb_norm_args *a, size_t static_bytes)
{
    return plan_smem(p, a) + static_bytes <= (size_t)device_attr(cudaDevAttrMaxSharedMemoryPerBlockOptin);
}

// A persistent grid: every block resident at once (the backward's grid
// barrier needs it), each thread group taking rows row0 + i*stride.
template <typename K> int fit_grid(K kernel, const kb_norm_args *a, Plan &p)
{
    p.smem = plan_smem(p, a);
    // past 48 KiB of static and dynamic shared memory a kernel must opt in
    // (a launch fails otherwise: wr_bwd S 2 at cols 3000 asked for 48 KiB + its static red)
    cudaFuncAttributes fa;
    int e = (int)cudaFuncGetAttributes(&fa, kernel);
    if (e) return e;
    if (p.smem + fa.sharedSizeBytes > 48 * 1024 &&
        (e = (int)cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)p.smem)))
        return e;
    int per_sm = 0;
    e = (int)cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, p.block, p.smem);
    if (e) return e;
    if (per_sm < 1) return (int)cudaErrorLaunchOutOfResources;
    const long rpb = p.nv ? p.block / p.tpr : 1, groups = (a->rows + rpb - 1) / rpb;
    p.grid = (long)per_sm * device_sms();
    if (p.grid > groups) p.grid = groups;
    p.iters = (int)((groups + p.grid - 1) / p.grid);
    return 0;
}

template <typename K> int launch_bwd(K kernel, const kb_norm_args *a, const Plan &p, cudaStream_t s, void **args)
{
    if (a->dgamma) return (int)cudaLaunchCooperativeKernel((void *)kernel, (unsigned)p.grid, p.block, args, p.smem, s);
    return (int)cudaLaunchKernel((void *)kernel, (unsigned)p.grid, p.block, args, p.smem, s);
}

template <typename T, int W, int NV, int S> int run_opt_s(const kb_norm_args *a, Plan p, cudaStream_t s)
{
    kb_norm_args args = *a;
    int tpr = p.tpr, iters, e;
    void *kargs[] = {&args, &tpr, &iters};
    if (!a->backward) {
        auto kernel = opt_fwd<T, W, NV, S>;
        if ((e = fit_grid(kernel, a, p))) return e;
        iters = p.iters;
        return (int)cudaLaunchKernel((void *)kernel, (unsigned)p.grid, p.block, kargs, p.smem, s);
    }
    auto kernel = opt_bwd<T, W, NV, S>;
    if ((e = fit_grid(kernel, a, p))) return e;
    iters = p.iters;
    return launch_bwd(kernel, a, p, s, kargs);
}

template <typename T, int W, int NV> int run_opt(const kb_norm_args *a, Plan p, cudaStream_t s)
{
    if constexpr (NV * W > 32) {
        return (int)cudaErrorInvalidValue; // never planned
    } else if constexpr (W * sizeof(T) == 16) {
        return p.stages ? run_opt_s<T, W, NV, KB_NORM_STAGES>(a, p, s) : run_opt_s<T, W, NV, 0>(a, p, s);
    } else {
        return run_opt_s<T, W, NV, 0>(a, p, s);
    }
}

template <typename T, int W> int run_loop(const kb_norm_args *a, Plan p, cudaStream_t s)
{
    kb_norm_args args = *a;
    if (!a->backward) {
        loop_fwd<T, W><<<(unsigned)a->rows, 1024, 0, s>>>(args);
        return (int)cudaGetLastError();
    }
    auto kernel = loop_bwd<T, W>;
    int e = fit_grid(kernel, a, p);
    if (e) return e;
    int iters = p.iters;
    void *kargs[] = {&args, &iters};
    return launch_bwd(kernel, a, p, s, kargs);
}

template <typename T, int W> int run_w(const kb_norm_args *a, const Plan &p, cudaStream_t s)
{
    switch (p.nv) {
    case 0: return run_loop<T, W>(a, p, s);
    case 1: return run_opt<T, W, 1>(a, p, s);
    case 2: return run_opt<T, W, 2>(a, p, s);
    case 4: return run_opt<T, W, 4>(a, p, s);
    case 8: return run_opt<T, W, 8>(a, p, s);
    }
    return (int)cudaErrorInvalidValue;
}

// Runs a bulk plan, or (grid != NULL) gives its grid.
template <typename T, int NV> int run_bulk(const kb_norm_args *a, Plan p, cudaStream_t s, long *grid)
{
    kb_norm_args args = *a;
    int tpr = p.tpr, S = p.stages, e;
    void *kargs[] = {&args, &tpr, &S};
    if (!a->backward) {
        auto kernel = bulk_fwd<T, NV>;
        if ((e = fit_grid(kernel, a, p))) return e;
        if (grid) *grid = p.grid;
        return grid ? 0 : (int)cudaLaunchKernel((void *)kernel, (unsigned)p.grid, p.block, kargs, p.smem, s);
    }
    if constexpr (NV * 16 / sizeof(T) <= 16) { // never planned past 16 elements
        auto kernel = p.gsm ? (p.sst ? bulk_bwd<T, NV, true, true> : bulk_bwd<T, NV, true, false>)
                            : (p.sst ? bulk_bwd<T, NV, false, true> : bulk_bwd<T, NV, false, false>);
        if ((e = fit_grid(kernel, a, p))) return e;
        if (grid) *grid = p.grid;
        return grid ? 0 : launch_bwd(kernel, a, p, s, kargs);
    }
    return (int)cudaErrorInvalidValue;
}

template <typename T> int run_bulk_nv(const kb_norm_args *a, const Plan &p, cudaStream_t s, long *grid)
{
    switch (p.nv) {
    case 1: return run_bulk<T, 1>(a, p, s, grid);
    case 2: return run_bulk<T, 2>(a, p, s, grid);
    case 4: return run_bulk<T, 4>(a, p, s, grid);
    case 8: return run_bulk<T, 8>(a, p, s, grid);
    }
    return (int)cudaErrorInvalidValue;
}

// The warp-row kernels take every row whose bytes are a multiple of 16 (16-byte
// aligned tensors) and that 32 warps (backward 20; 16 with KBENCH_NORM_WR_WIDE=0) of NV vectors a lane hold:
// NV 4 forward (64 registers at most), 2 backward (x, dy and two sums an
// element: 16-bit ~128 registers, fp32 ~94), as few
// warps as hold the row (wpr = ceil(vectors / 32 NV)), then NV as small as
// those warps allow (16-bit forward cols 1032-2048: NV 8, one warp; see
// wr_plan). Forward blocks hold 256 threads or one group, backward
// 512 (one block an SM: fewer partial rows for column_sums).
// KBENCH_NORM_WR=0 never takes them (the kernels above then); 1, 2 or 4 sets
// NV (backward: at most 2; never 8). Decided once.
constexpr int WR_FWD_BLOCK = 256, WR_BWD_BLOCK = 512;
int wr_mode()
{
    static const int mode = env_knob("KBENCH_NORM_WR", "0,1,2,4", -1, "0: never; 1, 2, 4: vectors a lane");
    return mode;
}

// The warp-row backward's staging (wr_bwd's S): rows of 4 warps or more stage
// 3 rows ahead by cp.async (H100, rows 4096, 16-bit, % of copy: cols 4096
// 66-68 -> 71, 8192 65-67 -> 74, 2048 +1), shorter rows take the next row in
// registers (S 3 lost 1-3 points at cols 512 and 1024).
// KBENCH_NORM_WR_STAGES=0 or 3 forces S. Read once.
int wr_stages(int wpr)
{
    static const int forced = env_knob("KBENCH_NORM_WR_STAGES", "0,3", -1, "0 or 3");
    return forced >= 0 ? forced : wpr >= 4 ? 3 : 0;
}

// Rows of 9 or 10 warps (16-bit cols 4104-5120) have an SM to one group of
// the staged backward under 128 registers; capped at 96 (wr_bwd's LB 320)
// two groups fit (H100, rows 4096, cols 5120, % of copy: fp16 64 -> 72, bf16
// 63 -> 68; RMSNorm bf16 16384 rows 69 -> 78). Not for shorter rows: at
// cols 2560-3072 (groups of 5-6 warps, 3 blocks an SM) it lost 1-6 points;
// a cap of 80 registers (blocks of 384, for 12 warps) spilled and lost up to
// 17. KBENCH_NORM_WR_OCC=0 turns it off. Read once.
int wr_occ(long wpr)
{
    static const int on = env_knob("KBENCH_NORM_WR_OCC", "0,1", 1, "0 or 1");
    return on && (wpr == 9 || wpr == 10) ? 320 : 0;
}

// Rows of 17-20 warps (16-bit cols 8200-10240, fp32 4100-5120) take the
// staged backward too, one group a block of up to 640 threads capped at 96
// registers (wr_bwd's LB 640), where the bulk kernels left 3/8 of their slots
// idle. H100, rows 4096, % of copy, two runs: fp16 cols 10240 63 -> 73, 9000
// 59 -> 68-69; bf16 10240 61 -> 69, 9000 57 -> 66; RMSNorm fp32 4100 72 ->
// 73, 5120 76 -> 80. KBENCH_NORM_WR_WIDE=0 turns it off. Read once.
bool wr_wide()
{
    static const bool on = env_knob("KBENCH_NORM_WR_WIDE", "0,1", 1, "0 or 1") == 1;
    return on;
}

template <typename T> bool wr_plan(const kb_norm_args *a, Plan &p)
{
    const int w = 16 / (int)sizeof(T), mode = wr_mode();
    if (!mode || a->cols % w || !aligned16(a->x) || !aligned16(a->y) || !aligned16(a->gamma) || !aligned16(a->beta) ||
        !aligned16(a->dy))
        return false;
    const long nvec = a->cols / w;
    const int nvmax = a->backward ? 2 : 4;
    int nv = mode > 0 ? mode : nvmax;
    if (nv > nvmax) nv = nvmax;
    long wpr = (nvec + 32 * nv - 1) / (32 * nv);
    if (wpr > (!a->backward ? 32 : wr_wide() ? 20 : 16)) return false;
    while (nv > 1 && wpr * 32 * (nv / 2) >= nvec) nv /= 2; // a short row: fewer vectors, same warps
    // 16-bit forward rows of 129-256 vectors (cols 1032-2048): one warp, 8
    // vectors a lane (64 registers, no spills; only shuffles, no named
    // barrier; at rows 4096 every row's loads are in flight in one wave).
    // H100, rows 4096 fp16, two runs: cols 2048 13.02-13.09 -> 11.68-11.74
    // us (90 -> 100% of copy), 1536 10.05-10.14 -> 9.47-9.54. bf16 spilled
    // 572-592 bytes here until rows were held as words (unpack_w). Not
    // wider rows (NV 8 lost at 4096-8192, seventh session)
    if (!a->backward && mode < 0 && sizeof(T) == 2 && nvec > 128 && nvec <= 256) {
        nv = 8;
        wpr = 1;
    }
    p = Plan{};
    p.wr = true;
    p.w = w;
    p.nv = nv;
    p.tpr = (int)(32 * wpr);
    const int blk = a->backward ? WR_BWD_BLOCK : WR_FWD_BLOCK;
    long G = blk / p.tpr;
    if (G < 1) G = 1;
    if (G > 16) G = 16;
    if (G > 1 && G * p.tpr > blk) G = blk / p.tpr;
    p.block = (int)(G * p.tpr);
    p.stages = a->backward ? wr_stages((int)wpr) : 0;
    if (a->backward && p.stages == 3) p.lb = wr_occ(wpr); // one group a block either way
    if (a->backward && p.block > WR_BWD_BLOCK) { // rows of 17-20 warps (wr_wide): the staged kernel of LB 640 only
        if (p.stages != 3) return false;
        p.lb = 640;
    }
    // the staging must fit the device's shared memory with wr_bwd's static red
    // (120 KiB at 640 threads: more than the 99 KiB of sm_86/89/120)
    if (a->backward && !smem_fits(p, a, sizeof(WrRed))) {
        if (p.block > WR_BWD_BLOCK) return false;
        p.stages = 0;
        p.lb = 0;
    }
    return true;
}

// Runs a warp-row plan, or (grid != NULL) gives the backward's grid.
template <typename T, int NV, int WPR> int run_wr(const kb_norm_args *a, Plan p, cudaStream_t s, long *grid)
{
    kb_norm_args args = *a;
    int wpr = p.tpr / 32;
    if (!a->backward) {
        if (grid) return (int)cudaErrorInvalidValue;
        const long G = p.block / p.tpr;
        wr_fwd<T, NV, WPR><<<(unsigned)((a->rows + G - 1) / G), p.block, 0, s>>>(args, wpr);
        return (int)cudaGetLastError();
    }
    if constexpr (NV > 2) { // never planned: registers would spill
        return (int)cudaErrorInvalidValue;
    } else {
        auto kernel = p.stages == 3 ? wr_bwd<T, NV, WPR, 3> : wr_bwd<T, NV, WPR>;
        if constexpr (WPR == 0) {
            if (p.lb == 320) kernel = wr_bwd<T, NV, 0, 3, 320>;
            if (p.lb == 640) kernel = wr_bwd<T, NV, 0, 3, 640>;
        }
        const int e = fit_grid(kernel, a, p);
        if (e) return e;
        if (grid) {
            *grid = p.grid;
            return 0;
        }
        int iters = p.iters;
        void *kargs[] = {&args, &wpr, &iters};
        return launch_bwd(kernel, a, p, s, kargs);
    }
}

// warps per row known at compile time where they are a power of two (the
// common hidden sizes), else passed (0)
template <typename T, int NV> int run_wr_nv(const kb_norm_args *a, const Plan &p, cudaStream_t s, long *grid)
{
    switch (p.tpr / 32) {
    case 1: return run_wr<T, NV, 1>(a, p, s, grid);
    case 2: return run_wr<T, NV, 2>(a, p, s, grid);
    case 4: return run_wr<T, NV, 4>(a, p, s, grid);
    case 8: return run_wr<T, NV, 8>(a, p, s, grid);
    case 16: return run_wr<T, NV, 16>(a, p, s, grid);
    }
    return run_wr<T, NV, 0>(a, p, s, grid);
}

template <typename T> int run_wr_plan(const kb_norm_args *a, const Plan &p, cudaStream_t s, long *grid)
{
    switch (p.nv) {
    case 1: return run_wr_nv<T, 1>(a, p, s, grid);
    case 2: return run_wr_nv<T, 2>(a, p, s, grid);
    case 4: return run_wr_nv<T, 4>(a, p, s, grid);
    case 8: // 16-bit forward rows of one warp (wr_plan)
        if constexpr (sizeof(T) == 2) return p.tpr == 32 ? run_wr<T, 8, 1>(a, p, s, grid) : (int)cudaErrorInvalidValue;
    }
    return (int)cudaErrorInvalidValue;
}

// Which kernels take these arguments (launch_opt and kb_norm_work_bytes both
// ask here, so the work buffer fits the grid launched): the warp-row ones
// where they apply (unless KBENCH_NORM_BULK=1), then the bulk ones, then a
// thread group per row.
enum PlanKind { PLAN_WR, PLAN_BULK, PLAN_SHAPE };
template <typename T> PlanKind choose_plan(const kb_norm_args *a, Plan &p)
{
    if (bulk_mode() != 1 && wr_plan<T>(a, p)) return PLAN_WR;
    if (bulk_plan<T>(a, p)) return PLAN_BULK;
    p = shape_plan<T>(a);
    return PLAN_SHAPE;
}

template <typename T> int launch_opt(const kb_norm_args *a, cudaStream_t s)
{
    Plan p;
    switch (choose_plan<T>(a, p)) {
    case PLAN_WR: return run_wr_plan<T>(a, p, s, nullptr);
    case PLAN_BULK: return run_bulk_nv<T>(a, p, s, nullptr);
    default: return p.w == 1 ? run_w<T, 1>(a, p, s) : run_w<T, 16 / sizeof(T)>(a, p, s);
    }
}

template <typename T> int launch_naive(const kb_norm_args *a, cudaStream_t s)
{
    const int threads = 128;
    if (!a->backward) {
        naive_fwd<T><<<(unsigned)((a->rows + threads - 1) / threads), threads, 0, s>>>(*a);
        return (int)cudaGetLastError();
    }
    naive_bwd_dx<T><<<(unsigned)((a->rows + threads - 1) / threads), threads, 0, s>>>(*a);
    cudaError_t e = cudaGetLastError();
    if (e || !a->dgamma) return (int)e;
    naive_bwd_dgamma<T><<<(unsigned)((a->cols + threads - 1) / threads), threads, 0, s>>>(*a);
    return (int)cudaGetLastError();
}

bool args_ok(const kb_norm_args *a)
{
    return a->rows > 0 && a->cols > 0 && a->x && a->y && a->rstd && (a->rms || a->mean) && (!a->backward || a->dy);
}

} // namespace

extern "C" int kb_norm_naive(const kb_norm_args *a, void *stream)
{
    if (!args_ok(a)) return (int)cudaErrorInvalidValue;
    cudaStream_t s = (cudaStream_t)stream;
    return kb::by_dtype(a->dtype, [&](auto t) { return launch_naive<decltype(t)>(a, s); });
}

extern "C" int kb_norm_opt(const kb_norm_args *a, void *stream)
{
    if (!args_ok(a) || (a->backward && a->dgamma && !a->work)) return (int)cudaErrorInvalidValue;
    cudaStream_t s = (cudaStream_t)stream;
    return kb::by_dtype(a->dtype, [&](auto t) { return launch_opt<decltype(t)>(a, s); });
}

extern "C" size_t kb_norm_work_bytes(const kb_norm_args *a)
{
    if (!a->backward || !a->dgamma) return 0;
    // one partial row (dgamma, dbeta) per block of a warp-row or bulk plan's grid
    long grid = 0;
    const int be = kb::by_dtype(a->dtype, [&](auto t) {
        using T = decltype(t);
        Plan p;
        switch (choose_plan<T>(a, p)) {
        case PLAN_WR: return run_wr_plan<T>(a, p, nullptr, &grid);
        case PLAN_BULK: return run_bulk_nv<T>(a, p, nullptr, &grid);
        default: return 1;
        }
    });
    if (!be) return (size_t)grid * 2 * (size_t)a->cols * sizeof(float);
    // else at most every block resident at once, one partial row each
    int dev = 0, per_sm = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, dev);
    long blocks = (long)device_sms() * (per_sm / BWD_BLOCK > 0 ? per_sm / BWD_BLOCK : 1);
    if (blocks > a->rows) blocks = a->rows;
    return (size_t)blocks * 2 * (size_t)a->cols * sizeof(float);
}
