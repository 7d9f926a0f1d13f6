/* The ops' descriptors, each defined in its cli/ops/<op>.c; the registry
 * (core/registry.c) lists them. A new op adds its line here and there. */
#ifndef KB_OPS_OPS_H
#define KB_OPS_OPS_H

#include "../core/op.h"

extern const kb_op kb_op_rope;
extern const kb_op kb_op_layernorm;
extern const kb_op kb_op_rmsnorm;
extern const kb_op kb_op_mlp;

#endif
