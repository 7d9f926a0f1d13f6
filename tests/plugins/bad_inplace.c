/* inplace naming an input the op does not have: refused at load. */
#include "kbench_plugin.h"

static int launch(const kbp_case *c, void *state, void *stream)
{
    (void)c, (void)state, (void)stream;
    return 0;
}

static const kbp_impl impls[] = {
    {"rope", "badalias", "out over an input rope lacks", NULL, NULL, launch, NULL, 0, "out=q", NULL, NULL, 0},
};
static const kbp_table table = {KBP_ABI_VERSION, 1, impls};

const kbp_table *kbench_plugin(void) { return &table; }
