/* kbench's help texts (help.c), from the ops' descriptors and the settings table. */
#ifndef KB_HELP_H
#define KB_HELP_H

#include "core/op.h"

#include <stddef.h>
#include <stdio.h>

#define KB_PROG "kbench"

/* a parameter's or setting's name as its flag: _ becomes - */
void kb_flag_name(const char *name, char *buf, size_t n);
/* an op's implementations, one a line after indent (the first the baseline) */
void kb_help_impls(FILE *f, const kb_op *op, const char *indent);
/* the settings' flags (also a sweep file's "settings"), --dry-run and --help */
void kb_help_settings(FILE *f);
/* `kbench OP --help`: usage, parameters, implementations, tunables, settings */
void kb_help_op(FILE *f, const kb_op *op);
/* `kbench --help`: the commands, examples and exit codes */
void kb_help_main(FILE *f);

#endif
