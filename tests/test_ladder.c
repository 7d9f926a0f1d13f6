/* ladder.c: the GEMM ceiling's search, alone and split over the workers of
 * one GPU model (--devices), on the CPU: fake rungs from a table of rates,
 * the workers as threads meeting at a real barrier that hands each the
 * group's best (what devices.c's parent does over pipes). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <string.h>

#include "harness.h"
#include "shard.h"
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

static int rung(void *ctx, int n, int layout, double *tf)
{
    gpu *g = ctx;
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

static void test_alone(void **state)
{
    (void)state;
    gpu g = {table, 1.0, NL, 0, {{0}}, 0};
    kb_ladder_result r;
    assert_int_equal(kb_gemm_ladder(KB_GEMM_BF16, rung, &g, NULL, &r), 0);
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
    assert_int_equal(kb_gemm_ladder(KB_GEMM_BF16, rung, &g, NULL, &r), 0);
    assert_int_equal(g.timed[5][KB_GEMM_TN], 1); /* tried, did not fit */
    assert_int_equal(g.timed[6][KB_GEMM_TN], 0); /* larger: not tried */
    assert_int_equal(r.rungs, 11);
    assert_true(r.tflops == 720);
    gpu none = {table, 1.0, 0, 0, {{0}}, 0};
    assert_int_equal(kb_gemm_ladder(KB_GEMM_BF16, rung, &none, NULL, &r), 0);
    assert_true(r.tflops == 0);
    assert_int_equal(r.rungs, 0);
}

static void test_error_ends_it(void **state)
{
    (void)state;
    gpu g = {table, 1.0, NL, 3, {{0}}, 0};
    kb_ladder_result r;
    assert_int_equal(kb_gemm_ladder(KB_GEMM_BF16, rung, &g, NULL, &r), 700);
    assert_int_equal(g.count, 3);
}

/* ---- the group: threads and a barrier standing in for the parent ---- */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int size, arrived, round; /* size: the members that take part (the parent's live workers) */
    double acc[KB_LADDER_MAXN], out[2][KB_LADDER_MAXN]; /* a round's best, kept until the next round ends */
    int n, fail_phase; /* the barrier refuses this phase (-1: none) */
    int calls[2];
} group;

typedef struct {
    group *grp;
    gpu g;
    int rank, of; /* of: the group's size as the workers were told (absent members included) */
    kb_ladder_result r;
    int rc;
} member;

static int share(void *ctx, int key, int phase, double *rates, int n)
{
    member *m = ctx;
    group *G = m->grp;
    assert_int_equal(key, KB_GEMM_FP16);
    pthread_mutex_lock(&G->mu);
    G->calls[phase]++;
    if (phase == G->fail_phase) {
        pthread_mutex_unlock(&G->mu);
        return -1;
    }
    if (G->arrived == 0) {
        memset(G->acc, 0, sizeof G->acc);
        G->n = n;
    }
    assert_int_equal(G->n, n);
    for (int i = 0; i < n; i++)
        if (rates[i] > G->acc[i]) G->acc[i] = rates[i];
    const int round = G->round;
    if (++G->arrived == G->size) {
        G->arrived = 0;
        memcpy(G->out[round % 2], G->acc, sizeof G->acc);
        G->round++;
        pthread_cond_broadcast(&G->cv);
    } else
        while (G->round == round) pthread_cond_wait(&G->cv, &G->mu);
    memcpy(rates, G->out[round % 2], sizeof *rates * (size_t)n);
    pthread_mutex_unlock(&G->mu);
    return G->size; /* the GPUs whose rates these are */
}

static void *member_main(void *arg)
{
    member *m = arg;
    kb_ladder_share sh = {share, m, m->rank, m->of};
    m->rc = kb_gemm_ladder(KB_GEMM_FP16, rung, &m->g, &sh, &m->r);
    return NULL;
}

/* size workers told they are a group of size + absent (the absent ones,
 * the last ranks, gone before they sent anything) */
static void run_group_of(int size, int absent, int fail_phase, member *ms)
{
    group G = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, size, 0, 0, {0}, {{0}}, 0, fail_phase, {0, 0}};
    pthread_t th[MAXW];
    for (int w = 0; w < size; w++) {
        ms[w].grp = &G;
        ms[w].rank = w;
        ms[w].of = size + absent;
        ms[w].g = (gpu){table, 1.0 + 0.001 * w, NL, 0, {{0}}, 0}; /* each GPU a little faster (less than the gaps between rungs) */
        assert_int_equal(pthread_create(&th[w], NULL, member_main, &ms[w]), 0);
    }
    for (int w = 0; w < size; w++) pthread_join(th[w], NULL);
    for (int w = 0; w < size; w++) ms[w].grp = NULL;
}

static void run_group(int size, int fail_phase, member *ms) { run_group_of(size, 0, fail_phase, ms); }

static void test_shared(void **state)
{
    (void)state;
    for (int size = 2; size <= 8; size++) {
        member ms[MAXW];
        run_group(size, -1, ms);
        int cover[NL][NLAY] = {{0}}, most = 0;
        for (int w = 0; w < size; w++) {
            const member *m = &ms[w];
            assert_int_equal(m->rc, 0);
            assert_int_equal(m->r.shared, size);
            /* the group's best point, timed here: this GPU's own rate there */
            assert_int_equal(m->r.n, 6144);
            assert_int_equal(m->r.layout, KB_GEMM_NT);
            assert_true(m->r.tflops == 720 * (1.0 + 0.001 * w));
            assert_int_equal(m->g.timed[3][KB_GEMM_NT], 1);
            int here = 0;
            for (int i = 0; i < NL; i++)
                for (int l = 0; l < NLAY; l++) {
                    assert_true(m->g.timed[i][l] <= 1); /* no rung twice */
                    cover[i][l] += m->g.timed[i][l];
                    here += m->g.timed[i][l];
                }
            assert_int_equal(here, m->r.rungs);
            if (here > most) most = here;
        }
        /* together, every rung of the lone search; each worker a share of it and the best point */
        for (int i = 0; i < NL; i++) {
            assert_true(cover[i][KB_GEMM_TN] >= 1);
            const int near = i >= 1 && i <= 3;
            assert_int_equal(cover[i][KB_GEMM_NN] >= 1, near);
            assert_int_equal(cover[i][KB_GEMM_NT] >= 1, near);
        }
        assert_true(most <= (NL + size - 1) / size + (6 + size - 1) / size + 1);
        assert_true(most < 13);
    }
}

/* a member gone before it sent its rates (a worker with no case, one that
 * died): its rungs have no rate in the group's answer, and the others time
 * them, so that together they still cover the whole ladder; the result says
 * how many GPUs' rates it had */
static void test_member_gone(void **state)
{
    (void)state;
    for (int size = 1; size <= 4; size++)
        for (int absent = 1; absent <= 2; absent++) {
            member ms[MAXW];
            run_group_of(size, absent, -1, ms);
            int cover[NL][NLAY] = {{0}};
            for (int w = 0; w < size; w++) {
                assert_int_equal(ms[w].rc, 0);
                assert_int_equal(ms[w].r.shared, size);
                assert_int_equal(ms[w].r.n, 6144);
                assert_int_equal(ms[w].r.layout, KB_GEMM_NT);
                for (int i = 0; i < NL; i++)
                    for (int l = 0; l < NLAY; l++) {
                        assert_true(ms[w].g.timed[i][l] <= 1);
                        cover[i][l] += ms[w].g.timed[i][l];
                    }
            }
            for (int i = 0; i < NL; i++) {
                assert_true(cover[i][KB_GEMM_TN] >= 1);
                const int near = i >= 1 && i <= 3;
                assert_int_equal(cover[i][KB_GEMM_NN] >= 1, near);
                assert_int_equal(cover[i][KB_GEMM_NT] >= 1, near);
            }
        }
}

/* the barrier refuses (the parent gone): each worker does the rest alone */
static void test_share_fails(void **state)
{
    (void)state;
    for (int phase = 0; phase < 2; phase++) {
        member ms[4];
        run_group(4, phase, ms);
        for (int w = 0; w < 4; w++) {
            assert_int_equal(ms[w].rc, 0);
            assert_int_equal(ms[w].r.shared, 1);
            assert_int_equal(ms[w].r.rungs, 13); /* the whole ladder, no rung twice */
            for (int i = 0; i < NL; i++)
                for (int l = 0; l < NLAY; l++) assert_true(ms[w].g.timed[i][l] <= 1);
            assert_int_equal(ms[w].r.n, 6144);
            assert_true(ms[w].r.tflops == 720 * (1.0 + 0.001 * w));
        }
    }
}

static void test_messages(void **state)
{
    (void)state;
    const double r[3] = {758.125, 0, 1e-3};
    char line[512];
    int len = kb_ladder_format(line, sizeof line, KB_GEMM_BF16, 1, r, 3);
    assert_true(len > 0 && line[len - 1] == '\n');
    line[len - 1] = 0;
    kb_ladder_msg m;
    assert_int_equal(kb_ladder_parse(line, &m), 0);
    assert_int_equal(m.key, KB_GEMM_BF16);
    assert_int_equal(m.phase, 1);
    assert_int_equal(m.n, 3);
    for (int i = 0; i < 3; i++) assert_true(m.r[i] == r[i]);
    /* the reply: the GPUs it is from, the count, the rates */
    len = kb_ladder_format(line, sizeof line, -1, 3, r, 3);
    assert_true(len > 0);
    double back[3];
    assert_int_equal(kb_ladder_reply_parse(line, back, 3), 3);
    for (int i = 0; i < 3; i++) assert_true(back[i] == r[i]);
    assert_int_equal(kb_ladder_reply_parse(line, back, 2), -1); /* not the count asked for */
    assert_int_equal(kb_ladder_reply_parse("?", back, 3), -1); /* the parent did not understand */
    assert_int_equal(kb_ladder_reply_parse("0 1 5", back, 1), -1); /* from no GPU */
    assert_int_equal(kb_ladder_reply_parse("", back, 1), -1);
    static const char *const bad[] = {
        "ladder", "ladder 2", "ladder 2 1", "ladder 2 2 1 5", "ladder -1 0 1 5", "ladder 2 0 2 5",
        "ladder 2 0 1 nan", "ladder 2 0 1 -5", "ladder 2 0 1 5 6", "ladder 2 0 99 1", "ladder 2 0 1 5x", "next",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        m.key = 7;
        assert_int_equal(kb_ladder_parse(bad[i], &m), -1);
        assert_int_equal(m.key, 7); /* a pending message is not clobbered by a bad line */
    }
    assert_int_equal(kb_ladder_format(line, 20, 2, 0, r, 3), -1); /* no room */
}

static void test_barrier(void **state)
{
    (void)state;
    kb_ladder_msg p[4];
    const int grp[4] = {0, 0, 2, 0};
    char live[4] = {1, 1, 1, 1};
    for (int w = 0; w < 4; w++) p[w] = (kb_ladder_msg){-1, 0, 0, {0}};
    double best[KB_LADDER_MAXN];
    int n;
    p[0] = (kb_ladder_msg){KB_GEMM_BF16, 0, 2, {5, 1}};
    p[1] = (kb_ladder_msg){KB_GEMM_BF16, 0, 2, {3, 4}};
    assert_int_equal(kb_ladder_ready(p, grp, live, 4, 0, best, &n), 0); /* worker 3 still to ask */
    p[3] = (kb_ladder_msg){KB_GEMM_BF16, 1, 2, {9, 9}};
    assert_int_equal(kb_ladder_ready(p, grp, live, 4, 0, best, &n), 0); /* another phase: not one round */
    p[3].phase = 0;
    p[3].r[0] = 2, p[3].r[1] = 8;
    assert_int_equal(kb_ladder_ready(p, grp, live, 4, 0, best, &n), 3); /* from three GPUs */
    assert_int_equal(n, 2);
    assert_true(best[0] == 5 && best[1] == 8);
    /* worker 3 gone: the others without it */
    live[3] = 0;
    assert_int_equal(kb_ladder_ready(p, grp, live, 4, 0, best, &n), 2);
    assert_true(best[0] == 5 && best[1] == 4);
    /* group 2 (worker 2 alone, another model) waits for nobody else, and has not asked */
    assert_int_equal(kb_ladder_ready(p, grp, live, 4, 2, best, &n), 0);
    live[0] = live[1] = 0;
    assert_int_equal(kb_ladder_ready(p, grp, live, 4, 0, best, &n), 0); /* nobody left */
}

static void test_model_groups(void **state)
{
    (void)state;
    static char models[6][KB_MODEL_LEN] = {"NVIDIA H100 80GB HBM3, 132 SMs, 81079 MiB", "NVIDIA H100 80GB HBM3, 132 SMs, 81079 MiB",
                                           "NVIDIA H200, 132 SMs, 143167 MiB", "", "NVIDIA H100 80GB HBM3, 132 SMs, 81079 MiB", ""};
    int g[6], r[6], s[6];
    kb_model_groups(models, 6, g, r, s);
    const int wg[6] = {0, 0, 2, 3, 0, 5}, wr[6] = {0, 1, 0, 0, 2, 0}, ws[6] = {3, 3, 1, 1, 3, 1};
    for (int w = 0; w < 6; w++) {
        assert_int_equal(g[w], wg[w]);
        assert_int_equal(r[w], wr[w]);
        assert_int_equal(s[w], ws[w]);
    }
    /* the owners of a phase's rungs: each rank in turn, from offset */
    assert_int_equal(kb_ladder_owner(0, 0, 4), 0);
    assert_int_equal(kb_ladder_owner(5, 0, 4), 1);
    assert_int_equal(kb_ladder_owner(0, NL, 4), 3);
    assert_int_equal(kb_ladder_owner(3, 7, 1), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alone),         cmocka_unit_test(test_no_room), cmocka_unit_test(test_error_ends_it),
        cmocka_unit_test(test_shared),        cmocka_unit_test(test_member_gone), cmocka_unit_test(test_share_fails),
        cmocka_unit_test(test_messages),      cmocka_unit_test(test_barrier),
        cmocka_unit_test(test_model_groups),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
