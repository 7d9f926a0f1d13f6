/* The GEMM ceiling's ladder, its order and its sharing, with no GPU in it
 * (harness.c times the rungs; tests/test_ladder.c runs it on the CPU).
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
#include "harness.h"
#include "../kernels/kernels.h"

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

/* ---- the parent's side (devices.c): the queue and the messages ---- */

typedef struct {
    int key;
    int phase;                 /* 0: its TN rungs out, 1: NN and NT at the best size and its neighbours, 2: over */
    double tn[NL], x[NX];      /* the group's rates (0: none, or no room) */
    char tn_st[NL], x_st[NX];  /* 0 in the queue, 1 out (being timed), 2 in */
    int nx, xsize[NX], xlay[NX];
    int best_i, best_l;        /* once over: the best point (best_i -1: nothing fitted) */
} lq_key;

struct kb_ladder_queue {
    int nk, nw;
    lq_key k[KB_NGEMM];
    char *refused;         /* [w][slot]: w does not search that key (it sent a rung of it back) */
    int *held;             /* each worker's rung out: key slot * 1024 + 64 * phase (2: its own best point) + e; -1 none */
    unsigned char *timed;  /* [w][slot][size][layout]: reported by w */
};

static unsigned char *timed_at(kb_ladder_queue *q, int w, int s, int i, int l)
{
    return &q->timed[(((size_t)w * KB_NGEMM + (size_t)s) * NL + (size_t)i) * NLAY + (size_t)l];
}

kb_ladder_queue *kb_ladder_queue_new(const kb_gemm_key *keys, int nk, int nw)
{
    if (nk < 0 || nk > KB_NGEMM || nw < 1) return NULL;
    kb_ladder_queue *q = calloc(1, sizeof *q);
    if (!q) abort();
    q->nk = nk;
    q->nw = nw;
    q->held = malloc(sizeof *q->held * (size_t)nw);
    q->timed = calloc((size_t)nw * KB_NGEMM * NL * NLAY, 1);
    q->refused = calloc((size_t)nw * KB_NGEMM, 1);
    if (!q->held || !q->timed || !q->refused) abort();
    for (int w = 0; w < nw; w++) q->held[w] = -1;
    for (int s = 0; s < nk; s++) {
        q->k[s].key = keys[s];
        q->k[s].best_i = -1;
    }
    return q;
}

void kb_ladder_queue_free(kb_ladder_queue *q)
{
    if (!q) return;
    free(q->held);
    free(q->timed);
    free(q->refused);
    free(q);
}

/* a phase whose rates are all in: the next one */
static void advance(lq_key *k)
{
    if (k->phase == 0) {
        for (int i = 0; i < NL; i++)
            if (k->tn_st[i] != 2) return;
        int idx[3];
        const int nr = kb_gemm_rungs(k->tn, NL, idx);
        k->nx = 2 * nr;
        for (int e = 0; e < k->nx; e++) k->xsize[e] = idx[e / 2], k->xlay[e] = KB_GEMM_NN + e % 2;
        k->phase = 1;
    }
    if (k->phase == 1) {
        for (int e = 0; e < k->nx; e++)
            if (k->x_st[e] != 2) return;
        double best = 0;
        for (int i = 0; i < NL; i++)
            if (k->tn[i] > best) best = k->tn[i], k->best_i = i, k->best_l = KB_GEMM_TN;
        for (int e = 0; e < k->nx; e++)
            if (k->x[e] > best) best = k->x[e], k->best_i = k->xsize[e], k->best_l = k->xlay[e];
        k->phase = 2;
    }
}

/* the rung worker w holds back in the queue (it left, or asked again) */
static void put_back(kb_ladder_queue *q, int w)
{
    const int h = q->held[w];
    q->held[w] = -1;
    if (h < 0) return;
    lq_key *k = &q->k[h / 1024];
    const int phase = h % 1024 / 64, e = h % 64;
    if (phase == 0 && k->tn_st[e] == 1) k->tn_st[e] = 0;
    if (phase == 1 && k->x_st[e] == 1) k->x_st[e] = 0;
}

int kb_ladder_queue_done(kb_ladder_queue *q, int w, const kb_rung_msg *m)
{
    if (!q || w < 0 || w >= q->nw || q->held[w] < 0) return -1;
    const int h = q->held[w], s = h / 1024, phase = h % 1024 / 64, e = h % 64;
    lq_key *k = &q->k[s];
    const int i = phase == 0 ? e : phase == 1 ? k->xsize[e] : k->best_i;
    const int l = phase == 0 ? KB_GEMM_TN : phase == 1 ? k->xlay[e] : k->best_l;
    if (m->key != k->key || m->i != i || m->layout != l) return -1; /* not the rung it was given: nothing taken from it */
    if (m->rate == KB_RUNG_NOT_MINE) { /* a key it does not search: the rung back, that key's never again to it */
        put_back(q, w);
        q->refused[(size_t)w * KB_NGEMM + (size_t)s] = 1;
        return 0;
    }
    q->held[w] = -1;
    *timed_at(q, w, s, i, l) = 1;
    const double r = m->rate > 0 ? m->rate : 0;
    if (phase == 0) {
        k->tn[e] = r;
        k->tn_st[e] = 2;
        if (m->rate < 0) /* no room: nor for larger sizes */
            for (int j = e + 1; j < NL; j++)
                if (k->tn_st[j] == 0) k->tn_st[j] = 2, k->tn[j] = 0;
    } else if (phase == 1) {
        k->x[e] = r;
        k->x_st[e] = 2;
    }
    advance(k);
    return 0;
}

int kb_ladder_queue_next(kb_ladder_queue *q, int w, kb_rung_msg *next)
{
    if (!q || w < 0 || w >= q->nw) return -1;
    put_back(q, w); /* asked again without its rate: someone else's to time */
    /* the group's rungs first (they open the next phases), the first key's
     * first, smallest first as alone: a large rung's heat and power draw
     * lowers the clocks of the small ones after it, where the best rates
     * are (bf16 on 2 x H200, one worker searching, 6 runs each: largest
     * first 715.7-759.1 TFLOP/s, mean 742; smallest first 755.3-765.9,
     * mean 759; alone 748.7-759.8, mean 754) */
    for (int s = 0; s < q->nk; s++) {
        lq_key *k = &q->k[s];
        if (q->refused[(size_t)w * KB_NGEMM + (size_t)s]) continue;
        if (k->phase == 0)
            for (int i = 0; i < NL; i++)
                if (!k->tn_st[i]) {
                    k->tn_st[i] = 1;
                    q->held[w] = s * 1024 + i;
                    *next = (kb_rung_msg){k->key, i, KB_GEMM_TN, 0};
                    return 1;
                }
        if (k->phase == 1)
            for (int e = 0; e < k->nx; e++)
                if (!k->x_st[e]) {
                    k->x_st[e] = 1;
                    q->held[w] = s * 1024 + 64 + e;
                    *next = (kb_rung_msg){k->key, k->xsize[e], k->xlay[e], 0};
                    return 1;
                }
    }
    /* then the best point of each key whose search is over, on this GPU */
    int over = 1;
    for (int s = 0; s < q->nk; s++) {
        lq_key *k = &q->k[s];
        if (q->refused[(size_t)w * KB_NGEMM + (size_t)s]) continue; /* over, for w */
        if (k->phase < 2) {
            over = 0;
            continue;
        }
        if (k->best_i < 0 || *timed_at(q, w, s, k->best_i, k->best_l)) continue;
        q->held[w] = s * 1024 + 128;
        *next = (kb_rung_msg){k->key, k->best_i, k->best_l, 0};
        return 1;
    }
    return over ? -1 : 0;
}

void kb_ladder_queue_leave(kb_ladder_queue *q, int w)
{
    if (q && w >= 0 && w < q->nw) put_back(q, w);
}

int kb_ladder_queue_gpus(const kb_ladder_queue *q)
{
    int n = 0;
    for (int w = 0; q && w < q->nw; w++) {
        int any = 0;
        for (size_t j = 0; j < (size_t)KB_NGEMM * NL * NLAY && !any; j++) any = q->timed[(size_t)w * KB_NGEMM * NL * NLAY + j];
        n += any;
    }
    return n;
}

/* "rung K I L R": the rung done (K -1: none yet) and its rate (-1: no room) */
int kb_rung_format(char *buf, size_t len, const kb_rung_msg *m)
{
    const int k = snprintf(buf, len, "rung %d %d %d %.9g\n", m->key, m->i, m->layout, m->rate);
    return k > 0 && (size_t)k < len ? k : -1;
}

int kb_rung_parse(const char *line, kb_rung_msg *m)
{
    kb_rung_msg got;
    int at = 0;
    if (sscanf(line, "rung %d %d %d %lf %n", &got.key, &got.i, &got.layout, &got.rate, &at) != 4 || line[at]) return -1;
    if (got.key >= 0 && (got.key >= KB_NGEMM || got.i < 0 || got.i >= NL || got.layout < 0 || got.layout >= NLAY ||
                         !(got.rate >= -1 || got.rate == KB_RUNG_NOT_MINE)))
        return -1; /* NaN too */
    *m = got; /* untouched unless the whole line was one */
    return 0;
}

int kb_rung_reply_format(char *buf, size_t len, int r, const kb_rung_msg *next, int gpus)
{
    const int k = r > 0 ? snprintf(buf, len, "%d %d %d\n", next->key, next->i, next->layout) : snprintf(buf, len, "end %d\n", gpus);
    return k > 0 && (size_t)k < len ? k : -1;
}

int kb_rung_reply_parse(const char *line, kb_rung_msg *next, int *gpus)
{
    int a, b, c, at = 0;
    if (sscanf(line, "end %d %n", &a, &at) == 1 && !line[at] && a >= 0 && a <= 1024) {
        *gpus = a;
        return 0;
    }
    at = 0;
    if (sscanf(line, "%d %d %d %n", &a, &b, &c, &at) != 3 || line[at] || a < 0 || a >= KB_NGEMM || b < 0 || b >= NL || c < 0 ||
        c >= NLAY)
        return -1;
    *next = (kb_rung_msg){a, b, c, 0};
    return 1;
}
