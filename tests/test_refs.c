/* RoPE CPU reference (refs/rope.c): the properties every rotation has, the
 * layouts and styles against each other, and small cases worked by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../include/kb_dtype.h"
#include "../refs/refs.h"

enum { SBHD = 0, BSHD = 1, THD = 2, NEOX = 0, GPTJ = 1 };

static double *rand_vec(size_t n, uint64_t seed)
{
    kb_rng r;
    kb_rng_seed(&r, seed);
    double *v = malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++) v[i] = kb_rng_uniform(&r, -1.0, 1.0);
    return v;
}

static float *angles(long positions, long rot, double base)
{
    float *a = malloc((size_t)(positions * (rot / 2) + 1) * sizeof *a);
    ref_rope_angles(a, positions, rot, base);
    return a;
}

static ref_rope_args args(int layout, int style, int bwd, long seq, long batch, long heads, long dim, long rot,
                          const int *cu, const float *ang)
{
    ref_rope_args a = {layout, style, bwd, seq, batch, heads, dim, rot, cu, ang};
    return a;
}

/* ---- the angle table ---------------------------------------------------- */

static void test_angles_formula(void **state)
{
    (void)state;
    /* rot 8, base 10000: base^(-2i/8) = 10^(-i), so theta = p * 10^-i */
    float a[5 * 4];
    ref_rope_angles(a, 5, 8, 10000.0);
    for (int p = 0; p < 5; p++)
        for (int i = 0; i < 4; i++) {
            double want = p * pow(10.0, -i);
            assert_true(fabs(a[p * 4 + i] - want) <= 1e-6 * (want > 1 ? want : 1));
        }
    /* position 0 is all zeros, pair 0 is the position itself */
    for (int i = 0; i < 4; i++) assert_true(a[i] == 0.0f);
    for (int p = 0; p < 5; p++) assert_true(a[p * 4] == (float)p);

    /* rot 4, base 4: base^(-2i/4) = 2^-i, exactly representable */
    float b[3 * 2];
    ref_rope_angles(b, 3, 4, 4.0);
    const float want_b[] = {0, 0, 1, 0.5f, 2, 1};
    for (int k = 0; k < 6; k++) assert_true(fabsf(b[k] - want_b[k]) <= 1e-7f);

    /* a general base against the formula theta = p * base^(-2i/rot) */
    float c[7 * 3];
    ref_rope_angles(c, 7, 6, 500000.0);
    for (int p = 0; p < 7; p++)
        for (int i = 0; i < 3; i++) {
            double want = p * exp(-2.0 * i / 6.0 * log(500000.0));
            assert_true(fabs(c[p * 3 + i] - want) <= 1e-6 * (want > 1 ? want : 1));
        }
}

static void test_rows(void **state)
{
    (void)state;
    ref_rope_args a = args(SBHD, NEOX, 0, 5, 3, 2, 8, 8, NULL, NULL);
    assert_int_equal(ref_rope_rows(&a), 30);
    a.layout = BSHD;
    assert_int_equal(ref_rope_rows(&a), 30);
    int cu[] = {0, 3, 4, 9};
    a = args(THD, NEOX, 0, 5, 3, 2, 8, 8, cu, NULL);
    assert_int_equal(ref_rope_rows(&a), 18);
}

/* ---- worked by hand ----------------------------------------------------- */

static void test_hand_dim2(void **state)
{
    (void)state;
    /* one head of dim 2, position given directly by the angle table */
    float ang[3] = {0.0f, (float)(M_PI / 2), (float)M_PI}; /* positions 0, 1, 2 */
    double in[6] = {1, 2, 1, 2, 1, 2}, out[6];
    for (int style = 0; style < 2; style++) { /* with one pair, both styles pair (0, 1) */
        ref_rope_args a = args(SBHD, style, 0, 3, 1, 1, 2, 2, NULL, ang);
        ref_rope(&a, in, out);
        /* p 0: identity; p 1: (x, y) -> (-y, x); p 2: (x, y) -> (-x, -y) */
        const double want[6] = {1, 2, -2, 1, -1, -2};
        for (int k = 0; k < 6; k++) assert_true(fabs(out[k] - want[k]) < 1e-6);
        a.backward = 1; /* R(-theta): (x, y) -> (y, -x) at pi/2 */
        ref_rope(&a, in, out);
        const double wantb[6] = {1, 2, 2, -1, -1, -2};
        for (int k = 0; k < 6; k++) assert_true(fabs(out[k] - wantb[k]) < 1e-6);
    }
}

static void test_hand_dim4_styles(void **state)
{
    (void)state;
    /* dim 4, position 1, angles {pi/2, 0}: neox rotates (0,2) by pi/2 and
     * leaves (1,3); gptj rotates (0,1) by pi/2 and leaves (2,3). */
    float ang[4] = {0, 0, (float)(M_PI / 2), 0};
    double in[8] = {0, 0, 0, 0, 1, 2, 3, 4}, out[8];
    ref_rope_args a = args(SBHD, NEOX, 0, 2, 1, 1, 4, 4, NULL, ang);
    ref_rope(&a, in, out);
    const double neox[4] = {-3, 2, 1, 4};
    for (int k = 0; k < 4; k++) assert_true(fabs(out[4 + k] - neox[k]) < 1e-6);
    a.style = GPTJ;
    ref_rope(&a, in, out);
    const double gptj[4] = {-2, 1, 3, 4};
    for (int k = 0; k < 4; k++) assert_true(fabs(out[4 + k] - gptj[k]) < 1e-6);
}

/* ---- properties --------------------------------------------------------- */

static void check_norms(int layout, int style, int bwd)
{
    long seq = 9, batch = 3, heads = 2, dim = 12, rot = 12, half = rot / 2;
    float *ang = angles(seq, rot, 10000.0);
    size_t n = (size_t)(seq * batch * heads * dim);
    double *in = rand_vec(n, 11 + (uint64_t)style), *out = malloc(n * sizeof *out);
    ref_rope_args a = args(layout, style, bwd, seq, batch, heads, dim, rot, NULL, ang);
    ref_rope(&a, in, out);
    long rows = ref_rope_rows(&a);
    int changed = 0;
    for (long r = 0; r < rows; r++) {
        const double *x = in + r * dim, *y = out + r * dim;
        double hx = 0, hy = 0;
        for (long i = 0; i < half; i++) {
            long p = style == NEOX ? i : 2 * i, q = style == NEOX ? i + half : 2 * i + 1;
            double nx = x[p] * x[p] + x[q] * x[q], ny = y[p] * y[p] + y[q] * y[q];
            assert_true(fabs(nx - ny) <= 1e-12);
            hx += nx;
            hy += ny;
        }
        assert_true(fabs(hx - hy) <= 1e-12);
        for (long j = 0; j < dim; j++) changed |= fabs(x[j] - y[j]) > 1e-3;
    }
    assert_true(changed); /* it did rotate something */
    free(ang);
    free(in);
    free(out);
}

static void test_norm_preserved(void **state)
{
    (void)state;
    for (int layout = 0; layout < 2; layout++)
        for (int style = 0; style < 2; style++)
            for (int bwd = 0; bwd < 2; bwd++) check_norms(layout, style, bwd);
}

static void test_fwd_then_bwd(void **state)
{
    (void)state;
    int cu[] = {0, 4, 5, 12};
    for (int layout = 0; layout < 3; layout++)
        for (int style = 0; style < 2; style++)
            for (long rot = 4; rot <= 10; rot += 6) { /* partial and full */
                long seq = 12, batch = 3, heads = 3, dim = 10;
                float *ang = angles(seq, rot, 10000.0);
                ref_rope_args a = args(layout, style, 0, seq, batch, heads, dim, rot, layout == THD ? cu : NULL, ang);
                size_t n = (size_t)(ref_rope_rows(&a) * dim);
                double *in = rand_vec(n, 5), *mid = malloc(n * sizeof *mid), *back = malloc(n * sizeof *back);
                ref_rope(&a, in, mid);
                a.backward = 1;
                ref_rope(&a, mid, back);
                double moved = 0;
                for (size_t k = 0; k < n; k++) {
                    assert_true(fabs(back[k] - in[k]) <= 1e-12);
                    moved = fmax(moved, fabs(mid[k] - in[k]));
                }
                assert_true(moved > 1e-3);
                free(ang);
                free(in);
                free(mid);
                free(back);
            }
}

static void test_position0_identity(void **state)
{
    (void)state;
    /* sbhd: the first batch*heads rows are position 0; bshd: row (b*seq)*heads + h */
    long seq = 4, batch = 2, heads = 3, dim = 8;
    float *ang = angles(seq, dim, 10000.0);
    size_t n = (size_t)(seq * batch * heads * dim);
    double *in = rand_vec(n, 3), *out = malloc(n * sizeof *out);
    for (int style = 0; style < 2; style++)
        for (int bwd = 0; bwd < 2; bwd++) {
            ref_rope_args a = args(SBHD, style, bwd, seq, batch, heads, dim, dim, NULL, ang);
            ref_rope(&a, in, out);
            for (long k = 0; k < batch * heads * dim; k++) assert_true(out[k] == in[k]);
            assert_true(memcmp(out + batch * heads * dim, in + batch * heads * dim, sizeof(double) * (size_t)dim) != 0);
            a.layout = BSHD;
            ref_rope(&a, in, out);
            for (long b = 0; b < batch; b++)
                for (long k = 0; k < heads * dim; k++) {
                    long o = b * seq * heads * dim + k;
                    assert_true(out[o] == in[o]);
                }
        }
    free(ang);
    free(in);
    free(out);
}

/* gptj pairs (2i, 2i+1), neox pairs (i, i+rot/2): moving dim 2i to i and
 * 2i+1 to i+rot/2 turns one into the other. */
static void test_neox_gptj_permutation(void **state)
{
    (void)state;
    long seq = 6, batch = 2, heads = 2, dim = 14, half;
    for (long rot = 8; rot <= 14; rot += 6) {
        half = rot / 2;
        float *ang = angles(seq, rot, 10000.0);
        size_t n = (size_t)(seq * batch * heads * dim);
        long rows = seq * batch * heads;
        double *in = rand_vec(n, 21), *perm = malloc(n * sizeof *perm), *yn = malloc(n * sizeof *yn),
               *yg = malloc(n * sizeof *yg);
        for (long r = 0; r < rows; r++) {
            const double *x = in + r * dim;
            double *p = perm + r * dim;
            for (long i = 0; i < half; i++) { p[i] = x[2 * i]; p[i + half] = x[2 * i + 1]; }
            for (long j = rot; j < dim; j++) p[j] = x[j];
        }
        for (int bwd = 0; bwd < 2; bwd++) {
            ref_rope_args a = args(SBHD, GPTJ, bwd, seq, batch, heads, dim, rot, NULL, ang);
            ref_rope(&a, in, yg);
            a.style = NEOX;
            ref_rope(&a, perm, yn);
            for (long r = 0; r < rows; r++) {
                const double *g = yg + r * dim, *q = yn + r * dim;
                for (long i = 0; i < half; i++) {
                    assert_true(fabs(g[2 * i] - q[i]) <= 1e-15);
                    assert_true(fabs(g[2 * i + 1] - q[i + half]) <= 1e-15);
                }
                for (long j = rot; j < dim; j++) assert_true(g[j] == q[j]);
            }
            /* and the styles really differ on the same input */
            ref_rope(&a, in, yn);
            assert_true(memcmp(yn, yg, n * sizeof *yn) != 0);
        }
        free(ang);
        free(in);
        free(perm);
        free(yn);
        free(yg);
    }
}

/* thd: each sequence alone as sbhd with batch 1 */
static void test_thd_is_per_sequence_sbhd(void **state)
{
    (void)state;
    const int lens[] = {3, 1, 5};
    int cu[4] = {0};
    for (int b = 0; b < 3; b++) cu[b + 1] = cu[b] + lens[b];
    long seq = 5, heads = 2, dim = 10, rot = 6;
    float *ang = angles(seq, rot, 10000.0);
    for (int style = 0; style < 2; style++)
        for (int bwd = 0; bwd < 2; bwd++) {
            ref_rope_args a = args(THD, style, bwd, seq, 3, heads, dim, rot, cu, ang);
            long rows = ref_rope_rows(&a);
            assert_int_equal(rows, 9 * heads);
            size_t n = (size_t)(rows * dim);
            double *in = rand_vec(n, 7), *out = malloc(n * sizeof *out), *one = malloc(n * sizeof *one);
            ref_rope(&a, in, out);
            for (int b = 0; b < 3; b++) {
                size_t off = (size_t)cu[b] * (size_t)(heads * dim);
                ref_rope_args s = args(SBHD, style, bwd, lens[b], 1, heads, dim, rot, NULL, ang);
                ref_rope(&s, in + off, one);
                for (size_t k = 0; k < (size_t)(lens[b] * heads * dim); k++) assert_true(out[off + k] == one[k]);
            }
            /* every sequence starts at position 0: its first token is unchanged */
            for (int b = 0; b < 3; b++) {
                size_t off = (size_t)cu[b] * (size_t)(heads * dim);
                for (size_t k = 0; k < (size_t)(heads * dim); k++) assert_true(out[off + k] == in[off + k]);
            }
            free(in);
            free(out);
            free(one);
        }
    free(ang);
}

/* bshd is sbhd with the first two axes swapped */
static void test_bshd_is_transposed_sbhd(void **state)
{
    (void)state;
    long seq = 5, batch = 3, heads = 2, dim = 6, hd = heads * dim;
    float *ang = angles(seq, dim, 10000.0);
    size_t n = (size_t)(seq * batch * hd);
    double *in = rand_vec(n, 9), *t = malloc(n * sizeof *t), *ys = malloc(n * sizeof *ys), *yb = malloc(n * sizeof *yb);
    for (long s = 0; s < seq; s++)
        for (long b = 0; b < batch; b++) memcpy(t + (b * seq + s) * hd, in + (s * batch + b) * hd, sizeof(double) * (size_t)hd);
    ref_rope_args a = args(SBHD, NEOX, 0, seq, batch, heads, dim, dim, NULL, ang);
    ref_rope(&a, in, ys);
    a.layout = BSHD;
    ref_rope(&a, t, yb);
    for (long s = 0; s < seq; s++)
        for (long b = 0; b < batch; b++)
            for (long k = 0; k < hd; k++) assert_true(yb[(b * seq + s) * hd + k] == ys[(s * batch + b) * hd + k]);
    free(ang);
    free(in);
    free(t);
    free(ys);
    free(yb);
}

static void test_partial_rotary(void **state)
{
    (void)state;
    long seq = 7, batch = 2, heads = 3, dim = 20, rot = 8;
    float *ang = angles(seq, rot, 10000.0);
    size_t n = (size_t)(seq * batch * heads * dim);
    long rows = seq * batch * heads;
    for (int style = 0; style < 2; style++) {
        double *in = rand_vec(n, 13), *out = malloc(n * sizeof *out);
        /* sentinel outputs: the copied dims must be written */
        for (size_t k = 0; k < n; k++) out[k] = NAN;
        ref_rope_args a = args(SBHD, style, 0, seq, batch, heads, dim, rot, NULL, ang);
        ref_rope(&a, in, out);
        /* the rotated part equals a full rotation of just those dims */
        double *sub = malloc((size_t)(rows * rot) * sizeof *sub), *subo = malloc((size_t)(rows * rot) * sizeof *subo);
        for (long r = 0; r < rows; r++) memcpy(sub + r * rot, in + r * dim, sizeof(double) * (size_t)rot);
        ref_rope_args f = args(SBHD, style, 0, seq, batch, heads, rot, rot, NULL, ang);
        ref_rope(&f, sub, subo);
        for (long r = 0; r < rows; r++) {
            for (long j = 0; j < rot; j++) assert_true(out[r * dim + j] == subo[r * rot + j]);
            for (long j = rot; j < dim; j++) assert_true(out[r * dim + j] == in[r * dim + j]);
        }
        free(in);
        free(out);
        free(sub);
        free(subo);
    }
    free(ang);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_angles_formula),
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_hand_dim2),
        cmocka_unit_test(test_hand_dim4_styles),
        cmocka_unit_test(test_norm_preserved),
        cmocka_unit_test(test_fwd_then_bwd),
        cmocka_unit_test(test_position0_identity),
        cmocka_unit_test(test_neox_gptj_permutation),
        cmocka_unit_test(test_thd_is_per_sequence_sbhd),
        cmocka_unit_test(test_bshd_is_transposed_sbhd),
        cmocka_unit_test(test_partial_rotary),
    };
    return cmocka_run_group_tests_name("refs", tests, NULL, NULL);
}
