/* The SwiGLU MLP without a GPU: the reference (refs/mlp.c) on cases worked
 * by hand, the op's models, validation, tolerances and sweeps, and the row
 * sampling large shapes verify with. */
#include <stdio.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <cjson/cJSON.h>
#include <math.h>
#include <omp.h>
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
#include "../refs/refs.h"

/* sigmoid(1), sigmoid(2), sigmoid(3) */
#define S1 0.7310585786300049
#define S2 0.8807970779778823
#define S3 0.9525741268224334

static const kb_op *mlp(void)
{
    const kb_op *op = kb_find_op("mlp");
    assert_non_null(op);
    return op;
}

/* One case from flag-style values; NULL values keep the default. */
static kb_case one_case(const char *dtype, const char *tf32, const char *tokens, const char *hidden, const char *inter)
{
    kb_sweep s;
    kb_sweep_init(&s, mlp());
    char err[KB_ERRLEN] = "";
    const char *names[] = {"dtype", "tf32", "tokens", "hidden", "inter"};
    const char *vals[] = {dtype, tf32, tokens, hidden, inter};
    for (int i = 0; i < 5; i++)
        if (vals[i] && kb_sweep_set(&s, names[i], vals[i], err, sizeof err)) fail_msg("%s=%s: %s", names[i], vals[i], err);
    kb_case *cases = NULL;
    int n = 0;
    if (kb_sweep_expand(&s, &cases, &n, err, sizeof err)) fail_msg("expand: %s", err);
    assert_int_equal(n, 1);
    kb_case c = cases[0];
    kb_cases_free(cases, n);
    kb_sweep_free(&s);
    return c;
}

/* the error of expanding one case, or "" when it is accepted */
static const char *expand_error(const char *dtype, const char *tf32, const char *tokens, const char *hidden,
                                const char *inter)
{
    static char err[KB_ERRLEN];
    kb_sweep s;
    kb_sweep_init(&s, mlp());
    err[0] = 0;
    const char *names[] = {"dtype", "tf32", "tokens", "hidden", "inter"};
    const char *vals[] = {dtype, tf32, tokens, hidden, inter};
    for (int i = 0; i < 5; i++)
        if (vals[i] && kb_sweep_set(&s, names[i], vals[i], err, sizeof err)) {
            kb_sweep_free(&s);
            return err;
        }
    kb_case *cases = NULL;
    int n = 0;
    int rc = kb_sweep_expand(&s, &cases, &n, err, sizeof err);
    kb_cases_free(cases, n);
    if (!rc) err[0] = 0;
    kb_sweep_free(&s);
    return err;
}

/* ---- silu ------------------------------------------------------------------- */

static void test_silu(void **state)
{
    (void)state;
    assert_true(ref_silu(0.0) == 0.0);
    assert_true(fabs(ref_silu(1.0) - S1) < 1e-15);
    assert_true(fabs(ref_silu(2.0) - 2 * S2) < 1e-15);
    assert_true(fabs(ref_silu(3.0) - 3 * S3) < 1e-15);
    assert_true(fabs(ref_silu(-1.0) - -(1 - S1)) < 1e-15); /* sigmoid(-a) = 1 - sigmoid(a) */
    assert_true(fabs(ref_silu(-2.0) - -2 * (1 - S2)) < 1e-15);
    /* silu(a) - silu(-a) = a */
    for (double a = -30; a <= 30; a += 0.37) assert_true(fabs(ref_silu(a) - ref_silu(-a) - a) <= 1e-14 * (1 + fabs(a)));
    /* the tails: a for large a, a vanishing negative for very negative a, never NaN */
    assert_true(fabs(ref_silu(40.0) - 40.0) < 1e-12);
    assert_true(ref_silu(-40.0) < 0 && ref_silu(-40.0) > -1e-15);
    assert_true(ref_silu(1000.0) == 1000.0);
    double far = ref_silu(-1000.0);
    assert_true(far == 0.0 && !isnan(far));
    /* its minimum, -0.278464542761074 at -1.278464542761074 */
    double m = ref_silu(-1.278464542761074);
    assert_true(fabs(m - -0.278464542761074) < 1e-14);
    assert_true(ref_silu(-1.2) > m && ref_silu(-1.35) > m);
}

/* ---- the reference, by hand --------------------------------------------------- */

/* tokens 2, hidden 3, inter 4, small integers:
 *   x = [1 0 -1; 2 1 0]
 *   G rows [1 0 0], [0 1 1], [1 1 1], [0 0 -1]  ->  g = [1 -1 0 1; 2 1 3 0]
 *   U rows [1 1 0], [0 0 2], [2 0 0], [1 0 1]   ->  u = [1 -2 2 0; 3 0 4 2]
 *   h = silu(g) u = [s1, 2(1 - s1), 0, 0; 6 s2, 0, 12 s3, 0]   (s_a = sigmoid(a))
 *   D rows [1 0 0 0], [0 1 1 0], [1 -1 0 2]  ->  y_t = [h0, h1 + h2, h0 - h1 + 2 h3] */
static const double hx[6] = {1, 0, -1, 2, 1, 0};
static const double hG[12] = {1, 0, 0, 0, 1, 1, 1, 1, 1, 0, 0, -1};
static const double hU[12] = {1, 1, 0, 0, 0, 2, 2, 0, 0, 1, 0, 1};
static const double hD[12] = {1, 0, 0, 0, 0, 1, 1, 0, 1, -1, 0, 2};

static void expect_hand(int dtype, const double h[2][4])
{
    ref_mlp_args a = {2, 3, 4, dtype};
    double y[6];
    ref_mlp(&a, hx, hG, hU, hD, y);
    for (int t = 0; t < 2; t++) {
        const double want[3] = {h[t][0], h[t][1] + h[t][2], h[t][0] - h[t][1] + 2 * h[t][3]};
        for (int i = 0; i < 3; i++)
            if (fabs(y[t * 3 + i] - want[i]) > 1e-15)
                fail_msg("dtype %d: y[%d][%d] = %.17g, want %.17g", dtype, t, i, y[t * 3 + i], want[i]);
    }
}

static void test_hand_2x3x4(void **state)
{
    (void)state;
    /* fp32: h rounded to float (g and u are integers, exact in every dtype) */
    const double f32[2][4] = {{(float)S1, (float)(2 * (1 - S1)), 0, 0}, {(float)(6 * S2), 0, (float)(12 * S3), 0}};
    expect_hand(KB_FP32, f32);
    /* bf16 (8 significant bits), nearest-even: s1 = 0.7310585786 -> 187/256;
     * 2(1 - s1) = 0.5378828427 -> 138/256; 6 s2 = 5.2847824679 -> 169/32;
     * 12 s3 = 11.4308895219 -> 183/16 */
    const double b16[2][4] = {{0.73046875, 0.5390625, 0, 0}, {5.28125, 0, 11.4375, 0}};
    expect_hand(KB_BF16, b16);
    /* fp16 (11 significant bits): 1497/2048, 1102/2048, 1353/256, 1463/128 */
    const double f16[2][4] = {{0.73095703125, 0.5380859375, 0, 0}, {5.28515625, 0, 11.4296875, 0}};
    expect_hand(KB_FP16, f16);
}

/* Where the reference rounds: g and u before silu, h before the down
 * projection, y not at all. tokens 1, hidden 2, inter 1:
 *   x = [1 1], G = [1 2^-8] -> g = 1 + 2^-8, U = [1 2^-8] -> u = 1 + 2^-8,
 *   D = [1; 1 + 2^-7].
 * In bf16, 1 + 2^-8 is a tie and rounds to 1 (even): h = silu(1) -> 187/256,
 * y = [187/256, 187/256 (1 + 2^-7)] = [0.73046875, 24123/32768 = 0.736175537109375],
 * the second exact in double but not a bf16 value. In fp32 nothing rounds
 * but h: h = (float) silu(1 + 2^-8) (1 + 2^-8). */
static void test_rounding_points(void **state)
{
    (void)state;
    const double x[2] = {1, 1}, G[2] = {1, 0x1p-8}, U[2] = {1, 0x1p-8}, D[2] = {1, 1 + 0x1p-7};
    double y[2];
    ref_mlp_args a = {1, 2, 1, KB_BF16};
    ref_mlp(&a, x, G, U, D, y);
    assert_true(y[0] == 0.73046875);
    assert_true(y[1] == 0.73046875 * (1 + 0x1p-7));
    assert_true(y[1] == 0.736175537109375);
    /* unrounded g and u would give silu(1 + 2^-8)(1 + 2^-8) = 0.73755... -> 189/256 */
    assert_true(y[0] != 189.0 / 256);
    a.dtype = KB_FP32;
    ref_mlp(&a, x, G, U, D, y);
    double g = 1 + 0x1p-8, sg = 1 / (1 + exp(-g));
    double h = (float)(g * sg * g);
    assert_true(fabs(y[0] - h) == 0);
    assert_true(y[1] == h * (1 + 0x1p-7));
}

/* Rows are independent: the reference of a subset of the tokens is those rows of the whole. */
static void test_rows_independent(void **state)
{
    (void)state;
    long T = 9, H = 13, In = 21;
    kb_rng r;
    kb_rng_seed(&r, 77);
    double *x = malloc(sizeof(double) * (size_t)(T * H)), *w[3];
    for (long i = 0; i < T * H; i++) x[i] = kb_rng_uniform(&r, -1, 1);
    for (int k = 0; k < 3; k++) {
        w[k] = malloc(sizeof(double) * (size_t)(H * In));
        for (long i = 0; i < H * In; i++) w[k][i] = kb_rng_uniform(&r, -0.5, 0.5);
    }
    double *all = malloc(sizeof(double) * (size_t)(T * H)), *sub = malloc(sizeof(double) * 3 * (size_t)H),
           *xs = malloc(sizeof(double) * 3 * (size_t)H);
    ref_mlp_args a = {T, H, In, KB_BF16};
    ref_mlp(&a, x, w[0], w[1], w[2], all);
    const long pick[3] = {0, 4, 8};
    for (int i = 0; i < 3; i++) memcpy(xs + i * H, x + pick[i] * H, sizeof(double) * (size_t)H);
    a.rows = 3;
    ref_mlp(&a, xs, w[0], w[1], w[2], sub);
    for (int i = 0; i < 3; i++)
        for (long k = 0; k < H; k++) assert_true(sub[i * H + k] == all[pick[i] * H + k]);
    /* and the rows do differ from one another */
    assert_true(memcmp(all, all + H, sizeof(double) * (size_t)H) != 0);
    free(x);
    for (int k = 0; k < 3; k++) free(w[k]);
    free(all);
    free(sub);
    free(xs);
}

/* The op's path (weights in their dtype, a row at a time in double) is the
 * double path bit for bit: odd sizes (rows in pairs, sums in fours), every dtype. */
static void test_typed_weights(void **state)
{
    (void)state;
    kb_rng r;
    kb_rng_seed(&r, 5);
    for (int it = 0; it < 60; it++) {
        const long T = 1 + (long)(kb_rng_next(&r) % 9), H = 1 + (long)(kb_rng_next(&r) % 37),
                   In = 1 + (long)(kb_rng_next(&r) % 41);
        const kb_dtype dt = (kb_dtype)(it % KB_NDTYPES);
        const size_t nw = (size_t)(H * In), es = kb_dtype_size(dt);
        double *x = malloc(sizeof(double) * (size_t)(T * H)), *wd[3], *y0 = malloc(sizeof(double) * (size_t)(T * H)),
               *y1 = malloc(sizeof(double) * (size_t)(T * H));
        void *w[3];
        for (long i = 0; i < T * H; i++) x[i] = kb_rng_uniform(&r, -1, 1);
        for (int k = 0; k < 3; k++) {
            w[k] = malloc(nw * es);
            wd[k] = malloc(nw * sizeof(double));
            kb_fill_uniform(w[k], nw, dt, 100 + (uint64_t)(3 * it + k), -0.8, 0.8);
            kb_load_all(w[k], nw, dt, wd[k]);
        }
        ref_mlp_args a = {T, H, In, dt};
        const double s0 = ref_mlp(&a, x, wd[0], wd[1], wd[2], y0), s1 = ref_mlp_typed(&a, x, w[0], w[1], w[2], y1);
        if (s0 != s1 || memcmp(y0, y1, sizeof(double) * (size_t)(T * H)))
            fail_msg("%ld x %ld x %ld %s: the typed reference differs (scale %.17g vs %.17g)", T, H, In,
                     kb_dtype_name(dt), s1, s0);
        assert_true(s0 > 0 && isfinite(s0));
        free(x);
        free(y0);
        free(y1);
        for (int k = 0; k < 3; k++) {
            free(w[k]);
            free(wd[k]);
        }
    }
}

/* The scale and y do not depend on the threads (the scale's sum runs in
 * the rows' order, not in the order the threads finish) */
static void test_threads_same(void **state)
{
    (void)state;
    const long T = 7, H = 301, In = 203;
    kb_rng r;
    kb_rng_seed(&r, 9);
    double *x = malloc(sizeof(double) * (size_t)(T * H)), *w[3], *y[3];
    for (long i = 0; i < T * H; i++) x[i] = kb_rng_uniform(&r, -1, 1);
    for (int k = 0; k < 3; k++) {
        w[k] = malloc(sizeof(double) * (size_t)(H * In));
        for (long i = 0; i < H * In; i++) w[k][i] = kb_rng_uniform(&r, -0.2, 0.2);
        y[k] = malloc(sizeof(double) * (size_t)(T * H));
    }
    ref_mlp_args a = {T, H, In, KB_BF16};
    const int threads[3] = {1, 3, 8};
    double scale[3];
    const int was = omp_get_max_threads();
    for (int k = 0; k < 3; k++) {
        omp_set_num_threads(threads[k]);
        scale[k] = ref_mlp(&a, x, w[0], w[1], w[2], y[k]);
    }
    omp_set_num_threads(was);
    for (int k = 1; k < 3; k++) {
        if (scale[k] != scale[0]) fail_msg("%d threads: scale %.17g, 1 thread: %.17g", threads[k], scale[k], scale[0]);
        assert_memory_equal(y[k], y[0], sizeof(double) * (size_t)(T * H));
    }
    free(x);
    for (int k = 0; k < 3; k++) {
        free(w[k]);
        free(y[k]);
    }
}

/* ---- the tolerance against fp32 arithmetic where products cancel ------------------ */

/* fp32 as a GPU computes it: fmaf running sums (forwards, or backwards: another
 * kernel's order), expf in silu, h rounded to float. */
static float dot_f32(const float *a, long sa, const float *b, long n, int backwards)
{
    float s = 0;
    for (long k = 0; k < n; k++) {
        const long i = backwards ? n - 1 - k : k;
        s = fmaf(a[i * sa], b[i], s);
    }
    return s;
}

/* rel_l2 / tolerance of an emulated fp32 MLP (plus `bias` times y's rms
 * added to every element: a wrong result) at T x H x In, inputs drawn as the
 * op's setup draws them for `seed`; also the share without the scale. */
static double f32_share(uint64_t seed, long T, long H, long In, int backwards, double bias, double *unscaled)
{
    const size_t nx = (size_t)(T * H), nw = (size_t)(In * H);
    float *x = malloc(nx * 4), *G = malloc(nw * 4), *U = malloc(nw * 4), *D = malloc(nw * 4), *h = malloc((size_t)(T * In) * 4);
    const double ah = 3.0 / sqrt((double)H), ai = 3.0 / sqrt((double)In);
    kb_fill_uniform(x, nx, KB_FP32, seed, -1.0, 1.0); /* cli/ops/mlp.c's setup */
    kb_fill_uniform(G, nw, KB_FP32, seed ^ 0x6a09e667f3bcc908ull, -ah, ah);
    kb_fill_uniform(U, nw, KB_FP32, seed ^ 0xbb67ae8584caa73bull, -ah, ah);
    kb_fill_uniform(D, nw, KB_FP32, seed ^ 0x3c6ef372fe94f82bull, -ai, ai);
    double *xd = malloc(nx * 8), *w[3], *ref = malloc(nx * 8), *got = malloc(nx * 8);
    for (size_t i = 0; i < nx; i++) xd[i] = x[i];
    const float *wf[3] = {G, U, D};
    for (int k = 0; k < 3; k++) {
        w[k] = malloc(nw * 8);
        for (size_t i = 0; i < nw; i++) w[k][i] = wf[k][i];
    }
    ref_mlp_args a = {T, H, In, KB_FP32};
    kb_buf y = {.name = "y", .dtype = KB_FP32, .n = nx, .ref = ref};
    y.scale = ref_mlp(&a, xd, w[0], w[1], w[2], ref);
    for (long r = 0; r < T; r++)
        for (long j = 0; j < In; j++) {
            const float g = dot_f32(x + r * H, 1, G + j * H, H, backwards), u = dot_f32(x + r * H, 1, U + j * H, H, backwards);
            h[r * In + j] = g / (1.f + expf(-g)) * u;
        }
    double ms = 0;
    for (size_t i = 0; i < nx; i++) ms += ref[i] * ref[i];
    for (long r = 0; r < T; r++)
        for (long i = 0; i < H; i++)
            got[r * H + i] = (double)dot_f32(D + i * In, 1, h + r * In, In, backwards) + bias * sqrt(ms / (double)nx);
    kb_case c = one_case("fp32", "off", NULL, NULL, NULL);
    c.v[2].num = (double)T, c.v[3].num = (double)H, c.v[4].num = (double)In;
    const kb_tol tol = mlp()->tolerance(&c, 0);
    double rel, mx;
    kb_compare(&y, got, tol, &rel, &mx);
    const double share = rel / tol.rel_l2;
    y.scale = 0;
    kb_compare(&y, got, tol, &rel, &mx);
    *unscaled = rel / tol.rel_l2;
    free(x), free(G), free(U), free(D), free(h), free(xd), free(ref), free(got);
    for (int k = 0; k < 3; k++) free(w[k]);
    return share;
}

/* `kbench check mlp rope` on the H100 (2026-11-23) failed cublas_cat fp32 at
 * 1 x 5 x 1 (seed 0x6c086f54ee65224b): rel_l2 1.05e-6 against 3.7e-7. There
 * u = x.U sums five products that cancel ~170-fold, and fp32 sums err
 * relative to the products, not to u. A correct fp32 emulation fails there
 * too without the reference's conditioned scale, and passes with it; so do
 * 200 other seeds at every tiny check shape, where a result 1e-4 off fails. */
static void test_tolerance_cancelling(void **state)
{
    (void)state;
    double un;
    const uint64_t bad = 0x6c086f54ee65224bull;
    for (int b = 0; b < 2; b++) {
        const double sh = f32_share(bad, 1, 5, 1, b, 0, &un);
        if (!(sh < 1)) fail_msg("seed %llx 1x5x1 (order %d): %.2f of the tolerance", (unsigned long long)bad, b, sh);
    }
    assert_true(un > 1); /* what the check saw: the unscaled tolerance fails a correct result */
    const long shapes[][3] = {{1, 1, 1}, {1, 1, 7}, {1, 5, 1}, {1, 5, 7}, {3, 5, 7}, {1, 64, 128}};
    double worst = 0;
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++)
        for (uint64_t sd = 1; sd <= 200; sd++) {
            const double sh = f32_share(sd * 0x9e3779b97f4a7c15ull, shapes[k][0], shapes[k][1], shapes[k][2], (int)(sd & 1), 0, &un);
            if (!(sh < 1))
                fail_msg("%ldx%ldx%ld seed %llu: %.2f of the tolerance", shapes[k][0], shapes[k][1], shapes[k][2],
                         (unsigned long long)sd, sh);
            if (sh > worst) worst = sh;
            const double wrong = f32_share(sd * 0x9e3779b97f4a7c15ull, shapes[k][0], shapes[k][1], shapes[k][2], 0, 1e-4, &un);
            if (!(wrong > 1))
                fail_msg("%ldx%ldx%ld seed %llu: a result 1e-4 off passes (%.2f)", shapes[k][0], shapes[k][1], shapes[k][2],
                         (unsigned long long)sd, wrong);
        }
    print_message("worst share of the tolerance over 1200 correct fp32 results: %.2f\n", worst);
}

/* ---- row sampling --------------------------------------------------------------- */

static void test_sample_count(void **state)
{
    (void)state;
    /* a budget of 2^31 products per GEMM, at least 64 rows, all when that covers them */
    assert_int_equal(ref_mlp_sample_count(130, 257, 513), 130);
    assert_int_equal(ref_mlp_sample_count(31, 520, 1400), 31);
    assert_int_equal(ref_mlp_sample_count(16, 4096, 11008), 16);       /* decode: every row */
    assert_int_equal(ref_mlp_sample_count(2048, 1024, 11008), 190);    /* 2^31 / 11272192 = 190.5 */
    assert_int_equal(ref_mlp_sample_count(8192, 4096, 11008), 64);     /* 2^31 / 45088768 = 47.6: the floor of 64 */
    assert_int_equal(ref_mlp_sample_count(100, 4096, 11008), 64);
    assert_int_equal(ref_mlp_sample_count(64, 4096, 11008), 64);
    assert_int_equal(ref_mlp_sample_count(65, 4096, 11008), 64);
    assert_int_equal(ref_mlp_sample_count(1 << 20, 64, 128), 262144); /* 2^31 / 2^13 */
    assert_int_equal(ref_mlp_sample_count(1, 65536, 262144), 1);
}

static void check_sample(const long *s, long k, long n, long want)
{
    assert_int_equal(k, want < n ? want : n);
    assert_int_equal(s[0], 0);
    assert_int_equal(s[k - 1], n - 1);
    for (long i = 1; i < k; i++) assert_true(s[i] > s[i - 1]);
}

static void test_sample_rows(void **state)
{
    (void)state;
    long a[200], b[200];
    long k = kb_sample_rows(1000, 64, 42, a);
    check_sample(a, k, 1000, 64);
    /* the same seed, the same rows; another seed, others */
    assert_int_equal(kb_sample_rows(1000, 64, 42, b), 64);
    assert_memory_equal(a, b, sizeof(long) * 64);
    assert_int_equal(kb_sample_rows(1000, 64, 43, b), 64);
    assert_memory_not_equal(a, b, sizeof(long) * 64);
    /* edges */
    check_sample(a, kb_sample_rows(190, 190, 1, a), 190, 190);
    for (long i = 0; i < 190; i++) assert_int_equal(a[i], i);
    check_sample(a, kb_sample_rows(5, 64, 1, a), 5, 64);
    check_sample(a, kb_sample_rows(2, 64, 1, a), 2, 64);
    assert_int_equal(kb_sample_rows(1, 64, 1, a), 1);
    assert_int_equal(a[0], 0);
    check_sample(a, kb_sample_rows(3, 2, 1, a), 3, 2);
    assert_int_equal(a[1], 2);
    check_sample(a, kb_sample_rows(100, 99, 9, a), 100, 99);
    assert_int_equal(kb_sample_rows(0, 64, 1, a), 0);
    /* uniform over the interior: with n = 10 and 4 rows, each of rows 1..8 in a
     * quarter of the samples (the stddev of the share over 20000 seeds is 0.003) */
    int hits[10] = {0};
    for (uint64_t seed = 0; seed < 20000; seed++) {
        k = kb_sample_rows(10, 4, seed, a);
        check_sample(a, k, 10, 4);
        for (long i = 0; i < k; i++) hits[a[i]]++;
    }
    assert_int_equal(hits[0], 20000);
    assert_int_equal(hits[9], 20000);
    for (int i = 1; i < 9; i++)
        if (fabs(hits[i] / 20000.0 - 0.25) > 0.015) fail_msg("row %d taken in %.3f of the samples, want 0.25", i, hits[i] / 20000.0);
}

/* ---- the op: models, validation, tolerances, ceilings, sweeps ---------------- */

static void test_models(void **state)
{
    (void)state;
    kb_case c = one_case(NULL, NULL, NULL, NULL, NULL); /* the seed's shape: 2048 x 1024 x 11008, bf16 */
    assert_string_equal(kb_case_enum(&c, "dtype"), "bf16");
    assert_string_equal(kb_case_enum(&c, "tf32"), "off");
    /* 6 * 2048 * 1024 * 11008 */
    assert_true(mlp()->flops(&c) == 138512695296.0);
    /* x and y: 2 * 2048 * 1024 elements; G, U, D: 3 * 1024 * 11008; 2 bytes each */
    assert_true(mlp()->bytes(&c) == 2.0 * (4194304.0 + 33816576.0));
    /* device: x, y, G, U, D, [G; U], the [tokens, 2 inter] workspace, h, and cuBLAS's 32 MiB */
    assert_true((double)mlp()->device_bytes(&c) ==
                2.0 * (2 * 2097152.0 + 5 * 11272192.0 + 3 * 22544384.0) + 33554432.0);
    c = one_case("fp32", "on", "16", "4096", "11008"); /* decode */
    assert_true(mlp()->flops(&c) == 6.0 * 16 * 4096 * 11008);
    assert_true(mlp()->bytes(&c) == 4.0 * (2.0 * 16 * 4096 + 3.0 * 4096 * 11008));
    c = one_case("fp16", NULL, "1", "1", "1");
    assert_true(mlp()->flops(&c) == 6.0);
    assert_true(mlp()->bytes(&c) == 10.0);
    assert_int_equal(mlp()->bound, KB_COMPUTE_BOUND);
}

static void test_validation(void **state)
{
    (void)state;
    assert_string_equal(expand_error("fp32", "on", "31", "520", "1400"), "");
    assert_string_equal(expand_error("bf16", "off", "31", "520", "1400"), "");
    const char *e = expand_error("bf16", "on", NULL, NULL, NULL);
    if (!strstr(e, "tf32 applies to dtype fp32 only")) fail_msg("tf32 with bf16: %s", e);
    e = expand_error("fp16", "on", NULL, NULL, NULL);
    if (!strstr(e, "tf32 applies to dtype fp32 only")) fail_msg("tf32 with fp16: %s", e);
    e = expand_error(NULL, NULL, "0", NULL, NULL);
    if (!strstr(e, "tokens = 0 is out of bounds")) fail_msg("tokens 0: %s", e);
    e = expand_error(NULL, NULL, NULL, "65537", NULL);
    if (!strstr(e, "hidden = 65537 is out of bounds")) fail_msg("hidden 65537: %s", e);
    e = expand_error(NULL, "maybe", NULL, NULL, NULL);
    if (!strstr(e, "tf32: unknown value 'maybe'")) fail_msg("tf32 maybe: %s", e);
    /* tensors past 2^31 - 1 elements */
    e = expand_error(NULL, NULL, "1048576", "4096", "11008"); /* x: 2^32 */
    if (!strstr(e, "elements in x")) fail_msg("large x: %s", e);
    e = expand_error(NULL, NULL, "1", "65536", "32768"); /* [G; U]: 2^32 */
    if (!strstr(e, "elements in the stacked [G; U]")) fail_msg("large weights: %s", e);
    e = expand_error(NULL, NULL, "262144", "16", "8192"); /* [tokens, 2 inter]: 2^32 */
    if (!strstr(e, "[tokens, 2*inter] workspace")) fail_msg("large workspace: %s", e);
    assert_string_equal(expand_error(NULL, NULL, "262144", "4096", "4095"), ""); /* just under */
}

static void test_tolerance(void **state)
{
    (void)state;
    kb_case c = one_case("bf16", NULL, "2048", "1024", "11008");
    kb_tol t = mlp()->tolerance(&c, 0);
    double acc = (32.0 + sqrt(11008.0)) * 0x1p-24;
    assert_true(fabs(t.rel_l2 - (3 * 0x1p-8 + acc)) < 1e-15);
    assert_true(fabs(t.max_abs - (6 * 0x1p-8 + 4 * acc)) < 1e-15);
    /* the coarser the dtype, the looser: bf16, tf32's 11 bits (truncated), fp16, fp32 */
    kb_tol f16 = mlp()->tolerance((c = one_case("fp16", NULL, "2048", "1024", "11008"), &c), 0);
    kb_tol f32 = mlp()->tolerance((c = one_case("fp32", NULL, "2048", "1024", "11008"), &c), 0);
    kb_tol tf = mlp()->tolerance((c = one_case("fp32", "on", "2048", "1024", "11008"), &c), 0);
    assert_true(t.rel_l2 > tf.rel_l2 && tf.rel_l2 > f16.rel_l2 && f16.rel_l2 > f32.rel_l2);
    assert_true(t.max_abs > tf.max_abs && tf.max_abs > f16.max_abs && f16.max_abs > f32.max_abs);
    assert_true(f32.rel_l2 < 2e-5 && tf.rel_l2 > 3e-3 && tf.rel_l2 < 5e-3);
    /* fp32's grows with the sums' lengths, and not with tokens */
    kb_tol a = mlp()->tolerance((c = one_case("fp32", NULL, "16", "64", "128"), &c), 0);
    kb_tol b = mlp()->tolerance((c = one_case("fp32", NULL, "16", "4096", "128"), &c), 0);
    kb_tol d = mlp()->tolerance((c = one_case("fp32", NULL, "16", "64", "11008"), &c), 0);
    kb_tol e = mlp()->tolerance((c = one_case("fp32", NULL, "4096", "64", "128"), &c), 0);
    assert_true(b.rel_l2 > a.rel_l2 && d.rel_l2 > a.rel_l2 && b.max_abs > a.max_abs && d.max_abs > a.max_abs);
    assert_true(e.rel_l2 == a.rel_l2 && e.max_abs == a.max_abs);
    /* and never looser than the rounding of the output needs several times over */
    assert_true(t.rel_l2 < 5 * 0x1p-8 && t.max_abs < 8 * 0x1p-8);
}

static void test_gemm_ceiling(void **state)
{
    (void)state;
    assert_non_null(mlp()->gemm_ceiling);
    kb_case c = one_case("bf16", NULL, NULL, NULL, NULL);
    assert_int_equal(mlp()->gemm_ceiling(&c), KB_GEMM_BF16);
    c = one_case("fp16", NULL, NULL, NULL, NULL);
    assert_int_equal(mlp()->gemm_ceiling(&c), KB_GEMM_FP16);
    c = one_case("fp32", "off", NULL, NULL, NULL);
    assert_int_equal(mlp()->gemm_ceiling(&c), KB_GEMM_FP32);
    c = one_case("fp32", "on", NULL, NULL, NULL);
    assert_int_equal(mlp()->gemm_ceiling(&c), KB_GEMM_TF32);
    assert_null(kb_find_op("rope")->gemm_ceiling); /* memory-bound: no GEMM ceiling */
}

/* the implementations, the baseline first, each a technique with a help
 * line; the fused ones' tunables, and who takes them */
static void test_impls(void **state)
{
    (void)state;
    static const char *const names[] = {"naive", "cublas", "cublas_cat", "fused_wgmma", "fused_mma", "fused"};
    static const char *const tunables[] = {NULL, NULL, NULL, "bn,cluster,warpgroups,sched,down,swap", "down",
                                           "bn,cluster,warpgroups,sched,down,swap"};
    assert_int_equal(mlp()->nimpls, 6);
    for (int i = 0; i < 6; i++) {
        const kb_impl *im = &mlp()->impls[i];
        assert_string_equal(im->name, names[i]);
        assert_non_null(im->help);
        assert_true(strlen(im->help) > 20 && !strchr(im->help, '\n'));
        assert_non_null(im->launch);
        assert_non_null(im->prepare); /* each names what it runs (the kernel column) */
        if (tunables[i]) assert_string_equal(im->tunables, tunables[i]);
        else assert_null(im->tunables);
        assert_false(im->nondeterministic);
    }
    /* bn, cluster, warpgroups, sched, down, swap: tunable enums whose first choice is auto */
    static const char *const tn[] = {"bn", "cluster", "warpgroups", "sched", "down", "swap"};
    static const char *const tc[] = {"auto,64,80,96,104,112,128", "auto,1,2", "auto,1,2", "auto,static,dynamic",
                                     "auto,cublas,splitk,cublaslt", "auto,off,on"};
    for (int k = 0; k < 6; k++) {
        int i = kb_param_index(mlp(), tn[k]);
        assert_true(i >= 0);
        const kb_param *p = &mlp()->params[i];
        assert_int_equal(p->type, KB_P_ENUM);
        assert_true(p->tunable);
        assert_string_equal(p->def, "auto");
        assert_string_equal(p->choices, tc[k]);
    }
    /* the shape's parameters keep their places (results and check_sweeps index them) */
    assert_int_equal(kb_param_index(mlp(), "inter"), 4);
    const kb_devattr *h100 = kb_devattr_preset("h100"), *a100 = kb_devattr_preset("a100");
    char why[256];
    const kb_impl *naive = &mlp()->impls[0], *wgmma = &mlp()->impls[3], *mma = &mlp()->impls[4],
                  *fused = &mlp()->impls[5];
    /* the seed's case: every implementation on the H100; fused_wgmma n/a on the A100 */
    kb_case c = one_case("bf16", NULL, NULL, NULL, NULL);
    for (int i = 0; i < 6; i++) assert_int_equal(kb_impl_supports(&mlp()->impls[i], &c, h100, why, sizeof why), 0);
    assert_int_not_equal(kb_impl_supports(wgmma, &c, a100, why, sizeof why), 0);
    assert_non_null(strstr(why, "Hopper-only"));
    assert_int_equal(kb_impl_supports(mma, &c, a100, why, sizeof why), 0);
    assert_int_equal(kb_impl_supports(fused, &c, a100, why, sizeof why), 0);
    /* fp32: no 16-bit fused kernel; fused runs the CUDA-core kernel */
    c = one_case("fp32", NULL, NULL, NULL, NULL);
    assert_int_not_equal(kb_impl_supports(wgmma, &c, h100, why, sizeof why), 0);
    assert_int_not_equal(kb_impl_supports(mma, &c, h100, why, sizeof why), 0);
    assert_non_null(strstr(why, "fp32"));
    assert_int_equal(kb_impl_supports(fused, &c, h100, why, sizeof why), 0);
    /* hidden % 8 != 0: TMA cannot */
    c = one_case("fp16", NULL, "300", "1001", "2736");
    assert_int_not_equal(kb_impl_supports(wgmma, &c, h100, why, sizeof why), 0);
    assert_non_null(strstr(why, "hidden % 8"));
    assert_int_equal(kb_impl_supports(fused, &c, h100, why, sizeof why), 0);
    /* a tunable fixed: n/a for those that do not take it, planned or refused by those that do */
    kb_sweep s;
    kb_sweep_init(&s, mlp());
    char err[KB_ERRLEN];
    if (kb_sweep_set(&s, "bn", "112", err, sizeof err) || kb_sweep_set(&s, "warpgroups", "1", err, sizeof err) ||
        kb_sweep_set(&s, "cluster", "2", err, sizeof err))
        fail_msg("%s", err);
    kb_case *cs = NULL;
    int n = 0;
    if (kb_sweep_expand(&s, &cs, &n, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(n, 1);
    assert_int_not_equal(kb_impl_supports(naive, &cs[0], h100, why, sizeof why), 0);
    assert_non_null(strstr(why, "takes no bn"));
    assert_int_not_equal(kb_impl_supports(mma, &cs[0], h100, why, sizeof why), 0);
    assert_int_not_equal(kb_impl_supports(wgmma, &cs[0], h100, why, sizeof why), 0); /* warpgroups 1: clusters of 1 */
    assert_non_null(strstr(why, "warpgroups=1"));
    cs[0].v[kb_param_index(mlp(), "warpgroups")].num = 2; /* two warpgroups take clusters of 2 */
    assert_int_equal(kb_impl_supports(wgmma, &cs[0], h100, why, sizeof why), 0);
    assert_int_equal(kb_impl_supports(fused, &cs[0], h100, why, sizeof why), 0);
    assert_int_not_equal(kb_impl_supports(fused, &cs[0], a100, why, sizeof why), 0); /* fused runs mma there */
    free(cs);
    kb_sweep_free(&s);
}

static int has_case(const kb_case *cs, int n, const char *dtype, const char *tf32, long t, long h, long i)
{
    for (int k = 0; k < n; k++)
        if (!strcmp(kb_case_enum(&cs[k], "dtype"), dtype) && !strcmp(kb_case_enum(&cs[k], "tf32"), tf32) &&
            kb_case_int(&cs[k], "tokens") == t && kb_case_int(&cs[k], "hidden") == h && kb_case_int(&cs[k], "inter") == i)
            return 1;
    return 0;
}

/* kbench check: the odd shapes in every dtype, fp32 with tf32 off and on */
static void test_check_sweeps(void **state)
{
    (void)state;
    kb_case *cases = NULL;
    int n = 0;
    char err[KB_ERRLEN];
    for (int k = 0; k < mlp()->ncheck; k++) {
        char json[4096];
        snprintf(json, sizeof json, "{\"op\": \"mlp\", %s", mlp()->check_sweeps[k] + 1);
        cJSON *sw = cJSON_Parse(json);
        if (!sw) fail_msg("check sweep %d is not JSON: %s", k, mlp()->check_sweeps[k]);
        if (kb_config_sweep(sw, "check", 1, &cases, &n, err, sizeof err)) fail_msg("check sweep %d: %s", k, err);
        cJSON_Delete(sw);
    }
    const long shapes[3][3] = {{1, 64, 128}, {31, 520, 1400}, {130, 257, 513}};
    for (int s = 0; s < 3; s++) {
        long t = shapes[s][0], h = shapes[s][1], i = shapes[s][2];
        assert_true(has_case(cases, n, "bf16", "off", t, h, i));
        assert_true(has_case(cases, n, "fp16", "off", t, h, i));
        assert_true(has_case(cases, n, "fp32", "off", t, h, i));
        assert_true(has_case(cases, n, "fp32", "on", t, h, i));
    }
    /* the fused kernel's two-warpgroup paths on Hopper: clusters of 2 (200
     * tokens: two row blocks) and not (300: three), edges cut short */
    assert_true(has_case(cases, n, "bf16", "off", 200, 72, 200));
    assert_true(has_case(cases, n, "fp16", "off", 300, 72, 200));
    /* and CTAs of it that take several tiles (more tiles than an H100 has
     * clusters or CTAs), with and without clusters */
    assert_true(has_case(cases, n, "bf16", "off", 512, 72, 4000));
    assert_true(has_case(cases, n, "fp16", "off", 640, 72, 4000));
    /* and h rows that TMA cannot store (inter % 8 != 0), odd and even */
    assert_true(has_case(cases, n, "bf16", "off", 40, 72, 1003));
    assert_true(has_case(cases, n, "fp16", "off", 200, 72, 1004));
    /* fused's CUBLAS_MID row (hidden >= 4096: 129-160 and 513-544 tokens below inter 14336): cublas_cat's path */
    assert_true(has_case(cases, n, "bf16", "off", 129, 4096, 16));
    assert_true(has_case(cases, n, "fp16", "off", 129, 4096, 16));
    /* fused_wgmma's tunables forced: every tile the kernel has, once each at least */
    const int pbn = kb_param_index(mlp(), "bn"), pcl = kb_param_index(mlp(), "cluster"),
              pwg = kb_param_index(mlp(), "warpgroups");
    const int psw = kb_param_index(mlp(), "swap");
    int tiles[3][7][3] = {{{0}}}, swapped[7] = {0}; /* [warpgroups][bn][cluster], [bn]: enum indices */
    for (int k = 0; k < n; k++) {
        if (cases[k].v[psw].num == 2) swapped[(int)cases[k].v[pbn].num]++;
        else tiles[(int)cases[k].v[pwg].num][(int)cases[k].v[pbn].num][(int)cases[k].v[pcl].num]++;
    }
    static const int wide[] = {1, 3, 5, 6}; /* bn 64, 96, 112, 128 */
    for (int b = 0; b < 4; b++)
        for (int c = 1; c <= 2; c++) assert_true(tiles[2][wide[b]][c] >= 4); /* x clusters 1, 2 */
    assert_true(tiles[1][1][1] >= 4 && tiles[1][6][1] >= 4);             /* one warpgroup: bn 64, 128 */
    assert_true(tiles[0][0][0] > 0);                                       /* and the rest at auto */
    /* the swapped kernel: every token tile (bn 80..128) and auto's, in each dtype */
    for (int b = 2; b <= 6; b++) assert_true(swapped[b] >= 8);
    assert_true(swapped[0] >= 4);
    /* the dynamic scheduler, each dtype: one warpgroup and two, one tile a CTA and several */
    const int psc = kb_param_index(mlp(), "sched");
    int dyn[2][3] = {{0}}; /* [fp16, bf16][40, 300, 640 tokens] */
    for (int k = 0; k < n; k++) {
        const long t = (long)cases[k].v[2].num;
        if (cases[k].v[psc].num == 2 && (t == 40 || t == 300 || t == 640))
            dyn[kb_case_dtype(&cases[k]) == KB_BF16][t == 40 ? 0 : t == 300 ? 1 : 2]++;
    }
    for (int d = 0; d < 2; d++)
        for (int t = 0; t < 3; t++) assert_true(dyn[d][t] >= 1);
    /* down_splitk: forced at 1-16 tokens (one block an SM and two), and
     * where fused's planner takes it (the DOWN row: 1032 x 4000 at 3 and 16
     * tokens, 8 K ranges, two an SM) or leaves it (4104 x 1000) */
    const int pdn = kb_param_index(mlp(), "down");
    int forced[2] = {0, 0};
    for (int k = 0; k < n; k++)
        if (cases[k].v[pdn].num == 2) forced[cases[k].v[2].num > 8]++;
    assert_true(forced[0] >= 4 && forced[1] >= 4);
    assert_true(has_case(cases, n, "bf16", "off", 16, 2056, 640));
    assert_true(has_case(cases, n, "bf16", "off", 1, 4104, 1000));
    assert_true(has_case(cases, n, "fp16", "off", 3, 4104, 4000));
    assert_true(has_case(cases, n, "bf16", "off", 16, 8200, 168));
    assert_true(has_case(cases, n, "fp16", "off", 16, 1032, 4000));
    assert_true(has_case(cases, n, "bf16", "off", 3, 1032, 4000));
    /* cuBLASLt's split-K 2 down forced: after fused_wgmma, fused_mma (hidden
     * 257) and cublas_cat's path (129 x 4096), in both 16-bit dtypes */
    int lt[2] = {0, 0};
    for (int k = 0; k < n; k++)
        if (cases[k].v[pdn].num == 3) lt[kb_case_dtype(&cases[k]) == KB_BF16]++;
    assert_true(lt[0] >= 9 && lt[1] >= 9);
    for (int k = 0; k < n; k++)
        if (cases[k].v[pdn].num == 3) assert_true(kb_case_dtype(&cases[k]) != KB_FP32);
    /* down_splitk forced past 8 K ranges (16 of 11 k-blocks, two an SM) */
    assert_true(has_case(cases, n, "bf16", "off", 16, 1000, 11000));
    assert_true(has_case(cases, n, "fp16", "off", 1, 1000, 11000));
    /* small enough to keep check quick: the largest are those, ~1 GFLOP of
     * double reference each; every other case at most 31 x 520 x 1400 */
    for (int k = 0; k < n; k++) {
        const double f = mlp()->flops(&cases[k]);
        if (cases[k].v[4].num == 4000) assert_true(f <= 6.0 * 640 * 72 * 4000);
        else if (cases[k].v[4].num == 11000) assert_true(f <= 6.0 * 16 * 1000 * 11000);
        else assert_true(f <= 6.0 * 31 * 520 * 1400);
    }
    kb_cases_free(cases, n);
}

/* configs/mlp.json: the shapes the issue names, in bf16 and fp16 */
static void test_config_file(void **state)
{
    (void)state;
    kb_plan p;
    memset(&p, 0, sizeof p);
    char err[KB_ERRLEN];
    if (kb_config_load("configs/mlp.json", &p, err, sizeof err)) fail_msg("configs/mlp.json: %s", err);
    const char *dt[] = {"bf16", "fp16"};
    for (int d = 0; d < 2; d++) {
        assert_true(has_case(p.cases, p.ncases, dt[d], "off", 2048, 1024, 11008)); /* the seed's */
        assert_true(has_case(p.cases, p.ncases, dt[d], "off", 4096, 4096, 11008)); /* LLaMA-7B's */
        assert_true(has_case(p.cases, p.ncases, dt[d], "off", 16, 4096, 11008));   /* decode */
        for (long t = 512; t <= 8192; t *= 2) assert_true(has_case(p.cases, p.ncases, dt[d], "off", t, 4096, 11008));
        assert_true(has_case(p.cases, p.ncases, dt[d], "off", 300, 4096, 11008)); /* where fused lost (issue 22) */
        assert_true(has_case(p.cases, p.ncases, dt[d], "off", 320, 4096, 11008));
    }
    kb_cases_free(p.cases, p.ncases);
    /* configs/mlp-grid.json: issue 22's grid, every (tokens, width, dtype) */
    memset(&p, 0, sizeof p);
    if (kb_config_load("configs/mlp-grid.json", &p, err, sizeof err)) fail_msg("configs/mlp-grid.json: %s", err);
    const long tok[] = {1, 16, 64, 128, 256, 300, 320, 512, 1000, 2048, 4096, 8192};
    const long wid[][2] = {{1024, 11008}, {4096, 11008}, {4096, 14336}, {8192, 28672}};
    assert_int_equal(p.ncases, 12 * 4 * 2);
    for (int d = 0; d < 2; d++)
        for (int w = 0; w < 4; w++)
            for (int t = 0; t < 12; t++) assert_true(has_case(p.cases, p.ncases, dt[d], "off", tok[t], wid[w][0], wid[w][1]));
    kb_cases_free(p.cases, p.ncases);
}

/* bn and cluster reach the planner as their choices' numbers (the enum's
 * text, not a second list of values): at 300 x 4096 x 11008 bf16 on the
 * H100's model, each bn choice of fused_wgmma plans or is refused as its
 * number says (80 and 104 only with swap=on, 64 only without), and a
 * refusal names that number; cluster 2 plans where cluster 1 does. */
static void test_tunable_choices_reach_the_planner(void **state)
{
    (void)state;
    const kb_impl *wgmma = NULL;
    for (int i = 0; i < mlp()->nimpls; i++)
        if (!strcmp(mlp()->impls[i].name, "fused_wgmma")) wgmma = &mlp()->impls[i];
    assert_non_null(wgmma);
    const kb_param *bn = &mlp()->params[kb_param_index(mlp(), "bn")];
    const kb_devattr *h100 = kb_devattr_preset("h100");
    int planned = 0;
    for (int swap = 0; swap < 2; swap++)
        for (int k = 1; k < kb_choice_count(bn); k++) {
            char v[16], why[256] = "", want[32];
            kb_choice(bn, k, v, sizeof v);
            const int b = atoi(v), ok = swap ? b != 64 : b != 80 && b != 104;
            const char *kv[] = {"dtype", "bf16", "tokens", "300", "hidden", "4096", "inter", "11008",
                                "bn", v, "swap", swap ? "on" : "off", "cluster", swap ? "1" : "2", NULL};
            kb_sweep s;
            kb_sweep_init(&s, mlp());
            char err[KB_ERRLEN] = "";
            for (int i = 0; kv[i]; i += 2)
                if (kb_sweep_set(&s, kv[i], kv[i + 1], err, sizeof err)) fail_msg("%s=%s: %s", kv[i], kv[i + 1], err);
            kb_case *cases = NULL;
            int n = 0;
            if (kb_sweep_expand(&s, &cases, &n, err, sizeof err)) fail_msg("expand: %s", err);
            assert_int_equal(n, 1);
            const int na = kb_impl_supports(wgmma, &cases[0], h100, why, sizeof why);
            kb_cases_free(cases, n);
            kb_sweep_free(&s);
            if (ok && na) fail_msg("bn=%s swap=%d: n/a (%s)", v, swap, why);
            snprintf(want, sizeof want, "bn=%d:", b);
            if (!ok && (!na || !strstr(why, want))) fail_msg("bn=%s swap=%d: %s (want a refusal naming %s)", v, swap, na ? why : "planned", want);
            planned += ok;
        }
    assert_int_equal(planned, 9); /* 64, 96, 112, 128 without swap; 80, 96, 104, 112, 128 with */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_silu),
        cmocka_unit_test(test_hand_2x3x4),
        cmocka_unit_test(test_rounding_points),
        cmocka_unit_test(test_rows_independent),
        cmocka_unit_test(test_typed_weights),
        cmocka_unit_test(test_threads_same),
        cmocka_unit_test(test_sample_count),
        cmocka_unit_test(test_sample_rows),
        cmocka_unit_test(test_models),
        cmocka_unit_test(test_validation),
        cmocka_unit_test(test_tolerance),
        cmocka_unit_test(test_tolerance_cancelling),
        cmocka_unit_test(test_gemm_ceiling),
        cmocka_unit_test(test_impls),
        cmocka_unit_test(test_check_sweeps),
        cmocka_unit_test(test_config_file),
        cmocka_unit_test(test_tunable_choices_reach_the_planner),
    };
    return cmocka_run_group_tests_name("mlp", tests, NULL, NULL);
}
