/* shard.c: --shard K/N partitions a sweep, the same way whatever the order
 * of its cases, balanced, and the sweep's identity; devices.c: --devices
 * parsing and the queue's order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cli/core/config.h"
#include "../cli/core/errors.h"
#include "../cli/core/op.h"
#include "../cli/core/params.h"
#include "../cli/core/settings.h"
#include "../cli/fleet/count.h"
#include "../cli/fleet/devices.h"
#include "../cli/fleet/shard.h"
#include "../cli/harness/ceilings.h"

static void load(kb_plan *p, const char *path, uint64_t seed)
{
    memset(p, 0, sizeof *p);
    kb_opts_default(&p->opts);
    char err[KB_ERRLEN] = "";
    if (kb_config_load(path, p, err, sizeof err)) fail_msg("%s: %s", path, err);
    p->opts.seed = seed;
    kb_plan_seed(p);
}

static void label_of(const kb_case *c, char *buf, size_t n)
{
    int l = snprintf(buf, n, "%s ", c->op->name);
    kb_case_label(c, buf + l, n - (size_t)l);
}

static void test_parse(void **state)
{
    (void)state;
    int k = -1, n = -1;
    char err[KB_ERRLEN];
    assert_int_equal(kb_shard_parse("0/1", &k, &n, err, sizeof err), 0);
    assert_true(k == 0 && n == 1);
    assert_int_equal(kb_shard_parse("3/8", &k, &n, err, sizeof err), 0);
    assert_true(k == 3 && n == 8);
    const char *bad[] = {"", "1", "1/", "/2", "a/2", "1/b", "1/2/3", "2/2", "-1/2", "0/0", "0/-3", "0/99999", "1 /2"};
    for (int i = 0; i < KB_COUNT(bad); i++) {
        err[0] = 0;
        if (kb_shard_parse(bad[i], &k, &n, err, sizeof err) != -1) fail_msg("accepted '%s'", bad[i]);
        if (!strstr(err, "--shard")) fail_msg("'%s': %s", bad[i], err);
    }
    kb_shard_parse("2/2", &k, &n, err, sizeof err);
    assert_non_null(strstr(err, "K must be 0 to N-1 (1)"));
}

static int same_key(const kb_case *a, const kb_case *b)
{
    double ra, wa, rb, wb;
    kb_case_copy_key(a, &ra, &wa);
    kb_case_copy_key(b, &rb, &wb);
    return ra == rb && wa == wb;
}

/* every case in exactly one shard; each shard keeps its cases' index and
 * seed; cases that share their ceilings in one shard; the shards' costs
 * within one group of such cases of each other */
static void test_partition(void **state)
{
    (void)state;
    for (int n = 1; n <= 7; n += 3) {
        kb_plan all;
        load(&all, "configs/ci.json", 1);
        int total = all.ncases;
        char *seen = calloc((size_t)total, 1);
        int *shard = malloc(sizeof *shard * (size_t)total);
        double load_[8] = {0}, maxcost = 0;
        for (int i = 0; i < total; i++) { /* the largest group's summed cost */
            double g = 0;
            for (int j = 0; j < total; j++)
                if (same_key(&all.cases[i], &all.cases[j])) g += kb_case_cost(&all.cases[j], &all.opts);
            if (g > maxcost) maxcost = g;
        }
        for (int k = 0; k < n; k++) {
            kb_plan p;
            load(&p, "configs/ci.json", 1);
            snprintf(p.opts.shard, sizeof p.opts.shard, "%d/%d", k, n);
            char err[KB_ERRLEN];
            assert_int_equal(kb_plan_shard(&p, err, sizeof err), 0);
            assert_int_equal(p.sweep_cases, total);
            assert_true(p.shard_k == k && p.shard_n == n);
            for (int i = 0; i < p.ncases; i++) {
                const kb_case *c = &p.cases[i];
                assert_true(c->index >= 0 && c->index < total);
                if (seen[c->index]++) fail_msg("case %d in two shards", c->index);
                shard[c->index] = k;
                assert_true(c->seed == all.cases[c->index].seed); /* the unsharded row's inputs */
                char a[1200], b[1200];
                label_of(c, a, sizeof a);
                label_of(&all.cases[c->index], b, sizeof b);
                assert_string_equal(a, b);
                load_[k] += kb_case_cost(c, &p.opts);
            }
            kb_cases_free(p.cases, p.ncases);
        }
        for (int i = 0; i < total; i++)
            if (!seen[i]) fail_msg("case %d in no shard of %d", i, n);
        int pairs = 0;
        for (int i = 0; i < total; i++)
            for (int j = i + 1; j < total; j++)
                if (same_key(&all.cases[i], &all.cases[j])) {
                    pairs++;
                    if (shard[i] != shard[j]) fail_msg("%d shards: cases %d and %d share ceilings, shards %d and %d", n, i, j, shard[i], shard[j]);
                }
        assert_true(pairs > 0); /* ci.json has such cases (bf16 and fp16 of a shape) */
        free(shard);
        for (int k = 0; k < n; k++)
            for (int j = 0; j < n; j++)
                if (load_[k] > load_[j] + maxcost + 1e-9) fail_msg("%d shards: shard %d carries %g, shard %d %g", n, k, load_[k], j, load_[j]);
        free(seen);
        kb_cases_free(all.cases, all.ncases);
    }
}

/* the assignment depends on the set of cases only: reversed and rotated
 * orders put each case (by its text) in the same shard */
static void test_order(void **state)
{
    (void)state;
    kb_plan p;
    load(&p, "configs/ci.json", 1);
    int n = p.ncases, *a = malloc(sizeof *a * (size_t)n), *b = malloc(sizeof *b * (size_t)n);
    kb_shard_assign(&p, 5, a);
    kb_case *orig = malloc(sizeof *orig * (size_t)n);
    memcpy(orig, p.cases, sizeof *orig * (size_t)n);
    for (int rot = 0; rot < 2; rot++) {
        for (int i = 0; i < n; i++) p.cases[i] = rot ? orig[(i + 37) % n] : orig[n - 1 - i];
        kb_shard_assign(&p, 5, b);
        for (int i = 0; i < n; i++) {
            int j = rot ? (i + 37) % n : n - 1 - i;
            if (b[i] != a[j]) fail_msg("case %d: shard %d in order %d, %d in the sweep's", j, b[i], rot, a[j]);
        }
    }
    memcpy(p.cases, orig, sizeof *orig * (size_t)n);
    free(orig);
    free(a);
    free(b);
    kb_cases_free(p.cases, p.ncases);
}

/* the identity: the same sweep and seed, the same; another seed or another
 * case, another */
static void test_identity(void **state)
{
    (void)state;
    kb_plan p, q;
    load(&p, "configs/ci.json", 1);
    load(&q, "configs/ci.json", 1);
    char a[17], b[17];
    kb_plan_identity(&p, a);
    kb_plan_identity(&q, b);
    assert_int_equal(strlen(a), 16);
    assert_string_equal(a, b);
    q.opts.seed = 2;
    kb_plan_identity(&q, b);
    assert_string_not_equal(a, b);
    q.opts.seed = 1;
    q.ncases--; /* one case fewer */
    kb_plan_identity(&q, b);
    assert_string_not_equal(a, b);
    q.ncases++;
    /* no shard asked: the sweep is recorded, every case kept */
    char err[KB_ERRLEN];
    assert_int_equal(kb_plan_shard(&p, err, sizeof err), 0);
    assert_true(p.shard_n == 0 && p.sweep_cases == p.ncases && p.nops_all == 4);
    assert_string_equal(p.sweep_id, a);
    snprintf(p.opts.shard, sizeof p.opts.shard, "1/x");
    assert_int_equal(kb_plan_shard(&p, err, sizeof err), -1);
    kb_cases_free(p.cases, p.ncases);
    kb_cases_free(q.cases, q.ncases);
}

static void test_devices_parse(void **state)
{
    (void)state;
    int ids[KB_MAX_DEVICES];
    char err[KB_ERRLEN];
    assert_int_equal(kb_devices_parse("all", 4, ids, err, sizeof err), 4);
    assert_true(ids[0] == 0 && ids[3] == 3);
    assert_int_equal(kb_devices_parse("2,0,3", 4, ids, err, sizeof err), 3);
    assert_true(ids[0] == 2 && ids[1] == 0 && ids[2] == 3);
    assert_int_equal(kb_devices_parse("5", -1, ids, err, sizeof err), 1); /* not counted: not checked */
    struct { const char *s; int count; const char *want; } bad[] = {
        {"all", 0, "no CUDA device"},         {"all", -1, "could not be counted"},
        {"4", 4, "GPU 4 is not there (4 visible: 0 to 3)"}, {"1,1", 4, "GPU 1 twice"},
        {"", 4, "expected all or a list"},    {"0,", 4, "expected all or a list"},
        {"-1", 4, "expected all or a list"},  {"0;1", 4, "expected all or a list"},
        {"a", 4, "expected all or a list"},  {"0", 0, "no CUDA device (GPU 0 asked for)"},
        {"999", -1, "GPU 999 is past the last kbench drives (indices 0 to 63)"}, {"64", 128, "past the last"},
    };
    for (int i = 0; i < KB_COUNT(bad); i++) {
        err[0] = 0;
        if (kb_devices_parse(bad[i].s, bad[i].count, ids, err, sizeof err) != -1) fail_msg("accepted '%s'", bad[i].s);
        if (!strstr(err, bad[i].want)) fail_msg("'%s': %s", bad[i].s, err);
    }
}

/* the cost is wall seconds of sampling: min_time per selected implementation
 * at least, more for a kernel whose samples are mostly overhead, more with
 * more implementations or a longer min_time, at most timeout a row */
static void test_cost(void **state)
{
    (void)state;
    kb_plan p;
    load(&p, "configs/mlp-grid.json", 1);
    int small = -1, big = -1; /* tokens 1 and 8192 of the widest shape, bf16 */
    for (int i = 0; i < p.ncases; i++) {
        char l[1200];
        kb_case_label(&p.cases[i], l, sizeof l);
        if (!strstr(l, "dtype=bf16") || !strstr(l, "hidden=8192")) continue;
        if (strstr(l, "tokens=1 ")) small = i;
        if (strstr(l, "tokens=8192 ")) big = i;
    }
    assert_true(small >= 0 && big >= 0);
    const kb_case *s = &p.cases[small], *b = &p.cases[big];
    kb_opts o = p.opts; /* the grid's: four implementations, min_time 0.1 */
    assert_true(o.min_time == 0.1);
    const double cs = kb_case_cost(s, &o), cb = kb_case_cost(b, &o);
    assert_true(cs >= 4 * 0.1 && cb >= 4 * 0.1);
    /* 5.8 TFLOP a launch at 500 TFLOP/s: 20 samples are 0.23 s, over min_time */
    assert_true(cb > cs && cb < 4 * 0.5);
    /* ... and a big MLP case is not hundreds of small ones, as bytes + flops/250 had it */
    assert_true(cb < 5 * cs);
    kb_opts one = o;
    snprintf(one.impl, sizeof one.impl, "cublas");
    assert_true(fabs(kb_case_cost(s, &one) - cs / 4) < 1e-9 * cs);
    one.min_time = 1;
    assert_true(kb_case_cost(s, &one) > 9 * cs / 4); /* its 20 samples are under min_time */
    one.timeout = 0.5;
    assert_true(kb_case_cost(s, &one) == 0.5);
    kb_cases_free(p.cases, p.ncases);
}

/* the MLP grid on four shards: each its share of the cases, within one
 * group of siblings (it dealt 2, 28, 32 and 34 of 96 with bytes + flops/250) */
static void test_balance_grid(void **state)
{
    (void)state;
    kb_plan p;
    load(&p, "configs/mlp-grid.json", 1);
    int *of = malloc(sizeof *of * (size_t)p.ncases), count[4] = {0};
    kb_shard_assign(&p, 4, of);
    for (int i = 0; i < p.ncases; i++) count[of[i]]++;
    for (int k = 0; k < 4; k++)
        if (count[k] < p.ncases / 4 - 4 || count[k] > p.ncases / 4 + 4)
            fail_msg("shard %d/4: %d of %d cases", k, count[k], p.ncases);
    free(of);
    kb_cases_free(p.cases, p.ncases);
}

/* the queue: every case once, the longest (kb_case_queue_cost) first; the
 * shards' order: the longest (kb_case_cost) first */
static void test_devices_queue(void **state)
{
    (void)state;
    kb_plan p;
    load(&p, "configs/ci.json", 1);
    int *order = malloc(sizeof *order * (size_t)p.ncases);
    for (int by = 0; by < 2; by++) {
        char *seen = calloc((size_t)p.ncases, 1);
        if (by) kb_plan_by_queue(&p, 15, order);
        else kb_plan_by_cost(&p, order);
        for (int i = 0; i < p.ncases; i++) {
            assert_true(order[i] >= 0 && order[i] < p.ncases);
            if (seen[order[i]]++) fail_msg("case %d queued twice", order[i]);
            if (!i) continue;
            const kb_case *a = &p.cases[order[i - 1]], *b = &p.cases[order[i]];
            if (by ? kb_case_queue_cost(b, &p.opts, 15) > kb_case_queue_cost(a, &p.opts, 15)
                   : kb_case_cost(b, &p.opts) > kb_case_cost(a, &p.opts))
                fail_msg("%s: place %d, case %d longer than the one before it", by ? "queue" : "cost", i, order[i]);
        }
        free(seen);
    }
    free(order);
    kb_cases_free(p.cases, p.ncases);
}

/* The queue's cost: the larger of the GPU's wall estimate and the
 * reference's on the worker's cores. The MLP grid's 8192 x 28672 cases at
 * 128 tokens are short on the GPU (kb_case_cost) but have long references
 * (64 sampled rows), so they come before the 1-token cases of 1024 x
 * 11008 (decode: each sample mostly the L2 flush) that kb_case_cost alone
 * puts first; the default sweep's layernorm
 * 4096 x 1024 forward (3.2 s on an H200: thousands of flushed samples) comes
 * before its rope 512 x 16 (1.2 s), which bytes alone put first; under
 * --no-verify no reference runs, and the order is kb_case_cost's. */
static void test_queue_cost(void **state)
{
    (void)state;
    kb_plan p;
    load(&p, "configs/mlp-grid.json", 1);
    const kb_case *big = NULL, *wide = NULL;
    for (int i = 0; i < p.ncases; i++) {
        const kb_case *c = &p.cases[i];
        char l[1024];
        kb_case_label(c, l, sizeof l);
        if (strstr(l, "dtype=bf16 ") && strstr(l, "tokens=128 hidden=8192 inter=28672")) big = c;
        if (strstr(l, "dtype=bf16 ") && strstr(l, "tokens=1 hidden=1024 inter=11008")) wide = c;
    }
    assert_non_null(big);
    assert_non_null(wide);
    assert_true(kb_case_cost(big, &p.opts) < kb_case_cost(wide, &p.opts));
    assert_true(kb_case_queue_cost(big, &p.opts, 15) > kb_case_queue_cost(wide, &p.opts, 15));
    /* the reference on 15 cores: 3 H I (7.3e-10 R + 1.5e-8) core-seconds, R = 64 sampled rows */
    const double want = 3.0 * 8192 * 28672 * (7.3e-10 * 64 + 1.5e-8) / 15;
    assert_true(fabs(kb_case_queue_cost(big, &p.opts, 15) - want) < 1e-9 * want);
    assert_true(kb_case_queue_cost(big, &p.opts, 60) < kb_case_queue_cost(big, &p.opts, 15)); /* more cores, shorter */
    p.opts.no_verify = 1;
    assert_true(kb_case_ref_cost(big, &p.opts) == 0);
    assert_true(kb_case_queue_cost(big, &p.opts, 15) == kb_case_cost(big, &p.opts));
    kb_cases_free(p.cases, p.ncases);

    load(&p, "configs/default.json", 1);
    int *order = malloc(sizeof *order * (size_t)p.ncases), ln = -1, rope = -1;
    kb_plan_by_queue(&p, 15, order);
    for (int j = 0; j < p.ncases; j++) {
        char l[1024];
        kb_case_label(&p.cases[order[j]], l, sizeof l);
        if (!strcmp(p.cases[order[j]].op->name, "layernorm") && strstr(l, "pass=fwd dtype=bf16 rows=4096 cols=1024 ")) ln = j;
        if (!strcmp(p.cases[order[j]].op->name, "rope") && strstr(l, "pass=fwd dtype=bf16 layout=sbhd") && strstr(l, "seq=512 "))
            rope = j;
    }
    assert_true(ln >= 0 && rope >= 0);
    assert_true(ln < rope);
    assert_true(kb_case_ref_cost(&p.cases[order[rope]], &p.opts) > 0); /* rope: in proportion to its bytes */
    free(order);
    kb_cases_free(p.cases, p.ncases);
}

/* the queue keeps cases that share ceilings with the worker that measured
 * them: at each ask, a sibling of the worker's last case when one is left,
 * else a case no other worker holds the ceilings of when one is left; every
 * case once; a gone worker's group is anyone's */
static void test_devices_pick(void **state)
{
    (void)state;
    kb_plan p;
    load(&p, "configs/ci.json", 1);
    const int n = p.ncases;
    int *order = malloc(sizeof *order * (size_t)n), *group = malloc(sizeof *group * (size_t)n);
    char *taken = calloc((size_t)n, 1);
    kb_plan_by_queue(&p, 15, order);
    kb_ceiling_groups(&p, order, group);
    for (int j = 0; j < n; j++) {
        assert_true(group[j] >= 0 && group[j] <= j && group[group[j]] == group[j]);
        for (int g = 0; g < j; g++)
            if (same_key(&p.cases[order[g]], &p.cases[order[j]]) != (group[g] == group[j]))
                fail_msg("places %d and %d: group %d and %d", g, j, group[g], group[j]);
    }
    for (int nw = 2; nw <= 3; nw++) {
        int last[3] = {-1, -1, -1}, by[3] = {0}, handed = 0;
        int *who = malloc(sizeof *who * (size_t)n);
        memset(taken, 0, (size_t)n);
        for (int step = 0;; step++) {
            const int w = (step * 7 + step / 3) % nw; /* an uneven interleaving */
            if (nw == 3 && step > 40 && w == 2) continue; /* worker 2 is gone */
            int sib = 0, unheld = 0;
            for (int j = 0; j < n; j++) {
                if (taken[j]) continue;
                sib |= last[w] >= 0 && group[j] == group[last[w]];
                int held = 0;
                for (int v = 0; v < nw; v++) held |= v != w && last[v] >= 0 && group[j] == group[last[v]];
                unheld |= !held;
            }
            const int j = kb_queue_pick(group, n, taken, last, nw, w);
            if (j < 0) break;
            assert_true(j < n && !taken[j]);
            if (sib && group[j] != group[last[w]]) fail_msg("worker %d: place %d, not its last's sibling", w, j);
            if (!sib && unheld)
                for (int v = 0; v < nw; v++)
                    if (v != w && last[v] >= 0 && group[j] == group[last[v]]) fail_msg("worker %d took worker %d's group", w, v);
            taken[j] = 1;
            who[j] = w;
            last[w] = j;
            by[w]++;
            handed++;
            if (nw == 3 && step == 40) last[2] = -1; /* worker 2 gone: its group is anyone's */
        }
        assert_int_equal(handed, n);
        for (int w = 0; w < nw; w++) assert_true(by[w] > 0);
        /* a group moves to another worker only at the queue's tail (the
         * last groups, held by busy workers) and when its worker is gone */
        int moves = 0, *prev = malloc(sizeof *prev * (size_t)n);
        for (int j = 0; j < n; j++) {
            if (group[j] != j && who[j] != prev[group[j]]) moves++;
            prev[group[j]] = who[j];
        }
        if (moves > nw - 1 + (nw == 3)) fail_msg("%d workers: groups moved %d times", nw, moves);
        free(prev);
        free(who);
    }
    free(order);
    free(group);
    free(taken);
    kb_cases_free(p.cases, p.ncases);
}

/* the GEMM ceilings a plan needs (its ladders): each key once, in the order
 * its cases first need it; none for ops without one */
static void test_gemm_keys(void **state)
{
    (void)state;
    kb_plan p;
    kb_gemm_key k[KB_NGEMM];
    load(&p, "configs/ci.json", 1); /* rope, the norms, then mlp fp32, fp16, bf16 and fp32 with tf32 */
    assert_int_equal(kb_plan_gemm_keys(&p, k), 4);
    assert_int_equal(k[0], KB_GEMM_FP32);
    assert_int_equal(k[1], KB_GEMM_FP16);
    assert_int_equal(k[2], KB_GEMM_BF16);
    assert_int_equal(k[3], KB_GEMM_TF32);
    for (int i = 0; i < p.ncases; i++)
        if (strcmp(p.cases[i].op->name, "mlp")) assert_int_equal(kb_case_gemm_key(&p.cases[i]), KB_GEMM_NONE);
    kb_cases_free(p.cases, p.ncases);
    load(&p, "configs/rope.json", 1);
    assert_int_equal(kb_plan_gemm_keys(&p, k), 0);
    kb_cases_free(p.cases, p.ncases);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gemm_keys),
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_partition),
        cmocka_unit_test(test_order),
        cmocka_unit_test(test_identity),
        cmocka_unit_test(test_devices_parse),
        cmocka_unit_test(test_cost),
        cmocka_unit_test(test_balance_grid),
        cmocka_unit_test(test_devices_queue), cmocka_unit_test(test_queue_cost),
        cmocka_unit_test(test_devices_pick),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
