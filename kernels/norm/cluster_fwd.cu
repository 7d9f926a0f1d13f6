// block's forward on rows past 64 KiB (sm_90; plan.c: block.cluster): a row
// split over a cluster of C blocks (2-8), each holding its part in registers
// (NV 16-byte vectors a thread, blocks of at most 512, two an SM), so an SM
// keeps 128 KiB of two rows in flight where one block a row (the register
// kernels: one row an SM) or the loop kernels (x read three times) left the
// memory idle. The row's sums meet in shared memory, then over the cluster's
// distributed shared memory: every block adds the C parts in rank order (the
// same bits everywhere). LayerNorm: two meetings (the mean, then squares
// about it), as warp_row. A grid over the rows, a cluster a row.
#include <cooperative_groups.h>

#include "common.cuh"
#include "kernels.cuh"

namespace kb::norm {
namespace {

template <typename T, int NV>
__global__ void __launch_bounds__(512, 2) cl_fwd(kb_norm_args a, int per) // per: vectors a block
{
#if __CUDA_ARCH__ >= 900 // sm_90a runs it; elsewhere an empty kernel the probe never picks
    namespace cg = cooperative_groups;
    cg::cluster_group cl = cg::this_cluster();
    constexpr int W = 16 / sizeof(T);
    __shared__ float red[2][32];
    __shared__ float part[2];
    const int C = (int)cl.num_blocks(), r = (int)cl.block_rank();
    const long row = blockIdx.x / C;
    const int nvec = (int)(a.cols / W), t = threadIdx.x, tpr = blockDim.x, nw = tpr >> 5;
    const int v0 = r * per, v1 = v0 + per < nvec ? v0 + per : nvec;
    const uint4 *xr = reinterpret_cast<const uint4 *>((const T *)a.x + row * a.cols);
    uint4 xv[NV];
#pragma unroll
    for (int k = 0; k < NV; k++) {
        const int c = v0 + k * tpr + t;
        xv[k] = c < v1 ? xr[c] : make_uint4(0, 0, 0, 0);
    }
    const float inv_n = 1.f / (float)a.cols;
    // the row's sum of v over the cluster: warps, the block, then the blocks in rank order
    auto meet = [&](float v, int m) {
        lane_sums<1>(&v);
        if ((t & 31) == 0) red[m][t >> 5] = v;
        __syncthreads();
        if (t == 0) {
            float s = red[m][0];
            for (int k = 1; k < nw; k++) s += red[m][k];
            part[m] = s;
        }
        cl.sync();
        float s = *cl.map_shared_rank(&part[m], 0);
        for (int k = 1; k < C; k++) s += *cl.map_shared_rank(&part[m], k);
        return s;
    };
    float mean = 0.f;
    if (!a.rms) {
        float s = 0.f;
#pragma unroll
        for (int k = 0; k < NV; k++) {
            float f[W];
            unpack_w<T>(xv[k], f);
#pragma unroll
            for (int j = 0; j < W; j++) s += f[j];
        }
        mean = meet(s, 0) * inv_n;
    }
    float q = 0.f;
#pragma unroll
    for (int k = 0; k < NV; k++)
        if (v0 + k * tpr + t < v1) {
            float f[W];
            unpack_w<T>(xv[k], f);
#pragma unroll
            for (int j = 0; j < W; j++) {
                const float d = f[j] - mean;
                q = fmaf(d, d, q);
            }
        }
    const float rstd = rsqrtf(meet(q, 1) * inv_n + a.eps);
    const uint4 *gm = reinterpret_cast<const uint4 *>(a.gamma), *bt = reinterpret_cast<const uint4 *>(a.beta);
    uint4 *y = reinterpret_cast<uint4 *>((T *)a.y + row * a.cols);
#pragma unroll
    for (int k = 0; k < NV; k++) {
        const int c = v0 + k * tpr + t;
        if (c >= v1) continue;
        float f[W], g[W], b[W];
        unpack_w<T>(xv[k], f);
        if (gm) unpack_w<T>(gm[c], g);
        if (bt) unpack_w<T>(bt[c], b);
#pragma unroll
        for (int j = 0; j < W; j++) f[j] = (f[j] - mean) * rstd * (gm ? g[j] : 1.f) + (bt ? b[j] : 0.f);
        y[c] = pack_w<T>(f);
    }
    if (r == 0 && t == 0) {
        if (a.mean) a.mean[row] = mean;
        a.rstd[row] = rstd;
    }
    cl.sync(); // no block leaves while another may still read its part[]
#endif
}

} // namespace

template <typename T> const void *cl_fwd_kernel(const kb_norm_plan &p)
{
    return p.cl > 1 && p.nv == 8 && !p.backward ? (const void *)cl_fwd<T, 8> : nullptr;
}
template const void *cl_fwd_kernel<float>(const kb_norm_plan &);
template const void *cl_fwd_kernel<__half>(const kb_norm_plan &);
template const void *cl_fwd_kernel<__nv_bfloat16>(const kb_norm_plan &);

} // namespace kb::norm
