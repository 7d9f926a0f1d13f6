// The backward's column sums: per-block dgamma/dbeta partial rows, a grid
// barrier (cooperative launch: every block resident), then every block adds a
// slice of the columns over the partial rows in block order. Only the
// backward's files include this.
#pragma once
#include "common.cuh"

namespace kb::norm {
namespace { // internal linkage, as one file had it: inlined helpers emit no copy of their own

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
// stay short. Every order is fixed: the same bits on every run. TRIM (after
// wr_partials, or block_partials<TRIM> in bulk_bwd fp32 NV 2): dbeta's half
// summed only when wanted (kept out of the other bulk and block kernels:
// wr_partials says why).
template <int VW, bool TRIM> __device__ void column_sums(const kb_norm_args &a, const float *work, float *part)
{
    using F = CgVec<VW>;
    const long cols = a.cols, n2 = 2 * cols, U = (TRIM && !a.dbeta ? cols : n2) / VW; // partial rows of 2*cols floats
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

// The grid barrier, cooperative_groups' algorithm (this_grid().sync(), whose
// header cost 1.3-2.1 s of nvcc in each of the four files that include this)
// on a counter at the head of `work` (plan.h: kb_norm_work_bytes), zeroed once
// before the first launch: each block's thread 0 adds 1, block 0 adds
// 2^31 - (blocks - 1), so the blocks' adds flip bit 31 once all have arrived
// and leave the low bits as they were for the next launch. A release add and
// an acquire poll: level with cooperative_groups on an H100, where
// __threadfence, atomicAdd and a volatile poll were up to 0.5 us slower
// (results/curated/2026-11-27-h100-bwd-end).
__device__ __forceinline__ void grid_barrier(unsigned *counter)
{
    __syncthreads(); // the block's partial row is stored
    if (threadIdx.x == 0) {
        const unsigned add = blockIdx.x == 0 ? 0x80000000u - (gridDim.x - 1) : 1u;
        unsigned old, now; // arrive with release (the block's stores before it), poll with acquire
        asm volatile("atom.add.release.gpu.global.u32 %0, [%1], %2;" : "=r"(old) : "l"(counter), "r"(add) : "memory");
        do
            asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(now) : "l"(counter) : "memory");
        while (((old ^ now) & 0x80000000u) == 0);
    }
    __syncthreads(); // the other blocks' stores before this block's loads
}

// Block b's partial row (2*cols floats: dgamma's, then dbeta's) in `work`,
// past the head that holds grid_barrier's counter (plan.h: kb_norm_work_bytes).
__device__ __forceinline__ float *partial_row(const kb_norm_args &a, long b)
{
    return (float *)((char *)a.work + KB_NORM_WORK_HEAD) + b * 2 * a.cols;
}

// After every block wrote its partial row: the grid barrier, then the column
// sums (TRIM: after wr_partials, dbeta's half only when wanted).
template <bool TRIM = false> __device__ void end_sums(const kb_norm_args &a, void *part)
{
    grid_barrier((unsigned *)a.work);
    if (a.cols % 4 == 0) column_sums<4, TRIM>(a, partial_row(a, 0), (float *)part);
    else column_sums<1, TRIM>(a, partial_row(a, 0), (float *)part);
}

// A lane's W floats at columns [c, c + W) of a partial row: consecutive lanes
// of a warp hold consecutive chunks. W = 8 (16-bit rows): a 32-byte chunk a
// lane is two 16-byte stores 32 bytes apart, each writing half of every
// sector it touches; where the warp's 256 columns are all in the row, the
// lanes swap halves by shuffles first so that each store writes 512
// contiguous bytes (half the L2 sector writes).
template <int W> __device__ __forceinline__ void store_chunk(float *row, long c, long cols, const float (&v)[W])
{
    if constexpr (W == 8) {
        const int l = threadIdx.x & 31, s = l >> 1;
        const long c0 = c - (long)l * 8; // the warp's first column
        if (c0 + 256 <= cols) {          // the same for every lane of the warp
            float o0[4], o1[4];
#pragma unroll
            for (int q = 0; q < 4; q++) {
                const float a0 = __shfl_sync(~0u, v[q], s), b0 = __shfl_sync(~0u, v[4 + q], s),
                            a1 = __shfl_sync(~0u, v[q], 16 + s), b1 = __shfl_sync(~0u, v[4 + q], 16 + s);
                o0[q] = l & 1 ? b0 : a0;
                o1[q] = l & 1 ? b1 : a1;
            }
            float4 *d = reinterpret_cast<float4 *>(row + c0);
            d[l] = make_float4(o0[0], o0[1], o0[2], o0[3]);
            d[32 + l] = make_float4(o1[0], o1[1], o1[2], o1[3]);
            return;
        }
    }
    if (c < cols) {
        Vec<float, W> w;
#pragma unroll
        for (int j = 0; j < W; j++) w.v[j] = v[j];
        *reinterpret_cast<Vec<float, W> *>(row + c) = w;
    }
}

// A thread's W dgamma and W dbeta sums at columns [c, c + W) of a partial
// row (dgamma's half, then dbeta's cols floats on), each by one vector store;
// with TRIM, dbeta's only when wanted.
template <int W, bool TRIM>
__device__ __forceinline__ void store_pair(const kb_norm_args &a, float *row, long c, long cols, const float (&g)[W],
                                           const float (&b)[W])
{
    Vec<float, W> vg, vb;
#pragma unroll
    for (int j = 0; j < W; j++) vg.v[j] = g[j], vb.v[j] = b[j];
    *reinterpret_cast<Vec<float, W> *>(row + c) = vg;
    if (!TRIM || a.dbeta) *reinterpret_cast<Vec<float, W> *>(row + cols + c) = vb;
}

// The block's dgamma/dbeta partial row (per thread: columns (k*tpr + t)*W + j)
// into partial_row(a, blockIdx.x), for the bulk and block kernels (wr_bwd:
// wr_partials). One group a block: its vectors stored whole (16-byte stores,
// two for a vector of 8; element by element they were a scattered 4-byte
// store per value). Several groups: acc holds 2*cols floats and the groups
// add theirs in turn, a barrier each (wr_bwd's groups add theirs through
// shared memory by float4 instead: wr_partials). TRIM (bulk_bwd fp32 NV 2,
// whose registers have room): with one group a block, dbeta's half stored
// only when wanted (several groups store it, and column_sums<TRIM> skips it).
template <int NV, int W, bool TRIM = false>
__device__ void block_partials(const kb_norm_args &a, const float (&dg)[NV][W], const float (&db)[NV][W], int tpr,
                               float *acc)
{
    const long cols = a.cols;
    const int g = threadIdx.x / tpr, t = threadIdx.x - g * tpr, rpb = blockDim.x / tpr;
    __syncthreads(); // the staging area becomes the accumulator
    float *work = partial_row(a, blockIdx.x);
    if (rpb == 1) {
#pragma unroll
        for (int k = 0; k < NV; k++) {
            const long c = (long)(k * tpr + t) * W;
            if (c < cols) store_pair<W, TRIM>(a, work, c, cols, dg[k], db[k]);
        }
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

// wr_bwd's partial row (block_partials' layout), with end_sums<true>:
// - dbeta's half only when wanted (RMSNorm has none: H100, 2026-11-28, 0.6-0.9
//   us of 36-37 at 4096 x 4096 16-bit, 2.2-4.2 of 72-76 at 8192);
// - one group a block: straight from the registers by store_chunk (LayerNorm
//   4096 x 8192 fp16 76.0 -> 72.5 us, bf16 76.6 -> 75.3-75.8);
// - several groups: acc holds rpb * 2*cols floats; each group writes its row
//   there, then every thread adds columns over the groups in group order, by
//   float4 (2-3.6% at 4096 x 1024-4096 against a float a thread).
// The bulk and block kernels (64 registers) keep block_partials: with this end
// they spilled more (bulk_bwd<bf16, 2, true, false> 8 -> 80 bytes) and ran
// 8-13% slower at 4096 x 16384 (LayerNorm bf16 0.1591 -> 0.1798 ms). Only
// bulk_bwd fp32 NV 2 (no spill) skips RMSNorm's dbeta there (block_partials<
// TRIM>: 4096 x 8192 146.9/146.9 -> 146.3/146.0 us, 6000 109.8/109.8 ->
// 109.3/109.6; H100, 2026-11-28, graph, two runs in one call).
template <int NV, int W>
__device__ void wr_partials(const kb_norm_args &a, const float (&dg)[NV][W], const float (&db)[NV][W], int tpr,
                            float *acc)
{
    static_assert(W >= 4, "wr_bwd's 16-byte vectors: the group sums go by float4");
    const long cols = a.cols, nsum = a.dbeta ? 2 * cols : cols;
    const int g = threadIdx.x / tpr, t = threadIdx.x - g * tpr, rpb = blockDim.x / tpr;
    __syncthreads(); // the staging area becomes the accumulator
    float *work = partial_row(a, blockIdx.x);
    if (rpb == 1) {
#pragma unroll
        for (int k = 0; k < NV; k++) {
            const long c = (long)(k * tpr + t) * W;
            store_chunk<W>(work, c, cols, dg[k]);
            if (a.dbeta) store_chunk<W>(work + cols, c, cols, db[k]);
        }
        return;
    }
    float *mine = acc + (long)g * 2 * cols;
#pragma unroll
    for (int k = 0; k < NV; k++) {
        const long c = (long)(k * tpr + t) * W;
        if (c < cols) store_pair<W, true>(a, mine, c, cols, dg[k], db[k]);
    }
    __syncthreads();
    const long n4 = nsum / 4; // 16-byte vectors (cols a multiple of W: the rows' 16-byte alignment holds)
    for (long j = threadIdx.x; j < n4; j += blockDim.x) {
        float4 v = reinterpret_cast<const float4 *>(acc)[j];
        for (int q = 1; q < rpb; q++) {
            const float4 w = reinterpret_cast<const float4 *>(acc + (long)q * 2 * cols)[j];
            v.x += w.x, v.y += w.y, v.z += w.z, v.w += w.w;
        }
        reinterpret_cast<float4 *>(work)[j] = v;
    }
    __syncthreads(); // acc is reused next
}

static_assert(COLSUM_SMEM_PER_THREAD == KB_NORM_COLSUM_BYTES, "plan.h's column_sums slices");

} // namespace
} // namespace kb::norm
