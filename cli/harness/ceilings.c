/* The ceilings a case's rows are measured against, beside the device's: the
 * copy ceiling at the case's bytes read and written, and cuBLAS alone on the
 * case's own GEMMs (the op's gemm_shapes). The timer caches each. */
#include "ceilings.h"
#include "copy.h"
#include "gemm.h"
#include "timer.h"
#include "../core/config.h"
#include "../core/errors.h"
#include "../core/op.h"
#include "../core/settings.h"
#include "../../kernels/kernels.h"

#include <cuda_runtime_api.h>

kb_gemm_key kb_case_gemm_key(const kb_case *c) { return c->op->gemm_ceiling ? c->op->gemm_ceiling(c) : KB_GEMM_NONE; }

int kb_plan_gemm_keys(const kb_plan *plan, kb_gemm_key keys[KB_NGEMM])
{
    int n = 0, seen[KB_NGEMM] = {0};
    for (int i = 0; i < plan->ncases; i++) {
        const kb_gemm_key k = kb_case_gemm_key(&plan->cases[i]);
        if (k >= 0 && k < KB_NGEMM && !seen[k]) seen[k] = 1, keys[n++] = k;
    }
    return n;
}

/* the case's GEMMs (0: none) and their key */
static int case_gemms(const kb_case *c, int (*mnk)[3], kb_gemm_key *gk)
{
    *gk = kb_case_gemm_key(c);
    return c->op->gemm_shapes ? c->op->gemm_shapes(c, mnk, KB_GEMM_BENCH_SHAPES) : 0;
}

int kb_case_ceilings(kb_timer *t, const kb_case *c, const kb_opts *o, double *copy, double *shape_tf)
{
    double r, w;
    *copy = *shape_tf = 0;
    kb_case_copy_key(c, &r, &w);
    if (kb_copy_gbps(t, r, w, o, copy, NULL)) {
        *copy = 0;
        if (kb_cuda_sticky(cudaGetLastError())) return 1;
    }
    int mnk[KB_GEMM_BENCH_SHAPES][3];
    kb_gemm_key gk;
    const int n = case_gemms(c, mnk, &gk);
    if (n > 0 && kb_gemm_shapes_tflops(t, gk, (const int(*)[3])mnk, n, o, shape_tf)) {
        *shape_tf = 0;
        return kb_cuda_sticky(cudaGetLastError());
    }
    return 0;
}

size_t kb_case_ceilings_bytes(const kb_case *c)
{
    double r, w;
    kb_case_copy_key(c, &r, &w);
    int mnk[KB_GEMM_BENCH_SHAPES][3];
    kb_gemm_key gk;
    const int n = case_gemms(c, mnk, &gk);
    return kb_copy_bufs_bytes(r, w) + kb_gemm_shapes_bytes(gk, (const int(*)[3])mnk, n);
}

void kb_case_copy_key(const kb_case *c, double *rbytes, double *wbytes)
{
    const double b = c->op->bytes ? c->op->bytes(c) : 0, w = c->op->bytes_written ? c->op->bytes_written(c) : b / 2;
    *rbytes = b - w;
    *wbytes = w;
}
