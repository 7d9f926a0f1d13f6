/* RoPE reference: rotate each pair of the first `rot` dims of every head
 * vector by the angle of its position; copy the rest. */
#include "refs.h"

#include <math.h>

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
    long b = 0;
    while (b + 1 < a->batch && a->cu_seqlens[b + 1] <= token) b++;
    return token - a->cu_seqlens[b];
}

void ref_rope(const ref_rope_args *a, const double *in, double *out)
{
    long rows = ref_rope_rows(a), half = a->rot / 2;
    long b = 0; /* thd: current sequence, rows are in token order */
    for (long r = 0; r < rows; r++) {
        long pos;
        if (a->layout == 2) {
            long token = r / a->heads;
            while (b + 1 < a->batch && a->cu_seqlens[b + 1] <= token) b++;
            pos = token - a->cu_seqlens[b];
        } else {
            pos = position(a, r);
        }
        const double *x = in + r * a->dim;
        double *y = out + r * a->dim;
        for (long i = 0; i < half; i++) {
            double th = a->angles[pos * half + i];
            double c = cos(th), s = a->backward ? -sin(th) : sin(th);
            long p = a->style == 0 ? i : 2 * i, q = a->style == 0 ? i + half : 2 * i + 1;
            y[p] = x[p] * c - x[q] * s;
            y[q] = x[q] * c + x[p] * s;
        }
        for (long j = a->rot; j < a->dim; j++) y[j] = x[j];
    }
}

void ref_rope_angles(float *angles, long positions, long rot, double base)
{
    long half = rot / 2;
    for (long p = 0; p < positions; p++)
        for (long i = 0; i < half; i++)
            angles[p * half + i] = (float)((double)p * pow(base, -2.0 * (double)i / (double)rot));
}
