/* The fused SwiGLU gate/up planner (kernels/mlp/plan.c) on the CPU, for the
 * attributes of an H100, an A100 and an L40S (sm_89): the variant and the
 * wgmma tile over the MLP's shapes and every dtype, pinned against a table
 * of the choices kernels/mlp_fused.cu made before the split (its gate_up,
 * gate_up_hopper and pick_bn with 132 SMs: 132 clusters of 1, 66 of 2),
 * against a transliteration of that code over a wider grid, and known shapes
 * worked by hand; forced tunables honoured or refused with a reason; the
 * occupancy model against Shape<>'s shared memory; the table's rows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../include/kb_devattr.h"
#include "../kernels/mlp/plan.h"

static const kb_devattr *dev(const char *name)
{
    const kb_devattr *d = kb_devattr_preset(name);
    assert_non_null(d);
    return d;
}

static kb_mlp_req req(int tokens, int hidden, int inter, int dtype, kb_mlp_variant want)
{
    kb_mlp_req r = {tokens, hidden, inter, dtype, want, 0, 0, 0};
    return r;
}

/* the plan (fails the test when it makes none) */
static kb_mlp_plan plan_ok(const char *d, kb_mlp_req r)
{
    kb_mlp_plan p;
    char why[256];
    if (kb_mlp_plan_make(&r, dev(d), NULL, NULL, &p, why, sizeof why))
        fail_msg("%s %dx%dx%d dtype %d want %d bn %d cl %d wg %d: n/a: %s", d, r.tokens, r.hidden, r.inter, r.dtype,
                 r.want, r.bn, r.cluster, r.warpgroups, why);
    assert_true(p.rows != 0);
    return p;
}

/* the reason it refuses r (fails the test when it plans it) */
static const char *refused(const char *d, kb_mlp_req r)
{
    static char why[256];
    kb_mlp_plan p;
    why[0] = 0;
    if (!kb_mlp_plan_make(&r, dev(d), NULL, NULL, &p, why, sizeof why))
        fail_msg("%s %dx%dx%d dtype %d want %d bn %d cl %d wg %d: planned, expected n/a", d, r.tokens, r.hidden, r.inter,
                 r.dtype, r.want, r.bn, r.cluster, r.warpgroups);
    assert_true(strlen(why) > 10);
    assert_null(strchr(why, '\n')); /* one line */
    return why;
}

#define HAS(p, row) (((p).rows >> (row)) & 1u)

/* ---- the shapes --------------------------------------------------------------- */

static const int toks[] = {1, 16, 64, 65, 128, 129, 200, 256, 300, 320, 512, 1000, 2048, 4096, 8192};
#define NTOK ((int)(sizeof toks / sizeof toks[0]))
static const int shapes[][2] = {{1024, 11008}, {4096, 11008}, {4096, 14336}, {8192, 28672}};
#define NSHAPE ((int)(sizeof shapes / sizeof shapes[0]))

/* mlp_fused.cu's choices on the H100 (bf16 and fp16 alike): its
 * gate_up_hopper and pick_bn with 66 clusters of 2 and 132 of 1, worked
 * outside this file (a script of those rules; rows 65, 2048 and 4096 by
 * hand): warpgroups, BN, cluster for each tokens (rows) x (hidden, inter). For
 * 65 x 11008: one m-block, 132 clusters of 1: BN 128 86 tiles, 1 round,
 * cost 128; 112 99, 1, 113.1; 96 115, 1, 98.0; 64 172, 2, 142.2: BN 96.
 * One warpgroup (1-64 tokens) the same over 64-row m-blocks since the
 * WG1_BN row of 2026-11-27 (before: BN 64 always): x 11008 BN 96 (115 tiles,
 * one round), x 14336 112 (128 tiles; 96: 150, two rounds), x 28672 112
 * (256 tiles, two rounds: 226 against 128's 256, 96's 294, 64's 268). */
static const int h100_pins[NTOK][NSHAPE][3] = {
    /*    1 */ {{1, 96, 1}, {1, 96, 1}, {1, 112, 1}, {1, 112, 1}},
    /*   16 */ {{1, 96, 1}, {1, 96, 1}, {1, 112, 1}, {1, 112, 1}},
    /*   64 */ {{1, 96, 1}, {1, 96, 1}, {1, 112, 1}, {1, 112, 1}},
    /*   65 */ {{2, 96, 1}, {2, 96, 1}, {2, 112, 1}, {2, 112, 1}},
    /*  128 */ {{2, 96, 1}, {2, 96, 1}, {2, 112, 1}, {2, 112, 1}},
    /*  129 */ {{2, 96, 2}, {2, 96, 2}, {2, 112, 2}, {2, 112, 2}},
    /*  200 */ {{2, 96, 2}, {2, 96, 2}, {2, 112, 2}, {2, 112, 2}},
    /*  256 */ {{2, 96, 2}, {2, 96, 2}, {2, 112, 2}, {2, 112, 2}},
    /*  300 */ {{2, 128, 1}, {2, 128, 1}, {2, 112, 1}, {2, 112, 1}},
    /*  320 */ {{2, 128, 1}, {2, 128, 1}, {2, 112, 1}, {2, 112, 1}},
    /*  512 */ {{2, 112, 2}, {2, 112, 2}, {2, 112, 2}, {2, 128, 2}},
    /* 1000 */ {{2, 112, 2}, {2, 112, 2}, {2, 128, 2}, {2, 128, 2}},
    /* 2048 */ {{2, 112, 2}, {2, 112, 2}, {2, 128, 2}, {2, 128, 2}},
    /* 4096 */ {{2, 128, 2}, {2, 128, 2}, {2, 128, 2}, {2, 128, 2}},
    /* 8192 */ {{2, 128, 2}, {2, 128, 2}, {2, 128, 2}, {2, 128, 2}},
};

/* mlp_fused.cu's gate_up_hopper and pick_bn, transliterated line by line
 * (no knobs), with max_clusters<> = clusters (CL 1) or clusters / 2 (CL 2);
 * one warpgroup's BN by the same rounds since 2026-11-27 (WG1_BN), and BN
 * 64's efficiency 0.90 (0.955 in that code; measured, plan.c's BN_WAVE):
 * the rule as the planner has it now, written out apart from plan.c. */
static long old_cluster_tiles(int M, int N, int BM, int BN, int CL)
{
    return ((long)(M + BM - 1) / BM + CL - 1) / CL * ((N + BN - 1) / BN);
}
static int old_pick_bn(int M, int N, int BM, int CL, int sms)
{
    static const int bns[] = {128, 112, 96, 64};
    static const double eff[] = {1.0, 0.99, 0.98, 0.90};
    const int clusters[] = {sms / CL, sms / CL, sms / CL, sms / CL};
    int best = 0;
    double best_cost = 0;
    for (int i = 0; i < 4; i++) {
        if (!clusters[i]) continue;
        const long rounds = (old_cluster_tiles(M, N, BM, bns[i], CL) + clusters[i] - 1) / clusters[i];
        const double cost = (double)rounds * bns[i] / eff[i];
        if (!best || cost < best_cost * 0.999) best = bns[i], best_cost = cost;
    }
    return best ? best : 128;
}
static void old_hopper(int M, int N, int sms, int *wg_, int *bn_, int *cl_)
{
    int wg = 0, bn = 0, cl = 0;
    if (!wg) wg = M <= 64 ? 1 : 2;
    if (!cl) cl = wg == 2 && M > 128 && (M + 127) / 128 % 2 == 0 ? 2 : 1;
    if (!bn) bn = old_pick_bn(M, N, 64 * wg, cl, sms);
    *wg_ = wg, *bn_ = bn, *cl_ = cl;
}

static void expect_wgmma(const kb_mlp_plan *p, int wg, int bn, int cl, const char *what)
{
    if (p->variant != KB_MLP_WGMMA || p->wg != wg || p->bn != bn || p->cl != cl)
        fail_msg("%s: variant %d wg %d bn %d cl %d, expected wgmma wg %d bn %d cl %d", what, p->variant, p->wg, p->bn,
                 p->cl, wg, bn, cl);
}

/* KB_MLP_ROW_CUBLAS_MID: where fused runs cublas_cat's path on the H100
 * (hidden >= 4096: 129-160 and 513-544 tokens below inter 14336, 257-383
 * from 28672, 257-319 from hidden 8192; 257-352 at inter 13824-28671 from
 * hidden 5120; 65-128 tokens at
 * inter <= 3584 from hidden 3072), written out apart from plan.c's table */
static int cublas_mid(int M, int H, int N)
{
    if (H >= 3072 && N <= 3584 && M >= 65 && M <= 128) return 1;
    if (H < 4096) return 0;
    return (N < 14336 && ((M >= 129 && M <= 160) || (M >= 513 && M <= 544))) ||
           (N >= 28672 && M >= 257 && M <= (H >= 8192 ? 319 : 383)) ||
           (N >= 13824 && H >= 5120 && M >= 257 && M <= 352 && !(N >= 28672 && H >= 8192));
}

/* KB_MLP_ROW_SECTOR's cublas_cat boxes on rows 16 bytes past a 32-byte
 * sector (hidden % 16 == 8), written out apart from plan.c: 128-384 tokens
 * from hidden 2048, 576-640, 641-768 to hidden 1024, 1000-1536 to hidden
 * 1024 and from 4096 */
static int sector_cat(int M, int H)
{
    if (H % 16 != 8) return 0;
    return (H >= 2048 && M >= 128 && M <= 384) || (M >= 576 && M <= 640) || (H <= 1024 && M >= 641 && M <= 768) ||
           ((H <= 1024 || H >= 4096) && M >= 1000 && M <= 1536);
}

/* KB_MLP_ROW_SECTOR_FAST's, on devices of 4 TB/s or more (the H200): 128-384
 * tokens at any hidden, 576-640, 641-768 to hidden 1024; none from 1000 */
static int sector_cat_fast(int M, int H)
{
    if (H % 16 != 8) return 0;
    return (M >= 128 && M <= 384) || (M >= 576 && M <= 640) || (H <= 1024 && M >= 641 && M <= 768);
}

/* the swapped kernel's bn on 132 SMs: the fewest rounds of its tiles (128
 * columns x bn tokens) over 132 CTAs x bn / its efficiency, the wider within
 * 0.1%; *cost that */
static int swap_pick(int M, int N, double *cost)
{
    static const int sbn[] = {128, 112, 104, 96, 80};
    static const double seff[] = {1.0, 0.99, 0.985, 0.98, 0.96};
    int best = 0;
    double bc = 0;
    for (int i = 0; i < 5; i++) {
        const long tiles = (long)(N + 127) / 128 * ((M + sbn[i] - 1) / sbn[i]);
        const double c = (double)((tiles + 131) / 132) * sbn[i] / seff[i];
        if (!best || c < bc * 0.999) best = sbn[i], bc = c;
    }
    if (cost) *cost = bc;
    return best;
}

/* KB_MLP_ROW_SWAP, written out apart from plan.c: the swapped kernel's bn
 * where it takes the case (129-1024 tokens, inter % 8 == 0, hidden % 16 == 0,
 * its rounds' work a CTA in clusters of 1 no more than the old tile's), else
 * 0; it runs in clusters of 1 (2 only where cluster=2 is fixed). The old
 * tile's cost: rounds of cluster tiles over 132 / cl clusters x 128 x 2 BN /
 * BN's efficiency; the swapped kernel's: swap_pick's x 256. */
static int old_pick_bn(int M, int N, int BM, int CL, int sms);
static long old_cluster_tiles(int M, int N, int BM, int BN, int CL);
static int swap_bn(int M, int H, int N)
{
    if (M < 129 || M > 1024 || N % 8 || H % 16) return 0;
    const int cl = M > 128 && (M + 127) / 128 % 2 == 0 ? 2 : 1, bn = old_pick_bn(M, N, 128, cl, 132);
    const double weff = bn == 128 ? 1.0 : bn == 112 ? 0.99 : bn == 96 ? 0.98 : 0.90;
    const long clusters = 132 / cl;
    const double tile = (double)((old_cluster_tiles(M, N, 128, bn, cl) + clusters - 1) / clusters) * 128 * 2 * bn / weff;
    double cost = 0;
    const int best = swap_pick(M, N, &cost);
    return cost * 256 <= tile ? best : 0;
}

/* the swapped kernel, bn, in clusters of cl */
static void expect_swap(const kb_mlp_plan *p, int bn, int cl, const char *what)
{
    if (p->variant != KB_MLP_WGMMA || !p->swap || p->bn != bn || p->wg != 2 || p->cl != cl || p->dyn || !p->tma_store)
        fail_msg("%s: variant %d swap %d bn %d wg %d cl %d, expected the swapped kernel bn %d in clusters of %d", what,
                 p->variant, p->swap, p->bn, p->wg, p->cl, bn, cl);
}

/* fused's plan on the H100: cublas_cat's path where cublas_mid, else the
 * swapped kernel where swap_bn, else the wgmma tile (and fused_wgmma asked by
 * name with swap off plans that tile everywhere) */
static void expect_h100(const kb_mlp_plan *p, int M, int H, int N, int wg, int bn, int cl, const char *what)
{
    if (!cublas_mid(M, H, N)) {
        if (swap_bn(M, H, N)) {
            expect_swap(p, swap_bn(M, H, N), 1, what);
            assert_true(HAS(*p, KB_MLP_ROW_SWAP));
        } else {
            expect_wgmma(p, wg, bn, cl, what);
            assert_false(HAS(*p, KB_MLP_ROW_SWAP));
        }
        assert_false(HAS(*p, KB_MLP_ROW_CUBLAS_MID));
        return;
    }
    if (p->variant != KB_MLP_CUBLAS_CAT) fail_msg("%s: variant %d, expected cublas_cat's path", what, p->variant);
    /* ... its down GEMM by cuBLASLt's split-K 2 at 257-352 tokens below hidden 5120 (KB_MLP_ROW_DOWN_LT) */
    const int lt = M >= 257 && M <= 352 && H < 5120;
    assert_int_equal(p->rows, 1u << KB_MLP_ROW_HOPPER | 1u << KB_MLP_ROW_CUBLAS_MID | (unsigned)lt << KB_MLP_ROW_DOWN_LT);
    assert_int_equal(p->down, lt ? 2 : 0);
    assert_int_equal(p->dsplit.splits, lt ? 2 : 0);
    assert_int_equal(p->grid, 0);
}

/* the request with the swapped kernel off (fused_wgmma's old tile) */
static kb_mlp_req unswapped(kb_mlp_req r)
{
    r.swap = 1;
    return r;
}

/* ---- H100 ----------------------------------------------------------------------- */

static void test_h100_seed(void **state)
{
    (void)state;
    /* 2048 x 1024 x 11008 by hand: 16 m-blocks of 128 rows, even: clusters of
     * 2, 8 m-groups. Rounds over 66 clusters, cost = rounds x BN / eff:
     * BN 128: 86 n-blocks, 688 tiles, 11 rounds, 1408; 112: 99, 792, 12 (full),
     * 1357.6; 96: 115, 920, 14, 1371.4; 64: 172, 1376, 21, 1493.3: BN 112. */
    for (int dt = 1; dt <= 2; dt++) {
        kb_mlp_plan p = plan_ok("h100", req(2048, 1024, 11008, dt, KB_MLP_AUTO));
        expect_wgmma(&p, 2, 112, 2, "seed");
        assert_int_equal(p.bm, 128);
        assert_int_equal(p.stages, 5);
        assert_int_equal(p.smem, 5 * 45056 + 1024);
        assert_int_equal(p.clusters, 66);
        assert_int_equal(p.tiles, 792);
        assert_int_equal(p.grid, 132);
        assert_int_equal(p.group, 8); /* 16 m-blocks: 8 m-groups of 2 */
        assert_int_equal(p.tma_store, 1);
        const unsigned want = 1u << KB_MLP_ROW_HOPPER | 1u << KB_MLP_ROW_WARPGROUPS | 1u << KB_MLP_ROW_CLUSTER |
                              1u << KB_MLP_ROW_BN_WAVE | 1u << KB_MLP_ROW_STAGES | 1u << KB_MLP_ROW_GROUP |
                              1u << KB_MLP_ROW_TMA_STORE | 1u << KB_MLP_ROW_SCHED;
        assert_int_equal(p.rows, want);
        assert_false(p.dyn); /* SCHED: clusters of 2 keep the static walk */
        char buf[128];
        kb_mlp_plan_describe(&p, buf, sizeof buf);
        assert_string_equal(buf, "fused_wgmma wg=2 bn=112 cl=2 tma-store");
        /* fused_wgmma asked for by name plans the same tile */
        kb_mlp_plan q = plan_ok("h100", req(2048, 1024, 11008, dt, KB_MLP_WGMMA));
        expect_wgmma(&q, 2, 112, 2, "seed, fused_wgmma");
        assert_int_equal(q.grid, 132);
    }
    /* 4096 x 4096 x 11008: 32 m-blocks, 16 m-groups: 128 (21 rounds, 2688)
     * before 112 (24, 2715), 96 (28, 2743), 64 (42, 2815) */
    kb_mlp_plan p = plan_ok("h100", req(4096, 4096, 11008, 2, KB_MLP_AUTO));
    expect_wgmma(&p, 2, 128, 2, "4096");
    assert_int_equal(p.stages, 4);
    assert_int_equal(p.group, 8);
    /* decode: one warpgroup, BN 96 (115 n-blocks, a CTA each: one round), 6 stages of 32 KiB */
    p = plan_ok("h100", req(16, 4096, 11008, 2, KB_MLP_AUTO));
    expect_wgmma(&p, 1, 96, 1, "decode");
    assert_int_equal(p.bm, 64);
    assert_int_equal(p.stages, 6);
    assert_int_equal(p.tiles, 115);
    assert_int_equal(p.grid, 115);
    assert_int_equal(p.group, 1);
    assert_true(HAS(p, KB_MLP_ROW_WG1_BN) && !HAS(p, KB_MLP_ROW_BN_WAVE) && !HAS(p, KB_MLP_ROW_CLUSTER));
    /* 300 tokens: 3 m-blocks, odd: clusters of 1 (the old tile); planned, the
     * swapped kernel: 3 tiles of 104 tokens x 86 of 128 columns, 258 on 132 SMs,
     * 2 rounds (2 x 104 x 256 / 0.985 = 54058) against the tile's 258 tiles of
     * 128 x 256, 2 rounds (65536); clusters of 1 */
    p = plan_ok("h100", unswapped(req(300, 1024, 11008, 2, KB_MLP_AUTO)));
    assert_int_equal(p.cl, 1);
    assert_int_equal(p.group, 3);
    p = plan_ok("h100", req(300, 1024, 11008, 2, KB_MLP_AUTO));
    expect_swap(&p, 104, 1, "300x1024");
    assert_int_equal(p.tiles, 258);
    assert_int_equal(p.clusters, 132);
    assert_int_equal(p.grid, 132);
    assert_int_equal(p.stages, 4);
    assert_int_equal(p.smem, KB_MLP_SW_SMEM(104));
    assert_true(HAS(p, KB_MLP_ROW_SWAP) && HAS(p, KB_MLP_ROW_HOPPER) && HAS(p, KB_MLP_ROW_WARPGROUPS));
    assert_false(HAS(p, KB_MLP_ROW_CLUSTER) || HAS(p, KB_MLP_ROW_BN_WAVE) || HAS(p, KB_MLP_ROW_SCHED));
    {
        char buf[96];
        kb_mlp_plan_describe(&p, buf, sizeof buf);
        assert_string_equal(buf, "fused_wgmma swap-ab bn=104 tma-store");
        /* 448 tokens with cluster=2 fixed, by hand: bn 128 4 blocks (2 pairs), 112 4 (2), 104 5 (3), 96 5 (3),
         * 80 6 (3): 172 or 258 cluster tiles on 66 clusters, 3 or 4 rounds; x bn / eff 384, 339.4, 422.3, 391.8,
         * 333.3: bn 80; auto: clusters of 1 */
        kb_mlp_req c2 = req(448, 1024, 11008, 2, KB_MLP_WGMMA);
        c2.swap = 2, c2.cluster = 2;
        p = plan_ok("h100", c2);
        expect_swap(&p, 80, 2, "448x1024 cluster=2");
        assert_int_equal(p.tiles, 258);
        assert_int_equal(p.grid, 132);
        kb_mlp_plan_describe(&p, buf, sizeof buf);
        assert_string_equal(buf, "fused_wgmma swap-ab bn=80 cl=2 tma-store");
        p = plan_ok("h100", req(448, 1024, 11008, 2, KB_MLP_AUTO));
        assert_int_equal(p.cl, 1);
    }
    /* at hidden 4096 too, with cuBLASLt's down (DOWN_LT); cublas_cat's path
     * (CUBLAS_MID) at 129-160 and 513-544 tokens below inter 14336 and 257-383
     * from 28672, 257-319 from hidden 8192 (the swapped kernel at 320, the
     * tile from 352); a tunable fixed keeps the tile; the A100 runs mma */
    for (int dt = 1; dt <= 2; dt++) {
        p = plan_ok("h100", req(300, 4096, 11008, dt, KB_MLP_AUTO));
        expect_swap(&p, 104, 1, "300x4096x11008");
        assert_int_equal(p.down, 2);
        kb_mlp_req f = req(300, 4096, 11008, dt, KB_MLP_AUTO);
        f.cluster = 1;
        kb_mlp_plan q;
        char why[128];
        assert_int_equal(kb_mlp_plan_make(&f, dev("h100"), NULL, NULL, &q, why, sizeof why), 0);
        expect_wgmma(&q, 2, 128, 1, "300x4096x11008 cluster=1");
        assert_int_equal(plan_ok("a100", req(300, 4096, 11008, dt, KB_MLP_AUTO)).variant, KB_MLP_MMA);
        q = plan_ok("h100", unswapped(req(256, 4096, 11008, dt, KB_MLP_AUTO)));
        expect_wgmma(&q, 2, 96, 2, "256x4096");
        assert_int_equal(plan_ok("h100", req(319, 8192, 28672, dt, KB_MLP_AUTO)).variant, KB_MLP_CUBLAS_CAT);
        p = plan_ok("h100", req(320, 8192, 28672, dt, KB_MLP_AUTO));
        assert_int_equal(p.variant, KB_MLP_WGMMA);
        assert_true(p.swap);
        p = plan_ok("h100", req(352, 8192, 28672, dt, KB_MLP_AUTO));
        assert_int_equal(p.variant, KB_MLP_WGMMA);
        assert_false(p.swap);
        assert_int_equal(plan_ok("h100", req(352, 8192, 16384, dt, KB_MLP_AUTO)).variant, KB_MLP_CUBLAS_CAT);
        assert_int_equal(plan_ok("h100", req(352, 6144, 28672, dt, KB_MLP_AUTO)).variant, KB_MLP_CUBLAS_CAT);
        assert_int_equal(plan_ok("h100", req(383, 7168, 28672, dt, KB_MLP_AUTO)).variant, KB_MLP_CUBLAS_CAT);
        assert_int_equal(plan_ok("h100", req(300, 8192, 11008, dt, KB_MLP_AUTO)).variant, KB_MLP_WGMMA);
        assert_int_equal(plan_ok("h100", req(512, 8192, 28672, dt, KB_MLP_AUTO)).variant, KB_MLP_WGMMA);
        static const int edges[][3] = {{128, 11008, 0}, {129, 11008, 1}, {160, 11008, 1}, {161, 11008, 0},
                                       {129, 14336, 0}, {300, 11008, 0}, {512, 11008, 0}, {513, 11008, 1},
                                       {544, 11008, 1}, {545, 11008, 0}, {513, 14336, 0}, {256, 28672, 0},
                                       {257, 28672, 1}, {383, 28672, 1}, {384, 28672, 0}, {1000, 11008, 0}};
        for (int e = 0; e < (int)(sizeof edges / sizeof edges[0]); e++)
            assert_int_equal(plan_ok("h100", req(edges[e][0], 4096, edges[e][1], dt, KB_MLP_AUTO)).variant,
                             edges[e][2] ? KB_MLP_CUBLAS_CAT : KB_MLP_WGMMA);
        assert_int_equal(plan_ok("h100", req(300, 2048, 11008, dt, KB_MLP_AUTO)).variant, KB_MLP_WGMMA);
    }
    /* the SWAP row's ends: 128 (one m-block) and 1025 tokens keep the tile;
     * 352 x 4096 x 14336 too (the tile's 3 rounds of 128 x 224 against the
     * swapped kernel's 3 of 128 x 256); inter % 8 != 0 has no TMA store of h */
    assert_false(plan_ok("h100", req(128, 4096, 14336, 2, KB_MLP_AUTO)).swap);
    assert_true(plan_ok("h100", req(129, 4096, 14336, 2, KB_MLP_AUTO)).swap);
    assert_true(plan_ok("h100", req(1024, 4096, 14336, 2, KB_MLP_AUTO)).swap);
    assert_false(plan_ok("h100", req(1025, 4096, 14336, 2, KB_MLP_AUTO)).swap);
    assert_false(plan_ok("h100", req(352, 4096, 14336, 2, KB_MLP_AUTO)).swap);
    assert_false(plan_ok("h100", req(300, 4096, 11004, 2, KB_MLP_AUTO)).swap);
    /* 128 tokens: one m-block; 129: two (the old tile) */
    assert_int_equal(plan_ok("h100", unswapped(req(128, 1024, 11008, 1, KB_MLP_AUTO))).cl, 1);
    assert_int_equal(plan_ok("h100", unswapped(req(129, 1024, 11008, 1, KB_MLP_AUTO))).cl, 2);
    /* 64 tokens one warpgroup, 65 two */
    assert_int_equal(plan_ok("h100", req(64, 1024, 11008, 1, KB_MLP_AUTO)).wg, 1);
    assert_int_equal(plan_ok("h100", req(65, 1024, 11008, 1, KB_MLP_AUTO)).wg, 2);
}

static void test_h100_pins(void **state)
{
    (void)state;
    for (int dt = 1; dt <= 2; dt++)
        for (int t = 0; t < NTOK; t++)
            for (int s = 0; s < NSHAPE; s++) {
                char what[96];
                snprintf(what, sizeof what, "h100 dtype %d %dx%dx%d", dt, toks[t], shapes[s][0], shapes[s][1]);
                kb_mlp_plan p = plan_ok("h100", req(toks[t], shapes[s][0], shapes[s][1], dt, KB_MLP_AUTO));
                expect_h100(&p, toks[t], shapes[s][0], shapes[s][1], h100_pins[t][s][0], h100_pins[t][s][1],
                            h100_pins[t][s][2], what);
                /* the kernel by name, swap off: the pinned tile */
                p = plan_ok("h100", unswapped(req(toks[t], shapes[s][0], shapes[s][1], dt, KB_MLP_WGMMA)));
                expect_wgmma(&p, h100_pins[t][s][0], h100_pins[t][s][1], h100_pins[t][s][2], what);
                int wg, bn, cl;
                old_hopper(toks[t], shapes[s][1], 132, &wg, &bn, &cl);
                if (wg != p.wg || bn != p.bn || cl != p.cl) fail_msg("%s: the old code chose %d %d %d", what, wg, bn, cl);
                assert_int_equal(p.tma_store, 1); /* every inter here is a multiple of 8 */
                const long m_groups = ((long)(toks[t] + p.bm - 1) / p.bm + p.cl - 1) / p.cl;
                const int g = (16 + p.cl - 1) / p.cl;
                assert_int_equal(p.group, g < m_groups ? g : m_groups);
            }
}

/* BN_WAVE's efficiency for BN 64 (0.90): where 64 won on fewer rows over
 * several rounds it ran 0.87-0.93 of the wider tiles' speed (H100,
 * 2026-11-27, plan.c's reason), so those shapes take the measured winner;
 * one round (<= 256 tokens x 3000) keeps 64. */
static void test_bn64_rounds(void **state)
{
    (void)state;
    static const int cases[][4] = {/* tokens, hidden, inter, BN measured fastest */
                                   {1589, 4096, 3000, 112}, {1298, 4096, 8192, 128}, {2365, 4096, 5504, 96},
                                   {2048, 2048, 5504, 128}, {383, 4096, 13824, 112}, {256, 4096, 3000, 64},
                                   {160, 1024, 3000, 64}};
    for (int dt = 1; dt <= 2; dt++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            const int *c = cases[i];
            kb_mlp_plan p = plan_ok("h100", req(c[0], c[1], c[2], dt, KB_MLP_AUTO));
            if (p.variant != KB_MLP_WGMMA || p.swap || p.wg != 2 || p.bn != c[3])
                fail_msg("%dx%dx%d dtype %d: planned variant %d swap %d wg %d bn %d, measured fastest bn %d", c[0],
                         c[1], c[2], dt, p.variant, p.swap, p.wg, p.bn, c[3]);
        }
    /* 324 x 4096 x 13824: the tile at BN 64 lost to the swapped kernel (0.2674 / 0.2643 ms vs 0.1998 / 0.2006) */
    kb_mlp_plan p = plan_ok("h100", req(324, 4096, 13824, 2, KB_MLP_AUTO));
    assert_int_equal(p.variant, KB_MLP_WGMMA);
    assert_true(p.swap);
}

/* the old code over a wider grid: every tokens 1..1100, odd widths */
static void test_h100_old_code(void **state)
{
    (void)state;
    static const int inters[] = {8, 200, 1000, 1004, 2736, 11008, 14336, 28672, 65536};
    for (int M = 1; M <= 1100; M += (M < 300 ? 1 : 7))
        for (int i = 0; i < (int)(sizeof inters / sizeof inters[0]); i++) {
            kb_mlp_plan p = plan_ok("h100", unswapped(req(M, 4096, inters[i], 2, KB_MLP_WGMMA)));
            int wg, bn, cl;
            old_hopper(M, inters[i], 132, &wg, &bn, &cl);
            char what[64];
            snprintf(what, sizeof what, "h100 %dx4096x%d", M, inters[i]);
            expect_wgmma(&p, wg, bn, cl, what);
            const long tiles = old_cluster_tiles(M, inters[i], 64 * wg, bn, cl), clusters = 132 / cl;
            assert_int_equal(p.tiles, tiles);
            assert_int_equal(p.grid, cl * (tiles < clusters ? tiles : clusters));
            /* swap auto: the swapped kernel where the SWAP row (written out above) takes it */
            p = plan_ok("h100", req(M, 4096, inters[i], 2, KB_MLP_WGMMA));
            const int sb = swap_bn(M, 4096, inters[i]);
            if (sb) {
                expect_swap(&p, sb, 1, what);
                const long st = (long)(inters[i] + 127) / 128 * ((M + sb - 1) / sb);
                assert_int_equal(p.tiles, st);
                assert_int_equal(p.grid, st < 132 ? st : 132);
            } else {
                expect_wgmma(&p, wg, bn, cl, what);
            }
        }
}

/* KB_MLP_ROW_SECTOR on rows of x, G and U that end 16 bytes past a 32-byte
 * sector (hidden % 16 == 8): fused_wgmma never the swapped kernel, clusters
 * of 2 over 128 tokens at any count of m-blocks; fused on cublas_cat's path
 * in the measured boxes (sector_cat), the tile in clusters of 2 between them
 * (448, 896, 2048 measured ahead); whole-sector rows (4096, 4112) untouched. */
static void test_sector(void **state)
{
    (void)state;
    static const int hs[] = {4104, 1000, 8200, 2056}, ms[] = {64, 127, 128, 129, 200, 300, 384, 385, 448, 513, 575, 576,
                                                            640, 641, 768, 769, 896, 999, 1000, 1536, 1537, 2048, 4096};
    static const char *const devs[] = {"h100", "h200"};
    for (int dv = 0; dv < 2; dv++)
    for (int dt = 1; dt <= 2; dt++)
        for (size_t h = 0; h < sizeof hs / sizeof hs[0]; h++)
            for (size_t m = 0; m < sizeof ms / sizeof ms[0]; m++) {
                const int M = ms[m], H = hs[h], N = H == 1000 ? 3000 : 11000, fast = dv == 1;
                char what[64];
                snprintf(what, sizeof what, "%s dtype %d %dx%dx%d", devs[dv], dt, M, H, N);
                const kb_mlp_plan w = plan_ok(devs[dv], req(M, H, N, dt, KB_MLP_WGMMA));
                if (w.swap || HAS(w, KB_MLP_ROW_SWAP)) fail_msg("%s: the swapped kernel on a sector-misaligned row", what);
                assert_int_equal(w.wg, M <= 64 ? 1 : 2);
                assert_int_equal(w.cl, M > 128 ? 2 : 1);
                assert_int_equal(HAS(w, KB_MLP_ROW_SECTOR), M > 128);
                assert_int_equal(w.dyn, 0 + (M > 64 && M <= 128)); /* clusters of 1 with two warpgroups: dynamic */
                const kb_mlp_plan f = plan_ok(devs[dv], req(M, H, N, dt, KB_MLP_AUTO));
                const int box = fast ? sector_cat_fast(M, H) : sector_cat(M, H), cat = cublas_mid(M, H, N) || box;
                if ((f.variant == KB_MLP_CUBLAS_CAT) != cat)
                    fail_msg("%s: fused variant %d, expected %s", what, f.variant, cat ? "cublas_cat's path" : "the tile");
                if (cat && !cublas_mid(M, H, N)) { /* the device's row decides, and only it */
                    assert_true(HAS(f, fast ? KB_MLP_ROW_SECTOR_FAST : KB_MLP_ROW_SECTOR));
                    assert_false(HAS(f, fast ? KB_MLP_ROW_SECTOR : KB_MLP_ROW_SECTOR_FAST));
                }
                if (!fast) assert_false(HAS(f, KB_MLP_ROW_SECTOR_FAST));
                if (!cat) assert_int_equal(f.cl, w.cl);
            }
    /* the boxes' ends as measured, by hand; first the kernel column's reason (129 x 4104: CUBLAS_MID's box
     * too, its reason; the H200's SECTOR_FAST apart: cublas_cat at 300 x 1000) */
    static const struct {
        const char *dev;
        int M, H, N;
        const char *said;
    } why[] = {{"h100", 128, 4104, 11000, "cublas_cat (planner: rows past a 32-byte sector)"},
               {"h100", 129, 4104, 11000, "cublas_cat (planner: cuBLAS measured ahead)"},
               {"h200", 300, 1000, 3000, "cublas_cat (planner: rows past a 32-byte sector)"}};
    char buf[96];
    for (size_t i = 0; i < sizeof why / sizeof why[0]; i++) {
        const kb_mlp_plan c = plan_ok(why[i].dev, req(why[i].M, why[i].H, why[i].N, 2, KB_MLP_AUTO));
        assert_int_equal(c.variant, KB_MLP_CUBLAS_CAT);
        kb_mlp_plan_describe(&c, buf, sizeof buf);
        assert_string_equal(buf, why[i].said);
    }
    static const struct {
        const char *dev;
        int M, H, N, dt;
        kb_mlp_variant v;
    } ends[] = {
        {"h100", 448, 4104, 11000, 2, KB_MLP_WGMMA},
        {"h100", 300, 1000, 3000, 2, KB_MLP_WGMMA},
        {"h100", 768, 1000, 3000, 2, KB_MLP_CUBLAS_CAT},
        {"h100", 768, 4104, 11000, 2, KB_MLP_WGMMA},
        {"h100", 896, 4104, 11000, 2, KB_MLP_WGMMA},
        {"h100", 64, 4104, 11000, 2, KB_MLP_WGMMA},
        {"h100", 300, 2056, 5504, 2, KB_MLP_CUBLAS_CAT},
        {"h100", 1000, 2056, 5504, 2, KB_MLP_WGMMA},
        {"h100", 1000, 4104, 11000, 2, KB_MLP_CUBLAS_CAT},
        {"h200", 1000, 4104, 11000, 2, KB_MLP_WGMMA},
        {"h200", 1000, 1000, 3000, 1, KB_MLP_WGMMA},
        {"h200", 448, 1000, 3000, 2, KB_MLP_WGMMA},
        {"h200", 768, 1000, 3000, 2, KB_MLP_CUBLAS_CAT},
    };
    for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++)
        if (plan_ok(ends[i].dev, req(ends[i].M, ends[i].H, ends[i].N, ends[i].dt, KB_MLP_AUTO)).variant != ends[i].v)
            fail_msg("%s %dx%dx%d dtype %d: fused variant not %d", ends[i].dev, ends[i].M, ends[i].H, ends[i].N,
                     ends[i].dt, ends[i].v);
    /* BN by the wave model with the SECTOR row's efficiencies (1, 0.958, 0.916, 0.74), by hand: 2048 x 2056 x
     * 5504, 8 m-pairs: BN 128 43 n-blocks, 344 tiles on 66 clusters, 6 rounds, 768; 112 50, 400, 7, 818.4; 96
     * 58, 464, 8, 838.4; 64 86, 688, 11, 951.4 (BN_WAVE's weights: 768, 791.9, 783.7, 782.2: BN 128 too,
     * since BN 64's 0.90; with 0.955 it was 737.2, BN 64, measured 3% behind 128). 300 x 2056
     * x 5504, 2 m-pairs: 128 86 tiles, 2 rounds, 256; 112 100, 2, 233.8; 96 116, 2, 209.6; 64 172, 3, 259.5. */
    kb_mlp_plan b = plan_ok("h100", req(2048, 2056, 5504, 2, KB_MLP_WGMMA));
    expect_wgmma(&b, 2, 128, 2, "2048x2056x5504");
    assert_true(HAS(b, KB_MLP_ROW_SECTOR) && HAS(b, KB_MLP_ROW_BN_WAVE));
    b = plan_ok("h100", req(2048, 2048, 5504, 2, KB_MLP_WGMMA)); /* whole sectors: BN_WAVE's own weights */
    expect_wgmma(&b, 2, 128, 2, "2048x2048x5504");
    b = plan_ok("h100", req(300, 2056, 5504, 2, KB_MLP_WGMMA));
    expect_wgmma(&b, 2, 96, 2, "300x2056x5504");
    /* the boxes' hidden bounds, at the nearest sector widths either side (1016 | 1032, 2040 | 2056, 4088 | 4104) */
    static const struct {
        int M, H, cat;
    } hb[] = {{700, 1016, 1}, {700, 1032, 0}, {1200, 1016, 1}, {1200, 1032, 0}, {300, 2040, 0}, {300, 2056, 1},
              {1200, 4088, 0}, {1200, 4104, 1}};
    for (size_t i = 0; i < sizeof hb / sizeof hb[0]; i++)
        if ((plan_ok("h100", req(hb[i].M, hb[i].H, 11000, 1, KB_MLP_AUTO)).variant == KB_MLP_CUBLAS_CAT) != hb[i].cat)
            fail_msg("%dx%d fp16: expected %s", hb[i].M, hb[i].H, hb[i].cat ? "cublas_cat's path" : "the tile");
    /* both boxes: CUBLAS_MID's bit, not SECTOR's (300 x 8200 x 28672) */
    const kb_mlp_plan c = plan_ok("h100", req(300, 8200, 28672, 2, KB_MLP_AUTO));
    assert_true(HAS(c, KB_MLP_ROW_CUBLAS_MID) && !HAS(c, KB_MLP_ROW_SECTOR));
    /* a fixed tunable leaves the SECTOR row out: the CLUSTER row's parity (300: 3 m-blocks, clusters of 1) and
     * BN_WAVE's weights (2048 x 2056 x 5504 with cluster=2: BN 64), no SECTOR bit */
    static const int fix[] = {0, 1, 2, 3, 4}; /* bn, sched static, warpgroups 2, swap off, cluster 2 */
    for (size_t i = 0; i < sizeof fix / sizeof fix[0]; i++) {
        kb_mlp_req f = req(300, 4104, 11000, 2, KB_MLP_AUTO);
        if (fix[i] == 0) f.bn = 128;
        if (fix[i] == 1) f.sched = 1;
        if (fix[i] == 2) f.warpgroups = 2;
        if (fix[i] == 3) f.swap = 1;
        if (fix[i] == 4) f.cluster = 2;
        const kb_mlp_plan q = plan_ok("h100", f);
        assert_int_equal(q.variant, KB_MLP_WGMMA);
        assert_false(HAS(q, KB_MLP_ROW_SECTOR));
        if (fix[i] != 4) assert_int_equal(q.cl, 1);
    }
    /* 1536 x 4104 x 11000, 6 m-pairs on 66 clusters: BN 128 516 tiles, 8 rounds, 1024; 112 594, 9, 1018.2 by
     * BN_WAVE's weights (112 wins), 1052.2 by the SECTOR row's (128 wins): a fixed cluster leaves BN to BN_WAVE */
    expect_wgmma((b = plan_ok("h100", req(1536, 4104, 11000, 2, KB_MLP_WGMMA)), &b), 2, 128, 2, "1536x4104x11000");
    assert_true(HAS(b, KB_MLP_ROW_SECTOR));
    kb_mlp_req f2 = req(1536, 4104, 11000, 2, KB_MLP_WGMMA);
    f2.cluster = 2;
    expect_wgmma((b = plan_ok("h100", f2), &b), 2, 112, 2, "1536x4104x11000 cluster=2");
    assert_false(HAS(b, KB_MLP_ROW_SECTOR));
    /* whole-sector rows keep the swapped kernel and the CLUSTER row's parity */
    static const struct {
        int tokens, hidden, inter;
    } whole[] = {{1000, 4112, 11008}, {1000, 4096, 11008}, {300, 1024, 11008}, {300, 4096, 11008}};
    for (size_t i = 0; i < sizeof whole / sizeof whole[0]; i++) {
        const kb_mlp_plan p = plan_ok("h100", req(whole[i].tokens, whole[i].hidden, whole[i].inter, 2, KB_MLP_WGMMA));
        assert_true(p.swap && HAS(p, KB_MLP_ROW_SWAP));
        assert_false(HAS(p, KB_MLP_ROW_SECTOR));
    }
    assert_int_equal(plan_ok("h100", unswapped(req(300, 4096, 11008, 2, KB_MLP_WGMMA))).cl, 1); /* 3 m-blocks */
    /* a fixed tunable is the user's: swap=on and cluster=1 still run there */
    kb_mlp_req r = req(1000, 4104, 11008, 2, KB_MLP_WGMMA);
    r.swap = 2;
    assert_int_equal(plan_ok("h100", r).swap, 1);
    r = req(576, 4104, 11000, 2, KB_MLP_AUTO);
    r.cluster = 1;
    const kb_mlp_plan c1 = plan_ok("h100", r);
    assert_int_equal(c1.variant, KB_MLP_WGMMA);
    assert_int_equal(c1.cl, 1);
    assert_false(HAS(c1, KB_MLP_ROW_SECTOR));
}

/* ---- other devices, dtypes, odd shapes ----------------------------------------------- */

static void test_variants(void **state)
{
    (void)state;
    static const char *const devs[] = {"h100", "a100", "l40s"};
    for (int d = 0; d < 3; d++)
        for (int dt = 0; dt <= 2; dt++)
            for (int t = 0; t < NTOK; t++)
                for (int s = 0; s < NSHAPE + 3; s++) {
                    /* the MLP's shapes, and odd ones: hidden not a multiple of 8 (TMA cannot), inter not (no TMA store) */
                    static const int odd[3][2] = {{1000, 2730}, {1001, 2736}, {257, 513}};
                    const int H = s < NSHAPE ? shapes[s][0] : odd[s - NSHAPE][0];
                    const int N = s < NSHAPE ? shapes[s][1] : odd[s - NSHAPE][1];
                    kb_mlp_plan p = plan_ok(devs[d], req(toks[t], H, N, dt, KB_MLP_AUTO));
                    kb_mlp_variant want = dt == 0 ? KB_MLP_F32 : d == 0 && H % 8 == 0 ? KB_MLP_WGMMA : KB_MLP_MMA;
                    if (want == KB_MLP_WGMMA && (cublas_mid(toks[t], H, N) || sector_cat(toks[t], H))) want = KB_MLP_CUBLAS_CAT;
                    if (p.variant != want)
                        fail_msg("%s dtype %d %dx%dx%d: variant %d, expected %d", devs[d], dt, toks[t], H, N, p.variant, want);
                    if (want == KB_MLP_MMA) {
                        assert_int_equal(p.vec, H % 8 == 0);
                        assert_true(HAS(p, KB_MLP_ROW_MMA_VEC) && HAS(p, KB_MLP_ROW_HOPPER));
                        assert_int_equal(HAS(p, KB_MLP_ROW_TMA_PITCH), d == 0);
                    }
                    if (want == KB_MLP_WGMMA) assert_int_equal(p.tma_store, N % 8 == 0);
                    if (want == KB_MLP_F32) assert_int_equal(p.rows, 1u << KB_MLP_ROW_F32);
                    /* the named variants: what they take, and the one-line reason where not */
                    kb_mlp_plan q;
                    char why[256];
                    kb_mlp_req r = req(toks[t], H, N, dt, KB_MLP_WGMMA);
                    assert_int_equal(kb_mlp_plan_make(&r, dev(devs[d]), NULL, NULL, &q, why, sizeof why) == 0,
                                     want == KB_MLP_WGMMA || want == KB_MLP_CUBLAS_CAT);
                    r.want = KB_MLP_MMA;
                    assert_int_equal(kb_mlp_plan_make(&r, dev(devs[d]), NULL, NULL, &q, why, sizeof why) == 0, dt != 0);
                    if (dt) assert_int_equal(q.variant, KB_MLP_MMA);
                }
    /* the reasons */
    assert_non_null(strstr(refused("a100", req(2048, 1024, 11008, 2, KB_MLP_WGMMA)), "Hopper-only"));
    assert_non_null(strstr(refused("a100", req(2048, 1024, 11008, 2, KB_MLP_WGMMA)), "sm_80"));
    assert_non_null(strstr(refused("l40s", req(2048, 1024, 11008, 1, KB_MLP_WGMMA)), "sm_89"));
    assert_non_null(strstr(refused("h100", req(300, 1001, 2736, 2, KB_MLP_WGMMA)), "hidden % 8"));
    assert_non_null(strstr(refused("h100", req(300, 1024, 2736, 0, KB_MLP_WGMMA)), "fp32"));
    assert_non_null(strstr(refused("a100", req(300, 1024, 2736, 0, KB_MLP_MMA)), "fp32"));
    char buf[64];
    kb_mlp_plan p = plan_ok("h100", req(300, 1024, 1003, 2, KB_MLP_AUTO));
    kb_mlp_plan_describe(&p, buf, sizeof buf);
    assert_string_equal(buf, "fused_wgmma wg=2 bn=64 cl=1 reg-store dynamic"); /* 48 tiles of 64: one round; SCHED */
    p = plan_ok("a100", req(300, 1024, 1003, 2, KB_MLP_AUTO));
    kb_mlp_plan_describe(&p, buf, sizeof buf);
    assert_string_equal(buf, "fused_mma vec");
    p = plan_ok("h100", req(300, 1001, 1003, 1, KB_MLP_AUTO));
    kb_mlp_plan_describe(&p, buf, sizeof buf);
    assert_string_equal(buf, "fused_mma scalar");
    p = plan_ok("h100", req(300, 1024, 1003, 0, KB_MLP_AUTO));
    kb_mlp_plan_describe(&p, buf, sizeof buf);
    assert_string_equal(buf, "fused_f32 cuda-cores");
}

/* ---- tunables -------------------------------------------------------------------------- */

static kb_mlp_req forced(int tokens, int dtype, kb_mlp_variant want, int bn, int cl, int wg)
{
    kb_mlp_req r = req(tokens, 1024, 11008, dtype, want);
    r.bn = bn, r.cluster = cl, r.warpgroups = wg;
    return r;
}

static void test_tunables(void **state)
{
    (void)state;
    const kb_mlp_variant both[] = {KB_MLP_AUTO, KB_MLP_WGMMA};
    for (int k = 0; k < 2; k++) {
        const kb_mlp_variant w = both[k];
        kb_mlp_plan p = plan_ok("h100", forced(2048, 2, w, 96, 0, 0)); /* BN forced, the cluster rule stays */
        expect_wgmma(&p, 2, 96, 2, "bn=96");
        assert_false(HAS(p, KB_MLP_ROW_BN_WAVE));
        assert_true(HAS(p, KB_MLP_ROW_CLUSTER));
        p = plan_ok("h100", forced(2048, 2, w, 0, 1, 0)); /* clusters of 1: the wave model over 132 */
        expect_wgmma(&p, 2, 112, 1, "cluster=1");
        assert_int_equal(p.clusters, 132);
        assert_int_equal(p.group, 16);
        p = plan_ok("h100", forced(300, 1, w, 0, 2, 0)); /* clusters of 2 over 3 m-blocks, as asked */
        expect_wgmma(&p, 2, 112, 2, "300 cluster=2");
        p = plan_ok("h100", forced(2048, 1, w, 0, 0, 1)); /* one warpgroup at 2048 tokens: BN 128 (21 rounds; 112: 24) */
        expect_wgmma(&p, 1, 128, 1, "warpgroups=1");
        assert_int_equal(p.grid, 132);
        p = plan_ok("h100", forced(16, 2, w, 128, 1, 1));
        expect_wgmma(&p, 1, 128, 1, "warpgroups=1 bn=128");
        p = plan_ok("h100", forced(16, 2, w, 0, 0, 2)); /* two warpgroups at decode: one m-block, clusters of 1 */
        expect_wgmma(&p, 2, 96, 1, "decode warpgroups=2");   /* 115 tiles of 96: one round */
        p = plan_ok("h100", forced(4096, 2, w, 64, 2, 2));
        expect_wgmma(&p, 2, 64, 2, "all three");
        assert_int_equal(p.stages, 6);
        /* combinations the kernels do not have: n/a, with the reason */
        p = plan_ok("h100", forced(2048, 2, w, 112, 0, 1)); /* one warpgroup takes every BN */
        expect_wgmma(&p, 1, 112, 1, "warpgroups=1 bn=112");
        p = plan_ok("h100", forced(16, 2, w, 96, 0, 1));
        expect_wgmma(&p, 1, 96, 1, "warpgroups=1 bn=96");
        assert_int_equal(p.stages, 6);
        assert_non_null(strstr(refused("h100", forced(16, 2, w, 0, 2, 1)), "clusters of 1 only"));
        assert_non_null(strstr(refused("h100", forced(2048, 2, w, 80, 0, 0)), "bn=80"));
        assert_non_null(strstr(refused("h100", forced(2048, 2, w, 0, 4, 0)), "cluster=4"));
        assert_non_null(strstr(refused("h100", forced(2048, 2, w, 0, 0, 3)), "warpgroups=3"));
    }
    /* swap: on plans the swapped kernel (bn auto or fixed to its token tiles),
     * off the old tile; what it cannot take is refused with the reason */
    for (int k = 0; k < 2; k++) {
        kb_mlp_req r = forced(300, 2, both[k], 0, 0, 0);
        r.swap = 2;
        kb_mlp_plan p = plan_ok("h100", r);
        expect_swap(&p, 104, 1, "swap=on"); /* the cluster auto: 1, the SWAP row's */
        assert_false(HAS(p, KB_MLP_ROW_SWAP)); /* fixed, not the row's */
        r.cluster = 1; /* clusters of 1 fixed: bn by 132 CTAs (3 blocks of 104 x 86, 2 rounds) */
        p = plan_ok("h100", r);
        if (!p.swap || p.cl != 1 || p.bn != 104 || p.tiles != 258 || p.grid != 132)
            fail_msg("swap=on cluster=1: swap %d cl %d bn %d tiles %ld grid %d", p.swap, p.cl, p.bn, p.tiles, p.grid);
        r.cluster = 0;
        r.bn = 80;
        expect_swap((p = plan_ok("h100", r), &p), 80, 1, "swap=on bn=80");
        assert_int_equal(p.stages, 5);
        r.tokens = 1;
        expect_swap((p = plan_ok("h100", r), &p), 80, 1, "swap=on 1 token");
        assert_int_equal(p.tiles, 86);
        r.tokens = 300, r.bn = 64;
        assert_non_null(strstr(refused("h100", r), "bn=64"));
        r.bn = 0, r.warpgroups = 1;
        assert_non_null(strstr(refused("h100", r), "two warpgroups"));
        r.warpgroups = 0, r.sched = 2;
        assert_non_null(strstr(refused("h100", r), "scheduled statically"));
        /* clusters of 2: tiles of two token blocks (300 x 11008, by hand: bn 128, 112, 104 3 blocks, 96 and 80 4,
         * so 2 pairs x 86 = 172 cluster tiles on 66 clusters, 3 rounds each; x bn / eff 384, 339.4, 316.8, 293.9,
         * 250: bn 80), 132 CTAs */
        r.sched = 0, r.cluster = 2;
        p = plan_ok("h100", r);
        if (p.variant != KB_MLP_WGMMA || !p.swap || p.cl != 2 || p.bn != 80 || p.tiles != 172 || p.clusters != 66 ||
            p.grid != 132)
            fail_msg("swap=on cluster=2: variant %d swap %d cl %d bn %d tiles %ld clusters %d grid %d", p.variant, p.swap,
                     p.cl, p.bn, p.tiles, p.clusters, p.grid);
        char d2[96];
        kb_mlp_plan_describe(&p, d2, sizeof d2);
        assert_string_equal(d2, "fused_wgmma swap-ab bn=80 cl=2 tma-store");
        r.tokens = 1; /* one token block: a cluster tile, its second CTA wholly past the token */
        p = plan_ok("h100", r);
        assert_int_equal(p.tiles, 86);
        assert_int_equal(p.grid, 132);
        r.tokens = 300, r.cluster = 0, r.inter = 1003;
        assert_non_null(strstr(refused("h100", r), "inter % 8"));
        r.inter = 11008, r.swap = 3;
        assert_non_null(strstr(refused("h100", r), "swap=3"));
        r.swap = 1;
        p = plan_ok("h100", r);
        expect_wgmma(&p, 2, 128, 1, "swap=off");
        assert_false(p.swap);
        r.swap = 2;
        assert_non_null(strstr(refused("a100", r), k ? "Hopper-only" : "runs fused_mma"));
        r.dtype = 0;
        assert_non_null(strstr(refused("h100", r), k ? "fp32" : "swap"));
    }
    /* fused where the wgmma kernel does not run: the tunables are refused, not ignored */
    assert_non_null(strstr(refused("a100", forced(2048, 2, KB_MLP_AUTO, 112, 0, 0)), "runs fused_mma"));
    assert_non_null(strstr(refused("l40s", forced(2048, 2, KB_MLP_AUTO, 0, 2, 0)), "runs fused_mma"));
    kb_mlp_req r = forced(2048, 2, KB_MLP_AUTO, 0, 0, 2);
    r.hidden = 1001;
    assert_non_null(strstr(refused("h100", r), "hidden % 8 != 0"));
    assert_non_null(strstr(refused("h100", forced(2048, 0, KB_MLP_AUTO, 128, 0, 0)), "fused_f32"));
    assert_non_null(strstr(refused("h100", forced(2048, 2, KB_MLP_MMA, 128, 0, 0)), "fused_mma takes no"));
}

/* sched: auto and static keep tile t on CTA t mod the grid; dynamic hands
 * tiles out from the counter, in clusters of 1 (the cluster rule gives way,
 * a forced cluster of 2 is refused), and the kernel column says so */
static void test_sched(void **state)
{
    (void)state;
    char buf[160];
    for (int sched = 0; sched <= 2; sched++) {
        kb_mlp_req r = forced(2048, 2, KB_MLP_WGMMA, 0, 0, 0);
        r.sched = sched;
        kb_mlp_plan p = plan_ok("h100", r);
        assert_int_equal(p.dyn, sched == 2);
        expect_wgmma(&p, 2, 112, sched == 2 ? 1 : 2, "sched"); /* dynamic: clusters of 1, the same BN here */
        kb_mlp_plan_describe(&p, buf, sizeof buf);
        assert_int_equal(strstr(buf, " dynamic") != NULL, sched == 2);
    }
    kb_mlp_req r = forced(160, 2, KB_MLP_AUTO, 0, 0, 0);
    r.hidden = 4096;
    assert_int_equal(plan_ok("h100", r).variant, KB_MLP_CUBLAS_CAT); /* auto: CUBLAS_MID's path */
    r.sched = 2; /* sched alone forces the wgmma kernel */
    kb_mlp_plan p = plan_ok("h100", r);
    assert_int_equal(p.variant, KB_MLP_WGMMA);
    assert_true(p.dyn);
    assert_int_equal(p.cl, 1);
    r.bn = 128, r.warpgroups = 2;
    p = plan_ok("h100", r);
    kb_mlp_plan_describe(&p, buf, sizeof buf);
    assert_string_equal(buf, "fused_wgmma wg=2 bn=128 cl=1 tma-store dynamic");
    r = forced(2048, 2, KB_MLP_WGMMA, 0, 2, 0);
    r.sched = 2;
    assert_non_null(strstr(refused("h100", r), "sched=dynamic runs clusters of 1"));
    /* KB_MLP_ROW_SCHED, sched auto: dynamic exactly where two warpgroups run
     * in clusters of 1 (whatever picked the cluster), else static */
    static const struct { int tokens, hidden, wg, cl, bn, cluster; } at[] = {
        {1100, 1024, 2, 1, 0, 0},  /* 9 m-blocks: clusters of 1 -> dynamic (past the SWAP row) */
        {128, 4096, 2, 1, 0, 0},   /* one m-block */
        {1281, 4096, 2, 1, 0, 0},  /* 11 m-blocks, odd: clusters of 1 -> dynamic (past the SWAP row) */
        {2048, 1024, 2, 2, 0, 0},  /* clusters of 2: static */
        {40, 4096, 1, 1, 0, 0},    /* one warpgroup: static */
        {2048, 1024, 2, 1, 0, 1},  /* cluster=1 fixed: dynamic */
        {2048, 1024, 2, 1, 112, 1} /* and bn fixed too */
    };
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
        r = forced(at[i].tokens, 2, KB_MLP_AUTO, at[i].bn, at[i].cluster, 0);
        r.hidden = at[i].hidden;
        p = plan_ok("h100", r);
        expect_wgmma(&p, at[i].wg, p.bn, at[i].cl, "sched auto");
        assert_true(HAS(p, KB_MLP_ROW_SCHED));
        assert_int_equal(p.dyn, at[i].wg == 2 && at[i].cl == 1);
    }
    /* CUBLAS_MID's wide box: 257-352 tokens from inter 13824 at hidden >= 5120 (its ends cuBLAS's, 256 and 353
     * not), but not at 4096 x 14336, where the swapped kernel led */
    static const struct {
        int M, H, N, cat;
    } wide[] = {{257, 5120, 13824, 1}, {300, 7168, 18944, 1}, {352, 6144, 16384, 1}, {256, 5120, 13824, 0},
                {353, 7168, 18944, 0},  {300, 4096, 14336, 0}, {300, 5120, 13816, 0}, {300, 5104, 13824, 0}};
    for (size_t i = 0; i < sizeof wide / sizeof wide[0]; i++)
        if ((plan_ok("h100", req(wide[i].M, wide[i].H, wide[i].N, 2, KB_MLP_AUTO)).variant == KB_MLP_CUBLAS_CAT) !=
            wide[i].cat)
            fail_msg("%dx%dx%d: expected %s", wide[i].M, wide[i].H, wide[i].N, wide[i].cat ? "cublas_cat's path" : "wgmma");
    /* CUBLAS_MID's tensor-parallel box: 65-128 tokens at inter <= 3584 from hidden 3072 (measured: 65, 96, 128 x
     * 4096 x 2752 and 3584, 85 x 3072 x 2816); 64 tokens (one warpgroup), 129 at 3072 (the older boxes start at
     * hidden 4096), hidden 2048 and inter 5504 not */
    static const struct {
        int M, H, N, cat;
    } tp[] = {{65, 4096, 2752, 1}, {128, 4096, 3584, 1}, {85, 3072, 2816, 1}, {96, 8192, 3584, 1},
              {64, 4096, 2752, 0}, {129, 3072, 2752, 0}, {96, 2048, 2816, 0}, {96, 4096, 3592, 0},
              {128, 4096, 5504, 0}, {96, 3064, 2752, 0}};
    for (size_t i = 0; i < sizeof tp / sizeof tp[0]; i++)
        for (int dt = 1; dt <= 2; dt++) {
            const kb_mlp_plan q = plan_ok("h100", req(tp[i].M, tp[i].H, tp[i].N, dt, KB_MLP_AUTO));
            if ((q.variant == KB_MLP_CUBLAS_CAT) != tp[i].cat || (int)HAS(q, KB_MLP_ROW_CUBLAS_MID) != tp[i].cat)
                fail_msg("%dx%dx%d dtype %d: expected %s", tp[i].M, tp[i].H, tp[i].N, dt,
                         tp[i].cat ? "cublas_cat's path" : "a wgmma kernel");
        }
    /* CUBLAS_MID's ends at hidden 4096: 129 and 160 cuBLAS's, 161 the swapped kernel (static) */
    for (int t = 129; t <= 161; t++) {
        r = forced(t, 2, KB_MLP_AUTO, 0, 0, 0);
        r.hidden = 4096;
        p = plan_ok("h100", r);
        if (t <= 160) {
            assert_int_equal(p.variant, KB_MLP_CUBLAS_CAT);
        } else {
            expect_swap(&p, 80, 1, "161x4096");
            assert_false(HAS(p, KB_MLP_ROW_SCHED));
        }
    }
    r = forced(2048, 0, KB_MLP_AUTO, 0, 0, 0);
    r.sched = 1; /* fp32: no wgmma kernel to schedule */
    assert_non_null(strstr(refused("h100", r), "sched"));
    r = forced(2048, 2, KB_MLP_WGMMA, 0, 0, 0);
    r.sched = 3;
    assert_non_null(strstr(refused("h100", r), "sched=3"));
}

/* ---- occupancy ------------------------------------------------------------------------- */

static int occ_calls;
static int occ_none(void *ctx, int dtype, int wg, int bn, int cl, int swap)
{
    (void)ctx, (void)dtype, (void)wg, (void)bn, (void)cl, (void)swap;
    occ_calls++;
    return 0;
}
/* 64 clusters of 2 (a part whose GPCs leave SMs over), 128 of 1 */
static int occ_64(void *ctx, int dtype, int wg, int bn, int cl, int swap)
{
    (void)ctx, (void)dtype, (void)wg, (void)bn, (void)swap;
    occ_calls++;
    return cl == 2 ? 64 : 128;
}

/* the tiles fit (132 of 1, 66 of 2), the swapped kernel nowhere */
static int occ_noswap(void *ctx, int dtype, int wg, int bn, int cl, int swap)
{
    (void)ctx, (void)dtype, (void)wg, (void)bn;
    return swap ? 0 : 132 / cl;
}

static void test_occupancy(void **state)
{
    (void)state;
    const kb_devattr *h = dev("h100");
    /* the model: over 190 KiB of shared memory a CTA, so one an SM */
    static const int tiles[][2] = {{1, 64}, {1, 128}, {2, 64}, {2, 96}, {2, 112}, {2, 128}};
    for (int i = 0; i < 6; i++) {
        const int wg = tiles[i][0], bn = tiles[i][1];
        assert_true(KB_MLP_WG_SMEM(wg, bn) > 190 * 1024 && KB_MLP_WG_SMEM(wg, bn) <= 221 * 1024);
        assert_int_equal(kb_mlp_clusters_model(h, wg, bn, 1), 132);
        assert_int_equal(kb_mlp_clusters_model(h, wg, bn, 2), 66);
        /* over the A100's and L40S's 163 / 99 KiB a block: nothing fits */
        assert_int_equal(kb_mlp_clusters_model(dev("a100"), wg, bn, 1), 0);
        assert_int_equal(kb_mlp_clusters_model(dev("l40s"), wg, bn, 1), 0);
    }
    /* Shape<>'s figures (the comments in fused_wgmma.cu) */
    assert_int_equal(KB_MLP_WG_STAGES(2, 128), 4);
    assert_int_equal(KB_MLP_WG_STAGES(2, 112), 5);
    assert_int_equal(KB_MLP_WG_STAGES(2, 96), 5);
    assert_int_equal(KB_MLP_WG_STAGES(2, 64), 6);
    assert_int_equal(KB_MLP_WG_STAGES(1, 64), 9);
    assert_int_equal(KB_MLP_WG_STAGES(1, 128), 5);
    assert_int_equal(KB_MLP_WG_SMEM(2, 112), 226304);
    /* the runtime's answer replaces the model: with 64 clusters of 2 the seed's
     * shape takes BN 128 (11 rounds, 1408) over 112 (13, 1470.7) */
    kb_mlp_req r = req(2048, 1024, 11008, 2, KB_MLP_AUTO);
    kb_mlp_plan p;
    char why[256];
    occ_calls = 0;
    assert_int_equal(kb_mlp_plan_make(&r, h, occ_64, NULL, &p, why, sizeof why), 0);
    expect_wgmma(&p, 2, 128, 2, "64 clusters");
    assert_int_equal(p.clusters, 64);
    assert_int_equal(p.grid, 128);
    assert_true(occ_calls >= 5); /* four widths, then the chosen one */
    /* nothing fits: fused falls back to mma.sync, fused_wgmma is n/a */
    assert_int_equal(kb_mlp_plan_make(&r, h, occ_none, NULL, &p, why, sizeof why), 0);
    assert_int_equal(p.variant, KB_MLP_MMA);
    assert_true(HAS(p, KB_MLP_ROW_OCCUPANCY));
    r.want = KB_MLP_WGMMA;
    assert_int_not_equal(kb_mlp_plan_make(&r, h, occ_none, NULL, &p, why, sizeof why), 0);
    assert_non_null(strstr(why, "fits"));
    /* ... and fused with a tunable forced does not fall back either */
    r.want = KB_MLP_AUTO;
    r.bn = 128;
    assert_int_not_equal(kb_mlp_plan_make(&r, h, occ_none, NULL, &p, why, sizeof why), 0);
    /* the swapped kernel's model: 181-221 KiB, so one CTA an SM on the H100,
     * none on the A100 or L40S */
    static const int sbns[] = {80, 96, 104, 112, 128}, sstages[] = {5, 5, 4, 4, 4};
    for (int i = 0; i < 5; i++) {
        assert_true(KB_MLP_SW_SMEM(sbns[i]) >= 181 * 1024 && KB_MLP_SW_SMEM(sbns[i]) <= 221 * 1024);
        assert_int_equal(KB_MLP_SW_STAGES(sbns[i]), sstages[i]);
        assert_int_equal(kb_mlp_swap_model(h, sbns[i], 1), 132);
        assert_int_equal(kb_mlp_swap_model(h, sbns[i], 2), 66);
        assert_int_equal(kb_mlp_swap_model(dev("a100"), sbns[i], 1), 0);
        assert_int_equal(kb_mlp_swap_model(dev("l40s"), sbns[i], 1), 0);
    }
    /* the runtime's answer for it: where none fits, the SWAP row keeps the
     * tile, and swap=on is n/a saying so */
    r = req(300, 1024, 11008, 2, KB_MLP_AUTO);
    assert_int_equal(kb_mlp_plan_make(&r, h, occ_noswap, NULL, &p, why, sizeof why), 0);
    expect_wgmma(&p, 2, 128, 1, "no swapped CTA fits");
    assert_false(HAS(p, KB_MLP_ROW_SWAP));
    assert_int_equal(kb_mlp_plan_make(&r, h, NULL, NULL, &p, why, sizeof why), 0);
    expect_swap(&p, 104, 1, "the model"); /* and where it fits, the row's */
    r.swap = 2;
    assert_int_not_equal(kb_mlp_plan_make(&r, h, occ_noswap, NULL, &p, why, sizeof why), 0);
    assert_non_null(strstr(why, "swapped"));
    assert_non_null(strstr(why, "fits no SM"));
}

/* ---- the table ------------------------------------------------------------------------- */

/* the plan of a case with down fixed (0 auto, 1 cublas, 2 splitk) */
static kb_mlp_req with_down(int tokens, int hidden, int inter, int dtype, kb_mlp_variant want, int down)
{
    kb_mlp_req r = req(tokens, hidden, inter, dtype, want);
    r.down = down;
    return r;
}

/* down_splitk's grid: splits K ranges of kchunk columns (0: not checked), grid blocks, per_sm an SM */
static void expect_down_grid(const kb_mlp_plan *p, int splits, int kchunk, int grid, int per_sm)
{
    assert_int_equal(p->dsplit.splits, splits);
    if (kchunk) assert_int_equal(p->dsplit.kchunk, kchunk);
    assert_int_equal(p->dsplit.grid, grid);
    assert_int_equal(p->dsplit.per_sm, per_sm);
}

/* KB_MLP_ROW_DOWN: down_splitk where it was measured ahead (1-16 tokens,
 * hidden >= 1024 and inter >= 2816, but not hidden 3072-8191 below inter
 * 5504), cuBLAS elsewhere; its grid about one block an SM; --down fixed; n/a
 * where the kernel cannot run */
static void test_down(void **state)
{
    (void)state;
    static const struct {
        int tokens, hidden, inter, dtype, down;
    } cases[] = {
        {1, 4096, 11008, 2, 1},  {8, 4096, 11008, 1, 1},  {9, 4096, 11008, 2, 1},  {16, 4096, 11008, 2, 1},
        {1, 4096, 28672, 2, 1},  {8, 4096, 28672, 1, 1},  {9, 4096, 28672, 2, 1},  {16, 4096, 28672, 1, 1},
        {8, 4096, 14336, 2, 1},  {16, 4096, 14336, 2, 1}, {1, 8192, 11008, 1, 1},  {12, 8192, 11008, 2, 1},
        {16, 8192, 28672, 2, 1}, {16, 8192, 14336, 1, 1}, {1, 1024, 11008, 2, 1},  {16, 1024, 11008, 2, 1},
        {16, 2048, 2816, 2, 1},  {1, 1024, 2816, 1, 1},   {16, 8192, 2816, 2, 1},  {16, 4096, 5504, 2, 1},
        {16, 3072, 2816, 2, 0},  {1, 4096, 2816, 1, 0},   {16, 4096, 5496, 2, 0},  {1, 4096, 5504, 2, 1},
        {1, 1016, 11008, 2, 0},  {16, 2048, 2808, 2, 0},  {16, 8192, 2808, 2, 0},  {16, 2048, 1024, 2, 0},
        {8, 4096, 11004, 2, 0},  {17, 8192, 28672, 2, 0}, {1, 4096, 11008, 0, 0}, {64, 8192, 28672, 2, 0},
        {16, 1032, 4000, 1, 1},  {3, 1032, 4000, 2, 1},   {1, 4104, 1000, 2, 0},   {3, 4104, 1003, 1, 0},
        {3, 4104, 4000, 2, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kb_mlp_plan p = plan_ok("h100", req(cases[i].tokens, cases[i].hidden, cases[i].inter, cases[i].dtype,
                                           KB_MLP_AUTO));
        if (p.down != cases[i].down)
            fail_msg("%dx%dx%d dtype %d: down %d, expected %d", cases[i].tokens, cases[i].hidden, cases[i].inter,
                     cases[i].dtype, p.down, cases[i].down);
        /* the row decides wherever the kernel could run after fused_wgmma */
        const int could = cases[i].tokens <= 16 && cases[i].inter % 8 == 0 && cases[i].dtype != 0;
        assert_int_equal(HAS(p, KB_MLP_ROW_DOWN), could);
    }
    /* the grid: 64 row blocks x 4 K ranges of 43 k-blocks at 4096 x 11008,
     * two blocks an SM (one an SM would split K in 2 already); 16 x 16 at 1024
     * (ranges of 11 k-blocks, the last of 7), two an SM: 8 ranges of every row
     * block are fewer blocks than SMs, so up to 16 of 11 k-blocks or more;
     * 128 x 1 at 8192, one an SM (no split) */
    kb_mlp_plan p = plan_ok("h100", req(1, 4096, 11008, 2, KB_MLP_AUTO));
    assert_int_equal(p.down, 1);
    expect_down_grid(&p, 4, 43 * 64, 256, 2);
    p = plan_ok("h100", with_down(16, 1024, 11008, 2, KB_MLP_AUTO, 2));
    assert_int_equal(p.down, 1);
    expect_down_grid(&p, 16, 11 * 64, 256, 2);
    assert_false(HAS(p, KB_MLP_ROW_DOWN)); /* fixed, not the row's */
    /* x 1024 past 8 ranges only while each keeps 11 k-blocks: 8192 12 of 11,
     * 28672 16 of 28; 5504 (86 k-blocks) and 2816 stay at 8, one an SM */
    p = plan_ok("h100", req(8, 1024, 8192, 2, KB_MLP_AUTO));
    expect_down_grid(&p, 12, 11 * 64, 192, 2);
    p = plan_ok("h100", req(16, 1024, 28672, 2, KB_MLP_AUTO));
    expect_down_grid(&p, 16, 28 * 64, 256, 2);
    p = plan_ok("h100", req(1, 1024, 5504, 2, KB_MLP_AUTO));
    expect_down_grid(&p, 8, 11 * 64, 128, 1);
    p = plan_ok("h100", req(16, 1024, 2816, 2, KB_MLP_AUTO));
    expect_down_grid(&p, 8, 6 * 64, 128, 1);
    /* kbench check's 16-range shape (forced): 16 row blocks (the last 40
     * rows) x 16 ranges of 11 k-blocks (the last of 7), two an SM */
    p = plan_ok("h100", with_down(9, 1000, 11000, 2, KB_MLP_AUTO, 2));
    expect_down_grid(&p, 16, 11 * 64, 256, 2);
    /* more than 8 splits two an SM only (down_splitk.cu builds no other),
     * 16 at most, wherever the kernel is forced */
    static const int inters[] = {168, 1000, 2816, 5504, 11008, 28672};
    for (int h = 64; h <= 4160; h += 88)
        for (size_t i = 0; i < sizeof inters / sizeof *inters; i++) {
            p = plan_ok("h100", with_down(16, h, inters[i], 2, KB_MLP_AUTO, 2));
            if (p.down != 1) continue;
            assert_in_range(p.dsplit.splits, 1, KB_MLP_DOWN_MAX_SPLITS);
            if (p.dsplit.splits > KB_MLP_DOWN_SPLITS) assert_int_equal(p.dsplit.per_sm, 2);
            assert_int_equal(p.dsplit.grid, (h + 63) / 64 * p.dsplit.splits);
        }
    /* kbench check's shape at two an SM: 33 row blocks x 5 ranges of 2 k-blocks (one an SM: 4 ranges) */
    p = plan_ok("h100", with_down(16, 2056, 640, 2, KB_MLP_AUTO, 2));
    expect_down_grid(&p, 5, 0, 165, 2);
    p = plan_ok("h100", req(16, 8192, 28672, 2, KB_MLP_AUTO));
    expect_down_grid(&p, 1, 0, 128, 1);
    /* kbench check's forced shape of one range: 129 row blocks x 1 */
    p = plan_ok("h100", with_down(16, 8200, 168, 2, KB_MLP_AUTO, 2));
    expect_down_grid(&p, 1, 0, 129, 1);
    /* kbench check's planned shape: 17 row blocks x 8 ranges of 8 k-blocks
     * (8 ranges of 17 row blocks fill the SMs: no more), two an SM */
    p = plan_ok("h100", req(16, 1032, 4000, 2, KB_MLP_AUTO));
    expect_down_grid(&p, KB_MLP_DOWN_SPLITS, 8 * 64, 136, 2);
    /* hidden 4352: 68 row blocks fill 132 SMs badly at any split (best at
     * inter 28672: 7 ranges of 64 k-blocks, 476 blocks in 2 waves of two an
     * SM, 90% busy), and down_splitk still led cuBLAS there by 3-4% */
    p = plan_ok("h100", req(1, 4352, 28672, 2, KB_MLP_AUTO));
    assert_int_equal(p.down, 1);
    assert_true(HAS(p, KB_MLP_ROW_DOWN));
    expect_down_grid(&p, 7, 64 * 64, 476, 2);
    /* after fused_mma (Hopper, hidden % 8 != 0): cuBLAS unless forced (no
     * overlap there, not measured) */
    p = plan_ok("h100", req(1, 8196, 28672, 2, KB_MLP_AUTO));
    assert_int_equal(p.variant, KB_MLP_MMA);
    assert_int_equal(p.down, 0);
    assert_false(HAS(p, KB_MLP_ROW_DOWN));
    assert_int_equal(plan_ok("h100", with_down(1, 8196, 28672, 2, KB_MLP_AUTO, 2)).down, 1);
    /* a K range never empty: 8 columns, one k-block */
    p = plan_ok("h100", with_down(1, 64, 8, 1, KB_MLP_WGMMA, 2));
    expect_down_grid(&p, 1, 0, 1, 1);
    /* cublas fixed: never the kernel */
    assert_int_equal(plan_ok("h100", with_down(1, 8192, 28672, 2, KB_MLP_AUTO, 1)).down, 0);
    /* splitk fixed where it cannot run: n/a, saying why */
    static const struct {
        const char *dev;
        int tokens, inter, dtype, down;
        const char *why;
    } na[] = {
        {"h100", 17, 11008, 2, 2, "tokens > 16"}, {"h100", 1, 11008, 0, 2, "fp32"},
        {"h100", 1, 11004, 2, 2, "inter % 8"},    {"a100", 1, 28672, 2, 2, "not Hopper"},
        {"h100", 1, 28672, 2, 4, "down=4"},       {"h100", 300, 28672, 0, 3, "down=cublaslt takes bf16/fp16"},
    };
    for (size_t i = 0; i < sizeof na / sizeof na[0]; i++) {
        const char *why = refused(na[i].dev, with_down(na[i].tokens, 8192, na[i].inter, na[i].dtype, KB_MLP_AUTO,
                                                       na[i].down));
        if (!strstr(why, na[i].why)) fail_msg("%s: n/a for \"%s\", expected \"%s\"", na[i].dev, why, na[i].why);
    }
    assert_int_equal(plan_ok("a100", req(1, 8192, 28672, 2, KB_MLP_AUTO)).down, 0);
}

/* KB_MLP_ROW_DOWN_LT: cuBLASLt's split-K 2 down GEMM after cublas_cat's path
 * at 257-352 tokens and hidden 4096-5119, after the swapped kernel at 257-400
 * tokens, hidden 4096-8191 and inter > 8192, and after a wgmma kernel at 768-1024 tokens,
 * hidden <= 1024 and inter >= 11008, where it was measured ahead; cuBLAS's own pick
 * elsewhere; --down cublaslt after any 16-bit gate/up */
static void test_down_lt(void **state)
{
    (void)state;
    static const struct {
        int tokens, hidden, inter, dtype, lt;
    } cases[] = {
        /* the swapped kernel at 257-400 x 4096-8191 */
        {300, 4096, 11008, 2, 1}, {300, 4096, 11008, 1, 1}, {320, 4096, 14336, 2, 1}, {257, 4096, 11008, 2, 1},
        {383, 6144, 16384, 1, 1}, {353, 4096, 11008, 2, 1}, {383, 4096, 11008, 2, 1}, {384, 4096, 11008, 2, 1},
        {400, 4096, 11008, 1, 1}, {256, 4096, 11008, 2, 0}, {401, 4096, 11008, 2, 0}, {300, 8192, 11008, 2, 0},
        /* ... from inter 8193 (cuBLAS's down ahead at 5504 and 8192, measured; at 10920 the plan with cuBLASLt's
         * down measured 1.09x cublas_cat, not against cuBLAS's down) */
        {300, 4096, 10920, 2, 1}, {300, 4096, 8200, 1, 1}, {325, 5120, 5504, 2, 0}, {349, 6144, 5504, 1, 0},
        {325, 6144, 8192, 2, 0}, {380, 4096, 8192, 1, 0}, {300, 4096, 8192, 2, 0},
        /* the old tile there (352 x 14336); cublas_cat's path from inter 28672 (hidden 6144 and 8192) */
        {352, 4096, 14336, 2, 0}, {300, 4608, 28672, 2, 1}, {300, 6144, 28672, 2, 0}, {353, 4608, 28672, 2, 0},
        /* cublas_cat's path by the SECTOR row (4104: hidden 4096-5119), not from 5120 nor past 352 */
        {300, 4104, 11000, 2, 1}, {300, 4104, 11000, 1, 1}, {300, 5128, 11000, 2, 0}, {353, 4104, 11000, 2, 0},
        /* cublas_cat's path from hidden 5120 at inter >= 13824: cuBLAS's down */
        {300, 5120, 13824, 2, 0}, {352, 6144, 16384, 1, 0}, {257, 7168, 18944, 2, 0}, {300, 8192, 28672, 2, 0},
        {192, 4096, 11008, 2, 0}, {512, 4096, 11008, 2, 0}, {300, 1024, 11008, 2, 0},
        {320, 1024, 11008, 2, 0}, {16, 4096, 11008, 2, 0},  {300, 4096, 11008, 0, 0},
        /* after a wgmma kernel at 768-1024 tokens, hidden <= 1024 and inter >= 11008 (behind at 1000 x 1000 x 3000) */
        {768, 1024, 11008, 2, 1}, {1000, 1024, 11008, 1, 1}, {1024, 1024, 11008, 2, 1}, {900, 512, 14336, 1, 1},
        {1000, 1000, 3000, 2, 0}, {900, 512, 4096, 1, 0}, {1000, 1024, 11000, 2, 0},
        {767, 1024, 11008, 2, 0}, {1025, 1024, 11008, 2, 0}, {1536, 1024, 11008, 2, 0}, {512, 1024, 11008, 2, 0},
        {1000, 1032, 11008, 2, 0}, {1000, 4096, 11008, 2, 0}, {1000, 1024, 11008, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const kb_mlp_plan p = plan_ok("h100", req(cases[i].tokens, cases[i].hidden, cases[i].inter, cases[i].dtype,
                                                 KB_MLP_AUTO));
        if ((p.down == 2) != cases[i].lt || (int)HAS(p, KB_MLP_ROW_DOWN_LT) != cases[i].lt)
            fail_msg("%dx%dx%d dtype %d: down %d rows 0x%x, expected cuBLASLt %d", cases[i].tokens, cases[i].hidden,
                     cases[i].inter, cases[i].dtype, p.down, p.rows, cases[i].lt);
        if (cases[i].lt) assert_int_equal(p.dsplit.splits, 2);
    }
    /* fused_wgmma by name plans as fused does: the swapped kernel and the
     * row's down at 300 x 4096, the row's at 1000 x 1024; with swap off the
     * old tile and cuBLAS's down at 300 x 4096 */
    assert_int_equal(plan_ok("h100", req(300, 4096, 11008, 2, KB_MLP_WGMMA)).down, 2);
    assert_int_equal(plan_ok("h100", unswapped(req(300, 4096, 11008, 2, KB_MLP_WGMMA))).down, 0);
    assert_true(HAS(plan_ok("h100", req(1000, 1024, 11008, 2, KB_MLP_WGMMA)), KB_MLP_ROW_DOWN_LT));
    /* fused_mma (hidden % 8 != 0) at 1000 x 1020: not measured, cuBLAS */
    assert_int_equal(plan_ok("h100", req(1000, 1020, 11008, 2, KB_MLP_AUTO)).down, 0);
    /* at 300 x 4096 a tunable forced keeps fused on the wgmma kernel, where
     * the row does not reach: cuBLAS's down; at 1000 x 1024 (the wgmma
     * range) the row's, whatever the tile */
    kb_mlp_req r = req(300, 4096, 11008, 2, KB_MLP_AUTO);
    r.bn = 128;
    assert_int_equal(plan_ok("h100", r).down, 0);
    r.tokens = 1000, r.hidden = 1024;
    assert_int_equal(plan_ok("h100", r).down, 2);
    /* cublas fixed: cuBLAS's pick on the row's shape */
    assert_int_equal(plan_ok("h100", with_down(300, 4096, 11008, 2, KB_MLP_AUTO, 1)).down, 0);
    /* cublaslt fixed: after fused_wgmma, fused_mma (hidden 257), cublas_cat's path, on the A100 (fused_mma) */
    static const struct {
        const char *dev;
        int tokens, hidden;
        kb_mlp_variant want, runs;
    } forced[] = {
        {"h100", 17, 72, KB_MLP_AUTO, KB_MLP_WGMMA},     {"h100", 80, 257, KB_MLP_AUTO, KB_MLP_MMA},
        {"h100", 129, 4096, KB_MLP_AUTO, KB_MLP_CUBLAS_CAT}, {"h100", 16, 4096, KB_MLP_WGMMA, KB_MLP_WGMMA},
        {"h100", 16, 4096, KB_MLP_MMA, KB_MLP_MMA},       {"a100", 300, 4096, KB_MLP_AUTO, KB_MLP_MMA},
    };
    for (size_t i = 0; i < sizeof forced / sizeof forced[0]; i++) {
        const kb_mlp_plan p = plan_ok(forced[i].dev, with_down(forced[i].tokens, forced[i].hidden, 1003, 1,
                                                               forced[i].want, 3));
        assert_int_equal(p.variant, forced[i].runs);
        assert_int_equal(p.down, 2);
        assert_int_equal(p.dsplit.splits, 2);
        assert_false(HAS(p, KB_MLP_ROW_DOWN_LT)); /* fixed, not the row's */
    }
}

/* KB_MLP_ROW_DOWN_LT_FAST: on devices of 4 TB/s or more (the H200) DOWN_LT's
 * swapped box takes cuBLASLt's down from inter 14336 only; the row is in the
 * plan either way, DOWN_LT's is not. cublas_cat's path and the wgmma kernel's
 * 768-1024 tokens keep DOWN_LT's choice; the H100 keeps DOWN_LT everywhere */
static void test_down_lt_fast(void **state)
{
    (void)state;
    static const struct {
        int tokens, hidden, inter, dtype, lt;
    } cases[] = {
        /* cuBLAS's down below inter 14336 (measured at 11008: 300-400 tokens x 4096, 257-400 x 6144) */
        {300, 4096, 11008, 2, 0}, {300, 4096, 11008, 1, 0}, {320, 4096, 11008, 2, 0}, {352, 4096, 11008, 1, 0},
        {384, 4096, 11008, 2, 0}, {400, 4096, 9728, 1, 0}, {257, 4096, 11008, 2, 0}, {257, 6144, 11008, 1, 0},
        {320, 6144, 11008, 2, 0}, {300, 4096, 14328, 2, 0}, {300, 4096, 10920, 1, 0},
        /* cuBLASLt's from 14336 (measured at 4096 x 14336 and 6144 x 14336 x 400) */
        {257, 4096, 14336, 2, 1}, {300, 4096, 14336, 1, 1}, {320, 4096, 14336, 2, 1}, {400, 4096, 14336, 1, 1},
        {400, 6144, 14336, 2, 1}, {383, 6144, 16384, 1, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const kb_mlp_req r = req(cases[i].tokens, cases[i].hidden, cases[i].inter, cases[i].dtype, KB_MLP_AUTO);
        const kb_mlp_plan p = plan_ok("h200", r), h = plan_ok("h100", r);
        if (!p.swap || (p.down == 2) != cases[i].lt || !HAS(p, KB_MLP_ROW_DOWN_LT_FAST) || HAS(p, KB_MLP_ROW_DOWN_LT))
            fail_msg("h200 %dx%dx%d dtype %d: swap %d down %d rows 0x%x, expected the swapped kernel, cuBLASLt %d by "
                     "DOWN_LT_FAST", cases[i].tokens, cases[i].hidden, cases[i].inter, cases[i].dtype, p.swap, p.down,
                     p.rows, cases[i].lt);
        if (cases[i].lt) assert_int_equal(p.dsplit.splits, 2);
        /* the H100: DOWN_LT's, cuBLASLt's down wherever the swapped kernel runs in the box */
        if (h.swap && (h.down != 2 || !HAS(h, KB_MLP_ROW_DOWN_LT) || HAS(h, KB_MLP_ROW_DOWN_LT_FAST)))
            fail_msg("h100 %dx%dx%d: down %d rows 0x%x, expected DOWN_LT's cuBLASLt", cases[i].tokens,
                     cases[i].hidden, cases[i].inter, h.down, h.rows);
    }
    /* outside the swapped box the H200 plans as DOWN_LT says: cublas_cat's path
     * (SECTOR_FAST at 300 x 4104), the wgmma kernel at 1000 x 1024 */
    const kb_mlp_plan c = plan_ok("h200", req(300, 4104, 11000, 2, KB_MLP_AUTO));
    assert_int_equal(c.variant, KB_MLP_CUBLAS_CAT);
    assert_int_equal(c.down, 2);
    assert_true(HAS(c, KB_MLP_ROW_DOWN_LT));
    assert_false(HAS(c, KB_MLP_ROW_DOWN_LT_FAST));
    const kb_mlp_plan w = plan_ok("h200", req(1000, 1024, 11008, 2, KB_MLP_AUTO));
    assert_int_equal(w.down, 2);
    assert_true(HAS(w, KB_MLP_ROW_DOWN_LT));
    assert_false(HAS(w, KB_MLP_ROW_DOWN_LT_FAST));
    /* a down fixed: not the row's */
    const kb_mlp_plan f = plan_ok("h200", with_down(300, 4096, 11008, 2, KB_MLP_AUTO, 3));
    assert_int_equal(f.down, 2);
    assert_false(HAS(f, KB_MLP_ROW_DOWN_LT_FAST));
    assert_false(HAS(plan_ok("h200", with_down(300, 4096, 11008, 2, KB_MLP_AUTO, 1)), KB_MLP_ROW_DOWN_LT_FAST));
}

/* KB_MLP_ROW_CUBLAS_MID_FAST: on devices of 4 TB/s or more (the H200)
 * cublas_cat's path where the planned swapped kernel was measured behind at
 * 385-432 tokens; each box's sides, inside and out; the H100, a
 * tunable fixed, fused_wgmma by name and sector rows keep the kernels */
static void test_mid_fast(void **state)
{
    (void)state;
    static const struct {
        int tokens, hidden, inter, cat;
    } cases[] = {
        /* inter 10240-11264, hidden 3072-8192, 385-432 tokens but 416 */
        {385, 4096, 11008, 1}, {400, 4096, 11008, 1}, {408, 8192, 11008, 1}, {432, 3072, 11008, 1},
        {415, 6144, 10240, 1}, {417, 4096, 11264, 1}, {432, 6144, 10752, 1},
        {384, 4096, 11008, 0}, {440, 6144, 11008, 0}, {416, 4096, 11008, 0}, {416, 6144, 10240, 0},
        {385, 4096, 9728, 0}, {385, 4096, 11776, 0}, {408, 2048, 11008, 0}, {408, 4096, 10176, 0},
        {408, 4096, 11328, 0}, {408, 9216, 11008, 0},
        /* inter 5120-5504, hidden 4096-8192, 385-432 tokens (416 too) */
        {385, 4096, 5120, 1}, {400, 4096, 5504, 1}, {416, 6144, 5504, 1}, {432, 8192, 5504, 1},
        {384, 4096, 5504, 0}, {440, 4096, 5504, 0}, {385, 3584, 5504, 0}, {386, 3584, 4928, 0},
        {408, 9216, 5504, 0},
        /* hidden 4096-6144: inter 5505-6144 from 401 tokens, 4864-5119 from 408, 416 apart */
        {401, 4096, 6144, 1}, {408, 6144, 5888, 1}, {415, 4096, 6144, 1}, {417, 6144, 5888, 1},
        {432, 4096, 6144, 1}, {408, 4096, 4864, 1}, {432, 6144, 4864, 1},
        {400, 4096, 6144, 0}, {385, 6144, 5888, 0}, {416, 4096, 6144, 0}, {416, 4096, 4864, 0},
        {385, 4096, 4864, 0}, {407, 4096, 4864, 0}, {408, 4096, 4800, 0}, {408, 4096, 6208, 0},
        {408, 3584, 6144, 0}, {408, 8192, 6144, 0},
    };
    char what[64], buf[96];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int dt = 1; dt <= 2; dt++) {
            const int M = cases[i].tokens, H = cases[i].hidden, N = cases[i].inter;
            snprintf(what, sizeof what, "h200 dtype %d %dx%dx%d", dt, M, H, N);
            const kb_mlp_plan p = plan_ok("h200", req(M, H, N, dt, KB_MLP_AUTO));
            if ((p.variant == KB_MLP_CUBLAS_CAT) != cases[i].cat || !HAS(p, KB_MLP_ROW_CUBLAS_MID_FAST) != !cases[i].cat)
                fail_msg("%s: variant %d rows 0x%x, expected %s", what, p.variant, p.rows,
                         cases[i].cat ? "cublas_cat's path by CUBLAS_MID_FAST" : "the wgmma kernel");
            if (cases[i].cat) {
                assert_int_equal(p.rows, 1u << KB_MLP_ROW_HOPPER | 1u << KB_MLP_ROW_CUBLAS_MID_FAST);
                assert_int_equal(p.down, 0); /* cuBLAS's down: cublas_cat itself */
                kb_mlp_plan_describe(&p, buf, sizeof buf);
                assert_string_equal(buf, "cublas_cat (planner: cuBLAS measured ahead)");
                /* where the planner would run the swapped kernel (the box's condition) */
                const kb_mlp_plan w = plan_ok("h200", req(M, H, N, dt, KB_MLP_WGMMA));
                if (!w.swap) fail_msg("%s: fused_wgmma's plan is not the swapped kernel", what);
                kb_mlp_req r = req(M, H, N, dt, KB_MLP_AUTO);
                r.swap = 2; /* a tunable fixed: the kernel, not the box */
                assert_int_equal(plan_ok("h200", r).variant, KB_MLP_WGMMA);
            } else if (p.variant != KB_MLP_WGMMA) {
                fail_msg("%s: variant %d, expected the wgmma kernel", what, p.variant);
            }
            const kb_mlp_plan h = plan_ok("h100", req(M, H, N, dt, KB_MLP_AUTO));
            if (h.variant != KB_MLP_WGMMA || HAS(h, KB_MLP_ROW_CUBLAS_MID_FAST))
                fail_msg("h100 dtype %d %dx%dx%d: variant %d rows 0x%x, expected the wgmma kernel", dt, M, H, N,
                         h.variant, h.rows);
        }
    /* rows 16 bytes past a sector never run the swapped kernel: not the row's */
    assert_false(HAS(plan_ok("h200", req(400, 4104, 11000, 2, KB_MLP_AUTO)), KB_MLP_ROW_CUBLAS_MID_FAST));
}

static void test_rows(void **state)
{
    (void)state;
    for (int i = 0; i < KB_MLP_NROWS; i++) {
        const kb_mlp_plan_row *row = &kb_mlp_plan_rows[i];
        assert_non_null(row->rule);
        assert_non_null(row->reason);
        assert_true(strlen(row->rule) > 20);
        /* a measurement (a figure in ms) or a stated constraint */
        if (!strstr(row->reason, " ms") && strncmp(row->reason, "constraint: ", 12))
            fail_msg("row %d's reason is neither a measurement nor a constraint: %s", i, row->reason);
        assert_null(strchr(row->reason, '\n'));
    }
    /* every row decides some case of the grid */
    static const char *const devs[] = {"h100", "a100", "l40s", "h200"};
    unsigned seen = 0;
    for (int d = 0; d < 4; d++)
        for (int dt = 0; dt <= 2; dt++)
            for (int t = 0; t < NTOK; t++) {
                seen |= plan_ok(devs[d], req(toks[t], 1024, 11008, dt, KB_MLP_AUTO)).rows;
                seen |= plan_ok(devs[d], req(toks[t], 1001, 11008, dt, KB_MLP_AUTO)).rows;
                seen |= plan_ok(devs[d], req(toks[t], 4096, 11008, dt, KB_MLP_AUTO)).rows;
                seen |= plan_ok(devs[d], req(toks[t], 4104, 11000, dt, KB_MLP_AUTO)).rows;
            }
    seen |= plan_ok("h200", req(400, 4096, 11008, 2, KB_MLP_AUTO)).rows; /* CUBLAS_MID_FAST */
    kb_mlp_plan p;
    char why[128];
    kb_mlp_req r = req(2048, 1024, 11008, 2, KB_MLP_AUTO);
    assert_int_equal(kb_mlp_plan_make(&r, dev("h100"), occ_none, NULL, &p, why, sizeof why), 0);
    seen |= p.rows;
    for (int i = 0; i < KB_MLP_NROWS; i++)
        if (!(seen >> i & 1u)) fail_msg("row %d (%s) decides nothing", i, kb_mlp_plan_rows[i].rule);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_h100_seed),
        cmocka_unit_test(test_h100_pins),
        cmocka_unit_test(test_h100_old_code),
        cmocka_unit_test(test_bn64_rounds),
        cmocka_unit_test(test_variants),
        cmocka_unit_test(test_tunables),
        cmocka_unit_test(test_sched),
        cmocka_unit_test(test_occupancy),
        cmocka_unit_test(test_down),
        cmocka_unit_test(test_down_lt),
        cmocka_unit_test(test_down_lt_fast),
        cmocka_unit_test(test_mid_fast),
        cmocka_unit_test(test_sector),
        cmocka_unit_test(test_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
