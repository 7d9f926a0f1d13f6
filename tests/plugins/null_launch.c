/* An implementation without launch (NULL), the one required function. */
#include "kbench_plugin.h"

static const kbp_impl impls[] = {
    {"layernorm", "nolaunch", "no launch", NULL, NULL, NULL, NULL, 0, NULL, NULL, NULL, 0},
};
static const kbp_table table = {KBP_ABI_VERSION, 1, impls};

const kbp_table *kbench_plugin(void) { return &table; }
