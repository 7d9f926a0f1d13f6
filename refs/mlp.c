/* SwiGLU MLP reference: y = (silu(x G^T) * (x U^T)) D^T in double, with g, u
 * and h rounded to the dtype as the GPU's stored intermediates are.
 *
 * The loops run over the weights' rows (OpenMP), each weight row read once
 * for all the tokens asked for, so a sample of 64 tokens at 4096 x 11008
 * streams the 1 GiB of double weights once rather than once per token. */
#include "refs.h"

#include "../cli/kbench.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* Rows worth computing: a budget of 2^31 multiply-adds per GEMM (3 x 2^31 in
 * all, about a second of double arithmetic on a 16-core host), and never
 * fewer than 64 rows; every row when that covers the tokens. */
long ref_mlp_sample_count(long tokens, long hidden, long inter)
{
    double per_row = (double)hidden * (double)inter, budget = 2147483648.0;
    double want = floor(budget / per_row);
    if (want < 64) want = 64;
    return want >= (double)tokens ? tokens : (long)want;
}

double ref_silu(double a) { return a / (1.0 + exp(-a)); } /* exp(-a) = inf for a < -709: -0, the limit */

/* v rounded to the dtype (nearest-even, one rounding), as kb_store does */
static double round_to(double v, int dtype)
{
    union { float f; uint16_t h; } tmp;
    return kb_store(&tmp, 0, v, (kb_dtype)dtype);
}

/* four partial sums: independent chains for the FPU, still double throughout */
static double dot(const double *a, const double *b, long n)
{
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    long k = 0;
    for (; k + 4 <= n; k += 4) {
        s0 += a[k] * b[k];
        s1 += a[k + 1] * b[k + 1];
        s2 += a[k + 2] * b[k + 2];
        s3 += a[k + 3] * b[k + 3];
    }
    for (; k < n; k++) s0 += a[k] * b[k];
    return (s0 + s1) + (s2 + s3);
}

void ref_mlp(const ref_mlp_args *a, const double *x, const double *G, const double *U, const double *D, double *y)
{
    const long R = a->rows, H = a->hidden, I = a->inter;
    double *h = malloc((size_t)(R * I + 1) * sizeof *h);
#pragma omp parallel for schedule(static)
    for (long j = 0; j < I; j++) {
        const double *gj = G + j * H, *uj = U + j * H;
        for (long r = 0; r < R; r++) {
            double g = round_to(dot(x + r * H, gj, H), a->dtype);
            double u = round_to(dot(x + r * H, uj, H), a->dtype);
            h[r * I + j] = round_to(ref_silu(g) * u, a->dtype);
        }
    }
#pragma omp parallel for schedule(static)
    for (long i = 0; i < H; i++) {
        const double *di = D + i * I;
        for (long r = 0; r < R; r++) y[r * H + i] = dot(h + r * I, di, I);
    }
    free(h);
}
