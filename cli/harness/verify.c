/* Verification: an output, gathered from the device, against the CPU
 * reference in double precision (verify.h). */
#include "verify.h"
#include "../core/op.h"
#include "../../include/kb_dtype.h"

#include <math.h>
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
    *maxabs = mx;
    if (bad || !isfinite(*rel) || !isfinite(mx)) return 0;
    return *rel <= tol.rel_l2 && mx <= tol.max_abs * (mref > 1 ? mref : 1);
}
