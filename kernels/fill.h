/* The inputs' fill, element by element, for the host (cli/core/dtype.c) and the
 * device (kernels/fill.cu) from one source, so both give the same bits: a
 * counter-based draw (splitmix64: draw i of a seed's stream is mix(s0 +
 * (i+1) gamma)) in [lo, hi), rounded to the dtype once (through fp32 rounded
 * to odd), a value that rounds to zero replaced. C11 and CUDA; the device's
 * double arithmetic is spelled in _rn intrinsics (never contracted to an FMA,
 * which would round once where the host rounds twice). */
#ifndef KB_FILL_H
#define KB_FILL_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#ifdef __CUDACC__
#define KB_HD __host__ __device__ static inline
#else
#include <math.h>
#define KB_HD static inline
#endif

#define KB_FILL_GAMMA 0x9e3779b97f4a7c15ull

KB_HD uint32_t kb_fill_f2u(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

KB_HD float kb_fill_u2f(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

KB_HD uint64_t kb_fill_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* draw i (from 0) of the stream of s0 = seed ^ KB_FILL_GAMMA, in [lo, hi) */
KB_HD double kb_fill_draw(uint64_t s0, size_t i, double lo, double hi)
{
    const uint64_t z = kb_fill_mix(s0 + (uint64_t)(i + 1) * KB_FILL_GAMMA);
    const double u = (double)(z >> 11) * 0x1.0p-53;
#ifdef __CUDA_ARCH__
    return __dadd_rn(lo, __dmul_rn(__dsub_rn(hi, lo), u));
#else
    return lo + (hi - lo) * u;
#endif
}

/* double -> float rounded to odd: with 24 bits against fp16's 11 and bf16's
 * 8, a second rounding (nearest-even) from it equals one direct rounding. */
KB_HD float kb_fill_float_odd(double v)
{
    const float f = (float)v;
    if (!isfinite(v) || (double)f == v) return f;
    uint32_t u = kb_fill_f2u(f);
    if (fabs((double)f) > fabs(v)) u--; /* truncate toward zero: the next float down in magnitude (Inf: FLT_MAX) */
    return kb_fill_u2f(u | 1u);        /* sticky bit: inexact */
}

KB_HD uint16_t kb_fill_bf16(float f) /* nearest, ties to even */
{
    uint32_t u = kb_fill_f2u(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: keep it quiet and a NaN */
        return (uint16_t)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u); /* overflows to Inf */
    return (uint16_t)(u >> 16);
}

KB_HD uint16_t kb_fill_f16(float f) /* nearest, ties to even */
{
    const uint32_t u = kb_fill_f2u(f);
    const uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    const uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return sign | 0x7e00u; /* NaN */
    if (a >= 0x477ff000u) return sign | 0x7c00u; /* >= 65520 rounds to Inf */
    if (a < 0x38800000u) {                        /* below 2^-14: subnormal or zero */
        if (a < 0x33000000u) return sign;         /* below 2^-25: rounds to zero */
        const int e = (int)(a >> 23);             /* biased fp32 exponent, 102..112 */
        const uint32_t m = (a & 0x7fffffu) | 0x800000u;
        const int shift = 126 - e; /* 14..24 */
        uint32_t q = m >> shift;
        const uint32_t rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1u))) q++;
        return sign | (uint16_t)q;
    }
    /* normal: rebias exponent 127 -> 15, round 13 mantissa bits away */
    uint32_t r = a - 0x38000000u;
    r += 0xfffu + ((r >> 13) & 1u);
    return sign | (uint16_t)(r >> 13);
}

/* the value that replaces a draw rounding to zero (no input is ever zero);
 * for fp32 as a float, for 16 bits rounded (bf: bf16, else fp16) */
KB_HD double kb_fill_alt(double lo, double hi) { return 0.5 * (lo + hi) + 0.25 * (hi - lo); }
KB_HD uint16_t kb_fill_alt16(double lo, double hi, int bf)
{
    const float a = kb_fill_float_odd(kb_fill_alt(lo, hi));
    return bf ? kb_fill_bf16(a) : kb_fill_f16(a);
}

/* element i of a 16-bit fill (bf: bf16, else fp16); qalt: alt rounded */
KB_HD uint16_t kb_fill_16(uint64_t s0, size_t i, double lo, double hi, int bf, uint16_t qalt)
{
    const float v = kb_fill_float_odd(kb_fill_draw(s0, i, lo, hi));
    const uint16_t q = bf ? kb_fill_bf16(v) : kb_fill_f16(v);
    return (q & 0x7fffu) ? q : qalt; /* +0 or -0 */
}

KB_HD float kb_fill_32(uint64_t s0, size_t i, double lo, double hi, float alt)
{
    const float v = (float)kb_fill_draw(s0, i, lo, hi);
    return v != 0.0f ? v : alt;
}
#endif
