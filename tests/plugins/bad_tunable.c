/* A tunable whose default is not among its values: refused at load. */
#include "kbench_plugin.h"

static int launch(const kbp_case *c, void *state, void *stream)
{
    (void)c, (void)state, (void)stream;
    return 0;
}

static const kbp_tunable tunables[] = {{"block", "128,256", "512", "threads a block"}};
static const kbp_impl impls[] = {
    {"layernorm", "badtune", "a default outside its values", NULL, NULL, launch, NULL, 0, NULL, NULL, tunables, 1},
};
static const kbp_table table = {KBP_ABI_VERSION, 1, impls};

const kbp_table *kbench_plugin(void) { return &table; }
