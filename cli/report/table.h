/* The table on stdout (table.c). */
#ifndef KB_REPORT_TABLE_H
#define KB_REPORT_TABLE_H

#include "row.h"
#include <stdio.h>

void kb_table_header(FILE *f);
void kb_table_row(FILE *f, const kb_row *row);

#endif
