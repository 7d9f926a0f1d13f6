/* kbench kernels: extern "C" launchers, one per implementation.
 * Included from C (cli/ops) and CUDA (kernels/). Each launcher returns 0 or
 * a cudaError_t (the launch's own error, from cudaGetLastError). */
#ifndef KB_KERNELS_H
#define KB_KERNELS_H

#include <stddef.h>
#include <stdint.h>

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
/* fill.cu: n elements of dtype at dev, the host's kb_fill_uniform bit for bit
 * (kernels/fill.h); synchronous */
int kb_fill_uniform_dev(void *dev, size_t n, int dtype, uint64_t seed, double lo, double hi);

/* ---- the copy ceiling's candidates (kernels/ceiling/copy.cu) --------------
 * Device-to-device copies reading rbytes of src and writing wbytes of dst
 * (both > 0, both pointers 16-byte aligned, not overlapping), in 16-byte
 * vectors: R = ceil(rbytes/16) source vectors, W = ceil(wbytes/16)
 * destination vectors, a last partial vector reading as its bytes then
 * zeros and storing only its own bytes.
 *   R >= W: dst[i] = XOR of src[j] over j < R with j % W == i (every byte
 *           read once, every byte written once);
 *   R <  W: dst[i] = src[i % R] (re-reads of src may hit L2).
 * Variants differ in vectors per thread, grid shape ("full": a block per
 * tile of vpt * 256 vectors; "persistentK": sm_count * min(K, the blocks an
 * SM holds) blocks striding over the tiles; sm_count <= 0 reads as 132) and
 * cache hints. launch: 0 or a cudaError_t (invalid value for a bad variant,
 * size or alignment); it only launches (a persistent variant's first launch
 * also asks the runtime, once, how many of its blocks an SM holds). */
int kb_copy_nvariants(void);
const char *kb_copy_variant_name(int v); /* "vec16x4 full", "vec16x8 persistent4", ...; NULL out of range */
int kb_copy_variant_launch(int v, void *dst, const void *src, size_t rbytes, size_t wbytes, int sm_count,
                           void *stream);

/* ---- calibration (kernels/ceiling/spin.cu), for kbench selftest ----------
 * spin: one block of one thread (so one SM) that loops until clock64() has
 * advanced by `cycles` SM clocks, then stores the count to a device global;
 * cycles < 0: invalid value. empty: an empty kernel, <<<1, 1>>>. Both only
 * launch. */
int kb_spin_launch(long long cycles, void *stream);
int kb_empty_launch(void *stream);

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
    void *work;                /* a persistent backward's workspace: its grid barrier, per-block partial rows (kernels/norm/plan.h) */
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
 * status" to kb_last_error (defined in cli/core/errors.c) and returns a
 * cudaError_t: the context's sticky error if there is one, else the nearest
 * match (allocation, invalid value, not supported, unknown). */
extern char kb_last_error[512];
const char *kb_cublas_status_string(int status); /* "CUBLAS_STATUS_...: description" */
int kb_cublas_init(void);
/* y[M,N] = x[M,K] * w[N,K]^T, row-major, as nn.Linear stores and computes it
 * (no bias): fp32 accumulation (CUBLAS_COMPUTE_32F; tf32 and dtype fp32:
 * CUBLAS_COMPUTE_32F_FAST_TF32), y rounded to dtype. */
int kb_linear_cublas(const void *x, const void *w, void *y, int M, int N, int K, int dtype, int tf32, void *stream);

/* The same y = x w^T by cuBLASLt with K split in `splits` (>= 2; bf16/fp16),
 * fp32 partials reduced out of place (deterministic): the first algorithm
 * cuBLASLt's heuristic offers with that split, else the first of its others
 * that takes the split set on it (cublasLtMatmulAlgoCheck), for operands
 * aligned as these pointers are. prepare (untimed) finds it and allocates
 * its workspace: 0, -1 where there is none (KB_NA: apart from every
 * cudaError_t), or a cudaError_t, with nothing left allocated. */
typedef struct kb_lt_gemm kb_lt_gemm;
int kb_linear_lt_prepare(const void *x, const void *w, const void *y, int M, int N, int K, int dtype, int splits,
                         kb_lt_gemm **out);
int kb_linear_lt(const kb_lt_gemm *g, const void *x, const void *w, void *y, void *stream);
void kb_linear_lt_release(kb_lt_gemm *g);

/* The GEMM ceiling: an n x n x n kb_linear_cublas on seeded random inputs in
 * [-1, 1) (not zeros: tensor cores draw less power on them); or, for a row's
 * cuBLAS reference, a sequence of up to KB_GEMM_BENCH_SHAPES M x N x K
 * GEMMs on shared operand buffers (each as large as its largest use). create
 * returns cudaErrorMemoryAllocation, with nothing left allocated, when they
 * do not fit. */
#define KB_GEMM_BENCH_SHAPES 4
/* The operand layout of a square ceiling GEMM, as cuBLAS's (opA, opB) on
 * column-major data: TN is nn.Linear's y = x w^T (kb_linear_cublas), NN is
 * torch.mm(a, b) on row-major tensors, NT the third. cuBLAS picks other
 * kernels for each, so the ceiling tries them all. */
typedef enum { KB_GEMM_TN, KB_GEMM_NN, KB_GEMM_NT, KB_GEMM_NLAYOUTS } kb_gemm_layout;
typedef struct {
    void *a, *b, *c;
    int n, dtype, tf32, layout;
    int nshapes, mnk[KB_GEMM_BENCH_SHAPES][3];
} kb_gemm_bench;
int kb_gemm_bench_create_layout(kb_gemm_bench *g, int dtype, int tf32, int n, int layout);
int kb_gemm_bench_create_shapes(kb_gemm_bench *g, int dtype, int tf32, const int (*mnk)[3], int nshapes);
/* the device bytes kb_gemm_bench_create_shapes allocates for these shapes */
size_t kb_gemm_bench_shapes_bytes(int dtype, const int (*mnk)[3], int nshapes);
int kb_gemm_bench_run(const kb_gemm_bench *g, void *stream);
double kb_gemm_bench_flops(const kb_gemm_bench *g); /* 2 M N K summed */
void kb_gemm_bench_destroy(kb_gemm_bench *g);

/* ---- SwiGLU MLP: kernels/mlp/mlp.h (its launchers) and kernels/mlp/plan.h (the
 * fused kernels' planner) ------------------------------------------------- */

#ifdef __cplusplus
}
#endif
#endif
