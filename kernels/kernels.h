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

/* harness: read `bytes` of buf (>= 2x L2) so the cache holds nothing of a case */
int kb_l2_flush(const void *buf, size_t bytes, void *stream);

int kb_rope_naive(const kb_rope_args *a, void *stream);
int kb_rope_opt(const kb_rope_args *a, void *stream);

/* LayerNorm (rms = 0) and RMSNorm (rms = 1) over rows of `cols` elements,
 * statistics and sums in fp32. */
typedef struct {
    const void *x;             /* [rows, cols] */
    const void *dy;            /* backward: [rows, cols] */
    const void *gamma, *beta;  /* [cols], same dtype as x; NULL: 1 and 0 */
    void *y;                   /* forward: y; backward: dx */
    float *mean, *rstd;        /* [rows]: forward writes, backward reads; mean NULL for RMSNorm */
    float *dgamma, *dbeta;     /* backward: [cols] column sums, NULL when not wanted */
    void *work;                /* opt backward: per-block partial sums (kb_norm_work_bytes) */
    int dtype, rms, backward;
    long rows, cols;
    float eps;
} kb_norm_args;

int kb_norm_naive(const kb_norm_args *a, void *stream);
int kb_norm_opt(const kb_norm_args *a, void *stream);
/* Workspace the opt backward needs for these arguments (0 for the forward). */
size_t kb_norm_work_bytes(const kb_norm_args *a);

#ifdef __cplusplus
}
#endif
#endif
