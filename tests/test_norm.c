/* LayerNorm / RMSNorm: the CPU references (refs/norm.c) against the maths
 * (normalised rows, hand-worked values, finite differences), and the op
 * descriptors' byte model, outputs and tolerances. */
#include <stdio.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../cli/core/config.h"
#include "../cli/core/errors.h"
#include "../cli/core/op.h"
#include "../cli/core/params.h"
#include "../cli/core/plugin.h"
#include "../cli/core/registry.h"
#include "../cli/harness/verify.h"
#include "../include/kb_devattr.h"
#include "../include/kb_dtype.h"
#include "../cli/ops/norm_inputs.h"
#include "../refs/refs.h"
#include "norm_case.h"

static double *rand_vec(size_t n, uint64_t seed, double lo, double hi)
{
    kb_rng r;
    kb_rng_seed(&r, seed);
    double *v = malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++) v[i] = kb_rng_uniform(&r, lo, hi);
    return v;
}

/* With eps = 0 and no affine, every LayerNorm row has mean 0 and variance 1. */
static void test_xhat_mean0_var1(void **state)
{
    (void)state;
    const long rows = 5, cols = 37;
    double *x = rand_vec((size_t)(rows * cols), 1, -1.0, 3.0), *y = malloc((size_t)(rows * cols) * sizeof *y);
    double mean[5], rstd[5];
    ref_norm_fwd(0, rows, cols, 0.0, x, NULL, NULL, y, mean, rstd);
    for (long r = 0; r < rows; r++) {
        double m = 0, v = 0, xm = 0;
        for (long j = 0; j < cols; j++) { m += y[r * cols + j]; xm += x[r * cols + j]; }
        m /= cols;
        for (long j = 0; j < cols; j++) v += (y[r * cols + j] - m) * (y[r * cols + j] - m);
        v /= cols;
        assert_true(fabs(m) < 1e-12);
        assert_true(fabs(v - 1) < 1e-12);
        assert_true(fabs(mean[r] - xm / cols) < 1e-12);
        assert_true(mean[r] > 0.3); /* the inputs' mean is 1: the row was centred, not just scaled */
    }
    free(x);
    free(y);
}

/* Hand-worked: x = 1, 2, 3, 4: mean 2.5, variance 1.25; with gamma 2, beta 1 */
static void test_layernorm_hand(void **state)
{
    (void)state;
    double x[4] = {1, 2, 3, 4}, g[4] = {2, 2, 2, 2}, b[4] = {1, 1, 1, 1}, y[4], mean, rstd;
    ref_norm_fwd(0, 1, 4, 0.0, x, g, b, y, &mean, &rstd);
    assert_true(mean == 2.5);
    assert_true(fabs(rstd - 1 / sqrt(1.25)) < 1e-15);
    for (int j = 0; j < 4; j++) assert_true(fabs(y[j] - ((x[j] - 2.5) / sqrt(1.25) * 2 + 1)) < 1e-14);
    /* eps enters under the root */
    ref_norm_fwd(0, 1, 4, 2.75, x, NULL, NULL, y, &mean, &rstd); /* 1.25 + 2.75 = 4 */
    assert_true(fabs(rstd - 0.5) < 1e-15);
}

/* RMSNorm of a constant row c: rstd = 1/sqrt(c^2 + eps), y = c*rstd*gamma. */
static void test_rmsnorm_constant_row(void **state)
{
    (void)state;
    const double cs[] = {3.0, -0.5, 1e-3};
    for (int k = 0; k < 3; k++) {
        double c = cs[k], x[9], g[9], y[9], rstd, mean = -1;
        for (int j = 0; j < 9; j++) { x[j] = c; g[j] = 1 + j; }
        ref_norm_fwd(1, 1, 9, 1e-5, x, g, NULL, y, &mean, &rstd);
        assert_true(mean == 0);
        assert_true(fabs(rstd - 1 / sqrt(c * c + 1e-5)) < 1e-12 * rstd);
        for (int j = 0; j < 9; j++) assert_true(fabs(y[j] - c / sqrt(c * c + 1e-5) * (1 + j)) < 1e-12);
    }
    /* hand-worked: x = 3, 4: mean square 12.5 */
    double x[2] = {3, 4}, y[2], rstd;
    ref_norm_fwd(1, 1, 2, 0.0, x, NULL, NULL, y, NULL, &rstd);
    assert_true(fabs(rstd - 1 / sqrt(12.5)) < 1e-15);
    assert_true(fabs(y[1] - 4 / sqrt(12.5)) < 1e-15);
}

/* L = sum(y * w): the backward's dx, dgamma, dbeta against central finite
 * differences of the forward, in double. */
static double loss(int rms, long rows, long cols, const double *x, const double *g, const double *b, const double *w)
{
    double *y = malloc((size_t)(rows * cols) * sizeof *y), l = 0;
    ref_norm_fwd(rms, rows, cols, 1e-5, x, g, b, y, NULL, NULL);
    for (long i = 0; i < rows * cols; i++) l += y[i] * w[i];
    free(y);
    return l;
}

static void check_fd(int rms, int affine)
{
    const long rows = 3, cols = 7, n = rows * cols;
    const double h = 1e-5;
    double *x = rand_vec((size_t)n, 2, -1.0, 3.0), *w = rand_vec((size_t)n, 3, -1.0, 1.0);
    double *g = affine ? rand_vec((size_t)cols, 4, 0.5, 1.5) : NULL;
    double *b = affine && !rms ? rand_vec((size_t)cols, 5, -0.5, 0.5) : NULL;
    double mean[3], rstd[3], dx[21], dg[7], db[7];
    ref_norm_fwd(rms, rows, cols, 1e-5, x, g, b, NULL, mean, rstd);
    ref_norm_bwd(rms, rows, cols, x, w, g, mean, rstd, dx, affine ? dg : NULL, b ? db : NULL);
    for (long i = 0; i < n; i++) {
        double keep = x[i];
        x[i] = keep + h;
        double lp = loss(rms, rows, cols, x, g, b, w);
        x[i] = keep - h;
        double lm = loss(rms, rows, cols, x, g, b, w);
        x[i] = keep;
        assert_true(fabs(dx[i] - (lp - lm) / (2 * h)) < 1e-7);
    }
    for (long j = 0; affine && j < cols; j++) {
        double keep = g[j];
        g[j] = keep + h;
        double lp = loss(rms, rows, cols, x, g, b, w);
        g[j] = keep - h;
        double lm = loss(rms, rows, cols, x, g, b, w);
        g[j] = keep;
        assert_true(fabs(dg[j] - (lp - lm) / (2 * h)) < 1e-7);
        if (!b) continue;
        keep = b[j];
        b[j] = keep + h;
        lp = loss(rms, rows, cols, x, g, b, w);
        b[j] = keep - h;
        lm = loss(rms, rows, cols, x, g, b, w);
        b[j] = keep;
        assert_true(fabs(db[j] - (lp - lm) / (2 * h)) < 1e-7);
    }
    free(x);
    free(w);
    free(g);
    free(b);
}

static void test_layernorm_bwd_finite_differences(void **state)
{
    (void)state;
    check_fd(0, 1);
    check_fd(0, 0);
}

static void test_rmsnorm_bwd_finite_differences(void **state)
{
    (void)state;
    check_fd(1, 1);
    check_fd(1, 0);
}

/* LayerNorm backward with gamma = 1, beta = 0: each row of dx sums to 0 (and
 * is orthogonal to x^), as y does not move when x shifts or scales. */
static void test_layernorm_dx_sums_to_zero(void **state)
{
    (void)state;
    const long rows = 4, cols = 300, n = rows * cols;
    double *x = rand_vec((size_t)n, 6, -1.0, 3.0), *dy = rand_vec((size_t)n, 7, -1.0, 1.0);
    double *dx = malloc((size_t)n * sizeof *dx), mean[4], rstd[4];
    ref_norm_fwd(0, rows, cols, 0.0, x, NULL, NULL, NULL, mean, rstd);
    ref_norm_bwd(0, rows, cols, x, dy, NULL, mean, rstd, dx, NULL, NULL);
    for (long r = 0; r < rows; r++) {
        double s = 0, sx = 0, a = 0;
        for (long j = 0; j < cols; j++) {
            s += dx[r * cols + j];
            sx += dx[r * cols + j] * (x[r * cols + j] - mean[r]) * rstd[r];
            a += fabs(dx[r * cols + j]);
        }
        assert_true(a > 1); /* not trivially zero */
        assert_true(fabs(s) < 1e-12 * a);
        assert_true(fabs(sx) < 1e-12 * a);
    }
    free(x);
    free(dy);
    free(dx);
}

/* ---- the descriptors ---------------------------------------------------- */
/* bytes a perfect kernel moves, worked out by hand */
/* The column sums' scale: the size of the terms, not of their sum. RMSNorm
 * rows 2 cols 2, x^ = x*rstd = (1, -1), (0.5, 2); dy = (0.5, 0.25), (-1, 1). */
static void test_colsum_scales(void **state)
{
    (void)state;
    const double x[] = {2, -2, 2, 8}, dy[] = {0.5, 0.25, -1, 1}, rstd[] = {0.5, 0.25}, mean[] = {0, 0};
    double dg[2], db[2], sg, sb;
    ref_norm_bwd(1, 2, 2, x, dy, NULL, NULL, rstd, NULL, dg, db);
    ref_norm_colsum_scales(1, 2, 2, x, dy, NULL, rstd, &sg, &sb);
    /* dgamma = (0.5*1 + -1*0.5, 0.25*-1 + 1*2) = (0, 1.75): column 0 cancels to 0 */
    assert_true(fabs(dg[0]) < 1e-15 && fabs(dg[1] - 1.75) < 1e-15);
    assert_true(fabs(sg - sqrt(1.0 * 1.0 + 2.25 * 2.25)) < 1e-12);
    assert_true(fabs(sb - sqrt(1.5 * 1.5 + 1.25 * 1.25)) < 1e-12);
    /* LayerNorm: x^ from the mean too */
    ref_norm_colsum_scales(0, 2, 2, x, dy, mean, rstd, &sg, &sb);
    assert_true(fabs(sg - sqrt(1.0 * 1.0 + 2.25 * 2.25)) < 1e-12);
    const double mean1[] = {1, 0};
    ref_norm_colsum_scales(0, 2, 2, x, dy, mean1, rstd, &sg, &sb); /* row 0's x^ = (0.5, -1.5) */
    assert_true(fabs(sg - sqrt(0.75 * 0.75 + 2.375 * 2.375)) < 1e-12);
}

static void test_byte_model(void **state)
{
    (void)state;
    const char *ln_fwd[] = {"rows", "4096", "cols", "1024", "dtype", "fp16", NULL};
    kb_case c = one_case("layernorm", ln_fwd);
    /* x, y: 2 * 4096*1024*2; gamma, beta: 2 * 1024*2; mean, rstd: 2 * 4096*4 */
    assert_true(c.op->bytes(&c) == 2.0 * 4096 * 1024 * 2 + 2.0 * 1024 * 2 + 2.0 * 4096 * 4);
    const char *ln_bwd[] = {"rows", "4096", "cols", "1024", "dtype", "fp16", "pass", "bwd", NULL};
    c = one_case("layernorm", ln_bwd);
    /* x, dy, dx; gamma; mean, rstd; dgamma, dbeta in fp32 */
    assert_true(c.op->bytes(&c) == 3.0 * 4096 * 1024 * 2 + 1024 * 2 + 2.0 * 4096 * 4 + 2.0 * 1024 * 4);
    const char *rms_bwd[] = {"rows", "10", "cols", "6", "dtype", "fp32", "pass", "bwd", NULL};
    c = one_case("rmsnorm", rms_bwd);
    assert_true(c.op->bytes(&c) == 3.0 * 60 * 4 + 6 * 4 + 10 * 4 + 6 * 4);
    const char *rms_none[] = {"rows", "10", "cols", "6", "dtype", "bf16", "affine", "none", NULL};
    c = one_case("rmsnorm", rms_none);
    assert_true(c.op->bytes(&c) == 2.0 * 60 * 2 + 10 * 4);
}

/* dgamma's tolerance grows with the rows summed, y's (fp32) with the columns;
 * 16-bit outputs are held to their rounding. */
static void test_tolerances(void **state)
{
    (void)state;
    const char *small[] = {"rows", "100", "cols", "64", "pass", "bwd", "dtype", "fp32", NULL};
    const char *big[] = {"rows", "100000", "cols", "64", "pass", "bwd", "dtype", "fp32", NULL};
    kb_case a = one_case("layernorm", small), b = one_case("layernorm", big);
    /* outputs dx, dgamma, dbeta */
    assert_true(b.op->tolerance(&b, 1).rel_l2 > a.op->tolerance(&a, 1).rel_l2);
    assert_true(a.op->tolerance(&a, 0).rel_l2 == b.op->tolerance(&b, 0).rel_l2);
    assert_true(b.op->tolerance(&b, 1).rel_l2 < 1e-4); /* one row in 100000 left out: ~3e-3 */
    const char *h[] = {"dtype", "fp16", NULL};
    kb_case f = one_case("rmsnorm", h);
    assert_true(f.op->tolerance(&f, 0).rel_l2 == 1e-3);
    assert_true(f.op->tolerance(&f, 1).rel_l2 < 1e-4); /* rstd, fp32 */
}

/* Every norm case's x holds a massive activation in one row of four: first,
 * mid-row, last, in turn (cli/ops/norm_inputs.h). */
static void test_outlier_rows(void **state)
{
    (void)state;
    double v = 0;
    for (long r = 0; r < 3; r++) assert_int_equal(kb_norm_outlier(r, 10, &v), -1);
    assert_int_equal(kb_norm_outlier(3, 10, &v), 0);
    assert_true(v == 1000.0);
    assert_int_equal(kb_norm_outlier(7, 10, &v), 5);
    assert_true(v == 1000.0);
    assert_int_equal(kb_norm_outlier(11, 10, &v), 9);
    assert_true(v == -1000.0);
    assert_int_equal(kb_norm_outlier(15, 10, &v), 0);
    assert_true(v == 1000.0);
    assert_int_equal(kb_norm_outlier(8, 10, &v), -1);
    assert_int_equal(kb_norm_outlier(7, 1, &v), 0); /* a row of one value: its middle is its first */
    int n = 0;
    for (long r = 0; r < 400; r++) n += kb_norm_outlier(r, 4096, &v) >= 0;
    assert_int_equal(n, 100);
}

/* y's rel_l2 for one way of taking a row's statistics in fp32 (as a kernel
 * does): two-pass (the mean, then squares about it), or one pass of sums
 * shifted by the row's first value. */
static double y_err(const double *x, long rows, long cols, int shifted)
{
    double *ref = malloc((size_t)(rows * cols) * sizeof *ref), mu[64], rs[64], num = 0, den = 0;
    ref_norm_fwd(0, rows, cols, 1e-5, x, NULL, NULL, ref, mu, rs);
    for (long r = 0; r < rows; r++) {
        const double *row = x + r * cols;
        float mean, var;
        if (shifted) {
            const float k = (float)row[0];
            float s = 0.f, ss = 0.f;
            for (long j = 0; j < cols; j++) {
                const float d = (float)row[j] - k;
                s += d;
                ss += d * d;
            }
            const float m = s / (float)cols;
            mean = k + m, var = ss / (float)cols - m * m;
        } else {
            float s = 0.f, q = 0.f;
            for (long j = 0; j < cols; j++) s += (float)row[j];
            mean = s / (float)cols;
            for (long j = 0; j < cols; j++) q += ((float)row[j] - mean) * ((float)row[j] - mean);
            var = q / (float)cols;
        }
        const float rstd = 1.f / sqrtf(var + 1e-5f);
        for (long j = 0; j < cols; j++) {
            const double e = (double)(((float)row[j] - mean) * rstd) - ref[r * cols + j];
            num += e * e, den += ref[r * cols + j] * ref[r * cols + j];
        }
    }
    free(ref);
    return sqrt(num / den);
}

/* The inputs catch what rows of one uniform range did not: statistics from
 * sums shifted by a value of the row hold fp32 LayerNorm's y tolerance on
 * uniform rows and fail it on the cases' rows, where two passes hold it. */
static void test_outlier_rows_catch_a_shifted_variance(void **state)
{
    (void)state;
    const long rows = 48, cols = 8191;
    const char *kv[] = {"rows", "48", "cols", "8191", "dtype", "fp32", "affine", "none", NULL};
    kb_case c = one_case("layernorm", kv);
    const double tol = c.op->tolerance(&c, 0).rel_l2;
    double *x = malloc((size_t)(rows * cols) * sizeof *x);
    float *xf = malloc((size_t)(rows * cols) * sizeof *xf);
    kb_fill_uniform(xf, (size_t)(rows * cols), KB_FP32, 11, KB_NORM_X_LO, KB_NORM_X_HI);
    for (long i = 0; i < rows * cols; i++) x[i] = xf[i];
    assert_true(y_err(x, rows, cols, 0) < tol);
    assert_true(y_err(x, rows, cols, 1) < tol); /* uniform rows: the shift passes */
    for (long r = 0; r < rows; r++) {
        double v;
        const long j = kb_norm_outlier(r, cols, &v);
        if (j >= 0) x[r * cols + j] = v;
    }
    const double two = y_err(x, rows, cols, 0), shift = y_err(x, rows, cols, 1);
    printf("# fp32 y rel_l2 on the cases' rows (%ld x %ld): two-pass %.2e, shifted %.2e, tolerance %.2e\n", rows, cols, two,
           shift, tol);
    assert_true(two < tol);
    assert_true(shift > 2 * tol);
    free(xf);
    free(x);
}

/* A failed output names its worst element as plugins index it: y[row, col]
 * (the fake device pointers are never read). */
static void test_worst_names_the_element(void **state)
{
    (void)state;
    const char *kv[] = {"rows", "5", "cols", "7", "dtype", "fp32", "affine", "none", NULL};
    kb_case c = one_case("layernorm", kv);
    kb_state st;
    memset(&st, 0, sizeof st);
    static char fake[64];
    double ref[35] = {0}, got[35] = {0}, mref[5] = {0}, rref[5] = {0};
    st.in[st.nin++] = (kb_buf){"x", KB_FP32, 35, fake, NULL, NULL};
    st.out[st.nout++] = (kb_buf){"y", KB_FP32, 35, fake, NULL, ref};
    st.out[st.nout++] = (kb_buf){"mean", KB_FP32, 5, fake, NULL, mref};
    st.out[st.nout++] = (kb_buf){"rstd", KB_FP32, 5, fake, NULL, rref};
    ref[3 * 7] = 64.02;
    got[3 * 7] = 64.01;
    got[4 * 7 + 6] = 1e-3;
    char t[160];
    strcpy(kb_last_error, "before");
    kb_worst_text(&c, &st, 0, got, t, sizeof t);
    assert_string_equal(t, "; worst y[3, 0] = 64.01 (reference 64.02)");
    got[4 * 7 + 6] = NAN; /* unwritten: named first */
    kb_worst_text(&c, &st, 0, got, t, sizeof t);
    assert_string_equal(t, "; worst y[4, 6] = nan (reference 0; unwritten, or a NaN computed)");
    got[4 * 7 + 6] = -NAN; /* the poison's sign: still "nan" */
    kb_worst_text(&c, &st, 0, got, t, sizeof t);
    assert_string_equal(t, "; worst y[4, 6] = nan (reference 0; unwritten, or a NaN computed)");
    got[2] = 1; /* rstd [rows] */
    kb_worst_text(&c, &st, 2, got, t, sizeof t);
    assert_string_equal(t, "; worst rstd[2] = 1 (reference 0)");
    st.in[0].dev = NULL; /* plugin_tensors refuses: the flat index, and kb_last_error kept */
    kb_worst_text(&c, &st, 0, got, t, sizeof t);
    assert_string_equal(t, "; worst y[34] = nan (reference 0; unwritten, or a NaN computed)");
    assert_string_equal(kb_last_error, "before");
}

/* kbench check's sweeps give every implementation cases it takes, in every
 * dtype and pass, on an H100 (and bulk none on an A100): the same sweeps as
 * `kbench check`, their n/a decided by each implementation's supports(). */
static void test_check_sweeps_cover_every_impl(void **state)
{
    (void)state;
    const char *const ops[] = {"layernorm", "rmsnorm"};
    for (int o = 0; o < 2; o++) {
        const kb_op *op = kb_find_op(ops[o]);
        assert_non_null(op);
        kb_case *cases = NULL;
        int n = 0;
        for (int k = 0; k < op->ncheck; k++) {
            char json[2048], err[KB_ERRLEN];
            snprintf(json, sizeof json, "{\"op\": \"%s\", %s", op->name, op->check_sweeps[k] + 1);
            cJSON *sw = cJSON_Parse(json);
            assert_non_null(sw);
            if (kb_config_sweep(sw, "check", 1, &cases, &n, err, sizeof err)) fail_msg("%s sweep %d: %s", op->name, k, err);
            cJSON_Delete(sw);
        }
        const kb_devattr *h100 = kb_devattr_preset("h100"), *a100 = kb_devattr_preset("a100");
        for (int i = 0; i < op->nimpls; i++) {
            int took[2][3] = {{0}}, odd_rows = 0, a100_took = 0;
            for (int c = 0; c < n; c++) {
                char why[256];
                if (kb_impl_supports(&op->impls[i], &cases[c], h100, why, sizeof why)) {
                    assert_true(why[0] != 0);
                    continue;
                }
                took[kb_case_int(&cases[c], "pass") ? 1 : 0][kb_case_dtype(&cases[c])]++;
                odd_rows += kb_case_int(&cases[c], "rows") % 2;
                a100_took += !kb_impl_supports(&op->impls[i], &cases[c], a100, why, sizeof why);
            }
            for (int ps = 0; ps < 2; ps++)
                for (int dt = 0; dt < 3; dt++)
                    if (!took[ps][dt]) fail_msg("%s %s: no check case for pass %d dtype %d", op->name, op->impls[i].name, ps, dt);
            assert_true(odd_rows > 0);
            if (!strcmp(op->impls[i].name, "bulk")) assert_int_equal(a100_took, 0);
            else assert_true(a100_took > 0);
        }
        kb_cases_free(cases, n);
    }
}

/* Each tunable's choice reaches the planner as its number (the enum's text,
 * not a second list of values): --stages 2 plans at 8 warps a row (bf16
 * cols 4096) and is n/a, saying why, at 10 (cols 5120); every other choice
 * of stages plans at 8 warps. */
static void test_tunable_choices_reach_the_planner(void **state)
{
    (void)state;
    const kb_op *op = kb_find_op("layernorm");
    const kb_impl *wr = NULL;
    for (int i = 0; i < op->nimpls; i++)
        if (!strcmp(op->impls[i].name, "warp_row")) wr = &op->impls[i];
    assert_non_null(wr);
    const kb_param *st = &op->params[kb_param_index(op, "stages")];
    const kb_devattr *h100 = kb_devattr_preset("h100");
    char why[256], v[16];
    for (int k = 0; k < kb_choice_count(st); k++) {
        kb_choice(st, k, v, sizeof v);
        const char *at8[] = {"pass", "bwd", "dtype", "bf16", "rows", "4096", "cols", "4096", "stages", v, NULL};
        kb_case c = one_case("layernorm", at8);
        why[0] = 0;
        if (kb_impl_supports(wr, &c, h100, why, sizeof why)) fail_msg("stages=%s at 8 warps: n/a (%s)", v, why);
    }
    const char *at10[] = {"pass", "bwd", "dtype", "bf16", "rows", "4096", "cols", "5120", "stages", "2", NULL};
    kb_case c = one_case("layernorm", at10);
    why[0] = 0;
    assert_int_not_equal(kb_impl_supports(wr, &c, h100, why, sizeof why), 0);
    if (!strstr(why, "stages=2 is built for rows of 4 and 8 warps")) fail_msg("why: %s", why);
    const char *vec4[] = {"pass", "bwd", "dtype", "bf16", "rows", "4096", "cols", "4096", "vec", "4", NULL};
    c = one_case("layernorm", vec4);
    why[0] = 0;
    assert_int_not_equal(kb_impl_supports(wr, &c, h100, why, sizeof why), 0);
    if (!strstr(why, "v=4")) fail_msg("why: %s", why);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_xhat_mean0_var1),
        cmocka_unit_test(test_layernorm_hand),
        cmocka_unit_test(test_rmsnorm_constant_row),
        cmocka_unit_test(test_layernorm_bwd_finite_differences),
        cmocka_unit_test(test_rmsnorm_bwd_finite_differences),
        cmocka_unit_test(test_layernorm_dx_sums_to_zero),
        cmocka_unit_test(test_colsum_scales),
        cmocka_unit_test(test_byte_model),
        cmocka_unit_test(test_tolerances),
        cmocka_unit_test(test_outlier_rows),
        cmocka_unit_test(test_outlier_rows_catch_a_shifted_variance),
        cmocka_unit_test(test_worst_names_the_element),
        cmocka_unit_test(test_check_sweeps_cover_every_impl),
        cmocka_unit_test(test_tunable_choices_reach_the_planner),
    };
    return cmocka_run_group_tests_name("norm", tests, NULL, NULL);
}
