/* The LayerNorm / RMSNorm planner (kernels/norm/plan.c) on the CPU, for the
 * attributes of an H100, an A100, an L40S (sm_89) and an H200: invariants over every
 * cols 1..65536 (every dtype, pass, affine, variant), the automatic choice
 * pinned by a golden run-length table (tests/data/norm_plan.txt; rewrite it
 * with `test_norm_plan --update` after a deliberate change, and say why in
 * the commit), and known shapes asserted one by one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../include/kb_devattr.h"
#include "../kernels/norm/norm.h"
#include "../kernels/norm/plan.h"

#define MAXCOLS 65536L
static const char *const devs[] = {"h100", "a100", "l40s", "h200"};
#define NDEVS (int)(sizeof devs / sizeof devs[0])
static const char *const dts[] = {"fp32", "fp16", "bf16"};
static int update;

static const kb_devattr *dev(const char *name)
{
    const kb_devattr *d = kb_devattr_preset(name);
    assert_non_null(d);
    return d;
}

static kb_norm_shape shape(int dtype, int bwd, long rows, long cols)
{
    kb_norm_shape s = {dtype, 0, bwd, 1, rows, cols, 0};
    return s;
}

/* the plan opt makes (fails the test when it makes none) */
static kb_norm_plan plan_of(const char *d, const kb_norm_shape *s)
{
    kb_norm_plan p;
    char why[200];
    if (kb_norm_plan_make(s, dev(d), KB_NORM_AUTO, NULL, &p, why, sizeof why))
        fail_msg("%s %s %s%s cols %ld: no plan (%s)", d, dts[s->dtype], s->rms ? "rmsnorm " : "", s->backward ? "bwd" : "fwd",
                 s->cols, why);
    return p;
}

static kb_norm_plan auto_plan(const char *d, int dtype, int bwd, long rows, long cols)
{
    const kb_norm_shape s = shape(dtype, bwd, rows, cols);
    return plan_of(d, &s);
}

static const char *describe(const kb_norm_plan *p)
{
    static char buf[KB_NORM_NVARIANTS][200];
    static int k;
    k = (k + 1) % KB_NORM_NVARIANTS;
    kb_norm_plan_describe(p, buf[k], sizeof buf[k]);
    return buf[k];
}

static int esize(int dtype) { return dtype == 0 ? 4 : 2; }

/* What every plan must satisfy; a kernel was built for it. */
static void check_plan(const char *dn, const kb_devattr *d, const kb_norm_shape *s, const kb_norm_plan *p)
{
    const char *what = describe(p);
    const int w16 = 16 / esize(s->dtype);
#define CHECK(cond)                                                                                                  \
    do {                                                                                                             \
        if (!(cond))                                                                                                 \
            fail_msg("%s %s %s cols %ld rows %ld affine %d [%s]: %s", dn, dts[s->dtype], s->backward ? "bwd" : "fwd", \
                     s->cols, s->rows, s->affine, what, #cond);                                                      \
    } while (0)
    CHECK(p->dtype == s->dtype && p->backward == s->backward);
    CHECK(p->block >= 1 && p->block <= 1024 && p->tpr >= 1 && p->tpr <= p->block);
    CHECK((p->tpr & (p->tpr - 1)) == 0 || p->variant == KB_NORM_WARP_ROW || p->cl);
    CHECK(p->smem + p->smem_static <= (size_t)d->smem_per_block_optin);
    CHECK(!strncmp(what, kb_norm_variant_name(p->variant), strlen(kb_norm_variant_name(p->variant))));
    CHECK(kb_norm_exec_has_kernel(p)); /* a kernel file of kernels/norm instantiates it */
    switch (p->variant) {
    case KB_NORM_WARP_ROW:
        CHECK(p->pf == 0);
        CHECK(s->cols % w16 == 0 && p->w == w16);
        CHECK(p->tpr % 32 == 0 && p->block % p->tpr == 0 && p->block / p->tpr <= 16);
        CHECK(p->tpr == 32 || p->block / p->tpr <= 15); /* a group of several warps meets at named barrier 1 + g (1..15) */
        CHECK((long)p->tpr * p->nv * p->w >= s->cols);                 /* the row is covered */
        CHECK(p->nv == 1 || p->nv == 2 || p->nv == 4 || p->nv == 8);
        CHECK(p->nv != 8 || (!s->backward && (p->tpr > 32 || esize(s->dtype) == 2))); /* fp32: 2+ warps */
        CHECK(p->nv >= (s->backward ? 2 : 4) || p->tpr == 32); /* fewer vectors: one-warp rows only */
        CHECK(p->tpr / 32 <= (s->backward ? 20 : 32));
        if (s->backward) {
            CHECK(p->nv <= 2);
            CHECK(p->stages == 0 || p->stages == 3 || (p->stages == 2 && p->lb == 512));
            CHECK(p->lb == 512 || p->lb == 320 || p->lb == 640);
            CHECK(p->lb == 512 || p->stages == 3);
            CHECK(p->block <= p->lb); /* the launch bound holds the block */
        } else {
            CHECK(p->stages == 0 && p->smem == 0);
            /* rows of 3, 5-7, 14-15 warps (13 in 16 bits) on the kernels built for 4, 8, 16 (wr.pad); rows of 8 vectors
             * and 11-15 warps on the 16-warp one, where wr.fwd2 (wr.pad8) */
            const int wpr = p->tpr / 32;
            CHECK(p->nv != 4 || !(wpr == 3 || (wpr >= 5 && wpr <= 7) || wpr == 14 || wpr == 15 ||
                                  (wpr == 13 && esize(s->dtype) == 2)));
            CHECK(p->nv != 8 || d->dram_gbps < 4000 || wpr < 11 || wpr > 15);
            CHECK(p->nv != 8 || p->tpr != 512 || p->block == 512); /* wr_fwd<T, 8, 16>'s launch bound (gamma early) */
        }
        break;
    case KB_NORM_BULK:
        CHECK(p->pf == 0);
        CHECK(d->cc_major == 9 && d->cc_minor == 0); /* sm_90a code runs on 9.0 alone */
        CHECK(s->cols % w16 == 0 && p->w == w16);
        CHECK(p->block % 32 == 0 && p->block % p->tpr == 0);
        CHECK((long)p->tpr * p->nv * p->w >= s->cols);
        CHECK(p->stages >= 1 && p->stages <= 4);
        CHECK(s->backward ? p->nv * p->w <= 16 : p->nv <= 8);
        CHECK(!p->sst || (s->dtype != 2 && p->block / p->tpr <= KB_NORM_STATS_ROWS));
        CHECK(!p->gsm || (s->backward && s->affine && p->block == 1024));
        /* the piped ring: one slot of one row, every thread on it, fp32 at 4 vectors, statistics in shared memory */
        CHECK(!p->pipe || (s->backward && p->stages == 1 && p->block == p->tpr && p->block == 1024 && p->nv == 4 &&
                           s->dtype == 0 && p->sst));
        CHECK(p->smem >= (size_t)KB_NORM_RING_OFF + (size_t)p->stages * (s->backward ? 2 : 1) * (p->block / p->tpr) * s->cols * esize(s->dtype));
        break;
    case KB_NORM_BLOCK:
        CHECK(p->pf == 0 || p->cl || p->rr); /* only the clusters and the reread prefetch */
        if (p->rr) { /* a row a block of 1024, x read again (block.reread, block.reread_ln): sm_90, fp32 forward rows
                      * of 64-128 KiB (RMSNorm from 16400 cols, LayerNorm from 18432) */
            CHECK(d->cc_major == 9 && d->cc_minor == 0 && !s->backward && s->dtype == 0 && p->w == 4);
            CHECK(s->cols % 4 == 0 && s->cols * 4 >= (s->rms ? 65600 : 73728) && s->cols * 4 <= 131072);
            CHECK(p->block == KB_NORM_RR_BLOCK && p->tpr == KB_NORM_RR_BLOCK && p->cl == 0 && p->smem == 0 && p->lb == 0);
            CHECK(p->nv >= 5 && p->nv <= 8 && 1024L * p->nv * 4 >= s->cols && 1024L * (p->nv - 1) * 4 < s->cols);
            /* block.reread_ln_pf, _rms_pf: with the affine, LayerNorm to 31744 cols and RMSNorm to 17920, from 2000
             * rows (block.reread_pf_rows), prefetch a quarter ahead */
            CHECK(p->pf == (s->affine && s->cols <= (s->rms ? 17920 : 31744) && s->rows >= 2000
                                ? !s->rms && s->cols <= 20480 ? 8 : 4 /* LayerNorm to 20480 cols: half a round */
                                : 0));
            break;
        }
        if (p->cl) { /* a cluster a row (block.cluster): sm_90, forward rows past 64 KiB, each block's part covered */
            CHECK(d->cc_major == 9 && d->cc_minor == 0 && !s->backward && p->w == w16 && s->cols % w16 == 0);
            CHECK(s->cols * esize(s->dtype) > 65536 && (p->cl == 2 || p->cl == 4 || p->cl == 8));
            /* 8 vectors; 9 at whole warps rounded down, two an SM, on fp32 rows of 128-320 KiB (block.cluster_tail)
             * LayerNorm's 16-bit rows whose blocks take 1281-1792 or 2049-2304 vectors (block.cluster_tail_ln) and
             * RMSNorm's 16-bit rows of 128-132 and 256-288 KiB (block.cluster_tail_rms) */
            const long rb9 = s->cols * esize(s->dtype), per9 = (s->cols / p->w + p->cl - 1) / p->cl;
            CHECK(p->nv == 8 ||
                  (p->nv == 9 && p->lb == 0 && (long)p->cl * (p->tpr + 32) * 8 * p->w >= s->cols &&
                   (s->dtype == 0 ? rb9 > 131072 && rb9 <= 327696
                    : s->rms ? (rb9 > 131072 && rb9 <= 135168) || (rb9 > 262144 && rb9 <= 294912)
                             : (per9 > 2048 && per9 <= 2304) || (per9 > 1280 && per9 <= 1792))));
            CHECK(p->tpr % 32 == 0 && p->tpr <= 512 && p->block == p->tpr && p->smem == 0);
            CHECK((long)p->cl * p->tpr * p->nv * p->w >= s->cols);
            { /* the smallest cluster that holds it, or block.cluster_min's: 4 at 16-bit rows of 88-96 KiB, 8 at 160-256 */
                const long rb = s->cols * esize(s->dtype);
                const int hold = 512L * 8 * 2 * p->w >= s->cols ? 2 : 512L * 8 * 4 * p->w >= s->cols ? 4 : 8;
                const int cmin = rb > 163840 && rb <= 262144 ? 8 : esize(s->dtype) == 2 && rb > 90112 && rb <= 98304 ? 4 : 2;
                CHECK(p->cl == (hold > cmin ? hold : cmin));
            }
            /* three blocks an SM (launch bound 384) only where two of 64 registers a thread are all that fit */
            CHECK(p->lb == 0 || (p->lb == 384 && p->tpr <= 384 && 3L * p->tpr * 64 > d->regs_per_sm));
            CHECK(p->lb == 384 || 3L * p->tpr * 64 <= d->regs_per_sm || p->tpr > 384 || p->nv == 9);
            CHECK(p->pf == 4); /* block.cluster_pf: a quarter of the resident rows ahead, every cluster row */
            break;
        }
        CHECK(p->w == 1 || p->w == w16);
        CHECK(s->cols % p->w == 0);
        CHECK(p->nv == 0 || p->nv == 1 || p->nv == 2 || p->nv == 4 || p->nv == 8);
        CHECK(p->nv * p->w <= (s->backward && s->dtype == 0 ? 16 : 32));
        /* 16-byte vectors only past what warp_row holds (block_*.cu build no others) */
        CHECK(p->w == 1 || p->nv == 0 || (s->backward ? p->nv == 4 : s->dtype == 0 && p->nv == 8));
        CHECK(p->nv == 0 || (long)p->tpr * p->nv * p->w >= s->cols);
        CHECK(p->block == (s->backward ? KB_NORM_BWD_BLOCK : p->nv ? (p->tpr > 256 ? p->tpr : 256) : 1024));
        break;
    default: CHECK(!"a variant");
    }
#undef CHECK
}

/* Every plan of every variant across cols 1..65536 (odd rows counts at a
 * sample of cols: they change bulk's rows a chunk), every dtype, pass and
 * affine: the invariants; opt's plan is the plan of the variant it chose;
 * n/a comes with a reason. */
static void test_invariants(void **state)
{
    (void)state;
    const long rowsv[] = {4096, 1, 7, 300};
    long nplans = 0, nna = 0;
    for (int di = 0; di < NDEVS; di++) {
        const kb_devattr *d = dev(devs[di]);
        for (int dt = 0; dt < 3; dt++)
            for (int bwd = 0; bwd < 2; bwd++)
                for (int aff = 0; aff < 2; aff++)
                    for (int ri = 0; ri < 4; ri++)
                        for (long cols = 1; cols <= MAXCOLS; cols++) {
                            if (ri && cols % 61 && cols % 1024) continue;
                            kb_norm_shape s = shape(dt, bwd, rowsv[ri], cols);
                            s.affine = aff;
                            kb_norm_plan a, v;
                            char why[200];
                            assert_int_equal(kb_norm_plan_make(&s, d, KB_NORM_AUTO, NULL, &a, why, sizeof why), 0);
                            check_plan(devs[di], d, &s, &a);
                            assert_true(a.rule >= 0 && a.rule < kb_norm_nrules);
                            assert_string_equal(kb_norm_rules[a.rule].key, "try");
                            assert_int_equal(kb_norm_rules[a.rule].value, a.variant);
                            for (int var = KB_NORM_WARP_ROW; var < KB_NORM_NVARIANTS; var++) {
                                nplans++;
                                if (kb_norm_plan_make(&s, d, var, NULL, &v, why, sizeof why)) {
                                    nna++;
                                    if (!why[0]) fail_msg("%s cols %ld %s: n/a without a reason", devs[di], cols, kb_norm_variant_name(var));
                                    assert_true(var != a.variant);
                                    continue;
                                }
                                check_plan(devs[di], d, &s, &v);
                                assert_int_equal(v.rule, -1);
                                if (var == a.variant) {
                                    v.rule = a.rule;
                                    if (memcmp(&v, &a, sizeof v))
                                        fail_msg("%s cols %ld: opt's %s differs from %s's %s", devs[di], cols, describe(&a),
                                                 kb_norm_variant_name(var), describe(&v));
                                }
                            }
                        }
    }
    assert_true(nna > 0 && nna < nplans);
}

/* The tunables: each fixed value either plans with that value or is n/a
 * with a reason; the plan still satisfies the invariants. */
static void test_tunables(void **state)
{
    (void)state;
    const int vecs[] = {KB_NORM_TUNE_AUTO, 1, 2, 4, 8}, stages[] = {KB_NORM_TUNE_AUTO, 0, 2, 3},
              slots[] = {KB_NORM_TUNE_AUTO, 1, 2, 3, 4};
    int took[3] = {0};
    for (int di = 0; di < NDEVS; di++) {
        const kb_devattr *d = dev(devs[di]);
        for (int dt = 0; dt < 3; dt++)
            for (int bwd = 0; bwd < 2; bwd++)
                for (long cols = 8; cols <= MAXCOLS; cols += cols < 4096 ? 8 : 1016)
                    for (int vi = 0; vi < 5; vi++)
                        for (int si = 0; si < 4; si++)
                            for (int li = 0; li < 5; li++) {
                                kb_norm_shape s = shape(dt, bwd, 4096, cols);
                                kb_norm_tune t = {vecs[vi], stages[si], slots[li]};
                                for (int var = KB_NORM_WARP_ROW; var < KB_NORM_NVARIANTS; var++) {
                                    kb_norm_plan p;
                                    char why[200] = "";
                                    if (kb_norm_plan_make(&s, d, var, &t, &p, why, sizeof why)) {
                                        assert_true(why[0] != 0);
                                        continue;
                                    }
                                    check_plan(devs[di], d, &s, &p);
                                    /* the block variant takes none; warp_row no slots; bulk no stages
                                     * (the harness makes those n/a from kb_impl.tunables) */
                                    if (var == KB_NORM_BLOCK) assert_true(vi == 0 && si == 0 && li == 0);
                                    if (vecs[vi] > 0 && var != KB_NORM_BLOCK) assert_int_equal(p.nv, vecs[vi]);
                                    if (var == KB_NORM_WARP_ROW && stages[si] >= 0) assert_int_equal(p.stages, stages[si]);
                                    if (var == KB_NORM_BULK && slots[li] > 0) assert_int_equal(p.stages, slots[li]);
                                    if (vecs[vi] > 0 && var != KB_NORM_BLOCK) took[0]++;
                                    if (var == KB_NORM_WARP_ROW && stages[si] >= 0) took[1]++;
                                    if (var == KB_NORM_BULK && slots[li] > 0) took[2]++;
                                }
                            }
    }
    assert_true(took[0] > 0 && took[1] > 0 && took[2] > 0);
}

/* ---- the golden table ---------------------------------------------------- */
/* Per device, dtype and pass (rows 4096, affine on): runs of cols with the
 * same plan, over the cols that are multiples of 16 bytes and over the
 * others, one line each: "h100 bf16 fwd 16 1032-2048 warp_row v=8 warps=1". */
static char *golden_text(size_t *len)
{
    size_t cap = 1 << 20, n = 0;
    char *out = malloc(cap);
    for (int di = 0; di < NDEVS; di++)
        for (int dt = 0; dt < 3; dt++)
            for (int bwd = 0; bwd < 2; bwd++)
                for (int aligned = 1; aligned >= 0; aligned--) {
                    const int w = 16 / esize(dt);
                    char prev[200] = "";
                    long from = 0, last = 0;
                    for (long cols = 1; cols <= MAXCOLS + 1; cols++) {
                        if (cols <= MAXCOLS && (cols % w == 0) != aligned) continue;
                        char cur[200] = "";
                        if (cols <= MAXCOLS) {
                            kb_norm_plan p = auto_plan(devs[di], dt, bwd, 4096, cols);
                            kb_norm_plan_describe(&p, cur, sizeof cur);
                        }
                        if (strcmp(cur, prev)) {
                            if (prev[0]) {
                                if (n + 512 > cap) out = realloc(out, cap *= 2);
                                n += (size_t)snprintf(out + n, cap - n, "%s %s %s %s %ld-%ld %s\n", devs[di], dts[dt],
                                                      bwd ? "bwd" : "fwd", aligned ? "x16" : "odd", from, last, prev);
                            }
                            snprintf(prev, sizeof prev, "%s", cur);
                            from = cols;
                        }
                        last = cols;
                    }
                }
    *len = n;
    return out;
}

static const char *golden_path(void)
{
    static char path[1024];
    const char *f = __FILE__, *slash = strrchr(f, '/');
    snprintf(path, sizeof path, "%.*sdata/norm_plan.txt", slash ? (int)(slash - f + 1) : 0, f);
    return path;
}

static void test_golden(void **state)
{
    (void)state;
    size_t n;
    char *got = golden_text(&n);
    const char *path = golden_path();
    if (update) {
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fwrite(got, 1, n, f);
        fclose(f);
        fprintf(stderr, "wrote %s\n", path);
    }
    FILE *f = fopen(path, "r");
    if (!f) fail_msg("%s: missing (run the test from the repository root, or --update)", path);
    char *want = malloc(n + 2);
    size_t m = fread(want, 1, n + 1, f);
    fclose(f);
    if (m != n || memcmp(want, got, n)) {
        /* the first line that differs */
        const char *a = got, *b = want;
        size_t i = 0;
        while (i < n && i < m && a[i] == b[i]) i++;
        while (i > 0 && a[i - 1] != '\n') i--;
        fail_msg("the planner's choices differ from %s at:\n  got:  %.*s\n  want: %.*s", path, (int)strcspn(a + i, "\n"),
                 a + i, (int)(i < m ? strcspn(b + i, "\n") : 0), b + i);
    }
    free(want);
    free(got);
}

/* ---- known shapes ---------------------------------------------------------- */
static void expect_shape(const char *d, const kb_norm_shape *s, const char *want)
{
    const kb_norm_plan p = plan_of(d, s);
    const char *got = describe(&p);
    if (strcmp(got, want))
        fail_msg("%s %s %s%s cols %ld: %s, want %s", d, dts[s->dtype], s->rms ? "rmsnorm " : "", s->backward ? "bwd" : "fwd",
                 s->cols, got, want);
}

/* the plan at rows 4096: LayerNorm's (expect), RMSNorm's forward (expect_rms) */
static void expect(const char *d, int dt, int bwd, long cols, const char *want)
{
    const kb_norm_shape s = shape(dt, bwd, 4096, cols);
    expect_shape(d, &s, want);
}
static void expect_rms(const char *d, int dt, long cols, const char *want)
{
    kb_norm_shape s = shape(dt, 0, 4096, cols);
    s.rms = 1;
    expect_shape(d, &s, want);
}

static void test_known_shapes(void **state)
{
    (void)state;
    /* LayerNorm 16-bit forward rows of 129-160 vectors: one warp, 8 vectors a
     * lane (wr.nv8); from 161 vectors, and for RMSNorm, 2 warps of 4 */
    expect("h100", 1, 0, 1032, "warp_row v=8 warps=1");
    expect("h100", 2, 0, 1280, "warp_row v=8 warps=1");
    expect("h100", 2, 0, 1288, "warp_row v=4 warps=2");
    expect("h100", 2, 0, 2048, "warp_row v=4 warps=2");
    expect_rms("h100", 1, 1032, "warp_row v=4 warps=2");
    expect("h100", 2, 0, 1024, "warp_row v=4 warps=1");
    expect("h100", 2, 0, 4096, "warp_row v=4 warps=4");
    expect("h100", 0, 0, 2048, "warp_row v=4 warps=4");
    /* LayerNorm forward rows of 2689-4096 vectors: 8 vectors a lane, half the
     * warps (wr.nv8w); RMSNorm keeps 4 */
    expect("h100", 0, 0, 12288, "warp_row v=8 warps=12");
    expect("h100", 2, 0, 32768, "warp_row v=8 warps=16");
    expect("h100", 0, 0, 10752, "warp_row v=4 warps=21");
    expect_rms("h100", 0, 12288, "warp_row v=4 warps=24");
    expect_rms("h100", 0, 16384, "warp_row v=4 warps=32");
    /* on the H200's memory (wr.fwd2) RMSNorm takes wr.nv8w too, and 16 warps
     * of 8 run two blocks an SM; narrower rows and the backward as the H100 */
    expect("h200", 0, 0, 16384, "warp_row v=8 warps=16 lb=1024");
    expect("h200", 2, 0, 32768, "warp_row v=8 warps=16 lb=1024");
    expect("h200", 0, 0, 12288, "warp_row v=8 warps=16 lb=1024"); /* 11-15 warps of 8 as 16 (wr.pad8) */
    expect("h200", 0, 0, 10244, "warp_row v=8 warps=16 lb=1024");
    expect("h200", 0, 0, 10240, "warp_row v=8 warps=10"); /* not 9-10 */
    expect("h200", 2, 0, 30720, "warp_row v=8 warps=16 lb=1024");
    expect_rms("h200", 0, 16384, "warp_row v=8 warps=16 lb=1024");
    expect_rms("h200", 0, 12288, "warp_row v=8 warps=16 lb=1024");
    expect_rms("h200", 0, 10752, "warp_row v=4 warps=21");
    expect("h200", 0, 0, 8192, "warp_row v=8 warps=8"); /* wr.nv8w2: LayerNorm from 32 KiB rows */
    expect("h200", 2, 0, 16384, "warp_row v=8 warps=8");
    expect("h200", 0, 0, 4096, "warp_row v=4 warps=8");
    /* forward rows of 4 vectors: 3 warps as 4, 5-7 as 8, 14-15 (16 bits: 13-15) as 16 (wr.pad), on every device */
    expect("h100", 0, 0, 1536, "warp_row v=4 warps=4");
    expect("h200", 2, 0, 2056, "warp_row v=4 warps=4");
    expect("h200", 2, 0, 5120, "warp_row v=4 warps=8");
    expect_rms("h200", 1, 7168, "warp_row v=4 warps=8");
    expect("h200", 0, 0, 3584, "warp_row v=4 warps=8");
    expect("h200", 2, 0, 9216, "warp_row v=4 warps=9"); /* not 9-12 */
    expect("h200", 2, 0, 12288, "warp_row v=4 warps=12");
    expect("h200", 2, 0, 12296, "warp_row v=4 warps=16");
    expect_rms("h200", 2, 15360, "warp_row v=4 warps=16");
    expect("h200", 0, 0, 6656, "warp_row v=4 warps=13"); /* not fp32 13 */
    expect("h200", 0, 0, 6660, "warp_row v=4 warps=16");
    expect_rms("h200", 0, 8192, "warp_row v=4 warps=16");
    expect_rms("h200", 2, 16384, "warp_row v=4 warps=16");
    expect("h200", 1, 1, 4096, "warp_row v=2 warps=8 stages=2 lb=512");
    /* backward: next row in registers under 4 warps, staged from 4 (2 rows
     * ahead at 4 and 8 warps, 3 elsewhere); 6-7 warps run as 8 and 11-15 as
     * 16 (wr.pad); 9-10 warps capped at 96 registers (lb 320), 17-20 warps
     * blocks of 640 */
    expect("h100", 1, 1, 1024, "warp_row v=2 warps=2 stages=0 lb=512");
    expect("h100", 1, 1, 2048, "warp_row v=2 warps=4 stages=2 lb=512");
    expect("h100", 1, 1, 4096, "warp_row v=2 warps=8 stages=2 lb=512");
    expect("h100", 1, 1, 3072, "warp_row v=2 warps=8 stages=2 lb=512");
    expect("h100", 1, 1, 2568, "warp_row v=2 warps=8 stages=2 lb=512");
    expect("h100", 1, 1, 2560, "warp_row v=2 warps=5 stages=3 lb=512"); /* not 5 warps */
    expect("h200", 0, 1, 1792, "warp_row v=2 warps=8 stages=2 lb=512");
    expect("h200", 2, 1, 5128, "warp_row v=2 warps=16 stages=3 lb=512");
    expect("h200", 2, 1, 7680, "warp_row v=2 warps=16 stages=3 lb=512");
    expect("h200", 0, 1, 2564, "warp_row v=2 warps=16 stages=3 lb=512");
    expect("h200", 0, 1, 2560, "warp_row v=2 warps=10 stages=3 lb=320"); /* not 9-10 warps */
    expect("h100", 1, 1, 8192, "warp_row v=2 warps=16 stages=3 lb=512");
    expect("h100", 1, 1, 5120, "warp_row v=2 warps=10 stages=3 lb=320");
    expect("h100", 2, 1, 10240, "warp_row v=2 warps=20 stages=3 lb=640");
    expect("h100", 0, 1, 5120, "warp_row v=2 warps=20 stages=3 lb=640");
    /* past 20 warps: bulk on sm_90 (blocks of 1024: 2 slots + gamma in shared
     * memory; statistics by cp.async but bf16), the block kernels elsewhere */
    expect("h100", 1, 1, 12288, "bulk v=2 rows=1 slots=2 gamma=smem stats=smem");
    expect("h100", 2, 1, 12288, "bulk v=2 rows=1 slots=2 gamma=smem stats=regs");
    /* fp32 where one chunk fits beside gamma: the piped ring, gamma beside it (bulk.pipe); below, 2 slots */
    expect("h100", 0, 1, 16384, "bulk v=4 rows=1 slots=1 gamma=smem stats=smem pipe");
    expect("h200", 0, 1, 11572, "bulk v=4 rows=1 slots=1 gamma=smem stats=smem pipe");
    expect("h200", 0, 1, 11568, "bulk v=4 rows=1 slots=2 gamma=smem stats=smem");
    expect("a100", 1, 1, 12288, "block tpr=512 v=4 w=8");
    /* the 640-thread staged backward needs 120 KiB: not on an sm_89's 99 */
    expect("a100", 2, 1, 10240, "warp_row v=2 warps=20 stages=3 lb=640");
    expect("l40s", 2, 1, 10240, "block tpr=512 v=4 w=8");
    /* forward rows past 64 KiB on sm_90: clusters, where bulk's ring also fits (try: bulk to 64 KiB) */
    expect("h200", 2, 0, 40960, "block cluster=2 tpr=320 v=8 w=8 pf=4");
    expect("h200", 2, 0, 45056, "block cluster=2 tpr=352 v=8 w=8 lb=384 pf=4"); /* three an SM (block.cluster3) */
    expect("h200", 2, 0, 45064, "block cluster=4 tpr=160 v=9 w=8 pf=4"); /* block.cluster_min: 4 at 88-96 KiB */
    expect("h200", 2, 0, 49152, "block cluster=4 tpr=192 v=8 w=8 pf=4");
    expect("h200", 2, 0, 49160, "block cluster=2 tpr=416 v=8 w=8 pf=4");
    expect("h200", 0, 0, 40960, "block cluster=4 tpr=320 v=8 w=4 pf=4");
    expect("h200", 0, 0, 40964, "block cluster=8 tpr=160 v=9 w=4 pf=4"); /* block.cluster_min: 8 at 160-256 KiB */
    expect("h200", 0, 0, 45056, "block cluster=8 tpr=160 v=9 w=4 pf=4");
    expect("h200", 0, 0, 98304, "block cluster=8 tpr=384 v=8 w=4 lb=384 pf=4"); /* three an SM (block.cluster3) */
    expect("h200", 0, 0, 16388, "block cluster=2 tpr=288 v=8 w=4 pf=4");
    expect("h200", 0, 0, 18428, "block cluster=2 tpr=288 v=8 w=4 pf=4"); /* below 18432 LayerNorm keeps the clusters */
    expect("h200", 0, 0, 65536, "block cluster=8 tpr=256 v=8 w=4 pf=4");
    expect("h200", 0, 0, 65540, "block cluster=8 tpr=256 v=9 w=4 pf=4"); /* block.cluster_tail: fp32 128-320 KiB */
    expect("h200", 0, 0, 81924, "block cluster=8 tpr=320 v=9 w=4 pf=4");   /* not three an SM at 9 */
    expect("h200", 0, 0, 81928, "block cluster=8 tpr=352 v=8 w=4 lb=384 pf=4"); /* past 320 KiB */
    /* LayerNorm's 16 bits where a block takes 2049-2304 vectors (block.cluster_tail_ln) */
    expect("h200", 2, 0, 65544, "block cluster=4 tpr=256 v=9 w=8 pf=4");
    expect("h200", 1, 0, 131080, "block cluster=8 tpr=256 v=9 w=8 pf=4");
    expect("h200", 2, 0, 32776, "block cluster=2 tpr=256 v=9 w=8 pf=4");
    expect("h200", 2, 0, 36864, "block cluster=2 tpr=288 v=8 w=8 pf=4"); /* no tail */
    expect("h200", 2, 0, 36872, "block cluster=2 tpr=320 v=8 w=8 pf=4"); /* 2305 vectors */
    expect("h200", 2, 0, 114696, "block cluster=8 tpr=256 v=8 w=8 pf=4"); /* 1793 */
    /* and where they take 1281-1792, if 9 whole warps rounded down hold the part (not 1441-1536, 1729-1792) */
    expect("h200", 2, 0, 81928, "block cluster=8 tpr=160 v=9 w=8 pf=4"); /* 1281 */
    expect("h200", 1, 0, 45064, "block cluster=4 tpr=160 v=9 w=8 pf=4"); /* 1409, block.cluster_min's 4 */
    expect("h200", 2, 0, 92160, "block cluster=8 tpr=160 v=9 w=8 pf=4"); /* 1440 */
    expect("h200", 2, 0, 92168, "block cluster=8 tpr=192 v=8 w=8 pf=4"); /* 1441 */
    expect("h200", 2, 0, 110592, "block cluster=8 tpr=192 v=9 w=8 pf=4"); /* 1728 */
    expect("h200", 2, 0, 110600, "block cluster=8 tpr=224 v=8 w=8 pf=4"); /* 1729 */
    expect_rms("h200", 2, 81928, "block cluster=8 tpr=192 v=8 w=8 pf=4");
    expect("h200", 2, 0, 81920, "block cluster=4 tpr=320 v=8 w=8 pf=4"); /* 2560, clusters of 4 */
    /* RMSNorm's 16 bits at rows of 128-132 and 256-288 KiB (block.cluster_tail_rms), not clusters of 2 */
    expect_rms("h200", 2, 65544, "block cluster=4 tpr=256 v=9 w=8 pf=4");
    expect_rms("h200", 2, 67584, "block cluster=4 tpr=256 v=9 w=8 pf=4");
    expect_rms("h200", 2, 67592, "block cluster=4 tpr=288 v=8 w=8 pf=4");
    expect_rms("h200", 2, 147456, "block cluster=8 tpr=288 v=8 w=8 pf=4"); /* 2304: no tail to take */
    expect_rms("h200", 1, 131080, "block cluster=8 tpr=256 v=9 w=8 pf=4");
    expect_rms("h200", 2, 32776, "block cluster=2 tpr=288 v=8 w=8 pf=4");
    expect_rms("h200", 2, 73736, "block cluster=4 tpr=320 v=8 w=8 pf=4");
    expect_rms("h200", 2, 147464, "block cluster=8 tpr=320 v=8 w=8 pf=4");
    expect("h200", 2, 0, 65536, "block cluster=2 tpr=512 v=8 w=8 pf=4");
    expect("h200", 0, 0, 131072, "block cluster=8 tpr=512 v=8 w=4 pf=4");
    expect("h200", 0, 0, 131076, "block loop w=4"); /* past 512 KiB: eight blocks of 512 do not hold it */
    expect("h200", 0, 0, 16384, "warp_row v=8 warps=16 lb=1024");
    /* LayerNorm fp32 forward rows of 72-128 KiB (from 18432 cols): a row a block, x read again (block.reread_ln) */
    expect("h200", 0, 0, 18432, "block reread v=5 w=4 pf=8"); /* half a round ahead to 20480 cols */
    expect("h200", 0, 0, 20480, "block reread v=5 w=4 pf=8");
    expect("h200", 0, 0, 20484, "block reread v=6 w=4 pf=4");
    expect("h100", 0, 0, 20000, "block reread v=5 w=4 pf=8");
    expect("h100", 0, 0, 24576, "block reread v=6 w=4 pf=4");
    expect("h200", 0, 0, 22528, "block reread v=6 w=4 pf=4");
    expect("h200", 0, 0, 31744, "block reread v=8 w=4 pf=4");
    expect("h200", 0, 0, 32768, "block reread v=8 w=4"); /* not at 32768 */
    expect("h200", 0, 0, 32772, "block cluster=4 tpr=256 v=9 w=4 pf=4");
    /* RMSNorm fp32 forward rows of 64-128 KiB (from 16400 cols): a row a block, x read again (block.reread) */
    expect_rms("h200", 0, 32768, "block reread v=8 w=4");
    expect_rms("h200", 0, 24576, "block reread v=6 w=4");
    expect_rms("h200", 0, 22528, "block reread v=6 w=4");
    expect_rms("h200", 0, 22524, "block reread v=6 w=4");
    expect_rms("h200", 0, 16400, "block reread v=5 w=4 pf=4"); /* to 17920 cols the prefetch (block.reread_rms_pf) */
    expect_rms("h200", 0, 17920, "block reread v=5 w=4 pf=4");
    expect_rms("h200", 0, 17924, "block reread v=5 w=4");
    expect_rms("h200", 0, 16396, "block cluster=2 tpr=288 v=8 w=4 pf=4"); /* below 16400 the clusters */
    expect_rms("h200", 0, 16384, "warp_row v=8 warps=16 lb=1024");
    expect_rms("h200", 0, 20480, "block reread v=5 w=4");
    expect_rms("h200", 0, 32772, "block cluster=4 tpr=256 v=9 w=4 pf=4");
    expect_rms("h200", 2, 65536, "block cluster=2 tpr=512 v=8 w=8 pf=4");
    expect("h100", 1, 0, 65536, "block cluster=2 tpr=512 v=8 w=8 pf=4");
    expect("a100", 1, 0, 65536, "block loop w=8"); /* no clusters before sm_90 */
    expect("a100", 0, 0, 20000, "block tpr=1024 v=8 w=4");
    /* rows that are not 16-byte multiples: block, w=1 */
    expect("h100", 1, 0, 4097, "block tpr=1024 v=8 w=1");
    expect("h100", 2, 1, 127, "block tpr=16 v=8 w=1");
    expect("h100", 0, 1, 70001 - 4, "block loop w=1");
}

/* A100 and L40S never plan bulk (sm_90a runs on 9.0 alone), and say why. */
static void test_bulk_sm90_only(void **state)
{
    (void)state;
    for (int di = 1; di < 3; di++)
        for (int dt = 0; dt < 3; dt++)
            for (int bwd = 0; bwd < 2; bwd++)
                for (long cols = 8; cols <= MAXCOLS; cols += 8) {
                    kb_norm_plan p = auto_plan(devs[di], dt, bwd, 4096, cols);
                    assert_int_not_equal(p.variant, KB_NORM_BULK);
                }
    kb_norm_shape s = shape(1, 1, 4096, 12288);
    kb_norm_plan p;
    char why[200];
    assert_int_equal(kb_norm_plan_make(&s, dev("a100"), KB_NORM_BULK, NULL, &p, why, sizeof why), -1);
    assert_non_null(strstr(why, "sm_90"));
}

/* n/a reasons for fixed tunables a variant cannot take */
static void test_na_reasons(void **state)
{
    (void)state;
    const kb_devattr *h = dev("h100");
    kb_norm_plan p;
    char why[200];
    struct {
        int dt, bwd;
        long cols;
        int var;
        kb_norm_tune t;
        const char *says;
    } cases[] = {
        {0, 0, 1024, KB_NORM_WARP_ROW, {8, -1, -1}, "v=8"},
        {1, 1, 4096, KB_NORM_WARP_ROW, {4, -1, -1}, "at most 2"},
        {1, 0, 4096, KB_NORM_WARP_ROW, {-1, 3, -1}, "forward"},
        {1, 1, 10240, KB_NORM_WARP_ROW, {-1, 0, -1}, "staged"},
        {1, 0, 4097, KB_NORM_WARP_ROW, {-1, -1, -1}, "multiple of 16"},
        {1, 0, 200000, KB_NORM_WARP_ROW, {-1, -1, -1}, "warps"},
        {0, 1, 16384, KB_NORM_BULK, {-1, -1, 2}, "slots=2"},
        {1, 1, 12288, KB_NORM_BULK, {4, -1, -1}, "at most"},
        {1, 1, 4097, KB_NORM_BULK, {-1, -1, -1}, "multiple of 16"},
        {1, 0, 4096, KB_NORM_BULK, {2, -1, -1}, "built for 4 and 8"},
        {1, 1, 64, KB_NORM_WARP_ROW, {1, 3, -1}, "stages=3 at v=1"},
        {1, 1, 5120, KB_NORM_WARP_ROW, {-1, 2, -1}, "stages=2 is built for rows of 4 and 8 warps"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kb_norm_shape s = shape(cases[i].dt, cases[i].bwd, 4096, cases[i].cols);
        why[0] = 0;
        if (kb_norm_plan_make(&s, h, cases[i].var, &cases[i].t, &p, why, sizeof why) != -1)
            fail_msg("case %zu: planned %s", i, describe(&p));
        if (!strstr(why, cases[i].says)) fail_msg("case %zu: reason \"%s\" does not say \"%s\"", i, why, cases[i].says);
    }
    /* slots=1 on fp32 rows of 4 vectors a thread: the piped ring, whose fourth part is empty at cols 8196
     * (2049 vectors on 1024 threads); without gamma at cols 16384 it pipes too, gamma in no slot */
    kb_norm_shape sp = shape(0, 1, 4096, 8196);
    kb_norm_tune tp = {-1, -1, 1};
    assert_int_equal(kb_norm_plan_make(&sp, h, KB_NORM_BULK, &tp, &p, why, sizeof why), 0);
    assert_string_equal(describe(&p), "bulk v=4 rows=1 slots=1 gamma=smem stats=smem pipe");
    sp.cols = 16384;
    sp.affine = 0;
    tp.slots = -1;
    assert_int_equal(kb_norm_plan_make(&sp, h, KB_NORM_AUTO, &tp, &p, why, sizeof why), 0);
    assert_string_equal(describe(&p), "bulk v=4 rows=1 slots=1 gamma=l1 stats=smem pipe");
    /* slots=2 where two chunks fit (fp32 12288) keeps the unpiped ring of two, gamma in L1 */
    sp.cols = 12288;
    sp.affine = 1;
    tp.slots = 2;
    assert_int_equal(kb_norm_plan_make(&sp, h, KB_NORM_BULK, &tp, &p, why, sizeof why), 0);
    assert_string_equal(describe(&p), "bulk v=4 rows=1 slots=2 gamma=l1 stats=smem");
    /* stages=3 with vec auto on a short backward row: 2 vectors a lane (1 staged is not built) */
    kb_norm_shape sh = shape(1, 1, 4096, 64);
    kb_norm_tune st = {-1, 3, -1};
    assert_int_equal(kb_norm_plan_make(&sh, h, KB_NORM_WARP_ROW, &st, &p, why, sizeof why), 0);
    assert_int_equal(p.nv, 2);
    assert_int_equal(p.stages, 3);
    /* unaligned tensors: warp_row and bulk n/a, opt runs the block kernels with w=1 */
    kb_norm_shape s = shape(1, 0, 4096, 4096);
    s.unaligned = 1;
    assert_int_equal(kb_norm_plan_make(&s, h, KB_NORM_WARP_ROW, NULL, &p, why, sizeof why), -1);
    assert_int_equal(kb_norm_plan_make(&s, h, KB_NORM_AUTO, NULL, &p, why, sizeof why), 0);
    assert_int_equal(p.variant, KB_NORM_BLOCK);
    assert_int_equal(p.w, 1);
}

/* every row of the table has a key, a pass, dtypes, a range and a reason;
 * every row but the fallbacks decides something somewhere in the sweep */
static void test_table(void **state)
{
    (void)state;
    assert_true(kb_norm_nrules > 10);
    for (int i = 0; i < kb_norm_nrules; i++) {
        const kb_norm_rule *r = &kb_norm_rules[i];
        assert_non_null(r->key);
        assert_true(r->pass >= -1 && r->pass <= 1);
        assert_true(r->dtypes > 0 && r->dtypes < 8);
        assert_true(r->lo <= r->hi);
        assert_non_null(r->why);
        if (strlen(r->why) < 20) fail_msg("rule %d (%s): no measured reason", i, r->key);
    }
    /* each "try" row is chosen for some case */
    int used[64] = {0};
    for (int di = 0; di < NDEVS; di++)
        for (int dt = 0; dt < 3; dt++)
            for (int bwd = 0; bwd < 2; bwd++)
                for (long cols = 1; cols <= MAXCOLS; cols += cols < 64 ? 1 : 61) used[auto_plan(devs[di], dt, bwd, 4096, cols).rule] = 1;
    for (int i = 0; i < kb_norm_nrules && i < 64; i++)
        if (!strcmp(kb_norm_rules[i].key, "try") && !used[i]) fail_msg("\"try\" row %d never chosen", i);
}

/* LayerNorm and RMSNorm forward on every device, dtype and column count to
 * 65536, affine or not: opt's plan satisfies the invariants, has its kernels,
 * and is the reread kernel exactly on sm_90's fp32 rows of 16400-32768 cols
 * for RMSNorm (block.reread), 18432-32768 for LayerNorm (block.reread_ln);
 * block's plan is opt's there. */
static void test_reread(void **state)
{
    (void)state;
    long n = 0;
    for (int di = 0; di < NDEVS; di++) {
        const kb_devattr *d = dev(devs[di]);
        const int sm90 = d->cc_major == 9 && d->cc_minor == 0;
        for (int dt = 0; dt < 3; dt++)
            for (int rms = 0; rms < 2; rms++)
                for (int aff = 0; aff < 2; aff++)
                    for (long cols = 1; cols <= MAXCOLS; cols++) {
                        kb_norm_shape s = shape(dt, 0, 4096, cols);
                        s.rms = rms, s.affine = aff;
                        const kb_norm_plan p = plan_of(devs[di], &s);
                        check_plan(devs[di], d, &s, &p);
                        const int want =
                            sm90 && dt == 0 && cols % 4 == 0 && cols >= (rms ? 16400 : 18432) && cols <= 32768;
                        if (p.rr != want)
                            fail_msg("%s %s %s cols %ld: %s", devs[di], dts[dt], rms ? "rmsnorm" : "layernorm", cols,
                                     describe(&p));
                        if (!p.rr) continue;
                        n++;
                        assert_true(kb_norm_exec_has_kernel(&p));
                        kb_norm_plan b;
                        char why[200];
                        assert_int_equal(kb_norm_plan_make(&s, d, KB_NORM_BLOCK, NULL, &b, why, sizeof why), 0);
                        b.rule = p.rule;
                        assert_memory_equal(&b, &p, sizeof b);
                    }
    }
    /* h100 and h200, affine or not: RMSNorm cols 16400-32768 by 4, LayerNorm 18432-32768 */
    assert_int_equal(n, 2 * 2 * (4093 + 3585));
}

/* The rows ahead a cluster plan's blocks prefetch: pf sixteenths of the
 * resident rows, at least one; none without pf or without resident rows. */
static void test_ahead(void **state)
{
    (void)state;
    kb_norm_plan p = auto_plan("h200", 0, 0, 4096, 16388);
    assert_int_equal(p.cl, 2);
    assert_int_equal(p.pf, 4);
    assert_int_equal(kb_norm_plan_ahead(&p, 198), 49); /* 132 SMs, three blocks of 288 an SM, two a cluster */
    assert_int_equal(kb_norm_plan_ahead(&p, 66), 16);
    assert_int_equal(kb_norm_plan_ahead(&p, 3), 1);
    assert_int_equal(kb_norm_plan_ahead(&p, 0), 0);
    p.pf = 8;
    assert_int_equal(kb_norm_plan_ahead(&p, 66), 33);
    /* the reread rows: LayerNorm's with gamma and beta to 31744 cols (block.reread_ln_pf), a block an SM */
    kb_norm_plan r = auto_plan("h200", 0, 0, 4096, 24576);
    assert_int_equal(r.rr, 1);
    assert_int_equal(kb_norm_plan_ahead(&r, 132), 33);
    r = auto_plan("h200", 0, 0, 4096, 32768);
    assert_int_equal(r.rr, 1);
    assert_int_equal(kb_norm_plan_ahead(&r, 132), 0);
    kb_norm_shape s = shape(0, 0, 4096, 24576);
    s.affine = 0;
    r = plan_of("h200", &s);
    assert_true(r.rr && r.pf == 0);
    s.affine = 1, s.rms = 1; /* RMSNorm's reread rows prefetch to 17920 cols (block.reread_rms_pf) */
    r = plan_of("h200", &s);
    assert_true(r.rr && r.pf == 0);
    s.cols = 17920;
    r = plan_of("h200", &s);
    assert_true(r.rr && r.pf == 4);
    s.cols = 16400, s.rows = 2000;
    r = plan_of("h200", &s);
    assert_true(r.rr && r.pf == 4);
    s.rows = 1999; /* below 2000 rows (block.reread_pf_rows) */
    r = plan_of("h200", &s);
    assert_true(r.rr && r.pf == 0);
    s.rms = 0, s.cols = 24576;
    r = plan_of("h200", &s);
    assert_true(r.rr && r.pf == 0);
    s.rows = 2000;
    r = plan_of("h200", &s);
    assert_true(r.rr && r.pf == 4);
}

/* kb_norm_exec_prepare refuses a plan made for other columns than the
 * arguments hold (its threads' coverage and its shared memory follow them)
 * before it asks the device anything; the forward warp rows' prepare asks
 * nothing, so the plan's own columns pass here without a GPU. */
static void test_prepare_cols(void **state)
{
    (void)state;
    for (int dt = 0; dt < 3; dt++) {
        const long w = 16 / esize(dt);
        const kb_norm_plan p = auto_plan("h100", dt, 0, 4096, 4096);
        assert_int_equal(p.variant, KB_NORM_WARP_ROW);
        assert_int_equal(p.cols, 4096);
        kb_norm_args a = {.dtype = dt, .rows = 4096, .cols = 4096, .eps = 1e-5f};
        kb_norm_exec x;
        assert_int_equal(kb_norm_exec_prepare(&a, &p, dev("h100"), &x), 0);
        a.cols = (long)p.tpr * p.nv * p.w + w; /* past what its threads hold */
        assert_int_not_equal(kb_norm_exec_prepare(&a, &p, dev("h100"), &x), 0);
        a.cols = 4096 - w; /* covered, but not the plan's */
        assert_int_not_equal(kb_norm_exec_prepare(&a, &p, dev("h100"), &x), 0);
        /* a bulk backward plan for 12000 columns covers 16384 with a ring sized for 12000 */
        const kb_norm_plan b = auto_plan("h200", dt, 1, 4096, 12000 / w * w);
        kb_norm_args ab = {.dtype = dt, .backward = 1, .rows = 4096, .cols = 16384, .eps = 1e-5f};
        assert_int_not_equal(kb_norm_exec_prepare(&ab, &b, dev("h200"), &x), 0);
        /* a cluster plan (h200, past 64 KiB): refused before the device is asked where to place it */
        const kb_norm_plan c = auto_plan("h200", dt, 0, 4096, 65536);
        assert_true(c.cl >= 2);
        a.cols = 65536 + w;
        assert_int_not_equal(kb_norm_exec_prepare(&a, &c, dev("h200"), &x), 0);
    }
    /* a reread plan has a kernel for each op's arguments: LayerNorm's with or without gamma
     * and beta, RMSNorm's with or without gamma, but none for RMSNorm with beta */
    kb_norm_shape s = shape(0, 0, 4096, 32768);
    const kb_norm_plan r = plan_of("h200", &s);
    assert_true(r.rr);
    float g[1];
    kb_norm_args a = {.dtype = 0, .rms = 0, .rows = 4096, .cols = 32768, .eps = 1e-5f};
    kb_norm_exec x;
    const void *k[2][3] = {{0}};
    for (int rms = 0; rms < 2; rms++)
        for (int aff = 0; aff < 3; aff++) {
            a.rms = rms, a.gamma = aff ? g : NULL, a.beta = aff == 2 ? g : NULL;
            assert_int_equal(kb_norm_exec_prepare(&a, &r, dev("h200"), &x) != 0, rms && aff == 2);
            if (!(rms && aff == 2)) k[rms][aff] = x.kernel;
        }
    /* five kernels: LayerNorm's merge their statistics in block_merge, RMSNorm's keep group_merge */
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < i; j++) assert_ptr_not_equal((&k[0][0])[i], (&k[0][0])[j]);
}

int main(int argc, char **argv)
{
    update = argc > 1 && !strcmp(argv[1], "--update");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_known_shapes),
        cmocka_unit_test(test_bulk_sm90_only),
        cmocka_unit_test(test_na_reasons),
        cmocka_unit_test(test_golden),
        cmocka_unit_test(test_tunables),
        cmocka_unit_test(test_invariants),
        cmocka_unit_test(test_reread),
        cmocka_unit_test(test_prepare_cols),
        cmocka_unit_test(test_ahead),
    };
    return cmocka_run_group_tests_name("norm_plan", tests, NULL, NULL);
}
