/* dtypes: names, sizes, and fp16/bf16 conversion with round-to-nearest-even. */
#include "../../include/kb_dtype.h"
#include "../../kernels/fill.h"

#include <math.h>
#include <string.h>

static const char *const names[KB_NDTYPES] = {"fp32", "fp16", "bf16"};

size_t kb_dtype_size(kb_dtype t) { return t == KB_FP32 ? 4 : 2; }
const char *kb_dtype_name(kb_dtype t) { return (unsigned)t < KB_NDTYPES ? names[t] : "?"; }

uint16_t kb_f32_to_bf16(float f) { return kb_fill_bf16(f); }

float kb_bf16_to_f32(uint16_t h) { return kb_fill_u2f((uint32_t)h << 16); }

uint16_t kb_f32_to_f16(float f) { return kb_fill_f16(f); }

float kb_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f) return kb_fill_u2f(sign | 0x7f800000u | (m << 13));
    if (e == 0) { /* zero or subnormal: m * 2^-24 */
        float v = (float)m * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return kb_fill_u2f(sign | ((e + 112u) << 23) | (m << 13));
}

double kb_store(void *buf, size_t i, double v, kb_dtype t)
{
    switch (t) {
    case KB_FP32: ((float *)buf)[i] = (float)v; return ((float *)buf)[i];
    case KB_FP16: ((uint16_t *)buf)[i] = kb_f32_to_f16(kb_fill_float_odd(v)); return kb_f16_to_f32(((uint16_t *)buf)[i]);
    case KB_BF16: ((uint16_t *)buf)[i] = kb_f32_to_bf16(kb_fill_float_odd(v)); return kb_bf16_to_f32(((uint16_t *)buf)[i]);
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

void kb_rng_seed(kb_rng *r, uint64_t seed) { r->s = seed ^ KB_FILL_GAMMA; }

uint64_t kb_rng_next(kb_rng *r) { return kb_fill_mix(r->s += KB_FILL_GAMMA); }

/* The fill (kernels/fill.h, written once for the host and the device's
 * kb_fill_uniform_dev); one loop per dtype (a switch per element cost more
 * than the draw). */
void kb_fill_uniform(void *buf, size_t n, kb_dtype t, uint64_t seed, double lo, double hi)
{
    const uint64_t s0 = seed ^ KB_FILL_GAMMA;
    const double alt = kb_fill_alt(lo, hi);
    if (t == KB_FP32) {
        float *f = buf;
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < n; i++) f[i] = kb_fill_32(s0, i, lo, hi, (float)alt);
    } else if (t == KB_FP16 || t == KB_BF16) {
        uint16_t *h = buf;
        const int bf = t == KB_BF16;
        const uint16_t qalt = kb_fill_alt16(lo, hi, bf);
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < n; i++) h[i] = kb_fill_16(s0, i, lo, hi, bf, qalt);
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
