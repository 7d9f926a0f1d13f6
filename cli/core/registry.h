/* The ops kbench has (registry.c; each is cli/ops/<op>.c). */
#ifndef KB_CORE_REGISTRY_H
#define KB_CORE_REGISTRY_H

#include "op.h"

extern const kb_op *const kb_ops[];
extern const int kb_nops;
const kb_op *kb_find_op(const char *name);

#endif
