/* dtype.c: fp16/bf16 conversions (round to nearest, ties to even), store and
 * load, and the seeded generator. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../cli/core/op.h"
#include "../include/kb_dtype.h"
#include "../kernels/kernels.h"
#include "have_gpu.h"

static float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

static int f16_is_nan(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x03ffu) != 0; }
static int bf16_is_nan(uint16_t h) { return (h & 0x7f80u) == 0x7f80u && (h & 0x007fu) != 0; }

#define F16(x, want) assert_int_equal(kb_f32_to_f16(x), want)
#define BF16(u, want) assert_int_equal(kb_f32_to_bf16(u2f(u)), want)

/* ---- fp16 --------------------------------------------------------------- */

static void test_f16_exact(void **state)
{
    (void)state;
    F16(1.0f, 0x3c00);
    F16(-2.0f, 0xc000);
    F16(0.5f, 0x3800);
    F16(65504.0f, 0x7bff);     /* largest finite */
    F16(0x1p-14f, 0x0400);     /* smallest normal */
    F16(1.0f + 0x1p-10f, 0x3c01);
    F16(0.0f, 0x0000);
    F16(-0.0f, 0x8000);        /* the sign of zero survives */
}

static void test_f16_ties_to_even(void **state)
{
    (void)state;
    F16(1.0f + 0x1p-11f, 0x3c00);            /* halfway 0x3c00..0x3c01: even is down */
    F16(1.0f + 3 * 0x1p-11f, 0x3c02);        /* halfway 0x3c01..0x3c02: even is up */
    F16(-(1.0f + 0x1p-11f), 0xbc00);
    F16(-(1.0f + 3 * 0x1p-11f), 0xbc02);
    F16(1.0f + 0x1p-11f + 0x1p-20f, 0x3c01); /* just above a tie: up */
    F16(1.0f + 3 * 0x1p-11f - 0x1p-20f, 0x3c01); /* just below a tie: down */
    F16(2048.0f + 1.0f, 0x6800);             /* 2049: tie between 2048 and 2050 */
    F16(2048.0f + 3.0f, 0x6802);             /* 2051: tie between 2050 and 2052 */
    /* a carry out of the mantissa: 2 - 2^-12 rounds up to 2.0 */
    F16(2.0f - 0x1p-12f, 0x4000);
}

static void test_f16_subnormals(void **state)
{
    (void)state;
    F16(0x1p-24f, 0x0001);                        /* smallest subnormal */
    F16(0x1p-25f, 0x0000);                        /* half of it: tie, to even zero */
    F16(nextafterf(0x1p-25f, 1.0f), 0x0001);      /* just above the tie */
    F16(-0x1p-25f, 0x8000);                       /* negative: -0 */
    F16(-0x1p-24f, 0x8001);
    F16(0x1p-26f, 0x0000);
    F16(3 * 0x1p-25f, 0x0002);                    /* 1.5 units: tie, to even 2 */
    F16(5 * 0x1p-25f, 0x0002);                    /* 2.5 units: tie, to even 2 */
    F16(7 * 0x1p-25f, 0x0004);                    /* 3.5 units: tie, to even 4 */
    F16(1023 * 0x1p-24f, 0x03ff);                 /* largest subnormal */
    F16(1023.5f * 0x1p-24f, 0x0400);              /* tie with the smallest normal: even */
    F16(1022.5f * 0x1p-24f, 0x03fe);
    F16(FLT_MIN, 0x0000);
    F16(FLT_TRUE_MIN, 0x0000);
    assert_true(kb_f16_to_f32(0x0001) == 0x1p-24f);
    assert_true(kb_f16_to_f32(0x03ff) == 1023 * 0x1p-24f);
    assert_true(kb_f16_to_f32(0x8001) == -0x1p-24f);
}

static void test_f16_overflow_inf_nan(void **state)
{
    (void)state;
    F16(65520.0f, 0x7c00);                 /* halfway past the largest finite: Inf */
    F16(65519.0f, 0x7bff);
    F16(nextafterf(65520.0f, 0.0f), 0x7bff);
    F16(-65520.0f, 0xfc00);
    F16(1e10f, 0x7c00);
    F16(FLT_MAX, 0x7c00);
    F16(INFINITY, 0x7c00);
    F16(-INFINITY, 0xfc00);
    assert_true(f16_is_nan(kb_f32_to_f16(NAN)));
    assert_true(f16_is_nan(kb_f32_to_f16(-NAN)));
    assert_true(f16_is_nan(kb_f32_to_f16(u2f(0x7f800001u)))); /* payload only in the low bits */
    assert_true(f16_is_nan(kb_f32_to_f16(u2f(0x7fc00000u))));
    assert_true(f16_is_nan(kb_f32_to_f16(u2f(0xff800001u))));

    assert_true(isinf(kb_f16_to_f32(0x7c00)) && kb_f16_to_f32(0x7c00) > 0);
    assert_true(isinf(kb_f16_to_f32(0xfc00)) && kb_f16_to_f32(0xfc00) < 0);
    assert_true(isnan(kb_f16_to_f32(0x7e00)));
    assert_true(isnan(kb_f16_to_f32(0x7c01)));
    assert_true(isnan(kb_f16_to_f32(0xfe00)));
    float nz = kb_f16_to_f32(0x8000);
    assert_true(nz == 0.0f && signbit(nz));
    assert_true(kb_f16_to_f32(0x7bff) == 65504.0f);
    assert_true(kb_f16_to_f32(0x3c00) == 1.0f);
    assert_true(kb_f16_to_f32(0xc000) == -2.0f);
    assert_true(kb_f16_to_f32(0x3555) == 0x1.554p-2f);
}

static void test_f16_roundtrip_all(void **state)
{
    (void)state;
    int nans = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = kb_f16_to_f32((uint16_t)h);
        uint16_t back = kb_f32_to_f16(f);
        if (f16_is_nan((uint16_t)h)) {
            assert_true(isnan(f));
            assert_true(f16_is_nan(back));
            nans++;
        } else {
            if (back != h) fail_msg("fp16 0x%04x -> %a -> 0x%04x", h, (double)f, back);
        }
    }
    assert_int_equal(nans, 2 * 1023);
}

/* Every finite float rounds to its nearest fp16 neighbour, ties to even. */
static void test_f16_nearest_random(void **state)
{
    (void)state;
    kb_rng r;
    kb_rng_seed(&r, 42);
    for (int k = 0; k < 200000; k++) {
        /* exponents from deep subnormal to past overflow */
        uint32_t u = (uint32_t)(kb_rng_next(&r) & 0x7fffffffu);
        uint32_t e = 95 + (uint32_t)(kb_rng_next(&r) % 48); /* 2^-32 .. 2^15 */
        u = (u & 0x807fffffu) | (e << 23);
        float x = u2f(u);
        if (x >= 65520.0f) { F16(x, 0x7c00); continue; }
        uint16_t h = kb_f32_to_f16(x);
        assert_true(h <= 0x7bff);
        double d = fabs((double)x - kb_f16_to_f32(h));
        if (h > 0) {
            double dl = fabs((double)x - kb_f16_to_f32((uint16_t)(h - 1)));
            if (!(d < dl || (d == dl && !(h & 1)))) fail_msg("%a -> 0x%04x, 0x%04x is nearer", (double)x, h, h - 1);
        }
        if (h < 0x7bff) {
            double du = fabs((double)x - kb_f16_to_f32((uint16_t)(h + 1)));
            if (!(d < du || (d == du && !(h & 1)))) fail_msg("%a -> 0x%04x, 0x%04x is nearer", (double)x, h, h + 1);
        }
        assert_int_equal(kb_f32_to_f16(-x), h | 0x8000); /* symmetric */
    }
}

/* ---- bf16 --------------------------------------------------------------- */

static void test_bf16_rounding(void **state)
{
    (void)state;
    BF16(0x3f800000u, 0x3f80);
    BF16(0x3f808000u, 0x3f80); /* tie, even is down */
    BF16(0x3f818000u, 0x3f82); /* tie, even is up */
    BF16(0x3f808001u, 0x3f81);
    BF16(0x3f807fffu, 0x3f80);
    BF16(0x3f80ffffu, 0x3f81);
    BF16(0xbf808000u, 0xbf80);
    BF16(0xbf818000u, 0xbf82);
    BF16(0x3fffffffu, 0x4000); /* carry into the exponent */
    BF16(0x00008000u, 0x0000); /* subnormal tie */
    BF16(0x00018000u, 0x0002);
    BF16(0x00000001u, 0x0000);
    BF16(0x80000000u, 0x8000); /* -0 */
    BF16(0x7f7f7fffu, 0x7f7f); /* just under the overflow tie */
    BF16(0x7f7f8000u, 0x7f80); /* tie past the largest finite (odd): up to Inf */
    BF16(0x7f7fffffu, 0x7f80); /* FLT_MAX rounds to Inf */
    BF16(0xff7fffffu, 0xff80);
    BF16(0x7f800000u, 0x7f80); /* Inf stays Inf */
    BF16(0xff800000u, 0xff80);
    assert_true(bf16_is_nan(kb_f32_to_bf16(NAN)));
    assert_true(bf16_is_nan(kb_f32_to_bf16(u2f(0x7f800001u)))); /* would truncate to Inf */
    assert_true(bf16_is_nan(kb_f32_to_bf16(u2f(0x7fffffffu)))); /* would round over to Inf/sign */
    assert_true(bf16_is_nan(kb_f32_to_bf16(u2f(0xff800001u))));
    assert_true(kb_f32_to_bf16(u2f(0xff800001u)) & 0x8000);

    assert_true(kb_bf16_to_f32(0x3f80) == 1.0f);
    assert_true(kb_bf16_to_f32(0xc040) == -3.0f);
    assert_true(isinf(kb_bf16_to_f32(0x7f80)));
    assert_true(isnan(kb_bf16_to_f32(0x7fc0)));
    float nz = kb_bf16_to_f32(0x8000);
    assert_true(nz == 0.0f && signbit(nz));
}

static void test_bf16_roundtrip_all(void **state)
{
    (void)state;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = kb_bf16_to_f32((uint16_t)h);
        assert_int_equal(f2u(f), h << 16);
        uint16_t back = kb_f32_to_bf16(f);
        if (bf16_is_nan((uint16_t)h)) assert_true(bf16_is_nan(back));
        else if (back != h) fail_msg("bf16 0x%04x -> %a -> 0x%04x", h, (double)f, back);
    }
}

static void test_bf16_nearest_random(void **state)
{
    (void)state;
    kb_rng r;
    kb_rng_seed(&r, 7);
    for (int k = 0; k < 200000; k++) {
        uint32_t u = (uint32_t)kb_rng_next(&r);
        if ((u & 0x7f800000u) == 0x7f800000u) continue; /* Inf and NaN elsewhere */
        float x = u2f(u);
        uint16_t h = kb_f32_to_bf16(x);
        uint32_t hu = h & 0x7fffu;
        if (hu == 0x7f80u) { /* overflow: only above the last tie */
            assert_true(fabsf(x) >= u2f(0x7f7f8000u));
            continue;
        }
        double ax = fabs((double)x), d = fabs(ax - fabs(kb_bf16_to_f32(h)));
        assert_int_equal(h & 0x8000u, (u >> 16) & 0x8000u);
        if (hu > 0) {
            double dl = fabs(ax - kb_bf16_to_f32((uint16_t)(hu - 1)));
            assert_true(d < dl || (d == dl && !(h & 1)));
        }
        double du = fabs(ax - kb_bf16_to_f32((uint16_t)(hu + 1)));
        assert_true(d < du || (d == du && !(h & 1)));
    }
}

/* ---- store and load ----------------------------------------------------- */

static void test_store_load(void **state)
{
    (void)state;
    assert_int_equal(kb_dtype_size(KB_FP32), 4);
    assert_int_equal(kb_dtype_size(KB_FP16), 2);
    assert_int_equal(kb_dtype_size(KB_BF16), 2);
    assert_string_equal(kb_dtype_name(KB_FP32), "fp32");
    assert_string_equal(kb_dtype_name(KB_FP16), "fp16");
    assert_string_equal(kb_dtype_name(KB_BF16), "bf16");

    const double vals[] = {0.1, -0.7, 1.0 / 3.0, 1e-6, 12345.678, 1e5};
    for (int t = 0; t < KB_NDTYPES; t++) {
        uint8_t buf[8 * 4];
        memset(buf, 0xab, sizeof buf);
        for (int k = 0; k < 6; k++) {
            double got = kb_store(buf, 3, vals[k], (kb_dtype)t);
            double want;
            if (t == KB_FP32) want = (float)vals[k];
            else if (t == KB_FP16) want = kb_f16_to_f32(kb_f32_to_f16((float)vals[k]));
            else want = kb_bf16_to_f32(kb_f32_to_bf16((float)vals[k]));
            if (t == KB_FP16 && vals[k] == 1e5) assert_true(isinf(got)); /* past fp16's range */
            assert_true(got == want || (isinf(got) && isinf(want)));
            assert_true(kb_load(buf, 3, (kb_dtype)t) == got || isinf(got));
            /* only element 3 was written */
            size_t es = kb_dtype_size((kb_dtype)t);
            for (size_t b = 0; b < sizeof buf; b++)
                if (b < 3 * es || b >= 4 * es) assert_int_equal(buf[b], 0xab);
        }
    }
    /* the stored value is quantised, not the value given */
    uint16_t h[1];
    assert_true(kb_store(h, 0, 0.1, KB_FP16) != 0.1);
    assert_true(fabs(kb_store(h, 0, 0.1, KB_FP16) - 0.1) <= 0.1 * 0x1p-11);
    assert_int_equal(h[0], 0x2e66);
    assert_true(fabs(kb_store(h, 0, 0.1, KB_BF16) - 0.1) <= 0.1 * 0x1p-8);
    assert_int_equal(h[0], 0x3dcd);
}

/* kb_store promises the value rounded to nearest-even in dtype t; going
 * double -> float -> half rounds twice and can land on the wrong side of a
 * tie that the float step created. */
static void test_store_rounds_once(void **state)
{
    (void)state;
    uint16_t h[1];
    double v = 1.0 + 0x1p-11 + 0x1p-40; /* just above the 0x3c00/0x3c01 tie */
    double got = kb_store(h, 0, v, KB_FP16);
    if (got != 1.0 + 0x1p-10)
        fail_msg("kb_store(%a, fp16) stored %a (0x%04x); nearest is %a (0x3c01)", v, got, h[0], 1.0 + 0x1p-10);
    v = 1.0 + 0x1p-8 + 0x1p-40; /* just above the 0x3f80/0x3f81 tie */
    got = kb_store(h, 0, v, KB_BF16);
    if (got != 1.0 + 0x1p-7)
        fail_msg("kb_store(%a, bf16) stored %a (0x%04x); nearest is %a (0x3f81)", v, got, h[0], 1.0 + 0x1p-7);
    /* just below the ties (float rounds these up, onto the tie), either sign */
    for (int sg = -1; sg <= 1; sg += 2) {
        assert_true(kb_store(h, 0, sg * (1.0 + 0x1p-11 - 0x1p-40), KB_FP16) == sg * 1.0);
        assert_true(kb_store(h, 0, sg * (1.0 + 0x1p-8 - 0x1p-40), KB_BF16) == sg * 1.0);
        assert_true(kb_store(h, 0, sg * (1.0 + 0x1p-11 + 0x1p-40), KB_FP16) == sg * (1.0 + 0x1p-10));
    }
    /* past float's range: Inf in both, as one rounding gives */
    assert_true(isinf(kb_store(h, 0, 1e39, KB_BF16)) && kb_store(h, 0, -1e39, KB_BF16) < 0);
    assert_true(isinf(kb_store(h, 0, 1e39, KB_FP16)));
    /* just under bf16's largest value plus half an ulp: its largest value */
    assert_true(kb_store(h, 0, 0x1.fefffffp127, KB_BF16) == 0x1.fep127);
}

/* ---- rng ---------------------------------------------------------------- */

/* kb_fill_uniform draws the same stream as kb_rng_uniform, quantised, in
 * [lo, hi), and never stores a zero. */
static void test_fill_uniform(void **state)
{
    (void)state;
    enum { N = 10000 };
    static float f[N];
    static uint16_t h[N];
    kb_fill_uniform(f, N, KB_FP32, 99, -1.0, 1.0);
    kb_fill_uniform(h, N, KB_BF16, 99, -1.0, 1.0);
    kb_rng r;
    kb_rng_seed(&r, 99);
    for (int i = 0; i < N; i++) {
        double v = kb_rng_uniform(&r, -1.0, 1.0);
        float q = (float)v;
        if (q == 0.0f) continue;
        assert_true(f[i] == q);
        assert_true(f[i] >= -1.0f && f[i] < 1.0f);
        assert_true(kb_bf16_to_f32(h[i]) != 0.0f);
    }
    /* every dtype: each element is kb_store of the stream's draw, bit for
     * bit, or where that rounds to zero the range's three-quarter point;
     * ranges past fp16's, with subnormals, and where fp16 (1e-7) or bf16
     * (1e-40) round some draws to zero */
    static const double range[][2] = {{-1, 1}, {-7e4, 7e4}, {-3e-5, -1e-5}, {-1e-7, 1e-7}, {-1e-40, 1e-40}};
    for (int t = 0; t < KB_NDTYPES; t++)
        for (int k = 0; k < 5; k++) {
            const double lo = range[k][0], hi = range[k][1];
            void *buf = t == KB_FP32 ? (void *)f : (void *)h;
            kb_fill_uniform(buf, N, (kb_dtype)t, 7 + (uint64_t)k, lo, hi);
            kb_rng_seed(&r, 7 + (uint64_t)k);
            int zeros = 0;
            for (int i = 0; i < N; i++) {
                union { float f; uint16_t h; } one;
                double want = kb_store(&one, 0, kb_rng_uniform(&r, lo, hi), (kb_dtype)t);
                if (want == 0.0) {
                    zeros++;
                    want = kb_store(&one, 0, 0.5 * (lo + hi) + 0.25 * (hi - lo), (kb_dtype)t);
                }
                const double got = kb_load(buf, (size_t)i, (kb_dtype)t);
                if (got != want)
                    fail_msg("dtype %s [%g, %g) element %d: %a, want %a", kb_dtype_name((kb_dtype)t), lo, hi, i, got, want);
            }
            if ((t == KB_FP16 && k == 3) || (t == KB_BF16 && k == 4)) assert_true(zeros > 0); /* replaced */
        }
}

static void test_rng(void **state)
{
    (void)state;
    kb_rng a, b, c;
    kb_rng_seed(&a, 1234);
    kb_rng_seed(&b, 1234);
    kb_rng_seed(&c, 1235);
    int same_c = 0;
    for (int i = 0; i < 1000; i++) {
        uint64_t x = kb_rng_next(&a), y = kb_rng_next(&b), z = kb_rng_next(&c);
        assert_true(x == y);
        same_c += x == z;
    }
    assert_int_equal(same_c, 0);
    /* splitmix64 from state 0 (seed = the xor constant): its published first outputs */
    kb_rng_seed(&a, 0x9e3779b97f4a7c15ull);
    assert_true(kb_rng_next(&a) == 0xe220a8397b1dcdafull);
    assert_true(kb_rng_next(&a) == 0x6e789e6aa1b965f4ull);
    assert_true(kb_rng_next(&a) == 0x06c45d188009454full);

    kb_rng_seed(&a, 99);
    kb_rng_seed(&b, 99);
    double mn = 1, mx = -1, sum = 0;
    for (int i = 0; i < 100000; i++) {
        double u = kb_rng_uniform(&a, -1.0, 1.0);
        assert_true(u == kb_rng_uniform(&b, -1.0, 1.0));
        assert_true(u >= -1.0 && u < 1.0);
        mn = fmin(mn, u);
        mx = fmax(mx, u);
        sum += u;
    }
    assert_true(mn < -0.999 && mx > 0.999);
    assert_true(fabs(sum / 100000) < 0.02);
    for (int i = 0; i < 1000; i++) {
        double u = kb_rng_uniform(&a, 3.0, 5.0);
        assert_true(u >= 3.0 && u < 5.0);
    }
}

/* the device's fill (kernels/fill.cu) gives the host's bits: every dtype,
 * odd lengths (not a multiple of any vector or block), ranges from tiny
 * (draws that round to zero, replaced) to past fp16's largest (Inf); the
 * device's buffer poisoned first */
static void test_fill_device(void **state)
{
    (void)state;
    if (!have_gpu()) skip();
    const size_t ns[] = {1, 7, 255, 1000003};
    const double r[][2] = {{-1, 1}, {-0.03, 0.03}, {0.5, 1.5}, {-1e-7, 1e-7}, {-7e4, 7e4}};
    const size_t nmax = 1000003;
    void *h = malloc(nmax * 4), *d = malloc(nmax * 4), *dev = NULL;
    assert_int_equal(cudaMalloc(&dev, nmax * 4), cudaSuccess);
    for (int t = 0; t < KB_NDTYPES; t++)
        for (int k = 0; k < KB_COUNT(r); k++)
            for (int j = 0; j < KB_COUNT(ns); j++) {
                const size_t n = ns[j], es = kb_dtype_size((kb_dtype)t);
                const uint64_t seed = 0x9d2c5680u * (uint64_t)(j + 1) + (uint64_t)k;
                assert_int_equal(cudaMemset(dev, 0xff, nmax * 4), cudaSuccess);
                assert_int_equal(kb_fill_uniform_dev(dev, n, t, seed, r[k][0], r[k][1]), 0);
                assert_int_equal(cudaMemcpy(d, dev, nmax * 4, cudaMemcpyDeviceToHost), cudaSuccess);
                kb_fill_uniform(h, n, (kb_dtype)t, seed, r[k][0], r[k][1]);
                for (size_t i = 0; i < n; i++)
                    if (memcmp((char *)h + i * es, (char *)d + i * es, es))
                        fail_msg("%s [%g, %g) n=%zu: element %zu differs (host %g, device %g)", kb_dtype_name((kb_dtype)t),
                                 r[k][0], r[k][1], n, i, kb_load(h, i, (kb_dtype)t), kb_load(d, i, (kb_dtype)t));
                for (size_t i = n * es; i < nmax * 4; i++) /* nothing past the n elements written */
                    if (((unsigned char *)d)[i] != 0xff) fail_msg("%s n=%zu: byte %zu past the end written", kb_dtype_name((kb_dtype)t), n, i);
            }
    cudaFree(dev);
    free(h);
    free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_f16_exact),
        cmocka_unit_test(test_f16_ties_to_even),
        cmocka_unit_test(test_f16_subnormals),
        cmocka_unit_test(test_f16_overflow_inf_nan),
        cmocka_unit_test(test_f16_roundtrip_all),
        cmocka_unit_test(test_f16_nearest_random),
        cmocka_unit_test(test_bf16_rounding),
        cmocka_unit_test(test_bf16_roundtrip_all),
        cmocka_unit_test(test_bf16_nearest_random),
        cmocka_unit_test(test_store_load),
        cmocka_unit_test(test_store_rounds_once),
        cmocka_unit_test(test_rng),
        cmocka_unit_test(test_fill_uniform),
        cmocka_unit_test(test_fill_device),
    };
    return cmocka_run_group_tests_name("dtype", tests, NULL, NULL);
}
