// A plan's kernel made ready (prepare: untimed) and launched (launch: timed).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "kernels.cuh"
#include "norm.h"

namespace {

using namespace kb::norm;

// aff: 0 none, 1 gamma, 2 gamma and beta; rms: the arguments' op (reread_fwd's
// kernels differ by both)
template <typename T> const void *kernel_of(const kb_norm_plan &p, int aff, bool rms)
{
    switch (p.variant) {
    case KB_NORM_WARP_ROW: return p.backward ? wr_bwd_kernel<T>(p) : wr_fwd_kernel<T>(p);
    case KB_NORM_BLOCK:
        return p.backward ? block_bwd_kernel<T>(p)
             : p.rr       ? rr_fwd_kernel<T>(p, aff, rms)
             : p.cl       ? cl_fwd_kernel<T>(p)
                          : block_fwd_kernel<T>(p);
    case KB_NORM_BULK: return p.backward ? bulk_bwd_kernel<T>(p) : bulk_fwd_kernel<T>(p);
    }
    return nullptr;
}

// A persistent grid: every block resident at once (the backward's grid
// barrier needs it), each thread group taking rows row0 + i*stride.
int fit_grid(const kb_norm_args *a, const kb_norm_plan &p, const kb_devattr *d, kb_norm_exec *x, int *iters)
{
    // past 48 KiB of static and dynamic shared memory a kernel must opt in
    cudaFuncAttributes fa;
    int e = (int)cudaFuncGetAttributes(&fa, x->kernel);
    if (e) return e;
    if (x->smem + fa.sharedSizeBytes > 48 * 1024 &&
        (e = (int)cudaFuncSetAttribute(x->kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)x->smem)))
        return e;
    int per_sm = 0;
    e = (int)cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, x->kernel, p.block, x->smem);
    if (e) return e;
    if (per_sm < 1) return (int)cudaErrorLaunchOutOfResources;
    const long rpb = p.nv ? p.block / p.tpr : 1, groups = (a->rows + rpb - 1) / rpb;
    long grid = (long)per_sm * d->sm_count;
    if (grid > groups) grid = groups;
    x->grid = (unsigned)grid;
    *iters = (int)((groups + grid - 1) / grid); // a group's rows
    return 0;
}

// A cluster launch of x->cl blocks a cluster (cluster_fwd.cu); attr: its storage.
cudaLaunchConfig_t cluster_config(const kb_norm_exec *x, cudaLaunchAttribute *attr, cudaStream_t s)
{
    attr->id = cudaLaunchAttributeClusterDimension;
    attr->val.clusterDim.x = (unsigned)x->cl, attr->val.clusterDim.y = 1, attr->val.clusterDim.z = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(x->grid), cfg.blockDim = dim3((unsigned)x->block), cfg.dynamicSmemBytes = x->smem;
    cfg.stream = s, cfg.attrs = attr, cfg.numAttrs = 1;
    return cfg;
}

} // namespace

static const void *kernel_by_dtype(const kb_norm_plan &p, int aff, bool rms)
{
    switch (p.dtype) {
    case 0: return kernel_of<float>(p, aff, rms);
    case 1: return kernel_of<__half>(p, aff, rms);
    case 2: return kernel_of<__nv_bfloat16>(p, aff, rms);
    }
    return nullptr;
}

// every kernel the plan's arguments may ask for: RMSNorm without or with gamma,
// LayerNorm without, with gamma, with gamma and beta
extern "C" int kb_norm_exec_has_kernel(const kb_norm_plan *p)
{
    return kernel_by_dtype(*p, 0, true) && kernel_by_dtype(*p, 1, true) && kernel_by_dtype(*p, 0, false) &&
           kernel_by_dtype(*p, 1, false) && kernel_by_dtype(*p, 2, false);
}

extern "C" int kb_norm_exec_prepare(const kb_norm_args *a, const kb_norm_plan *p, const kb_devattr *d, kb_norm_exec *x)
{
    *x = kb_norm_exec{};
    if (a->dtype != p->dtype || a->backward != p->backward) return (int)cudaErrorInvalidValue;
    // a plan holds the columns it was made for (its threads' coverage, its shared memory): no others
    if (a->cols != p->cols) return (int)cudaErrorInvalidValue;
    x->kernel = kernel_by_dtype(*p, a->beta ? 2 : a->gamma ? 1 : 0, a->rms);
    if (!x->kernel) return (int)cudaErrorInvalidValue; // a plan no kernel was built for
    x->block = p->block;
    x->smem = p->smem;
    if (p->cl) { // a cluster a row (cluster_fwd.cu): cl_fwd(a, ahead)
        x->cl = p->cl, x->grid = (unsigned)(a->rows * p->cl);
        cudaLaunchAttribute attr;
        const cudaLaunchConfig_t cfg = cluster_config(x, &attr, nullptr);
        int n = 0;
        const int e = (int)cudaOccupancyMaxActiveClusters(&n, x->kernel, &cfg);
        x->i0 = (int)kb_norm_plan_ahead(p, n); // cl_fwd(a, ahead): rows on that its blocks prefetch
        return e ? e : n < 1 ? KB_NORM_NO_CLUSTER : 0;
    }
    const bool persistent = p->backward || (p->variant == KB_NORM_BLOCK && p->nv && !p->rr) || p->variant == KB_NORM_BULK;
    if (!persistent) { // a grid over the rows: warp_row forward (groups of a block), reread and loop forward (a row a block)
        const long rpb = p->variant == KB_NORM_WARP_ROW ? p->block / p->tpr : 1;
        x->grid = (unsigned)((a->rows + rpb - 1) / rpb);
        x->i0 = p->tpr / 32; // wr_fwd's warps a row (loop_fwd takes none)
        if (p->rr) { // rr_fwd(a, ahead): rows on that its blocks prefetch
            int per_sm = 0;
            const int e = p->pf ? (int)cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, x->kernel, p->block, x->smem) : 0;
            if (e) return e;
            x->i0 = (int)kb_norm_plan_ahead(p, (long)per_sm * d->sm_count);
        }
        return 0;
    }
    int iters = 0;
    const int e = fit_grid(a, *p, d, x, &iters);
    if (e) return e;
    switch (p->variant) {
    case KB_NORM_WARP_ROW: x->i0 = p->tpr / 32, x->i1 = iters; break; // wr_bwd(a, wpr, iters)
    case KB_NORM_BULK: x->i0 = p->tpr, x->i1 = p->stages; break;      // bulk_*(a, tpr, S)
    default:
        if (p->nv) x->i0 = p->tpr, x->i1 = iters; // opt_*(a, tpr, iters)
        else x->i0 = iters;                        // loop_bwd(a, iters)
    }
    if (p->backward && a->dgamma) {
        x->coop = 1;
        x->work_bytes = kb_norm_work_bytes(x->grid, a->cols);
    }
    return 0;
}

extern "C" int kb_norm_exec_launch(const kb_norm_args *a, const kb_norm_exec *x, void *stream)
{
    kb_norm_args args = *a;
    int i0 = x->i0, i1 = x->i1;
    void *kargs[] = {&args, &i0, &i1}; // a kernel reads as many as it takes
    cudaStream_t s = (cudaStream_t)stream;
    if (x->coop) return (int)cudaLaunchCooperativeKernel(x->kernel, x->grid, x->block, kargs, x->smem, s);
    if (x->cl) {
        cudaLaunchAttribute attr;
        const cudaLaunchConfig_t cfg = cluster_config(x, &attr, s);
        return (int)cudaLaunchKernelExC(&cfg, x->kernel, kargs);
    }
    return (int)cudaLaunchKernel(x->kernel, x->grid, x->block, kargs, x->smem, s);
}
