// The fused gate/up kernels' host entry points, for fused.cu (C++ only):
// each launches one kernel for h = silu(x G^T) * (x U^T) on a plan that
// prepare made; none plans or queries anything while timed.
#pragma once
#include <cuda.h> // CUtensorMap
#include <cuda_runtime.h>

#include "mlp.h"

namespace kb::mlp {

// fused_wgmma.cu: everything a launch of gate_up_wgmma<T, wg, bn, stages, cl> takes
struct WgmmaLaunch {
    CUtensorMap mx, mg, mu, mh; // x, G, U: 64-column boxes, 128B swizzle; h: 64 x 16 boxes (or a copy of mx, unused)
    void *h;
    int M, N, K, dtype;
    int wg, bn, cl, grid, group, tma_store;
    int dyn; // tiles from the global counter (clusters of 1)
    int swap; // gate_up_swap<dtype, bn, cl>: mx's boxes bn rows, mg's and mu's 128, mh 64 x bn (128B swizzle)
};
// Clusters of cl CTAs of gate_up_wgmma<dtype, wg, bn> that fit at once
// (cudaOccupancyMaxActiveClusters, asked once a kernel; it also sets the
// kernel's dynamic shared memory attribute, which launches need); 0: none,
// or no such kernel.
int wgmma_clusters(int dtype, int wg, int bn, int cl, int sm_count);
int wgmma_launch(const WgmmaLaunch &L, cudaStream_t s);

// gate_up_swap.cu: the swapped kernel <dtype, bn, cl> (the weights wgmma's A
// operand, bn tokens its N, clusters of cl = 1 or 2): clusters that fit at
// once (asked once a kernel; sets its shared-memory attribute), 0: none; and
// its launch on L.grid CTAs in clusters of L.cl
int swap_ctas(int dtype, int bn, int cl, int sm_count);
int swap_launch(const WgmmaLaunch &L, cudaStream_t s);

// down_splitk.cu: y [M, H] = h [M, I] D^T for M <= 16 on Hopper (the plan's
// down split): grid = ceil(H / 64) x splits blocks of 160 threads, K ranges of
// kchunk columns (a multiple of 64); md: D's map (64 x 64 boxes), mh: h's
// (64 columns by down_splitk_hrows(M) rows); ws holds the grid's partials
// (64 x 16 floats a block), count ceil(H / 64) counters that start at 0 and
// are left at 0. Launched as the previous kernel's programmatic dependent.
struct DownSplitK {
    CUtensorMap md, mh;
    void *y;
    float *ws;
    unsigned *count;
    int M, H, I, dtype, splits, kchunk, grid;
    int per_sm; // blocks an SM: 1 (200 KiB rings) or 2 (100 KiB)
};
// h's box rows, the tokens' N of the wgmma: 8 for 1-8 tokens, else 16
constexpr int down_splitk_hrows(int M) { return M <= 8 ? 8 : 16; }
// the kernel's shared-memory attribute (once, before launches)
int down_splitk_setup(int dtype, int M, int per_sm, int splits);
int down_splitk(const DownSplitK &L, cudaStream_t s);

// fused_mma.cu: vec: 16-byte cp.async rows (hidden % 8 == 0, x, G, U 16-byte aligned)
int gate_up_mma(const kb_mlp_args *a, bool vec, cudaStream_t s);

// fused_f32.cu
int gate_up_f32(const kb_mlp_args *a, cudaStream_t s);

} // namespace kb::mlp
