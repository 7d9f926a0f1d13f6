/* ladder.c: the GEMM ceiling's search, alone and shared by the workers of
 * one GPU model (--devices), on the CPU: fake rungs from a table of rates;
 * the parent's queue of rungs on its own, and with threads as the workers
 * and a lock around the queue (what devices.c's parent does over pipes). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <string.h>

#include "../cli/core/op.h"
#include "../cli/fleet/count.h"
#include "../cli/fleet/ladder_queue.h"
#include "../cli/fleet/shard.h"
#include "../cli/harness/ladder.h"
#include "../kernels/kernels.h"

enum { NL = KB_GEMM_LADDER, NLAY = KB_GEMM_NLAYOUTS, MAXW = 8 };

/* a GPU: the rate of each rung (a table shared by the model, times the
 * GPU's own factor), the rungs it was asked for, what fits */
typedef struct {
    const double (*table)[NLAY];
    double factor;
    int fits;       /* sizes below this index fit */
    int fail_at;    /* the rung count at which it returns an error (0: never) */
    int timed[NL][NLAY];
    int count;
} gpu;

/* a GPU of each key (the workers' rung ctx: an array indexed by key) */
static int rung(void *ctx, int key, int n, int layout, double *tf)
{
    gpu *g = (gpu *)ctx + key;
    int i = 0;
    while (i < NL && kb_gemm_ladder_sizes[i] != n) i++;
    assert_true(i < NL);
    assert_true(layout >= 0 && layout < NLAY);
    g->timed[i][layout]++;
    if (g->fail_at && ++g->count >= g->fail_at) return 700; /* an illegal address */
    if (i >= g->fits) return KB_RUNG_NO_ROOM;
    *tf = g->table[i][layout] * g->factor;
    return 0;
}

/* TN rises to 4096 then falls; NT at 6144 is the best of all */
static const double table[NL][NLAY] = {
    {500, 490, 480}, {600, 590, 585}, {700, 690, 695}, {690, 680, 720}, {650, 640, 645}, {620, 0, 0}, {610, 0, 0},
};

/* one key's search alone, on GPU g */
static int search1(kb_gemm_key key, gpu *g, kb_ladder_result *r)
{
    gpu gs[KB_NGEMM];
    gs[key] = *g;
    const int rc = kb_ladder_search(&key, 1, rung, gs, NULL, r);
    *g = gs[key];
    return rc;
}

static void test_alone(void **state)
{
    (void)state;
    gpu g = {table, 1.0, NL, 0, {{0}}, 0};
    kb_ladder_result r;
    assert_int_equal(search1(KB_GEMM_BF16, &g, &r), 0);
    /* every size in TN once, NN and NT at 3072, 4096, 6144 (the best TN and its neighbours) */
    for (int i = 0; i < NL; i++) {
        assert_int_equal(g.timed[i][KB_GEMM_TN], 1);
        const int near = i >= 1 && i <= 3;
        assert_int_equal(g.timed[i][KB_GEMM_NN], near);
        assert_int_equal(g.timed[i][KB_GEMM_NT], near);
    }
    assert_int_equal(r.rungs, 13);
    assert_int_equal(r.shared, 1);
    assert_true(r.tflops == 720);
    assert_int_equal(r.n, 6144);
    assert_int_equal(r.layout, KB_GEMM_NT);
}

static void test_no_room(void **state)
{
    (void)state;
    gpu g = {table, 1.0, 5, 0, {{0}}, 0}; /* 12288 and 16384 do not fit */
    kb_ladder_result r;
    assert_int_equal(search1(KB_GEMM_BF16, &g, &r), 0);
    assert_int_equal(g.timed[5][KB_GEMM_TN], 1); /* tried, did not fit */
    assert_int_equal(g.timed[6][KB_GEMM_TN], 0); /* larger: not tried */
    assert_int_equal(r.rungs, 11);
    assert_true(r.tflops == 720);
    gpu none = {table, 1.0, 0, 0, {{0}}, 0};
    assert_int_equal(search1(KB_GEMM_BF16, &none, &r), 0);
    assert_true(r.tflops == 0);
    assert_int_equal(r.rungs, 0);
}

static void test_error_ends_it(void **state)
{
    (void)state;
    gpu g = {table, 1.0, NL, 3, {{0}}, 0};
    kb_ladder_result r;
    assert_int_equal(search1(KB_GEMM_BF16, &g, &r), 700);
    assert_int_equal(g.count, 3);
}

/* two keys alone: each its whole ladder, each rung of its own type */
static void test_alone_keys(void **state)
{
    (void)state;
    gpu gs[KB_NGEMM];
    memset(gs, 0, sizeof gs);
    gs[KB_GEMM_BF16] = (gpu){table, 1.0, NL, 0, {{0}}, 0};
    gs[KB_GEMM_FP16] = (gpu){table, 0.5, NL, 0, {{0}}, 0};
    const kb_gemm_key keys[2] = {KB_GEMM_BF16, KB_GEMM_FP16};
    kb_ladder_result r[2];
    assert_int_equal(kb_ladder_search(keys, 2, rung, gs, NULL, r), 0);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(r[k].rungs, 13);
        assert_int_equal(r[k].shared, 1);
        assert_int_equal(r[k].n, 6144);
        assert_true(r[k].wait_s == 0);
    }
    assert_true(r[0].tflops == 720 && r[1].tflops == 360);
    assert_int_equal(gs[KB_GEMM_TF32].timed[0][0], 0);
}

/* ---- the parent's queue, on its own ---- */

static kb_rung_msg give(kb_ladder_queue *q, int w, int key, int i, int layout)
{
    kb_rung_msg m;
    assert_int_equal(kb_ladder_queue_next(q, w, &m), 1);
    assert_int_equal(m.key, key);
    assert_int_equal(m.i, i);
    assert_int_equal(m.layout, layout);
    return m;
}

static void report(kb_ladder_queue *q, int w, kb_rung_msg m, double rate)
{
    m.rate = rate;
    assert_int_equal(kb_ladder_queue_done(q, w, &m), 0);
}

/* the first key's TN rungs first, smallest first; the second key's once
 * the first's are all out; the first key's NN and NT once its TN rates are
 * all in, before the second key's TN */
static void test_queue_order(void **state)
{
    (void)state;
    const kb_gemm_key keys[2] = {KB_GEMM_BF16, KB_GEMM_FP16};
    kb_ladder_queue *q = kb_ladder_queue_new(keys, 2, 3);
    kb_rung_msg held[3];
    for (int w = 0; w < 3; w++) held[w] = give(q, w, KB_GEMM_BF16, w, KB_GEMM_TN);
    for (int i = 3, w = 0; i < NL; i++, w = (w + 1) % 3) { /* each reports and takes the next */
        report(q, w, held[w], table[held[w].i][KB_GEMM_TN]);
        held[w] = give(q, w, KB_GEMM_BF16, i, KB_GEMM_TN);
    }
    /* 16384 (worker 0), 8192 (worker 1) and 12288 (worker 2) out: worker 1 gets fp16's smallest */
    report(q, 1, held[1], table[held[1].i][KB_GEMM_TN]);
    held[1] = give(q, 1, KB_GEMM_FP16, 0, KB_GEMM_TN);
    report(q, 2, held[2], table[held[2].i][KB_GEMM_TN]);
    held[2] = give(q, 2, KB_GEMM_FP16, 1, KB_GEMM_TN);
    report(q, 0, held[0], table[held[0].i][KB_GEMM_TN]); /* bf16's last TN rate in */
    /* NN and NT at the best (4096) and its neighbours, before fp16's TN */
    static const int xs[6] = {1, 1, 2, 2, 3, 3};
    for (int e = 0; e < 6; e++) {
        kb_rung_msg m = give(q, 0, KB_GEMM_BF16, xs[e], KB_GEMM_NN + e % 2);
        report(q, 0, m, table[m.i][m.layout]);
    }
    /* bf16's search is over: fp16's TN (the rest), then bf16's best point
     * (6144 NT) to the workers that did not time it */
    held[0] = give(q, 0, KB_GEMM_FP16, 2, KB_GEMM_TN);
    kb_ladder_queue_leave(q, 0); /* gone: its rung back */
    report(q, 1, held[1], 1);
    give(q, 1, KB_GEMM_FP16, 2, KB_GEMM_TN);
    kb_rung_msg m;
    assert_int_equal(kb_ladder_queue_next(q, 2, &m), 1); /* asked again, its rate not sent: its rung back, and given again */
    assert_true(m.key == KB_GEMM_FP16 && m.i == 1);
    assert_int_equal(kb_ladder_queue_gpus(q), 3);
    kb_ladder_queue_free(q);
}

/* every rung of the lone search handed out once, then the group's best
 * point to each worker that has not timed it, then the end; a worker with
 * nothing to take waits (0) while the rates that decide are out */
static void test_queue_all(void **state)
{
    (void)state;
    for (int nw = 1; nw <= 9; nw++) {
        const kb_gemm_key key = KB_GEMM_FP16;
        kb_ladder_queue *q = kb_ladder_queue_new(&key, 1, nw);
        int given[NL][NLAY] = {{0}}, by[NL][NLAY], got[9] = {0}, waits = 0, ended = 0;
        kb_rung_msg held[9];
        char has[9] = {0}, end[9] = {0};
        for (int round = 0; ended < nw && round < 100; round++)
            for (int w = 0; w < nw; w++) {
                if (end[w]) continue;
                if (has[w] && (w + round) % 2) { /* some report late: the others wait meanwhile */
                    report(q, w, held[w], table[held[w].i][held[w].layout] * (1 + 0.001 * w));
                    has[w] = 0;
                }
                if (has[w]) continue;
                kb_rung_msg m;
                const int r = kb_ladder_queue_next(q, w, &m);
                if (r < 0) {
                    end[w] = 1;
                    ended++;
                    continue;
                }
                if (!r) {
                    waits++;
                    continue;
                }
                assert_int_equal(m.key, key);
                if (given[m.i][m.layout]++) assert_true(by[m.i][m.layout] != w); /* again: another's best point */
                by[m.i][m.layout] = w;
                held[w] = m;
                has[w] = 1;
                got[w]++;
            }
        assert_int_equal(ended, nw);
        /* the lone search's 13 rungs, and 6144 NT once more for each worker but the one that timed it */
        for (int i = 0; i < NL; i++)
            for (int l = 0; l < NLAY; l++) {
                const int want = l == KB_GEMM_TN ? 1 : i >= 1 && i <= 3;
                assert_int_equal(given[i][l], i == 3 && l == KB_GEMM_NT ? nw : want);
            }
        if (nw > 7) assert_true(waits > 0);
        assert_int_equal(kb_ladder_queue_gpus(q), nw);
        kb_ladder_queue_free(q);
    }
}

/* nothing fits: no NN or NT, no best point, the end; a size that does not
 * fit takes the larger ones not yet out with it */
static void test_queue_no_room(void **state)
{
    (void)state;
    const kb_gemm_key key = KB_GEMM_BF16;
    kb_ladder_queue *q = kb_ladder_queue_new(&key, 1, 2);
    kb_rung_msg a = give(q, 0, key, 0, KB_GEMM_TN), b = give(q, 1, key, 1, KB_GEMM_TN);
    report(q, 1, b, -1); /* 3072 does not fit: 2048 is out, still worker 0's; 4096 and up are not given */
    a.rate = 0;
    kb_rung_msg wrong = a;
    wrong.i = 2;
    assert_int_equal(kb_ladder_queue_done(q, 0, &wrong), -1); /* not the rung it holds */
    assert_int_equal(kb_ladder_queue_done(q, 1, &a), -1);     /* nor this one's */
    report(q, 0, a, -1);
    kb_rung_msg m;
    assert_int_equal(kb_ladder_queue_next(q, 0, &m), -1);
    assert_int_equal(kb_ladder_queue_next(q, 1, &m), -1);
    kb_ladder_queue_free(q);
    /* 8192 does not fit (another process took the memory): nor do the larger ones not yet out */
    q = kb_ladder_queue_new(&key, 1, 1);
    for (int i = 0; i < 4; i++) report(q, 0, give(q, 0, key, i, KB_GEMM_TN), 600 + 10 * i); /* 6144 the best */
    report(q, 0, give(q, 0, key, 4, KB_GEMM_TN), -1);
    give(q, 0, key, 2, KB_GEMM_NN); /* 12288 and 16384 never given: NN and NT at 4096 and 6144 */
    kb_ladder_queue_free(q);
    assert_null(kb_ladder_queue_new(&key, 1, 0));
}

/* ---- the group: threads as the workers, a lock around the parent's queue ---- */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    kb_ladder_queue *q;
    int fail_at; /* the exchange that fails (the parent gone), 0: none */
    int calls;
} group;

typedef struct {
    group *grp;
    int w, leave_at; /* leave_at: this worker dies at that exchange, holding its rung (0: never) */
    int nkeys;       /* the keys it searches (0: both; 1: bf16 only, fp16's rungs not its own) */
    gpu g[KB_NGEMM];
    kb_ladder_result r[2];
    int rc, asks;
} member;

static int share(void *ctx, const kb_rung_msg *done, kb_rung_msg *next, int *gpus)
{
    member *m = ctx;
    group *G = m->grp;
    pthread_mutex_lock(&G->mu);
    int r = -1;
    if (!done || ++G->calls == G->fail_at || ++m->asks == m->leave_at) { /* it says "alone": its rung back in the queue */
        kb_ladder_queue_leave(G->q, m->w);
        pthread_cond_broadcast(&G->cv);
        goto out;
    }
    if (done->key >= 0) assert_int_equal(kb_ladder_queue_done(G->q, m->w, done), 0);
    pthread_cond_broadcast(&G->cv); /* its rate may open a phase */
    while (!(r = kb_ladder_queue_next(G->q, m->w, next))) pthread_cond_wait(&G->cv, &G->mu);
    if (r < 0) r = 0, *gpus = kb_ladder_queue_gpus(G->q);
out:
    pthread_mutex_unlock(&G->mu);
    return r;
}

static void *member_main(void *arg)
{
    member *m = arg;
    static const kb_gemm_key keys[2] = {KB_GEMM_BF16, KB_GEMM_FP16};
    kb_ladder_share sh = {share, m};
    m->rc = kb_ladder_search(keys, m->nkeys ? m->nkeys : 2, rung, m->g, &sh, m->r);
    return NULL;
}

static void run_group_keys(int size, int fail_at, int leaver, int one_key, int broken, member *ms)
{
    static const kb_gemm_key keys[2] = {KB_GEMM_BF16, KB_GEMM_FP16};
    group G = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, kb_ladder_queue_new(keys, 2, size), fail_at, 0};
    pthread_t th[MAXW];
    for (int w = 0; w < size; w++) {
        memset(&ms[w], 0, sizeof ms[w]);
        ms[w].grp = &G;
        ms[w].w = w;
        ms[w].leave_at = w == leaver ? 2 : 0; /* gone holding its first rung, its rate not sent */
        ms[w].nkeys = w == one_key ? 1 : 0;
        for (int k = 0; k < KB_NGEMM; k++) /* each GPU a little faster (less than the gaps between rungs); fp16 half bf16 */
            ms[w].g[k] = (gpu){table, (k == KB_GEMM_FP16 ? 0.5 : 1.0) * (1.0 + 0.001 * w), NL, w == broken, {{0}}, 0}; /* broken: its first rung fails */
        assert_int_equal(pthread_create(&th[w], NULL, member_main, &ms[w]), 0);
    }
    for (int w = 0; w < size; w++) pthread_join(th[w], NULL);
    for (int w = 0; w < size; w++) ms[w].grp = NULL;
    kb_ladder_queue_free(G.q);
}

static void run_group(int size, int fail_at, int leaver, member *ms) { run_group_keys(size, fail_at, leaver, -1, -1, ms); }

/* a worker handed a rung of a key it does not search sends it back untimed;
 * the others time it, and that key's rungs never go to it again: nobody
 * waits, its own key's ceiling is right, and so is the others' search of
 * the key it left out */
static void test_foreign_key(void **state)
{
    (void)state;
    for (int round = 0; round < 20; round++) {
        member ms[4];
        run_group_keys(4, 0, -1, 0, -1, ms);
        for (int w = 0; w < 4; w++) {
            assert_int_equal(ms[w].rc, 0);
            assert_true(ms[w].r[0].tflops == 720 * (1.0 + 0.001 * w)); /* bf16: the best point, timed here */
            if (!w) continue;
            assert_true(ms[w].r[1].tflops == 360 * (1.0 + 0.001 * w)); /* fp16 too, among the three */
            assert_int_equal(ms[w].r[1].n, 6144);
            assert_int_equal(ms[w].r[1].layout, KB_GEMM_NT);
            assert_true(ms[w].r[1].shared >= 1 && ms[w].r[1].shared <= 4); /* those that had timed a rung by its end */
        }
        for (int i = 0; i < NL; i++)
            for (int l = 0; l < NLAY; l++) assert_int_equal(ms[0].g[KB_GEMM_FP16].timed[i][l], 0); /* none of fp16's */
    }
}

/* a rung that fails (a CUDA error) ends that worker's search with the error;
 * its rung goes back to the group, which finishes without it */
static void test_rung_fails_shared(void **state)
{
    (void)state;
    member ms[3];
    run_group_keys(3, 0, -1, -1, 1, ms);
    assert_int_equal(ms[1].rc, 700);
    int cover[NL] = {0};
    for (int w = 0; w < 3; w += 2) {
        assert_int_equal(ms[w].rc, 0);
        assert_true(ms[w].r[0].tflops == 720 * (1.0 + 0.001 * w));
        for (int i = 0; i < NL; i++) cover[i] += ms[w].g[KB_GEMM_BF16].timed[i][KB_GEMM_TN];
    }
    for (int i = 0; i < NL; i++) assert_true(cover[i] >= 1 || ms[1].g[KB_GEMM_BF16].timed[i][KB_GEMM_TN]);
}

/* every worker's ceiling is its own rate at the group's best point; together
 * they cover the lone search, no rung twice on one GPU; one that leaves
 * holding its first rung searches the rest alone, and the others still
 * cover everything */
static void test_shared(void **state)
{
    (void)state;
    for (int leaver = -1; leaver <= 0; leaver++)
        for (int size = 1; size <= MAXW; size++) {
            member ms[MAXW];
            run_group(size, 0, leaver, ms);
            int cover[2][NL][NLAY] = {{{0}}}, total = 0;
            for (int w = 0; w < size; w++)
                for (int k = 0; k < 2; k++) {
                    const member *m = &ms[w];
                    const int key = k ? KB_GEMM_FP16 : KB_GEMM_BF16;
                    const double f = (k ? 0.5 : 1.0) * (1.0 + 0.001 * w);
                    assert_int_equal(m->rc, 0);
                    if (w == leaver) assert_int_equal(m->r[k].shared, 1);
                    assert_true(m->r[k].shared >= 1 && m->r[k].shared <= size); /* those that had timed a rung when it ended */
                    assert_int_equal(m->r[k].n, 6144);
                    assert_int_equal(m->r[k].layout, KB_GEMM_NT);
                    assert_true(m->r[k].tflops == 720 * f);
                    int here = 0;
                    for (int i = 0; i < NL; i++)
                        for (int l = 0; l < NLAY; l++) {
                            assert_true(m->g[key].timed[i][l] <= 1);
                            if (w != leaver) cover[k][i][l] += m->g[key].timed[i][l];
                            here += m->g[key].timed[i][l];
                        }
                    assert_int_equal(here, m->r[k].rungs);
                    total += here;
                }
            for (int k = 0; k < 2; k++)
                for (int i = 0; i < NL; i++) {
                    if (leaver >= 0 && size == 1) continue;
                    assert_true(cover[k][i][KB_GEMM_TN] >= 1);
                    const int near = i >= 1 && i <= 3;
                    assert_int_equal(cover[k][i][KB_GEMM_NN] >= 1, near);
                    assert_int_equal(cover[k][i][KB_GEMM_NT] >= 1, near);
                }
            if (leaver < 0) assert_true(total <= 2 * (13 + size - 1)); /* the two ladders once, the best points again */
        }
}

/* the exchange fails (the parent gone) at the n-th ask: each worker does
 * the rest alone, no rung twice */
static void test_share_fails(void **state)
{
    (void)state;
    for (int at = 1; at <= 12; at += 3) {
        member ms[4];
        run_group(4, at, -1, ms);
        for (int w = 0; w < 4; w++)
            for (int k = 0; k < 2; k++) {
                const int key = k ? KB_GEMM_FP16 : KB_GEMM_BF16;
                assert_int_equal(ms[w].rc, 0);
                for (int i = 0; i < NL; i++)
                    for (int l = 0; l < NLAY; l++) assert_true(ms[w].g[key].timed[i][l] <= 1);
                assert_int_equal(ms[w].r[k].n, 6144);
                assert_true(ms[w].r[k].tflops == 720 * (k ? 0.5 : 1.0) * (1.0 + 0.001 * w));
            }
        /* the one whose ask failed searched alone: its whole ladders */
        int alone = 0;
        for (int w = 0; w < 4; w++) alone += ms[w].r[0].shared == 1 && ms[w].r[0].rungs == 13 && ms[w].r[1].rungs == 13;
        assert_true(alone >= 1);
    }
}

static void test_messages(void **state)
{
    (void)state;
    char line[128];
    kb_rung_msg m = {KB_GEMM_BF16, 3, KB_GEMM_NT, 758.125}, back;
    int len = kb_rung_format(line, sizeof line, &m);
    assert_true(len > 0 && line[len - 1] == '\n');
    assert_string_equal(line, "rung 2 3 2 758.125\n");
    line[len - 1] = 0;
    assert_int_equal(kb_rung_parse(line, &back), 0);
    assert_true(back.key == m.key && back.i == m.i && back.layout == m.layout && back.rate == m.rate);
    assert_int_equal(kb_rung_parse("rung -1 0 0 0", &back), 0); /* the first ask */
    assert_int_equal(back.key, -1);
    assert_int_equal(kb_rung_parse("rung 2 6 0 -1", &back), 0); /* no room */
    assert_int_equal(kb_rung_parse("rung 2 6 0 -2", &back), 0); /* not a key this worker searches */
    assert_true(back.rate == KB_RUNG_NOT_MINE);
    static const char *const bad[] = {"rung", "rung 2 3 2", "rung 2 7 0 5", "rung 2 3 3 5", "rung 4 0 0 5", "rung 2 0 0 nan",
                                      "rung 2 0 0 -3", "rung 2 0 0 -1.5", "rung 2 0 0 5 6", "rung 2 0 0 5x", "next", "ladder 2 0 1 5"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        back.key = 9;
        assert_int_equal(kb_rung_parse(bad[i], &back), -1);
        assert_int_equal(back.key, 9); /* untouched by a bad line */
    }
    /* the replies: a rung, or the end and the GPUs that searched */
    int gpus = 0;
    len = kb_rung_reply_format(line, sizeof line, 1, &m, 4);
    assert_string_equal(line, "2 3 2\n");
    line[len - 1] = 0;
    assert_int_equal(kb_rung_reply_parse(line, &back, &gpus), 1);
    assert_true(back.key == 2 && back.i == 3 && back.layout == 2);
    len = kb_rung_reply_format(line, sizeof line, -1, &m, 4);
    assert_string_equal(line, "end 4\n");
    line[len - 1] = 0;
    assert_int_equal(kb_rung_reply_parse(line, &back, &gpus), 0);
    assert_int_equal(gpus, 4);
    static const char *const badr[] = {"?", "", "end", "end x", "end -1", "2 3", "2 7 0", "2 3 3", "4 0 0", "2 3 2 1"};
    for (size_t i = 0; i < sizeof badr / sizeof badr[0]; i++) assert_int_equal(kb_rung_reply_parse(badr[i], &back, &gpus), -1);
    assert_int_equal(kb_rung_format(line, 10, &m), -1); /* no room */
}

static void test_model_groups(void **state)
{
    (void)state;
    static char models[6][KB_MODEL_LEN] = {"NVIDIA H100 80GB HBM3, 132 SMs, 81079 MiB", "NVIDIA H100 80GB HBM3, 132 SMs, 81079 MiB",
                                           "NVIDIA H200, 132 SMs, 143167 MiB", "", "NVIDIA H100 80GB HBM3, 132 SMs, 81079 MiB", ""};
    int g[6], s[6];
    kb_model_groups(models, 6, g, s);
    const int wg[6] = {0, 0, 2, 3, 0, 5}, ws[6] = {3, 3, 1, 1, 3, 1};
    for (int w = 0; w < 6; w++) {
        assert_int_equal(g[w], wg[w]);
        assert_int_equal(s[w], ws[w]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alone),       cmocka_unit_test(test_no_room),     cmocka_unit_test(test_error_ends_it),
        cmocka_unit_test(test_alone_keys),  cmocka_unit_test(test_queue_order), cmocka_unit_test(test_queue_all),
        cmocka_unit_test(test_queue_no_room), cmocka_unit_test(test_shared),    cmocka_unit_test(test_share_fails),
        cmocka_unit_test(test_messages),    cmocka_unit_test(test_model_groups), cmocka_unit_test(test_foreign_key), cmocka_unit_test(test_rung_fails_shared),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
