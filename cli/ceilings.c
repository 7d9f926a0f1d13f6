/* The ceilings a case's rows are measured against, beside the device's: the
 * copy ceiling at the case's bytes read and written, and cuBLAS alone on the
 * case's own GEMMs (the op's gemm_shapes). The timer caches each. */
#include "harness.h"
#include "kbench.h"
#include "../kernels/kernels.h"

#include <cuda_runtime_api.h>

int kb_case_ceilings(kb_timer *t, const kb_case *c, const kb_opts *o, double *copy, double *shape_tf)
{
    const kb_op *op = c->op;
    double r, w;
    *copy = *shape_tf = 0;
    kb_case_copy_key(c, &r, &w);
    if (kb_copy_gbps(t, r, w, o, copy, NULL)) {
        *copy = 0;
        if (kb_cuda_sticky(cudaGetLastError())) return 1;
    }
    int mnk[KB_GEMM_BENCH_SHAPES][3];
    const kb_gemm_key gk = op->gemm_ceiling ? op->gemm_ceiling(c) : KB_GEMM_NONE;
    const int n = op->gemm_shapes ? op->gemm_shapes(c, mnk, KB_GEMM_BENCH_SHAPES) : 0;
    if (n > 0 && kb_gemm_shapes_tflops(t, gk, (const int(*)[3])mnk, n, o, shape_tf)) {
        *shape_tf = 0;
        return kb_cuda_sticky(cudaGetLastError());
    }
    return 0;
}

size_t kb_case_ceilings_bytes(const kb_case *c)
{
    const kb_op *op = c->op;
    double r, w;
    kb_case_copy_key(c, &r, &w);
    /* the copy's two buffers (harness.c's copy_bufs_alloc: each at least half the bytes moved) */
    const double half = (r + w) / 2 + 512, bytes = (r > half ? r : half) + (w > half ? w : half);
    int mnk[KB_GEMM_BENCH_SHAPES][3];
    const kb_gemm_key gk = op->gemm_ceiling ? op->gemm_ceiling(c) : KB_GEMM_NONE;
    const int n = op->gemm_shapes ? op->gemm_shapes(c, mnk, KB_GEMM_BENCH_SHAPES) : 0;
    double a = 0, b = 0, m = 0; /* the largest of each operand over the shapes (kb_gemm_bench_create_shapes) */
    for (int i = 0; i < n; i++) {
        const double M = mnk[i][0], N = mnk[i][1], K = mnk[i][2];
        a = a > M * K ? a : M * K;
        b = b > N * K ? b : N * K;
        m = m > M * N ? m : M * N;
    }
    const double es = gk == KB_GEMM_FP16 || gk == KB_GEMM_BF16 ? 2 : 4;
    return (size_t)(bytes + (a + b + m) * es);
}
