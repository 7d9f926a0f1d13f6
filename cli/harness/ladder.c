/* The GEMM ceiling's ladder, its order and its sharing, with no GPU in it
 * (gemm.c times the rungs; tests/test_ladder.c runs it on the CPU).
 *
 * Alone, a GPU times every rung of each key's ladder: each size of
 * kb_gemm_ladder_sizes in the TN layout, then NN and NT at the best size and
 * its neighbours; its ceiling is the best rate. Under --devices, the workers
 * whose GPUs are of one model share that search through a queue of rungs in
 * the parent (kb_ladder_queue): a worker sends the rate of its last rung and
 * gets its next, any key's (the first key's first, smallest first); a key's
 * NN and NT rungs join the queue once its TN rates are all in; once a key's
 * search is over, each worker times the group's best point of it on its own
 * GPU (unless it did already); when every key's is over and timed, "end". A
 * GPU's ceiling is still the best rate it reached itself; what is shared is
 * where to look. The search, 4.5 s of bf16 and 3.3 s of fp16 on an H100 alone,
 * was what every worker paid before its first case whatever the number of
 * GPUs (issue 24). Split by rank with a barrier per key and phase, it took
 * 3.5-3.7 s on four H200s: each phase waited for the worker with the
 * slowest share (16384^3 is 150 times the work of 3072^3), and each key for
 * the one before it; the queue waits only where no key has a rung to give. */
#include "ladder.h"
#include "stats.h"
#include "../core/op.h"
#include "../../kernels/kernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const int kb_gemm_ladder_sizes[KB_GEMM_LADDER] = {2048, 3072, 4096, 6144, 8192, 12288, 16384};

int kb_gemm_rungs(const double *rates, int n, int *idx)
{
    int best = kb_best_rate(rates, n), k = 0;
    if (best < 0) return 0;
    for (int i = best - 1; i <= best + 1; i++)
        if (i >= 0 && i < n && isfinite(rates[i]) && rates[i] > 0) idx[k++] = i;
    return k;
}

enum { NL = KB_GEMM_LADDER, NLAY = KB_GEMM_NLAYOUTS, NX = 3 * (KB_GEMM_NLAYOUTS - 1) };

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct {
    kb_rung_fn rung;
    void *ctx;
    int key;
    kb_ladder_result *res;
    double rate[NL][NLAY]; /* this GPU's, 0 until timed */
    char done[NL][NLAY];
    int roof; /* sizes from here on do not fit */
} ladder;

/* rung (size i, layout) timed here once, kept if it is this GPU's best */
static int rung_here(ladder *l, int i, int layout)
{
    if (l->done[i][layout] || i >= l->roof) return 0;
    l->done[i][layout] = 1;
    double r = 0;
    int rc = l->rung(l->ctx, l->key, kb_gemm_ladder_sizes[i], layout, &r);
    if (rc == KB_RUNG_NO_ROOM) {
        if (layout == KB_GEMM_TN) l->roof = i;
        return 0;
    }
    if (rc) return rc;
    l->rate[i][layout] = r;
    l->res->rungs++;
    if (r > l->res->tflops) {
        l->res->tflops = r;
        l->res->n = kb_gemm_ladder_sizes[i];
        l->res->layout = layout;
    }
    return 0;
}

/* the whole ladder here (the rungs timed already not again) */
static int alone(ladder *l)
{
    double tn[NL];
    int idx[3], rc;
    for (int i = 0; i < NL; i++) {
        if ((rc = rung_here(l, i, KB_GEMM_TN))) return rc;
        tn[i] = l->rate[i][KB_GEMM_TN];
    }
    const int nr = kb_gemm_rungs(tn, NL, idx);
    for (int j = 0; j < nr; j++)
        for (int lay = KB_GEMM_NN; lay < NLAY; lay++)
            if ((rc = rung_here(l, idx[j], lay))) return rc;
    l->res->shared = 1;
    return 0;
}

int kb_ladder_search(const kb_gemm_key *keys, int nk, kb_rung_fn rung, void *ctx, const kb_ladder_share *sh, kb_ladder_result *res)
{
    if (nk <= 0) return 0;
    ladder *ls = calloc((size_t)nk, sizeof *ls);
    if (!ls) abort();
    for (int k = 0; k < nk; k++) {
        memset(&res[k], 0, sizeof res[k]);
        res[k].layout = KB_GEMM_TN;
        ls[k] = (ladder){.rung = rung, .ctx = ctx, .key = keys[k], .res = &res[k], .roof = NL};
    }
    int rc = 0, gpus = 0, over = 0; /* over: the group's search ended, this worker's part timed */
    double wait = 0;
    kb_rung_msg last = {-1, 0, 0, 0}, next;
    while (sh && sh->fn) {
        const double t = now_s();
        const int m = sh->fn(sh->ctx, &last, &next, &gpus);
        wait += now_s() - t;
        if (m <= 0) {
            over = m == 0;
            break;
        }
        ladder *l = NULL;
        for (int k = 0; k < nk; k++)
            if (ls[k].key == next.key) l = &ls[k];
        last = next;
        if (!l || next.i < 0 || next.i >= NL || next.layout < 0 || next.layout >= NLAY) { /* not ours: back untimed */
            last.rate = KB_RUNG_NOT_MINE;
            continue;
        }
        if ((rc = rung_here(l, next.i, next.layout))) { /* the search ends here: its rung goes back to the group */
            sh->fn(sh->ctx, NULL, NULL, NULL);
            goto out;
        }
        last.rate = next.layout == KB_GEMM_TN && l->roof <= next.i ? -1 : l->rate[next.i][next.layout];
    }
    for (int k = 0; k < nk; k++) {
        /* after the group's end, a key no rung of which came here (the
         * parent did not know it) is searched alone, as is everything
         * after an exchange that failed */
        if (over && res[k].rungs > 0) {
            res[k].shared = gpus > 1 ? gpus : 1;
            continue;
        }
        if ((rc = alone(&ls[k]))) goto out;
    }
out:
    for (int k = 0; k < nk; k++) res[k].wait_s = wait;
    free(ls);
    return rc;
}

