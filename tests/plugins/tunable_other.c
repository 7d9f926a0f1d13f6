/* A second plugin declaring tunable.c's rows_per_block with other values:
 * loaded beside it, refused (a parameter has one set of values). */
#include "kbench_plugin.h"

static int launch(const kbp_case *c, void *state, void *stream)
{
    (void)c, (void)state, (void)stream;
    return 0;
}

static const kbp_tunable tunables[] = {{"rows_per_block", "1,8", "8", "rows a block normalises"}};
static const kbp_impl impls[] = {
    {"layernorm", "other", "another rows_per_block", NULL, NULL, launch, NULL, 0, NULL, NULL, tunables, 1},
};
static const kbp_table table = {KBP_ABI_VERSION, 1, impls};

const kbp_table *kbench_plugin(void) { return &table; }
