/* The list of ops: adding an op is one line here (and its files in
 * cli/ops/, kernels/ and refs/). */
#include "errors.h"
#include "op.h"
#include "registry.h"
#include "../ops/ops.h"

#include <string.h>

#define NOPS 4
static const kb_op *const own[NOPS] = {
    &kb_op_rope,
    &kb_op_layernorm,
    &kb_op_rmsnorm,
    &kb_op_mlp,
};
const kb_op *kb_ops[NOPS] = {
    &kb_op_rope,
    &kb_op_layernorm,
    &kb_op_rmsnorm,
    &kb_op_mlp,
};
const int kb_nops = NOPS;

/* an op with parameters of plugins: a copy of its descriptor */
static kb_op wide[NOPS];
static kb_param wide_params[NOPS][KB_MAX_PARAMS];

const kb_op *kb_find_op(const char *name)
{
    for (int i = 0; i < kb_nops; i++)
        if (strcmp(kb_ops[i]->name, name) == 0) return kb_ops[i];
    return NULL;
}

static int slot(const kb_op *op)
{
    for (int i = 0; i < NOPS; i++)
        if (op == kb_ops[i] || op == own[i]) return i;
    return -1;
}

int kb_op_base_nparams(const kb_op *op)
{
    const int i = slot(op);
    return i < 0 ? op->nparams : own[i]->nparams;
}

const kb_op *kb_op_add_param(const kb_op *op, const kb_param *p, char *err, size_t n)
{
    const int i = slot(op);
    if (i < 0) return kb_errf(err, n, "internal: op %s is not in the registry", op->name), NULL;
    if (kb_ops[i] == own[i]) {
        wide[i] = *own[i];
        memcpy(wide_params[i], own[i]->params, (size_t)own[i]->nparams * sizeof *own[i]->params);
        wide[i].params = wide_params[i];
        kb_ops[i] = &wide[i];
    }
    if (wide[i].nparams >= KB_MAX_PARAMS)
        return kb_errf(err, n, "%s has %d parameters already (at most %d): no room for '%s'", op->name, wide[i].nparams,
                       KB_MAX_PARAMS, p->name), NULL;
    wide_params[i][wide[i].nparams++] = *p;
    return &wide[i];
}

void kb_op_truncate(const kb_op *op, int nparams)
{
    const int i = slot(op);
    if (i >= 0 && kb_ops[i] == &wide[i] && nparams < wide[i].nparams) wide[i].nparams = nparams;
}

void kb_ops_reset(void)
{
    for (int i = 0; i < NOPS; i++) kb_ops[i] = own[i];
}
