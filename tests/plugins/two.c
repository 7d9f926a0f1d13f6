/* A library of several implementations (the README's walkthrough and the
 * naming of --impl NAME=PATH): two of layernorm, "fast" and "safe", and one
 * of rmsnorm, "rms". Each launch does nothing and returns 0 (on a GPU their
 * outputs stay poisoned: they fail verification). */
#include "kbench_plugin.h"

static int launch(const kbp_case *c, void *state, void *stream)
{
    (void)c, (void)state, (void)stream;
    return 0;
}

static const kbp_impl impls[] = {
    {"layernorm", "fast", "the first of two", NULL, NULL, launch, NULL, 0, NULL, NULL, NULL, 0},
    {"layernorm", "safe", "the second of two", NULL, NULL, launch, NULL, 0, NULL, NULL, NULL, 0},
    {"rmsnorm", "rms", "the only one of its op", NULL, NULL, launch, NULL, 0, NULL, NULL, NULL, 0},
};
static const kbp_table table = {KBP_ABI_VERSION, 3, impls};

const kbp_table *kbench_plugin(void) { return &table; }
