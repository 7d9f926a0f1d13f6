/* The CSV (csv.c). */
#ifndef KB_REPORT_CSV_H
#define KB_REPORT_CSV_H

#include "row.h"
#include "../core/op.h"
#include <stdio.h>

/* A CSV field: quoted where it holds a comma, a quote or a line break (each
 * line break written as a space, so a row stays one line). */
void kb_csv_str(FILE *f, const char *s);
void kb_csv_header(FILE *f, const kb_op *const *ops, int nops);
void kb_csv_row(FILE *f, const kb_row *row, const kb_op *const *ops, int nops);

#endif
