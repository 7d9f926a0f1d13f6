/* kbench kernels: extern "C" launchers, one per implementation.
 * Included from C (cli/ops) and CUDA (kernels/). Each launcher returns 0 or
 * a cudaError_t (the launch's own error, from cudaGetLastError). */
#ifndef KB_KERNELS_H
#define KB_KERNELS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* dtype codes match kb_dtype: 0 fp32, 1 fp16, 2 bf16 */
enum { KB_ROPE_SBHD = 0, KB_ROPE_BSHD = 1, KB_ROPE_THD = 2 };
enum { KB_ROPE_NEOX = 0, KB_ROPE_GPTJ = 1 };

typedef struct {
    const void *in;        /* t (forward) or dy (backward), contiguous in `layout` */
    void *out;             /* out or dt, same shape */
    const float *angles;   /* [positions][rot/2] angles in radians */
    const int *cu_seqlens; /* thd: batch+1 prefix sums, device memory */
    int dtype, layout, style, backward;
    int seq, batch, heads, dim, rot;
    long tokens; /* thd: cu_seqlens[batch] */
} kb_rope_args;

/* harness: read `bytes` of buf (>= 2x L2) so the cache holds nothing of a case
 * (4 blocks an SM, sm_count from kb_devattr) */
int kb_l2_flush(const void *buf, size_t bytes, int sm_count, void *stream);

int kb_rope_naive(const kb_rope_args *a, void *stream);
/* kb_rope_opt: kernels/rope/plan.h (a plan made once, then run) */

/* LayerNorm (rms = 0) and RMSNorm (rms = 1) over rows of `cols` elements,
 * statistics and sums in fp32. */
typedef struct {
    const void *x;             /* [rows, cols] */
    const void *dy;            /* backward: [rows, cols] */
    const void *gamma, *beta;  /* [cols], same dtype as x; NULL: 1 and 0 */
    void *y;                   /* forward: y; backward: dx */
    float *mean, *rstd;        /* [rows]: forward writes, backward reads; mean NULL for RMSNorm */
    float *dgamma, *dbeta;     /* backward: [cols] column sums, NULL when not wanted */
    void *work;                /* a persistent backward's per-block partial sums (kernels/norm/norm.h: kb_norm_exec.work_bytes) */
    int dtype, rms, backward;
    long rows, cols;
    float eps;
} kb_norm_args;

int kb_norm_naive(const kb_norm_args *a, void *stream);
/* the other variants: kernels/norm/norm.h (a plan made once, then run) */

/* ---- cuBLAS (kernels/gemm.cu) ------------------------------------------
 * One handle for the process, created by kb_cublas_init (call it in setup,
 * not in a timed launch) with its own 32 MiB workspace; each call sets the
 * stream it is given. A failed cuBLAS or CUDA call writes "file:line: call:
 * status" to kb_last_error (defined in cli/harness.c) and returns a
 * cudaError_t: the context's sticky error if there is one, else the nearest
 * match (allocation, invalid value, not supported, unknown). */
extern char kb_last_error[512];
const char *kb_cublas_status_string(int status); /* "CUBLAS_STATUS_...: description" */
int kb_cublas_init(void);
/* y[M,N] = x[M,K] * w[N,K]^T, row-major, as nn.Linear stores and computes it
 * (no bias): fp32 accumulation (CUBLAS_COMPUTE_32F; tf32 and dtype fp32:
 * CUBLAS_COMPUTE_32F_FAST_TF32), y rounded to dtype. */
int kb_linear_cublas(const void *x, const void *w, void *y, int M, int N, int K, int dtype, int tf32, void *stream);

/* The GEMM ceiling: an n x n x n kb_linear_cublas on seeded random inputs in
 * [-1, 1) (not zeros: tensor cores draw less power on them). create returns
 * cudaErrorMemoryAllocation, with nothing left allocated, when n does not fit. */
typedef struct {
    void *a, *b, *c;
    int n, dtype, tf32;
} kb_gemm_bench;
int kb_gemm_bench_create(kb_gemm_bench *g, int dtype, int tf32, int n);
int kb_gemm_bench_run(const kb_gemm_bench *g, void *stream);
void kb_gemm_bench_destroy(kb_gemm_bench *g);

/* ---- SwiGLU MLP: kernels/mlp/mlp.h (its launchers) and kernels/mlp/plan.h (the
 * fused kernels' planner) ------------------------------------------------- */

#ifdef __cplusplus
}
#endif
#endif
