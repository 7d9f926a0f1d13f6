/* RoPE reference: rotate each pair of the first `rot` dims of every head
 * vector by the angle of its position; copy the rest. */
#include "refs.h"

#include <math.h>
#include <stdlib.h>

long ref_rope_rows(const ref_rope_args *a)
{
    if (a->layout == 2) return (long)a->cu_seqlens[a->batch] * a->heads;
    return a->seq * a->batch * a->heads;
}

static long position(const ref_rope_args *a, long row)
{
    long token = row / a->heads;
    if (a->layout == 0) return row / (a->batch * a->heads);
    if (a->layout == 1) return token % a->seq;
    long lo = 0, hi = a->batch - 1; /* thd: the last sequence starting at or before token */
    while (lo < hi) {
        long mid = (lo + hi + 1) / 2;
        if (a->cu_seqlens[mid] <= token) lo = mid;
        else hi = mid - 1;
    }
    return token - a->cu_seqlens[lo];
}

void ref_rope(const ref_rope_args *a, const double *in, double *out)
{
    long rows = ref_rope_rows(a), half = a->rot / 2, npos = a->seq;
    if (a->layout == 2) { /* thd: the angle table covers the longest sequence */
        npos = 0;
        for (long b = 0; b < a->batch; b++)
            if (a->cu_seqlens[b + 1] - a->cu_seqlens[b] > npos) npos = a->cu_seqlens[b + 1] - a->cu_seqlens[b];
    }
    /* cos and sin once per (position, pair) */
    double *cs = malloc((size_t)(npos * half * 2 + 1) * sizeof *cs);
#pragma omp parallel for schedule(static)
    for (long k = 0; k < npos * half; k++) {
        double th = a->angles[k];
        cs[2 * k] = cos(th);
        cs[2 * k + 1] = a->backward ? -sin(th) : sin(th);
    }
#pragma omp parallel for schedule(static)
    for (long r = 0; r < rows; r++) {
        const double *c = cs + 2 * position(a, r) * half;
        const double *x = in + r * a->dim;
        double *y = out + r * a->dim;
        for (long i = 0; i < half; i++) {
            long p = a->style == 0 ? i : 2 * i, q = a->style == 0 ? i + half : 2 * i + 1;
            y[p] = x[p] * c[2 * i] - x[q] * c[2 * i + 1];
            y[q] = x[q] * c[2 * i] + x[p] * c[2 * i + 1];
        }
        for (long j = a->rot; j < a->dim; j++) y[j] = x[j];
    }
    free(cs);
}

void ref_rope_angles(float *angles, long positions, long rot, double base)
{
    long half = rot / 2;
    for (long p = 0; p < positions; p++)
        for (long i = 0; i < half; i++)
            angles[p * half + i] = (float)((double)p * pow(base, -2.0 * (double)i / (double)rot));
}
