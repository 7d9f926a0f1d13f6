/* The valid minimal plugin: one implementation of layernorm, "noop", whose
 * launch does nothing and returns 0. `kbench plugin info` lists it (exit 0);
 * on a GPU its outputs stay poisoned, so it fails verification (exit 1). */
#include "kbench_plugin.h"

static int launch(const kbp_case *c, void *state, void *stream)
{
    (void)c, (void)state, (void)stream;
    return 0;
}

static const kbp_impl impls[] = {
    {"layernorm", "noop", "does nothing (the loader's positive test)", NULL, NULL, launch, NULL, 0, NULL, NULL, NULL, 0},
};
static const kbp_table table = {KBP_ABI_VERSION, 1, impls};

const kbp_table *kbench_plugin(void) { return &table; }
