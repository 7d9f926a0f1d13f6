// block's forward on rows past 64 KiB (sm_90; plan.c: block.cluster): a row
// split over a cluster of C blocks (2-8), each holding its part in registers
// (NV 16-byte vectors a thread: 8; 9, the ninth the part's tail past whole
// warps, on fp32 rows of 128-320 KiB, LayerNorm's 16-bit rows whose parts
// are 1281-1792 or 2049-2304 vectors and RMSNorm's 16-bit rows of 128-132 and
// 256-288 KiB; blocks of at most 512, two an SM), so an SM keeps 128 KiB
// of two rows in flight where one block a row (the register kernels: one
// row an SM) or the loop kernels (x read three times) left the memory idle.
//
// The blocks meet once a row, and no block waits for a barrier of the whole
// cluster: each pushes its part's (n, sum, squares) into every block's shared
// memory (st.async, completing on that block's mbarrier) and waits on its own
// barrier alone. LayerNorm's squares are about the part's own mean, warp by
// warp, then the warps' and the blocks' parts are joined as Chan et al.'s
// pairwise update (M2 = sum M2_k + n_k (mean_k - mean)^2): one meeting where
// the mean and squares about it took two, and outlier-safe as they were.
// Every block joins the C parts in rank order: the same bits everywhere.
// Against three cluster barriers a LayerNorm row (two meetings and one at the
// end): fp32 4096 x 32768 73 -> 88% of copy, RMSNorm 80 -> 94 (H200;
// DESIGN.md). The block's own expect_tx comes after its block barrier:
// racecheck flagged it beside the mbarrier's init.
//
// `ahead` (plan.c's block.cluster_pf, exec.cu): first each block asks L2 for
// its part of the row `ahead` rows on (one cp.async.bulk.prefetch; a quarter
// of the rows resident at once), so the memory keeps reading while an SM's
// blocks meet and write: 1-9% off at the rows measured (DESIGN.md).
#include "../ptx/mbarrier.cuh"
#include "common.cuh"
#include "kernels.cuh"

namespace kb::norm {
namespace {

// A grid over the rows, a cluster a row; blocks of at most TPB, MINB an SM
// (512, 2: 64 registers; 384, 3: 56, for blocks of 352-384 threads, which
// the first holds only two of an SM: plan.c's block.cluster3).
template <typename T, int NV, int TPB, int MINB> __global__ void __launch_bounds__(TPB, MINB) cl_fwd(kb_norm_args a, int ahead)
{
#if __CUDA_ARCH__ >= 900 // sm_90a runs it; elsewhere an empty kernel the probe never picks
    constexpr int W = 16 / sizeof(T);
    __shared__ float4 red[16];                    // the warps' (n, sum, squares about their mean, mean)
    __shared__ alignas(8) unsigned long long bar; // every block's part arrives on it
    __shared__ float4 got[8];                     // block k's (n, sum, squares about its mean, mean) at [k]
    const int C = (int)ptx::cluster_nctarank(), r = (int)ptx::cluster_ctarank();
    const long row = blockIdx.x / C;
    const int nvec = (int)(a.cols / W), per = (nvec + C - 1) / C, t = threadIdx.x, tpr = blockDim.x;
    const int v0 = r * per, v1 = v0 + per < nvec ? v0 + per : nvec;
    const uint32_t b = ptx::smem_u32(&bar);
    if (t == 0 && ahead > 0 && row + ahead < a.rows && v1 > v0) // whole 16-byte vectors
        ptx::bulk_prefetch_l2(reinterpret_cast<const uint4 *>((const T *)a.x + (row + ahead) * a.cols) + v0,
                              (uint32_t)(v1 - v0) * 16u);
    if (t == 0) {
        ptx::mbar_init(b, 1);
        ptx::fence_mbar_init();
    }
    ptx::cluster_arrive_relaxed(); // waited for before the first push: every barrier set up
    const uint4 *xr = reinterpret_cast<const uint4 *>((const T *)a.x + row * a.cols);
    uint4 xv[NV];
#pragma unroll
    for (int k = 0; k < NV; k++) {
        const int c = v0 + k * tpr + t;
        xv[k] = c < v1 ? xr[c] : make_uint4(0, 0, 0, 0);
    }
    // the warp's part: n and the sum (RMSNorm: of squares; lane_mean), then
    // (LayerNorm) squares about the warp's mean
    float n = 0.f, s = 0.f, q = 0.f;
#pragma unroll
    for (int k = 0; k < NV; k++)
        if (v0 + k * tpr + t < v1) {
            float f[W];
            unpack_w<T>(xv[k], f);
            n += (float)W;
#pragma unroll
            for (int j = 0; j < W; j++) s = a.rms ? fmaf(f[j], f[j], s) : s + f[j];
        }
    const float3 wp = lane_mean(s, n, 32);
    if (!a.rms) {
#pragma unroll
        for (int k = 0; k < NV; k++)
            if (v0 + k * tpr + t < v1) {
                float f[W];
                unpack_w<T>(xv[k], f);
#pragma unroll
                for (int j = 0; j < W; j++) {
                    const float d = f[j] - wp.z;
                    q = fmaf(d, d, q);
                }
            }
        lane_sums<1>(&q);
    }
    if ((t & 31) == 0) red[t >> 5] = make_float4(wp.x, wp.y, q, wp.z);
    __syncthreads();
    if (t == 0) ptx::mbar_expect_tx(b, 16u * (uint32_t)C); // its one phase: C parts of 16 bytes
    ptx::cluster_wait();
    if (t < 32) { // warp 0 merges the warps' parts (lane k: warp k's); lane k pushes the block's to block k
        const float4 v = t < tpr >> 5 ? red[t] : make_float4(0.f, 0.f, 0.f, 0.f);
        float ns[2] = {v.x, v.y};
        lane_sums<2>(ns);
        const float mb = ns[0] > 0.f ? __fdividef(ns[1], ns[0]) : 0.f;
        float m2 = chan_term(v, mb);
        lane_sums<1>(&m2);
        if (t < C) ptx::st_async_f4(ptx::mapa(ptx::smem_u32(&got[r]), t), make_float4(ns[0], ns[1], m2, mb), ptx::mapa(b, t));
    }
    ptx::mbar_wait_cluster(b, 0); // acquire at .cluster: the parts came from other CTAs
    // the row's statistics from the C parts, in rank order
    const float inv_n = 1.f / (float)a.cols;
    float sum = got[0].y;
    for (int k = 1; k < C; k++) sum += got[k].y;
    const float mean = a.rms ? 0.f : sum * inv_n;
    float m2 = 0.f;
    if (!a.rms)
        for (int k = 0; k < C; k++) m2 += chan_term(got[k], mean);
    const float rstd = rsqrtf((a.rms ? sum : m2) * inv_n + a.eps);
    const uint4 *gm = reinterpret_cast<const uint4 *>(a.gamma), *bt = reinterpret_cast<const uint4 *>(a.beta);
    uint4 *y = reinterpret_cast<uint4 *>((T *)a.y + row * a.cols);
#pragma unroll
    for (int k = 0; k < NV; k++) {
        const int c = v0 + k * tpr + t;
        if (c >= v1) continue;
        const uint4 gv = gm ? gm[c] : make_uint4(0, 0, 0, 0), bv = bt ? bt[c] : make_uint4(0, 0, 0, 0);
        const unsigned xw[4] = {xv[k].x, xv[k].y, xv[k].z, xv[k].w}, gw[4] = {gv.x, gv.y, gv.z, gv.w},
                       bw[4] = {bv.x, bv.y, bv.z, bv.w};
        unsigned o[4];
#pragma unroll
        for (int i = 0; i < 4; i++) { // word by word: fewer values live at once
            float f[W / 4], g[W / 4], bb[W / 4];
            unpack_word<T>(xw[i], f);
            unpack_word<T>(gw[i], g);
            unpack_word<T>(bw[i], bb);
#pragma unroll
            for (int j = 0; j < W / 4; j++) f[j] = (f[j] - mean) * rstd * (gm ? g[j] : 1.f) + (bt ? bb[j] : 0.f);
            o[i] = pack_word<T>(f);
        }
        y[c] = make_uint4(o[0], o[1], o[2], o[3]);
    }
    if (r == 0 && t == 0) {
        if (a.mean) a.mean[row] = mean;
        a.rstd[row] = rstd;
    }
    // no barrier at the end: no block reads another's shared memory, and a
    // block leaves only once every part has arrived in its own
#endif
}

} // namespace

template <typename T> const void *cl_fwd_kernel(const kb_norm_plan &p)
{
    if (p.cl < 2 || p.backward) return nullptr;
    if (p.nv == 9) // fp32 rows of 128-320 KiB; 16-bit: plan.c's block.cluster_tail_ln, _rms: a ninth
        return p.lb ? nullptr : (const void *)cl_fwd<T, 9, KB_NORM_CL_BLOCK, 2>; // takes the part's tail
    if (p.nv != 8) return nullptr;
    return p.lb == KB_NORM_CL3_BLOCK ? (const void *)cl_fwd<T, 8, KB_NORM_CL3_BLOCK, 3>
                                     : (const void *)cl_fwd<T, 8, KB_NORM_CL_BLOCK, 2>;
}
template const void *cl_fwd_kernel<float>(const kb_norm_plan &);
template const void *cl_fwd_kernel<__half>(const kb_norm_plan &);
template const void *cl_fwd_kernel<__nv_bfloat16>(const kb_norm_plan &);

} // namespace kb::norm
