/* The list of ops: adding an op is one line here (and its files in
 * cli/ops/, kernels/ and refs/). */
#include "op.h"
#include "registry.h"
#include "../ops/ops.h"

#include <string.h>


const kb_op *const kb_ops[] = {
    &kb_op_rope,
    &kb_op_layernorm,
    &kb_op_rmsnorm,
    &kb_op_mlp,
};
const int kb_nops = (int)(sizeof kb_ops / sizeof kb_ops[0]);

const kb_op *kb_find_op(const char *name)
{
    for (int i = 0; i < kb_nops; i++)
        if (strcmp(kb_ops[i]->name, name) == 0) return kb_ops[i];
    return NULL;
}
