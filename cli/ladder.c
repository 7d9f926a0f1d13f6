/* The GEMM ceiling's ladder, its order and its sharing, with no GPU in it
 * (harness.c times the rungs; tests/test_ladder.c runs it on the CPU).
 *
 * Alone, a GPU times every rung: each size of kb_gemm_ladder_sizes in the TN
 * layout, then NN and NT at the best size and its neighbours; its ceiling is
 * the best rate. Under --devices, the workers whose GPUs are of one model
 * (kb_ladder_share: rank of size) split that search: worker r times the
 * rungs e with (e + offset) % size == r in each of the two phases, the
 * parent hands every worker the best rate of each rung over its group
 * (kb_ladder_share.fn, a barrier), and each then times the best point on
 * its own GPU unless it did already; a rung no worker sent a rate for (its
 * worker gone) is timed by every one. A GPU's ceiling is still the best rate
 * it reached itself; what is shared is where to look. The search, 4.5 s of
 * bf16 and 3.3 s of fp16 on an H100, was what every worker paid before its
 * first case whatever the number of GPUs (issue 24); shared by four H200s,
 * 3.5-3.7 s for both. */
#include "harness.h"
#include "../kernels/kernels.h"

#include <stdlib.h>
#include <string.h>

const int kb_gemm_ladder_sizes[KB_GEMM_LADDER] = {2048, 3072, 4096, 6144, 8192, 12288, 16384};

int kb_ladder_owner(int e, int offset, int size) { return size > 1 ? (e + offset) % size : 0; }

typedef struct {
    kb_rung_fn rung;
    void *ctx;
    kb_ladder_result *res;
    double rate[KB_GEMM_LADDER][KB_GEMM_NLAYOUTS]; /* this GPU's, 0 until timed */
    char done[KB_GEMM_LADDER][KB_GEMM_NLAYOUTS];
    int roof; /* sizes from here on do not fit */
} ladder;

/* rung (size i, layout) timed here once, kept if it is this GPU's best */
static int rung_here(ladder *l, int i, int layout)
{
    if (l->done[i][layout] || i >= l->roof) return 0;
    l->done[i][layout] = 1;
    double r = 0;
    int rc = l->rung(l->ctx, kb_gemm_ladder_sizes[i], layout, &r);
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
    double tn[KB_GEMM_LADDER];
    int idx[3], rc;
    for (int i = 0; i < KB_GEMM_LADDER; i++) {
        if ((rc = rung_here(l, i, KB_GEMM_TN))) return rc;
        tn[i] = l->rate[i][KB_GEMM_TN];
    }
    const int nr = kb_gemm_rungs(tn, KB_GEMM_LADDER, idx);
    for (int j = 0; j < nr; j++)
        for (int lay = KB_GEMM_NN; lay < KB_GEMM_NLAYOUTS; lay++)
            if ((rc = rung_here(l, idx[j], lay))) return rc;
    l->res->shared = 1;
    return 0;
}

/* after an exchange: a rung the group has no rate for (its worker gone
 * before it sent) is timed here, its rate put in r */
static int holes(ladder *l, double *r, const int *size_of, const int *layout_of, int n)
{
    for (int e = 0; e < n; e++) {
        if (r[e] > 0 || size_of[e] >= l->roof || l->done[size_of[e]][layout_of[e]]) continue;
        int rc = rung_here(l, size_of[e], layout_of[e]);
        if (rc) return rc;
        r[e] = l->rate[size_of[e]][layout_of[e]];
    }
    return 0;
}

int kb_gemm_ladder(int key, kb_rung_fn rung, void *ctx, const kb_ladder_share *sh, kb_ladder_result *res)
{
    enum { NL = KB_GEMM_LADDER, NX = 3 * (KB_GEMM_NLAYOUTS - 1) };
    memset(res, 0, sizeof *res);
    res->layout = KB_GEMM_TN;
    ladder *l = calloc(1, sizeof *l);
    if (!l) abort();
    *l = (ladder){.rung = rung, .ctx = ctx, .res = res, .roof = NL};
    int rc = 0, m0, m1 = 0;
    if (!sh || !sh->fn || sh->size < 2 || sh->rank < 0 || sh->rank >= sh->size) {
        rc = alone(l);
        goto out;
    }
    /* phase 0: this worker's sizes in TN, then the group's best of each */
    double tn[NL], lay[NX] = {0};
    int tsize[NL], tlay[NL], xsize[NX], xlay[NX];
    for (int i = 0; i < NL; i++) {
        tsize[i] = i, tlay[i] = KB_GEMM_TN;
        if (kb_ladder_owner(i, 0, sh->size) == sh->rank && (rc = rung_here(l, i, KB_GEMM_TN))) goto out;
    }
    for (int i = 0; i < NL; i++) tn[i] = l->rate[i][KB_GEMM_TN];
    if ((m0 = sh->fn(sh->ctx, key, 0, tn, NL)) < 1) { /* not shared (the parent gone, a stop): the rest here */
        rc = alone(l);
        goto out;
    }
    if ((rc = holes(l, tn, tsize, tlay, NL))) goto out;
    /* phase 1: NN and NT at the best size and its neighbours, e = 2 j + (layout - NN) */
    int idx[3], nr = kb_gemm_rungs(tn, NL, idx);
    for (int e = 0; e < 2 * nr; e++) {
        xsize[e] = idx[e / 2], xlay[e] = KB_GEMM_NN + e % 2;
        if (kb_ladder_owner(e, NL, sh->size) == sh->rank && (rc = rung_here(l, xsize[e], xlay[e]))) goto out;
    }
    for (int e = 0; e < 2 * nr; e++) lay[e] = l->rate[xsize[e]][xlay[e]];
    if (nr && (m1 = sh->fn(sh->ctx, key, 1, lay, 2 * nr)) < 1) {
        rc = alone(l);
        goto out;
    }
    if ((rc = holes(l, lay, xsize, xlay, 2 * nr))) goto out;
    /* the group's best point, timed here too (unless it was) */
    double best = 0;
    int bi = -1, bl = KB_GEMM_TN;
    for (int i = 0; i < NL; i++)
        if (tn[i] > best) best = tn[i], bi = i, bl = KB_GEMM_TN;
    for (int e = 0; e < 2 * nr; e++)
        if (lay[e] > best) best = lay[e], bi = xsize[e], bl = xlay[e];
    if (bi >= 0) rc = rung_here(l, bi, bl);
    res->shared = nr && m1 < m0 ? m1 : m0; /* the GPUs whose rates it had */
out:
    free(l);
    return rc;
}

/* ---- the parent's side (devices.c): the messages and the barrier ---- */

int kb_ladder_format(char *buf, size_t len, int key, int phase, const double *r, int n)
{
    /* a reply (key < 0): phase holds the GPUs whose rates it has */
    int k = key >= 0 ? snprintf(buf, len, "ladder %d %d %d", key, phase, n) : snprintf(buf, len, "%d %d", phase, n);
    for (int i = 0; i < n && k > 0 && (size_t)k < len; i++) k += snprintf(buf + k, len - (size_t)k, " %.9g", r[i]);
    if (k > 0 && (size_t)k + 1 < len) {
        buf[k++] = '\n';
        buf[k] = 0;
        return k;
    }
    return -1;
}

/* n, then n rates, from s; the count read, -1 malformed */
static int parse_rates(const char *s, double *r, int max)
{
    char *end;
    long n = strtol(s, &end, 10);
    if (end == s || n < 0 || n > max) return -1;
    for (int i = 0; i < n; i++) {
        s = end;
        r[i] = strtod(s, &end);
        if (end == s || !(r[i] >= 0)) return -1; /* NaN and negatives too */
    }
    while (*end == ' ' || *end == '\n') end++;
    return *end ? -1 : (int)n;
}

int kb_ladder_parse(const char *line, kb_ladder_msg *m)
{
    int key, phase, at = 0;
    kb_ladder_msg got;
    if (sscanf(line, "ladder %d %d %n", &key, &phase, &at) != 2 || !at || key < 0 || phase < 0 || phase > 1) return -1;
    int n = parse_rates(line + at, got.r, KB_LADDER_MAXN);
    if (n < 0) return -1;
    got.key = key, got.phase = phase, got.n = n;
    *m = got; /* untouched unless the whole line was one */
    return 0;
}

int kb_ladder_reply_parse(const char *line, double *r, int n)
{
    double got[KB_LADDER_MAXN];
    char *end;
    long members = strtol(line, &end, 10);
    if (end == line || members < 1 || members > 1024 || parse_rates(end, got, KB_LADDER_MAXN) != n) return -1;
    memcpy(r, got, sizeof *r * (size_t)n);
    return (int)members;
}

int kb_ladder_ready(const kb_ladder_msg *pend, const int *group, const char *live, int nw, int g, double *best, int *n)
{
    int key = -1, phase = -1, any = 0; /* any: the members that asked */
    *n = KB_LADDER_MAXN;
    for (int w = 0; w < nw; w++) {
        if (group[w] != g || !live[w]) continue;
        if (pend[w].key < 0) return 0; /* a member has not asked yet */
        if (key < 0) key = pend[w].key, phase = pend[w].phase;
        if (pend[w].key != key || pend[w].phase != phase) return 0;
        if (pend[w].n < *n) *n = pend[w].n;
        any++;
    }
    if (!any) return 0;
    for (int i = 0; i < *n; i++) {
        best[i] = 0;
        for (int w = 0; w < nw; w++)
            if (group[w] == g && live[w] && pend[w].r[i] > best[i]) best[i] = pend[w].r[i];
    }
    return any;
}
