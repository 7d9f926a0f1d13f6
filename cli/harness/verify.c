/* Verification: an output, gathered from the device, against the CPU
 * reference in double precision (verify.h). */
#include "verify.h"
#include "../core/errors.h"
#include "../core/op.h"
#include "../core/tensors.h"
#include "../../include/kb_dtype.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
size_t kb_buf_checked(const kb_buf *b) { return b->rows ? (size_t)b->nrows * b->row_len : b->n; }

long kb_buf_checked_rows(const kb_buf *b)
{
    if (!b->row_len) return 0;
    return b->rows ? b->nrows : (long)(b->n / b->row_len);
}

void kb_buf_gather(const kb_buf *b, const void *host, double *got)
{
    if (!b->rows) {
        kb_load_all(host, b->n, b->dtype, got);
        return;
    }
    const size_t len = b->row_len;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < b->nrows; i++)
        for (size_t k = 0; k < len; k++) got[(size_t)i * len + k] = kb_load(host, (size_t)b->rows[i] * len + k, b->dtype);
}

/* Compares the checked elements (kb_buf_checked) of got with b->ref. */
int kb_compare(const kb_buf *b, const double *got, kb_tol tol, double *rel, double *maxabs)
{
    double num = 0, den = 0, mx = 0, mref = 0;
    int bad = 0;
    const size_t n = kb_buf_checked(b);
#pragma omp parallel for schedule(static) reduction(+ : num, den) reduction(max : mx, mref) reduction(| : bad)
    for (size_t i = 0; i < n; i++) {
        double r = b->ref[i], g = got[i];
        double d = fabs(g - r);
        if (!isfinite(g) || !isfinite(d)) bad = 1; /* NaN poison left: unwritten */
        else if (d > mx) mx = d;
        num += (g - r) * (g - r);
        den += r * r;
        if (fabs(r) > mref) mref = fabs(r);
    }
    if (bad) mx = NAN;
    den = den > b->scale * b->scale ? den : b->scale * b->scale;
    *rel = den > 0 ? sqrt(num / den) : sqrt(num);
    if (isnan(*rel)) *rel = NAN; /* the poison's sign bit printed "-nan" */
    *maxabs = mx;
    if (bad || !isfinite(*rel) || !isfinite(mx)) return 0;
    return *rel <= tol.rel_l2 && mx <= tol.max_abs * (mref > 1 ? mref : 1);
}

size_t kb_worst(const kb_buf *b, const double *got)
{
    const size_t n = kb_buf_checked(b);
    size_t w = 0;
    double dw = -1;
    for (size_t i = 0; i < n; i++) {
        const double d = fabs(got[i] - b->ref[i]);
        if (!isfinite(got[i]) || !isfinite(d)) return i;
        if (d > dw) dw = d, w = i;
    }
    return w;
}

size_t kb_buf_index(const kb_buf *b, size_t i)
{
    if (!b->rows || !b->row_len) return i;
    return (size_t)b->rows[i / b->row_len] * b->row_len + i % b->row_len;
}

void kb_index_text(size_t i, int ndim, const int64_t *shape, char *buf, size_t n)
{
    int64_t at[KBP_MAX_DIMS];
    size_t rest = i;
    int ok = ndim >= 1 && ndim <= KBP_MAX_DIMS && shape;
    for (int d = ndim - 1; ok && d >= 0; d--) {
        if (shape[d] < 1) ok = 0;
        else at[d] = (int64_t)(rest % (size_t)shape[d]), rest /= (size_t)shape[d];
    }
    if (!ok || rest) {
        snprintf(buf, n, "[%zu]", i);
        return;
    }
    size_t k = 0;
    for (int d = 0; d < ndim && k < n; d++) {
        const int w = snprintf(buf + k, n - k, "%s%lld", d ? ", " : "[", (long long)at[d]);
        if (w < 0) break;
        k += (size_t)w;
    }
    if (k < n) snprintf(buf + k, n - k, "]");
}

void kb_worst_text(const kb_case *c, const kb_state *st, int i, const double *got, char *buf, size_t n)
{
    const kb_buf *b = &st->out[i];
    const size_t w = kb_worst(b, got);
    kbp_tensor in[KB_MAX_PLUGIN_INPUTS], out[KB_MAX_OUTPUTS];
    int nin = 0, nout = 0, ndim = 0;
    const int64_t *shape = NULL;
    char saved[sizeof kb_last_error]; /* plugin_tensors says why it failed there: no one asked */
    memcpy(saved, kb_last_error, sizeof saved);
    if (c->op->plugin_tensors && c->op->plugin_tensors(c, st, in, &nin, out, &nout) == 0)
        for (int k = 0; k < nout; k++)
            if (out[k].name && !strcmp(out[k].name, b->name)) ndim = out[k].ndim, shape = out[k].shape;
    memcpy(kb_last_error, saved, sizeof saved);
    char at[96];
    kb_index_text(kb_buf_index(b, w), ndim, shape, at, sizeof at);
    if (isnan(got[w])) /* the poison's sign bit is set: "-nan" would read as a value */
        snprintf(buf, n, "; worst %s%s = nan (reference %.6g; unwritten, or a NaN computed)", b->name, at, b->ref[w]);
    else
        snprintf(buf, n, "; worst %s%s = %.6g (reference %.6g)", b->name, at, got[w], b->ref[w]);
}
