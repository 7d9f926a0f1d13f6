/* Element types and their conversions, written once for the whole tree:
 * cli/ (inputs, outputs, verification) and refs/ (the references round to
 * the dtype the GPU stores) both use them; cli/core/dtype.c defines them.
 * Plain C. */
#ifndef KB_DTYPE_H
#define KB_DTYPE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { KB_FP32 = 0, KB_FP16 = 1, KB_BF16 = 2, KB_NDTYPES } kb_dtype;

size_t kb_dtype_size(kb_dtype t);
const char *kb_dtype_name(kb_dtype t);
uint16_t kb_f32_to_f16(float f);
float kb_f16_to_f32(uint16_t h);
uint16_t kb_f32_to_bf16(float f);
float kb_bf16_to_f32(uint16_t h);
/* Store v rounded (nearest-even) to dtype t at element i of buf, and return
 * the value actually stored, so a reference sees exactly what the GPU sees. */
double kb_store(void *buf, size_t i, double v, kb_dtype t);
double kb_load(const void *buf, size_t i, kb_dtype t);

/* Seeded random numbers (splitmix64): reproducible inputs per case. */
typedef struct { uint64_t s; } kb_rng;
void kb_rng_seed(kb_rng *r, uint64_t seed);
uint64_t kb_rng_next(kb_rng *r);
double kb_rng_uniform(kb_rng *r, double lo, double hi); /* [lo, hi) */
/* n seeded uniform values in [lo, hi), quantised to t, never zero (the same
 * values as kb_rng_uniform's stream for that seed, drawn in parallel). */
void kb_fill_uniform(void *buf, size_t n, kb_dtype t, uint64_t seed, double lo, double hi);
void kb_load_all(const void *buf, size_t n, kb_dtype t, double *out); /* to double, in parallel */

#ifdef __cplusplus
}
#endif
#endif
