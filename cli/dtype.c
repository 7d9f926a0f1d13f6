/* dtypes: names, sizes, and fp16/bf16 conversion with round-to-nearest-even. */
#include "kbench.h"

#include <math.h>
#include <string.h>

static const char *const names[KB_NDTYPES] = {"fp32", "fp16", "bf16"};

size_t kb_dtype_size(kb_dtype t) { return t == KB_FP32 ? 4 : 2; }
const char *kb_dtype_name(kb_dtype t) { return (unsigned)t < KB_NDTYPES ? names[t] : "?"; }

static uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

uint16_t kb_f32_to_bf16(float f)
{
    uint32_t u = f2u(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: keep it quiet and a NaN */
        return (uint16_t)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u); /* nearest, ties to even; overflows to Inf */
    return (uint16_t)(u >> 16);
}

float kb_bf16_to_f32(uint16_t h) { return u2f((uint32_t)h << 16); }

uint16_t kb_f32_to_f16(float f)
{
    uint32_t u = f2u(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return sign | 0x7e00u; /* NaN */
    if (a >= 0x477ff000u) return sign | 0x7c00u; /* >= 65520 rounds to Inf */
    if (a < 0x38800000u) {                        /* below 2^-14: subnormal or zero */
        if (a < 0x33000000u) return sign;         /* below 2^-25: rounds to zero */
        int e = (int)(a >> 23);                   /* biased fp32 exponent, 102..112 */
        uint32_t m = (a & 0x7fffffu) | 0x800000u;
        int shift = 126 - e;                      /* 14..24 */
        uint32_t q = m >> shift;
        uint32_t rem = m & ((1u << shift) - 1u);
        uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1u))) q++;
        return sign | (uint16_t)q;
    }
    /* normal: rebias exponent 127 -> 15, round 13 mantissa bits away */
    uint32_t r = a - 0x38000000u;
    r += 0xfffu + ((r >> 13) & 1u);
    return sign | (uint16_t)(r >> 13);
}

float kb_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f) return u2f(sign | 0x7f800000u | (m << 13));
    if (e == 0) { /* zero or subnormal: m * 2^-24 */
        float v = (float)m * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return u2f(sign | ((e + 112u) << 23) | (m << 13));
}

/* double -> float rounded to odd: with 24 bits against fp16's 11 and bf16's
 * 8, a second rounding (nearest-even) from it equals one direct rounding. */
static float to_float_odd(double v)
{
    float f = (float)v;
    if (!isfinite(v) || (double)f == v) return f;
    uint32_t u = f2u(f);
    if (fabs((double)f) > fabs(v)) u--; /* truncate toward zero: the next float down in magnitude (Inf: FLT_MAX) */
    return u2f(u | 1u);                 /* sticky bit: inexact */
}

double kb_store(void *buf, size_t i, double v, kb_dtype t)
{
    switch (t) {
    case KB_FP32: ((float *)buf)[i] = (float)v; return ((float *)buf)[i];
    case KB_FP16: ((uint16_t *)buf)[i] = kb_f32_to_f16(to_float_odd(v)); return kb_f16_to_f32(((uint16_t *)buf)[i]);
    case KB_BF16: ((uint16_t *)buf)[i] = kb_f32_to_bf16(to_float_odd(v)); return kb_bf16_to_f32(((uint16_t *)buf)[i]);
    default: return NAN;
    }
}

double kb_load(const void *buf, size_t i, kb_dtype t)
{
    switch (t) {
    case KB_FP32: return ((const float *)buf)[i];
    case KB_FP16: return kb_f16_to_f32(((const uint16_t *)buf)[i]);
    case KB_BF16: return kb_bf16_to_f32(((const uint16_t *)buf)[i]);
    default: return NAN;
    }
}

void kb_rng_seed(kb_rng *r, uint64_t seed) { r->s = seed ^ 0x9e3779b97f4a7c15ull; }

static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t kb_rng_next(kb_rng *r) { return mix(r->s += 0x9e3779b97f4a7c15ull); }

/* splitmix64 is counter-based: draw k of a seed's stream is mix(s0 + k*gamma),
 * so any element can be drawn on its own, in parallel. */
/* draw i (from 0) of the stream of s0 = seed ^ gamma, in [lo, hi) */
static inline double draw(uint64_t s0, size_t i, double lo, double hi)
{
    const uint64_t z = mix(s0 + (uint64_t)(i + 1) * 0x9e3779b97f4a7c15ull);
    return lo + (hi - lo) * ((double)(z >> 11) * 0x1.0p-53);
}

/* One loop per dtype (a switch per element cost more than the draw); a value
 * that rounds to zero is replaced, so no input is ever zero. */
void kb_fill_uniform(void *buf, size_t n, kb_dtype t, uint64_t seed, double lo, double hi)
{
    const uint64_t s0 = seed ^ 0x9e3779b97f4a7c15ull;
    const double alt = 0.5 * (lo + hi) + 0.25 * (hi - lo);
    if (t == KB_FP32) {
        float *f = buf;
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < n; i++) {
            float v = (float)draw(s0, i, lo, hi);
            f[i] = v != 0.0f ? v : (float)alt;
        }
    } else if (t == KB_FP16 || t == KB_BF16) {
        uint16_t *h = buf;
        const int bf = t == KB_BF16;
        const uint16_t qalt = bf ? kb_f32_to_bf16(to_float_odd(alt)) : kb_f32_to_f16(to_float_odd(alt));
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < n; i++) {
            const float v = to_float_odd(draw(s0, i, lo, hi));
            const uint16_t q = bf ? kb_f32_to_bf16(v) : kb_f32_to_f16(v);
            h[i] = (q & 0x7fffu) ? q : qalt; /* +0 or -0 */
        }
    }
}

void kb_load_all(const void *buf, size_t n, kb_dtype t, double *out)
{
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) out[i] = kb_load(buf, i, t);
}

double kb_rng_uniform(kb_rng *r, double lo, double hi)
{
    return lo + (hi - lo) * ((double)(kb_rng_next(r) >> 11) * 0x1.0p-53);
}
