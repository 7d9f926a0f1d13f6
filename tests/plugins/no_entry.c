/* A shared library without the entry point: it exports kbench_plugin_v1,
 * not kbench_plugin (KBP_ENTRY). */
#include "kbench_plugin.h"

static int launch(const kbp_case *c, void *state, void *stream)
{
    (void)c, (void)state, (void)stream;
    return 0;
}

static const kbp_impl impls[] = {
    {"layernorm", "noentry", "never seen: the entry point is misnamed", NULL, NULL, launch, NULL, 0, NULL, NULL, NULL, 0},
};
static const kbp_table table = {KBP_ABI_VERSION, 1, impls};

const kbp_table *kbench_plugin_v1(void);
const kbp_table *kbench_plugin_v1(void) { return &table; }
