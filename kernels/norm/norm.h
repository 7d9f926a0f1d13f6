/* LayerNorm / RMSNorm on the device: a plan (plan.h) made ready once, then
 * launched. Included from C (cli/ops/norm.c) and CUDA (exec.cu); the
 * arguments are kb_norm_args (kernels/kernels.h), the naive kernels
 * kb_norm_naive. */
#ifndef KB_NORM_NORM_H
#define KB_NORM_NORM_H
#include <stddef.h>

#include "../kernels.h"
#include "plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What launch runs: set once by kb_norm_exec_prepare. */
typedef struct {
    const void *kernel; /* the plan's kernel (a host stub from the TU that instantiates it) */
    unsigned grid;
    int block;
    size_t smem;        /* dynamic shared memory */
    int i0, i1;         /* the kernel's int arguments after kb_norm_args (tpr or warps; iters or slots) */
    int coop;           /* a cooperative launch: the backward's grid barrier before the column sums */
    int cl;             /* blocks a cluster (cluster_fwd.cu), else 0: a plain launch */
    size_t work_bytes;  /* the backward's workspace (plan.h: kb_norm_work_bytes) the caller allocates into a->work, zeroed once */
} kb_norm_exec;

/* Whether a kernel was built for plan p (host code, no GPU call: the tests
 * check every plan the planner makes). */
int kb_norm_exec_has_kernel(const kb_norm_plan *p);
/* Untimed, once per case: the plan's kernel, its shared memory opt-in
 * (cudaFuncSetAttribute), its grid (occupancy on d->sm_count SMs for the
 * persistent kernels) and the workspace it needs. 0, a cudaError_t, or
 * KB_NORM_NO_CLUSTER: the device cannot place one of the plan's clusters
 * (cudaOccupancyMaxActiveClusters 0; a small MIG slice, say). */
#define KB_NORM_NO_CLUSTER (-2) /* no cudaError_t is negative */
int kb_norm_exec_prepare(const kb_norm_args *a, const kb_norm_plan *p, const kb_devattr *d, kb_norm_exec *x);
/* One launch of a prepared plan (a->work: x->work_bytes of device memory,
 * zeroed before the first launch, when the backward sums dgamma; launches that
 * share it run one at a time); no planning, no allocation. */
int kb_norm_exec_launch(const kb_norm_args *a, const kb_norm_exec *x, void *stream);

#ifdef __cplusplus
}
#endif
#endif
