/* The GEMM ceilings: cuBLAS over the ladder of square sizes and layouts, and
 * cuBLAS alone on a case's own GEMM shapes (gemm.h). */
#include "gemm.h"
#include "ladder.h"
#include "timer.h"
#include "watch.h"
#include "../core/op.h"
#include "../core/settings.h"
#include "../report/row.h"
#include "../../include/kb_dtype.h"
#include "../../kernels/kernels.h"

#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A GEMM is timed for at most this much GEMM time (and 20 samples); kb_time
 * still goes on until the median, the figure kept, is known to +-0.5% or the
 * noise is under 1%. A/B on 4 x H200 (2026-11-26, base, new, base, new on
 * each GPU):
 * - the ceiling's ladder (kb_gemm_tflops), 0.1 s a rung: at 20 ms the best
 *   rung read 2.4% higher (1.004-1.044 over 8 GPU-dtype pairs; base against
 *   base 0.986-1.009), short bursts at higher clocks, and kbench device's
 *   bf16 and tf32 ceilings spread 7-9% over four GPUs (4.4% at most at
 *   0.1 s on four others that day): it saved 2 s a run;
 * - the case's own shapes (kb_gemm_shapes_tflops), 20 ms: new/base median
 *   1.001 (p10-p90 0.962-1.037; base/base 0.969-1.029, 24 rows), and the
 *   MLP grid's per-case ceilings took 32 s of one H200 instead of 42. */
#define KB_GEMM_RUNG_S 0.1
#define KB_GEMM_SHAPES_S 0.02

typedef struct {
    kb_timer *t;
    const kb_opts *o;
} rung_ctx;

static int gemm_fn(void *ctx, void *stream) { return kb_gemm_bench_run(ctx, stream); }

static void gemm_type(kb_gemm_key k, int *dtype, int *tf32)
{
    *dtype = k == KB_GEMM_FP16 ? KB_FP16 : k == KB_GEMM_BF16 ? KB_BF16 : KB_FP32;
    *tf32 = k == KB_GEMM_TF32;
}

/* Times a created bench (L2 flushed, median) for cap seconds at most (one
 * of the two above): TFLOP/s, or 0; frees it. */
static int gemm_rate(kb_timer *t, kb_gemm_bench *g, const kb_opts *o, const char *label, double cap, double *tflops)
{
    kb_stats st;
    kb_opts oo = *o;
    snprintf(oo.timing, sizeof oo.timing, "events"); /* a ceiling, whatever the rows' timing */
    if (oo.timeout > 3) oo.timeout = 3;
    if (oo.min_time > cap) oo.min_time = cap;
    int rc = kb_time(t, gemm_fn, g, &oo, label, &st, NULL);
    double f = kb_gemm_bench_flops(g);
    kb_gemm_bench_destroy(g);
    *tflops = !rc && st.median > 0 ? f / (st.median * 1e-3) / 1e12 : 0;
    return rc;
}

/* One rung (kb_rung_fn): an n^3 GEMM of key's type in a layout, timed;
 * cudaErrorMemoryAllocation when it does not fit (nothing printed, nothing
 * left allocated); nothing timed once the run stops */
static int rung_fn(void *ctx, int key, int n, int layout, double *tf)
{
    rung_ctx *r = ctx;
    kb_gemm_bench g;
    int dtype, tf32;
    *tf = 0;
    if (kb_stop_signal) return 0;
    gemm_type((kb_gemm_key)key, &dtype, &tf32);
    int rc = kb_gemm_bench_create_layout(&g, dtype, tf32, n, layout);
    if (rc) return rc;
    char label[128];
    snprintf(label, sizeof label, "gemm %s n=%d %s", kb_gemm_key_name((kb_gemm_key)key), n, kb_gemm_layout_name(layout));
    return gemm_rate(r->t, &g, r->o, label, KB_GEMM_RUNG_S, tf);
}

size_t kb_gemm_ladder_bytes(kb_gemm_key k)
{
    const int n = kb_gemm_ladder_sizes[KB_GEMM_LADDER - 1], big[1][3] = {{n, n, n}};
    return kb_gemm_shapes_bytes(k, big, 1);
}

void kb_timer_share_ladder(kb_timer *t, const kb_ladder_share *sh)
{
    if (sh) t->share = *sh;
    else memset(&t->share, 0, sizeof t->share);
}

/* The GEMM ceiling of key k: the best rate of a square cuBLAS GEMM over a
 * ladder of sizes (smaller ones can run at higher clocks than the largest,
 * which draw the most power), each L2 flushed, median: every size in the
 * TN layout, then the other layouts at the best size and its neighbours
 * (cuBLAS picks other kernels for them; fp32's best was NT on an H100), the
 * search shared by the workers of one GPU model (ladder.c). The operands
 * are kernels/gemm.cu's fill: uniform [-1, 1) drawn in fp32, rounded once,
 * like every op's inputs (a GEMM's power and so its clock depend on the
 * bits: torch.mm beat this ceiling by 3% only on torch.rand(bf16) * 2 - 1,
 * whose small values keep few mantissa bits). Cached per key for the
 * timer's life, searched once; a size that does not fit is left out (0:
 * none fitted).
 * kb_gemm_ceilings measures several keys in one search (shared, the
 * workers' queue hands out any key's rungs), kb_gemm_tflops reads one. */
int kb_gemm_ceilings(kb_timer *t, const kb_gemm_key *keys, int nk, const kb_opts *o)
{
    kb_gemm_key todo[KB_NGEMM];
    int n = 0;
    for (int j = 0; j < nk; j++) /* the keys not searched yet (gemm_shared is 1 or more once searched, fitted or not) */
        if (keys[j] >= 0 && keys[j] < KB_NGEMM && !t->gemm_shared[keys[j]]) {
            int dup = 0;
            for (int m = 0; m < n; m++) dup |= todo[m] == keys[j];
            if (!dup) todo[n++] = keys[j];
        }
    if (!n) return 0;
    rung_ctx r = {t, o};
    kb_ladder_result res[KB_NGEMM];
    int rc = kb_ladder_search(todo, n, rung_fn, &r, t->share.fn ? &t->share : NULL, res);
    if (rc) return rc;
    for (int j = 0; j < n; j++) {
        const int k = todo[j];
        t->gemm[k] = res[j].tflops;
        t->gemm_n[k] = res[j].n;
        t->gemm_layout[k] = res[j].layout;
        t->gemm_shared[k] = res[j].shared;
    }
    t->gemm_wait_s += res[0].wait_s;
    return 0;
}

int kb_gemm_tflops(kb_timer *t, kb_gemm_key k, const kb_opts *o, double *tflops, int *size, int *layout, int *shared)
{
    *tflops = 0;
    if (size) *size = 0;
    if (layout) *layout = KB_GEMM_TN;
    if (shared) *shared = 0;
    if (k < 0 || k >= KB_NGEMM) return 0;
    int rc = kb_gemm_ceilings(t, &k, 1, o);
    if (rc) return rc;
    *tflops = t->gemm[k];
    if (size) *size = t->gemm_n[k];
    if (layout) *layout = t->gemm_layout[k];
    if (shared) *shared = t->gemm_shared[k];
    return 0;
}

double kb_gemm_wait_s(const kb_timer *t) { return t->gemm_wait_s; }

size_t kb_gemm_shapes_bytes(kb_gemm_key k, const int (*mnk)[3], int n)
{
    if (k < 0 || k >= KB_NGEMM || n <= 0) return 0;
    int dtype, tf32;
    gemm_type(k, &dtype, &tf32);
    return kb_gemm_bench_shapes_bytes(dtype, mnk, n);
}

int kb_gemm_shapes_tflops(kb_timer *t, kb_gemm_key k, const int (*mnk)[3], int n, const kb_opts *o, double *tflops)
{
    *tflops = 0;
    if (k < 0 || k >= KB_NGEMM || n <= 0) return 0;
    for (int i = 0; i < t->nshapes; i++)
        if (t->shapes[i].k == k && t->shapes[i].n == n && !memcmp(t->shapes[i].mnk, mnk, (size_t)n * sizeof *mnk)) {
            *tflops = t->shapes[i].tflops;
            return 0;
        }
    int dtype, tf32;
    gemm_type(k, &dtype, &tf32);
    kb_gemm_bench g;
    int rc = kb_gemm_bench_create_shapes(&g, dtype, tf32, mnk, n);
    if (rc == (int)cudaErrorMemoryAllocation) return 0; /* no room beside the case: unknown */
    if (rc) return rc;
    char label[160];
    snprintf(label, sizeof label, "gemm %s shapes %dx%dx%d+%d", kb_gemm_key_name(k), mnk[0][0], mnk[0][1], mnk[0][2], n - 1);
    if ((rc = gemm_rate(t, &g, o, label, KB_GEMM_SHAPES_S, tflops))) return rc;
    if (t->nshapes < 64) {
        t->shapes[t->nshapes].k = k;
        t->shapes[t->nshapes].n = n;
        memcpy(t->shapes[t->nshapes].mnk, mnk, (size_t)n * sizeof *mnk);
        t->shapes[t->nshapes++].tflops = *tflops;
    }
    return 0;
}
