/* kbench --shard K/N: one part of a sweep, for Slurm job arrays and other
 * schedulers that run N processes and merge their outputs (kbench merge).
 *
 * The sweep's identity is a hash of its expanded cases in order (op and
 * parameters, as the tables print them) and of the seed that derives their
 * inputs: two runs with the same identity ran the same cases on the same
 * inputs. The shards partition the cases: each case goes to exactly one, by
 * longest-processing-time-first over an estimate of its time (bytes moved,
 * plus flops at 250 per byte, about an H100's balance), ties broken by the
 * case's text, so the assignment depends only on the set of cases, never on
 * the order of flags or the process that computes it. A case keeps its index
 * in the whole sweep (its "case" in the outputs) and the seed derived from it,
 * so a sharded row is the unsharded row. */
#include "count.h"
#include "shard.h"
#include "../core/config.h"
#include "../core/errors.h"
#include "../core/op.h"
#include "../core/params.h"
#include "../core/plugin.h"
#include "../core/settings.h"
#include "../harness/ceilings.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int kb_shard_parse(const char *s, int *k, int *n, char *err, size_t errlen)
{
    char *end;
    errno = 0;
    long a = strtol(s, &end, 10);
    if (end == s || *end != '/' || errno) goto bad;
    const char *t = end + 1;
    long b = strtol(t, &end, 10);
    if (end == t || *end || errno) goto bad;
    if (b < 1 || b > KB_MAX_SHARDS) {
        kb_errf(err, errlen, "--shard %s: N must be 1 to %d", s, KB_MAX_SHARDS);
        return -1;
    }
    if (a < 0 || a >= b) {
        kb_errf(err, errlen, "--shard %s: K must be 0 to N-1 (%ld), shards count from 0", s, b - 1);
        return -1;
    }
    *k = (int)a;
    *n = (int)b;
    return 0;
bad:
    kb_errf(err, errlen, "--shard: expected K/N (shard K of N, K from 0), got '%s'", s);
    return -1;
}

void kb_plan_identity(const kb_plan *plan, char id[17])
{
    char buf[48];
    snprintf(buf, sizeof buf, "seed=%llu\n", (unsigned long long)plan->opts.seed);
    uint64_t h = kb_fnv(KB_FNV_BASIS, buf);
    for (int i = 0; i < plan->ncases; i++) h = kb_fnv(kb_case_hash(&plan->cases[i], h), "\n");
    snprintf(id, 17, "%016llx", (unsigned long long)h);
}

typedef struct {
    double cost;
    char label[1200];
    int i;
} shard_item;

static int by_cost(const void *a, const void *b)
{
    const shard_item *x = a, *y = b;
    if (x->cost != y->cost) return x->cost > y->cost ? -1 : 1;
    int c = strcmp(x->label, y->label);
    return c ? c : (x->i > y->i) - (x->i < y->i);
}

/* the distinct ops of the plan's cases, in order of appearance (max at most) */
static int plan_ops(const kb_plan *plan, const struct kb_op **ops, int max)
{
    int n = 0;
    for (int c = 0; c < plan->ncases; c++) {
        int seen = 0;
        for (int k = 0; k < n; k++) seen |= ops[k] == plan->cases[c].op;
        if (!seen && n < max) ops[n++] = plan->cases[c].op;
    }
    return n;
}

static double case_bytes(const kb_case *c) { return c->op->bytes ? c->op->bytes(c) : 0; }
static double case_flops(const kb_case *c) { return c->op->flops ? c->op->flops(c) : 0; }

/* A case's wall seconds, roughly: each selected implementation is sampled
 * until min_time of kernel time (and min_samples), each sample paying about
 * KB_SAMPLE_OVERHEAD_S beside its kernel (the L2 flush, the launch, the
 * events), the kernel estimated from the case's bytes and flops at nominal
 * rates. The ratios are what --shard's balance uses; the --devices queue
 * also weighs it against a reference's (kb_case_queue_cost), where it is
 * low by 1.2x (default sweep) to 2.1x (MLP grid: its ceilings are left out).
 * On the one-GPU rows of the MLP grid and the default sweep (4 x H200,
 * 2026-11-26), summed per case: median error 20% after one scale factor,
 * against 89% for bytes + flops / 250, which made the largest MLP pair a quarter of the grid and
 * left --shard 0/4 two cases; the shards by hand then reached 2.71x (grid)
 * and 3.27x (default sweep) on four GPUs, from 2.39x and 2.73x. */
#define KB_SAMPLE_OVERHEAD_S 4e-5
#define KB_NOMINAL_BPS 2.5e12
#define KB_NOMINAL_FLOPS 5e14
double kb_case_cost(const kb_case *c, const kb_opts *o)
{
    double k = case_bytes(c) / KB_NOMINAL_BPS + case_flops(c) / KB_NOMINAL_FLOPS; /* one launch, seconds */
    if (!(k > 1e-7)) k = 1e-7;
    double row = o->min_time > k * o->min_samples ? o->min_time : k * o->min_samples;
    row *= 1 + KB_SAMPLE_OVERHEAD_S / k;
    if (o->timeout > 0 && row > o->timeout) row = o->timeout;
    int rows = 0;
    for (int i = 0; i < kb_op_nimpls(c->op); i++)
        rows += kb_impl_named(o->impl, kb_op_impl(c->op, i));
    return (rows ? rows : 1) * row;
}

/* rope's and the norms' references: core-seconds a byte of the case, on
 * the 4 x H200 host's cores (2026-11-26, the default sweep under --devices,
 * 16 threads each: median 4.4e-9) */
#define KB_REF_S_PER_BYTE 4.4e-9
double kb_case_ref_cost(const kb_case *c, const kb_opts *o)
{
    if (o->no_verify) return 0;
    return c->op->ref_cost ? c->op->ref_cost(c) : KB_REF_S_PER_BYTE * case_bytes(c);
}

double kb_case_queue_cost(const kb_case *c, const kb_opts *o, int threads)
{
    const double g = kb_case_cost(c, o), r = kb_case_ref_cost(c, o) / (threads > 0 ? threads : 1);
    return g > r ? g : r;
}

/* the plan's cases by a key, the largest first (ties by op and label) */
static void plan_sorted(const kb_plan *plan, int *order, int threads)
{
    shard_item *it = malloc(sizeof *it * (size_t)(plan->ncases + 1));
    if (!it) abort();
    for (int i = 0; i < plan->ncases; i++) {
        const kb_case *c = &plan->cases[i];
        it[i].cost = threads > 0 ? kb_case_queue_cost(c, &plan->opts, threads) : kb_case_cost(c, &plan->opts);
        int l = snprintf(it[i].label, sizeof it[i].label, "%s ", c->op->name);
        kb_case_label(c, it[i].label + l, sizeof it[i].label - (size_t)l);
        it[i].i = i;
    }
    qsort(it, (size_t)plan->ncases, sizeof *it, by_cost);
    for (int i = 0; i < plan->ncases; i++) order[i] = it[i].i;
    free(it);
}

void kb_plan_by_cost(const kb_plan *plan, int *order) { plan_sorted(plan, order, 0); }

void kb_plan_by_queue(const kb_plan *plan, int threads, int *order) { plan_sorted(plan, order, threads > 0 ? threads : 1); }

typedef struct {
    double r, w;
    int j;
} ceiling_key;

static int by_key(const void *a, const void *b)
{
    const ceiling_key *x = a, *y = b;
    if (x->r != y->r) return x->r < y->r ? -1 : 1;
    if (x->w != y->w) return x->w < y->w ? -1 : 1;
    return (x->j > y->j) - (x->j < y->j);
}

void kb_ceiling_groups(const kb_plan *plan, const int *order, int *group)
{
    const int nc = plan->ncases;
    ceiling_key *k = malloc(sizeof *k * (size_t)(nc + 1));
    if (!k) abort();
    for (int j = 0; j < nc; j++) {
        kb_case_copy_key(&plan->cases[order[j]], &k[j].r, &k[j].w);
        k[j].j = j;
    }
    qsort(k, (size_t)nc, sizeof *k, by_key); /* equal keys together, the first place first */
    for (int i = 0, lead = 0; i < nc; i++) {
        if (i == 0 || k[i].r != k[i - 1].r || k[i].w != k[i - 1].w) lead = k[i].j;
        group[k[i].j] = lead;
    }
    free(k);
}

/* Cases that share their ceilings (the copy ceiling at the case's bytes: the
 * same shape in bf16 and fp16) go to one shard, which measures them once. */
void kb_shard_assign(const kb_plan *plan, int n, int *shard_of)
{
    const int nc = plan->ncases;
    int *order = malloc(sizeof *order * (size_t)(nc + 1)), *group = malloc(sizeof *group * (size_t)(nc + 1));
    shard_item *g = malloc(sizeof *g * (size_t)(nc + 1));
    int *to = malloc(sizeof *to * (size_t)(nc + 1));
    double load[KB_MAX_SHARDS] = {0};
    if (!order || !group || !g || !to) abort();
    kb_plan_by_cost(plan, order); /* largest first, ties by label: the same whatever the flags' order */
    kb_ceiling_groups(plan, order, group);
    int ng = 0; /* the groups by their summed cost, ties by the place of their first case */
    for (int j = 0; j < nc; j++) {
        if (group[j] != j) continue;
        g[ng].cost = 0;
        g[ng].label[0] = 0;
        g[ng++].i = j;
    }
    for (int j = 0, k = 0; j < nc; j++) /* a leader's slot among the groups, for now in to[] */
        if (group[j] == j) to[j] = k++;
    for (int j = 0; j < nc; j++) {
        g[to[group[j]]].cost += kb_case_cost(&plan->cases[order[j]], &plan->opts);
    }
    qsort(g, (size_t)ng, sizeof *g, by_cost);
    for (int k = 0; k < ng; k++) {
        int best = 0;
        for (int s = 1; s < n; s++)
            if (load[s] < load[best]) best = s;
        load[best] += g[k].cost;
        to[g[k].i] = best;
    }
    for (int j = 0; j < nc; j++) shard_of[order[j]] = to[group[j]];
    free(order);
    free(group);
    free(g);
    free(to);
}

int kb_queue_pick(const int *group, int n, const char *taken, const int *last, int nworkers, int w)
{
    int first = -1, free_ = -1;
    for (int j = 0; j < n; j++) {
        if (taken[j]) continue;
        if (last[w] >= 0 && group[j] == group[last[w]]) return j;
        if (first < 0) first = j;
        if (free_ >= 0) continue;
        int held = 0;
        for (int v = 0; v < nworkers && !held; v++) held = v != w && last[v] >= 0 && group[j] == group[last[v]];
        if (!held) free_ = j;
    }
    return free_ >= 0 ? free_ : first;
}

int kb_plan_shard(kb_plan *plan, char *err, size_t errlen)
{
    kb_plan_identity(plan, plan->sweep_id);
    plan->sweep_cases = plan->ncases;
    plan->shard_k = 0;
    plan->shard_n = 0;
    /* the whole sweep's ops: every shard writes the same CSV columns */
    plan->nops_all = plan_ops(plan, plan->ops_all, KB_COUNT(plan->ops_all));
    if (!plan->opts.shard[0]) return 0;
    int k, n;
    if (kb_shard_parse(plan->opts.shard, &k, &n, err, errlen)) return -1;
    int *of = malloc(sizeof *of * (size_t)(plan->ncases + 1));
    if (!of) {
        kb_errf(err, errlen, "--shard %s: out of memory for the %d cases' shards", plan->opts.shard, plan->ncases);
        return -1;
    }
    kb_shard_assign(plan, n, of);
    int m = 0;
    for (int i = 0; i < plan->ncases; i++) {
        if (of[i] == k) plan->cases[m++] = plan->cases[i];
        else kb_case_free_lists(&plan->cases[i]);
    }
    free(of);
    plan->ncases = m;
    plan->shard_k = k;
    plan->shard_n = n;
    return 0;
}

void kb_model_groups(char (*models)[KB_MODEL_LEN], int n, int *group, int *size)
{
    for (int w = 0; w < n; w++) {
        group[w] = w;
        for (int v = 0; v < w && models[w][0] && group[w] == w; v++)
            if (!strcmp(models[v], models[w])) group[w] = group[v];
    }
    for (int w = 0; w < n; w++) {
        size[w] = 0;
        for (int v = 0; v < n; v++) size[w] += group[v] == group[w];
    }
}
