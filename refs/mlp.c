/* SwiGLU MLP reference: y = (silu(x G^T) * (x U^T)) D^T in double, with g, u
 * and h rounded to the dtype as the GPU's stored intermediates are.
 *
 * The loops run over the weights' rows (OpenMP), each weight row read once
 * for all the tokens asked for, so a sample of 64 tokens at 4096 x 11008
 * streams the weights once rather than once per token. */
#include "refs.h"

#include "../include/kb_dtype.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

/* Four doubles a vector (GCC's vector extension: two SSE2 or NEON
 * registers where that is all there is, one AVX2 register); each lane does
 * what one scalar partial sum did, in the same order, so the dot products
 * are those of the scalar loops, bit for bit. */
typedef double v4d __attribute__((vector_size(32)));
/* (GCC warns that passing one changes the ABI without AVX: these functions
 * are static and inlined, no call crosses this file) */
#pragma GCC diagnostic ignored "-Wpsabi"

/* The inner loops built for the host's vector units too (AVX2, AVX-512),
 * picked when the process starts: the same operations in the same order
 * (no FMA: C11 leaves contraction off), so the same bits. Clones against
 * SSE2 alone: 1.2-1.4x on a 2-core EPYC. Four doubles a vector rather than
 * two (the dot products' bits the same; the scale's squares now in four
 * partial sums, not two, so its last bits moved): on that EPYC's 2 threads,
 * 64 rows of 4096 x 11008 bf16 in 0.77 s against 0.93 s, of 8192 x 28672
 * in 4.2 s against 5.1 s; on a 4 x H200 host's Xeon, four references of
 * 8192 x 28672 at once on 16 threads each, 2.60 and 2.40 s against 2.73
 * and 3.40 s. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#define KB_REF_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define KB_REF_CLONES
#endif

static inline __attribute__((always_inline)) v4d load4(const double *p)
{
    v4d v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* A dot product and a sum of squared products at once: d = sum_k a_k b_k in
 * four partial sums (k mod 4), combined (s0 + s1) + (s2 + s3); q = sum_k
 * (c_k b_k)^2 likewise, c = a or another vector. Every sum runs in this
 * order whatever the blocking around it, so the results do not depend on
 * it. */
typedef struct {
    v4d s, q;
} acc;

/* (a macro: a function taking vectors is what GCC warns of above) */
#define acc_step(r, p, c) ((r)->s += (p), (r)->q += (c) * (c))

/* the tail from k (a multiple of 4) to n, and the sums */
static void acc_finish(const acc *r, const double *a, const double *c, const double *b, long k, long n, double *d,
                       double *q)
{
    double s0 = r->s[0], qq[4] = {r->q[0], r->q[1], r->q[2], r->q[3]};
    for (long j = k; j < n; j++) {
        const double p = c[j] * b[j];
        s0 += a[j] * b[j];
        qq[j % 4] += p * p;
    }
    *d = (s0 + r->s[1]) + (r->s[2] + r->s[3]);
    *q = (qq[0] + qq[1]) + (qq[2] + qq[3]);
}

/* x's rows x0 and x1 (x1 may be x0) against the weight rows g and u: dot
 * and squares of each pair (d[0..3], q[0..3]: x0 g, x0 u, x1 g, x1 u) in one
 * pass, four independent chains for the FPU */
KB_REF_CLONES static void xgu(const double *x0, const double *x1, const double *g, const double *u, long n, double d[4], double q[4])
{
    acc r[4] = {0};
    long k = 0;
    for (; k + 4 <= n; k += 4) {
        const v4d gv = load4(g + k), uv = load4(u + k), a = load4(x0 + k), b = load4(x1 + k);
        const v4d p0 = a * gv, p1 = a * uv, p2 = b * gv, p3 = b * uv;
        acc_step(&r[0], p0, p0);
        acc_step(&r[1], p1, p1);
        acc_step(&r[2], p2, p2);
        acc_step(&r[3], p3, p3);
    }
    acc_finish(&r[0], x0, x0, g, k, n, &d[0], &q[0]);
    acc_finish(&r[1], x0, x0, u, k, n, &d[1], &q[1]);
    acc_finish(&r[2], x1, x1, g, k, n, &d[2], &q[2]);
    acc_finish(&r[3], x1, x1, u, k, n, &d[3], &q[3]);
}

/* rows r0 and r1 of h and hc (r1 may be r0) against D's row w: y = h w and
 * q = sum (hc w)^2 of each */
KB_REF_CLONES static void hdw(const double *h0, const double *c0, const double *h1, const double *c1, const double *w, long n,
                double y[2], double q[2])
{
    acc r[2] = {0};
    long k = 0;
    for (; k + 4 <= n; k += 4) {
        const v4d wv = load4(w + k);
        acc_step(&r[0], load4(h0 + k) * wv, load4(c0 + k) * wv);
        acc_step(&r[1], load4(h1 + k) * wv, load4(c1 + k) * wv);
    }
    acc_finish(&r[0], h0, c0, w, k, n, &y[0], &q[0]);
    acc_finish(&r[1], h1, c1, w, k, n, &y[1], &q[1]);
}

static double silu_prime(double a) /* sigmoid(a) (1 + a (1 - sigmoid(a))) */
{
    const double s = 1.0 / (1.0 + exp(-a));
    return s * (1.0 + a * (1.0 - s));
}

/* row `row` (n values) of w, in double: w holds doubles (wt < 0) or dtype wt */
static const double *row_of(const void *w, int wt, long row, long n, double *buf)
{
    if (wt < 0) return (const double *)w + row * n;
    for (long k = 0; k < n; k++) buf[k] = kb_load(w, (size_t)(row * n + k), (kb_dtype)wt);
    return buf;
}

/* Each weight row is read once, for all the rows of x asked for, and turned
 * into doubles there (a thread's row buffer), never the whole matrix: at
 * 8192 x 28672 that was three 1.9 GB copies a case. The weight rows go in
 * blocks of KB_REF_WB, each pair of x's rows (or h's) taken against the
 * whole block while it is at hand: x's 64 sampled rows at hidden 8192 are
 * 4 MiB, read from the L3 once a block rather than once a weight row. A
 * sum's order is the same whatever the block, so are its bits. */
#define KB_REF_WB 8
static double mlp(const ref_mlp_args *a, const double *x, const void *G, const void *U, const void *D, int wt,
                  double *y)
{
    const long R = a->rows, H = a->hidden, I = a->inter;
    double *h = malloc((size_t)(R * I + 1) * sizeof *h), *hc = malloc((size_t)(R * I + 1) * sizeof *hc);
    double *ssi = malloc((size_t)(H + 1) * sizeof *ssi); /* the scale's sum per row of D, added up in order below */
#pragma omp parallel
    {
        double *gb = malloc((size_t)(KB_REF_WB * H + 1) * sizeof *gb), *ub = malloc((size_t)(KB_REF_WB * H + 1) * sizeof *ub),
               *db = malloc((size_t)(KB_REF_WB * I + 1) * sizeof *db);
        const double *gj[KB_REF_WB], *uj[KB_REF_WB], *di[KB_REF_WB];
#pragma omp for schedule(static)
        for (long j0 = 0; j0 < I; j0 += KB_REF_WB) {
            const int nb = I - j0 < KB_REF_WB ? (int)(I - j0) : KB_REF_WB;
            for (int b = 0; b < nb; b++) {
                gj[b] = row_of(G, wt, j0 + b, H, gb + b * H);
                uj[b] = row_of(U, wt, j0 + b, H, ub + b * H);
            }
            for (long r = 0; r < R; r += 2) {
                const long r1 = r + 1 < R ? r + 1 : r; /* an odd last row: twice, kept once */
                for (int b = 0; b < nb; b++) {
                    const long j = j0 + b;
                    double d[4], q[4];
                    xgu(x + r * H, x + r1 * H, gj[b], uj[b], H, d, q);
                    for (int t = 0; t < 2 && r + t < R; t++) {
                        const double g = round_to(d[2 * t], a->dtype), u = round_to(d[2 * t + 1], a->dtype);
                        const double hv = round_to(ref_silu(g) * u, a->dtype);
                        const double gs = sqrt(q[2 * t]), us = sqrt(q[2 * t + 1]);
                        const double c = (fabs(silu_prime(g)) * gs * fabs(u) + fabs(ref_silu(g)) * us) / 4;
                        h[(r + t) * I + j] = hv;
                        hc[(r + t) * I + j] = c > fabs(hv) ? c : fabs(hv);
                    }
                }
            }
        }
        /* the implicit barrier: h and hc are whole */
#pragma omp for schedule(static)
        for (long i0 = 0; i0 < H; i0 += KB_REF_WB) {
            const int nb = H - i0 < KB_REF_WB ? (int)(H - i0) : KB_REF_WB;
            double ss[KB_REF_WB] = {0};
            for (int b = 0; b < nb; b++) di[b] = row_of(D, wt, i0 + b, I, db + b * I);
            for (long r = 0; r < R; r += 2) {
                const long r1 = r + 1 < R ? r + 1 : r;
                for (int b = 0; b < nb; b++) {
                    double yv[2], q[2];
                    hdw(h + r * I, hc + r * I, h + r1 * I, hc + r1 * I, di[b], I, yv, q);
                    for (int t = 0; t < 2 && r + t < R; t++) {
                        y[(r + t) * H + i0 + b] = yv[t];
                        ss[b] += q[t];
                    }
                }
            }
            for (int b = 0; b < nb; b++) ssi[i0 + b] = ss[b];
        }
        free(gb);
        free(ub);
        free(db);
    }
    /* in index order: the same scale whatever the threads (an OpenMP
     * reduction adds the threads' sums in the order they finish) */
    double ss = 0;
    for (long i = 0; i < H; i++) ss += ssi[i];
    free(h);
    free(hc);
    free(ssi);
    return sqrt(ss);
}

double ref_mlp(const ref_mlp_args *a, const double *x, const double *G, const double *U, const double *D, double *y)
{
    return mlp(a, x, G, U, D, -1, y);
}

double ref_mlp_typed(const ref_mlp_args *a, const double *x, const void *G, const void *U, const void *D, double *y)
{
    return mlp(a, x, G, U, D, a->dtype, y);
}
