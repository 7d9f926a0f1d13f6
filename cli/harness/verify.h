/* Verification: an output against its reference (verify.c). */
#ifndef KB_HARNESS_VERIFY_H
#define KB_HARNESS_VERIFY_H

#include "../core/op.h"

/* Elements of b that are compared with the reference (the sampled rows or all). */
size_t kb_buf_checked(const kb_buf *b);
/* Rows of b that are compared: nrows, or n / row_len; 0 if b has no rows. */
long kb_buf_checked_rows(const kb_buf *b);
/* The compared elements of an output (host copy in b's dtype) to double, in
 * the reference's order: got[kb_buf_checked(b)]. */
void kb_buf_gather(const kb_buf *b, const void *host, double *got);
int kb_compare(const kb_buf *b, const double *got, kb_tol tol, double *rel, double *maxabs);
/* Where a failed output is worst: the first compared element that is not
 * finite (an unwritten one keeps its NaN poison), else the one furthest from
 * the reference; an index into got (and b->ref). */
size_t kb_worst(const kb_buf *b, const double *got);
/* Compared element i's index in the whole output (through the sampled rows). */
size_t kb_buf_index(const kb_buf *b, size_t i);
/* "[3, 0]": flat index i of a row-major shape of ndim dims; "[i]" when ndim
 * < 1 or the shape does not hold i. */
void kb_index_text(size_t i, int ndim, const int64_t *shape, char *buf, size_t n);
/* "; worst y[3, 0] = 64.01 (reference 64.02)": output i's worst element
 * ("= nan (reference ...; unwritten, or a NaN computed)" for a NaN)
 * (kb_worst; got as kb_buf_gather gives it), indexed in the tensor the op
 * hands plugins (plugin_tensors), else by its flat index. */
void kb_worst_text(const kb_case *c, const kb_state *st, int i, const double *got, char *buf, size_t n);

#endif
