/* The ops kbench has (registry.c; each is cli/ops/<op>.c), and the
 * parameters loaded plugins add to them (their tunables). */
#ifndef KB_CORE_REGISTRY_H
#define KB_CORE_REGISTRY_H

#include "op.h"
#include <stddef.h>

extern const kb_op *kb_ops[]; /* the ops' descriptors: their own, or copies with plugins' parameters */
extern const int kb_nops;
const kb_op *kb_find_op(const char *name);
/* The op's own parameters (the first of op->params): a plugin's come after. */
int kb_op_base_nparams(const kb_op *op);
/* Appends parameter p to the op (a plugin's tunable; p's strings must
 * outlive it): kb_ops[] then holds a copy of the op with it, whose address
 * stays the same for further parameters. The op's descriptor, or NULL with
 * err when it has KB_MAX_PARAMS already. No case may exist yet. */
const kb_op *kb_op_add_param(const kb_op *op, const kb_param *p, char *err, size_t n);
/* Drops the op's parameters past nparams (a library that failed to load). */
void kb_op_truncate(const kb_op *op, int nparams);
/* Every op back to its own parameters (the plugins unloaded). */
void kb_ops_reset(void);

#endif
