/* A table of ABI version 1 (prepare without the stream): refused with one
 * line saying what to change. */
#include "kbench_plugin.h"

static int launch(const kbp_case *c, void *state, void *stream)
{
    (void)c, (void)state, (void)stream;
    return 0;
}

static const kbp_impl impls[] = {
    {"layernorm", "old", "built against ABI 1", NULL, NULL, launch, NULL, 0, NULL, NULL, NULL, 0},
};
static const kbp_table table = {1, 1, impls};

const kbp_table *kbench_plugin(void) { return &table; }
