/* The parent's side of the shared GEMM-ladder search: the queue of rungs
 * and the messages (ladder_queue.h; the worker's side is harness/ladder.c). */
#include "ladder_queue.h"
#include "../core/op.h"
#include "../harness/ladder.h"
#include "../../kernels/kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NL = KB_GEMM_LADDER, NLAY = KB_GEMM_NLAYOUTS, NX = 3 * (KB_GEMM_NLAYOUTS - 1) };

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
