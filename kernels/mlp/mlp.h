/* The SwiGLU MLP of the LLaMA decoder, y = (silu(x G^T) * (x U^T)) D^T:
 * its kernels' entry points (kernels/mlp/), included from C (cli/ops/mlp.c)
 * and CUDA. Row-major: x [tokens, hidden], G and U [inter, hidden], D
 * [hidden, inter], y [tokens, hidden]. g and u are rounded to dtype where an
 * implementation stores them, h = silu(g) * u is computed in fp32 and
 * rounded to dtype, every GEMM accumulates in fp32. Each launcher returns 0
 * or a cudaError_t (the launch's own, from cudaGetLastError); none plans,
 * allocates or asks the device anything.
 *
 *   naive.cu       a textbook 16x16 shared-memory tiled GEMM, three times
 *   cublas.cu      cublas, cublas_cat, and their silu(g) * u kernel
 *   fused_wgmma.cu Hopper gate/up: TMA + wgmma, warp-specialised, clusters
 *   gate_up_swap.cu the same with the weights as wgmma's 128-row operand (swap-AB)
 *   fused_mma.cu   portable gate/up: mma.sync + cp.async (sm_80+)
 *   fused_f32.cu   fp32 gate/up on CUDA cores
 *   down_splitk.cu Hopper decode down GEMM: TMA + wgmma, split K, in-kernel sums
 *   fused.cu       the fused implementations' host side: plan, occupancy,
 *                  tensor maps (prepare), launch, release
 *   plan.c         the planner (host C, no GPU): which gate/up kernel, which tile */
#ifndef KB_MLP_H
#define KB_MLP_H

#include <stddef.h>

#include "../../include/kb_devattr.h"
#include "plan.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const void *x, *G, *U, *D;
    const void *GU; /* [2*inter, hidden]: G's rows, then U's (cublas_cat) */
    void *y;
    void *gu;       /* workspace [tokens, 2*inter]: g then u ([tokens, inter] each), or the stacked product */
    void *h;        /* workspace [tokens, inter] */
    int dtype, tf32; /* tf32: fp32 GEMMs may use TF32 tensor cores (the cuBLAS GEMMs) */
    int tokens, hidden, inter;
    int sm_count;    /* kb_devattr's: the grid of the grid-stride silu(g) * u kernel */
} kb_mlp_args;

int kb_mlp_naive(const kb_mlp_args *a, void *stream);
int kb_mlp_cublas(const kb_mlp_args *a, void *stream);
int kb_mlp_cublas_cat(const kb_mlp_args *a, void *stream);
/* cublas_cat without its down GEMM: h = silu(g) * u from the stacked product (fused's KB_MLP_CUBLAS_CAT) */
int kb_mlp_cublas_cat_h(const kb_mlp_args *a, void *stream);
/* h [rows, cols] = silu(g) * u, g's and u's rows ld elements apart (cublas.cu) */
int kb_mlp_silu_mul(int dtype, const void *g, const void *u, void *h, long rows, int cols, long ld, int sm_count,
                    void *stream);

/* fused, fused_wgmma, fused_mma: one kernel for h = silu(x G^T) * (x U^T)
 * (g and u stay in fp32 registers; uses x, G, U, h), or cublas_cat's GEMM and
 * silu(g) * u where the planner says, then the down GEMM by cuBLAS,
 * down_splitk or cuBLASLt's split-K (the plan's). prepare (untimed) plans r on d (kb_mlp_plan_make, with the
 * runtime's occupancy), sets the kernel's shared-memory attribute and makes
 * the tensor maps; it returns 0 with what runs in kernel ("fused_wgmma
 * wg=2 bn=112 cl=2 tma-store + cublas down"), KB_MLP_NA with why, or a
 * cudaError_t. launch only launches. */
#define KB_MLP_NA (-1) /* = KB_NA */
typedef struct kb_mlp_fused kb_mlp_fused;
int kb_mlp_fused_prepare(const kb_mlp_args *a, const kb_mlp_req *r, const kb_devattr *d, kb_mlp_fused **out,
                         char *kernel, size_t kernel_len, char *why, size_t why_len);
int kb_mlp_fused_launch(const kb_mlp_fused *f, void *stream);
void kb_mlp_fused_release(kb_mlp_fused *f);

#ifdef __cplusplus
}
#endif
#endif
