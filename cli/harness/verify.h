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

#endif
