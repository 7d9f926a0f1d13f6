/* SwiGLU MLP reference: y = (silu(x G^T) * (x U^T)) D^T in double, with g, u
 * and h rounded to the dtype as the GPU's stored intermediates are.
 *
 * The loops run over the weights' rows (OpenMP), each weight row read once
 * for all the tokens asked for, so a sample of 64 tokens at 4096 x 11008
 * streams the 1 GiB of double weights once rather than once per token. */
#include "refs.h"

#include "../include/kb_dtype.h"

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

/* the sum of (a_k b_k)^2 */
static double dot_sq(const double *a, const double *b, long n)
{
    double s0 = 0, s1 = 0;
    long k = 0;
    for (; k + 2 <= n; k += 2) {
        const double p0 = a[k] * b[k], p1 = a[k + 1] * b[k + 1];
        s0 += p0 * p0;
        s1 += p1 * p1;
    }
    for (; k < n; k++) s0 += a[k] * b[k] * a[k] * b[k];
    return s0 + s1;
}

static double silu_prime(double a) /* sigmoid(a) (1 + a (1 - sigmoid(a))) */
{
    const double s = 1.0 / (1.0 + exp(-a));
    return s * (1.0 + a * (1.0 - s));
}

double ref_mlp(const ref_mlp_args *a, const double *x, const double *G, const double *U, const double *D, double *y)
{
    const long R = a->rows, H = a->hidden, I = a->inter;
    double *h = malloc((size_t)(R * I + 1) * sizeof *h), *hc = malloc((size_t)(R * I + 1) * sizeof *hc);
#pragma omp parallel for schedule(static)
    for (long j = 0; j < I; j++) {
        const double *gj = G + j * H, *uj = U + j * H;
        for (long r = 0; r < R; r++) {
            const double *xr = x + r * H;
            double g = round_to(dot(xr, gj, H), a->dtype);
            double u = round_to(dot(xr, uj, H), a->dtype);
            const double hv = round_to(ref_silu(g) * u, a->dtype);
            const double gs = sqrt(dot_sq(xr, gj, H)), us = sqrt(dot_sq(xr, uj, H));
            const double c = (fabs(silu_prime(g)) * gs * fabs(u) + fabs(ref_silu(g)) * us) / 4;
            h[r * I + j] = hv;
            hc[r * I + j] = c > fabs(hv) ? c : fabs(hv);
        }
    }
    double ss = 0;
#pragma omp parallel for schedule(static) reduction(+ : ss)
    for (long i = 0; i < H; i++) {
        const double *di = D + i * I;
        for (long r = 0; r < R; r++) {
            y[r * H + i] = dot(h + r * I, di, I);
            ss += dot_sq(hc + r * I, di, I);
        }
    }
    free(h);
    free(hc);
    return sqrt(ss);
}
