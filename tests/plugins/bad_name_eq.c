/* An implementation name with '=' ("a=b"), which --impl NAME=PATH would
 * split: not a command-line name (letters, digits, '_' and '-' only). */
#include "kbench_plugin.h"

static int launch(const kbp_case *c, void *state, void *stream)
{
    (void)c, (void)state, (void)stream;
    return 0;
}

static const kbp_impl impls[] = {
    {"layernorm", "a=b", "a name with '='", NULL, NULL, launch, NULL, 0, NULL, NULL, NULL, 0},
};
static const kbp_table table = {KBP_ABI_VERSION, 1, impls};

const kbp_table *kbench_plugin(void) { return &table; }
