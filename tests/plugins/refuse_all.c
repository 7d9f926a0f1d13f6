/* A layernorm implementation whose supports() refuses every case ("rows a
 * multiple of 4096 only"): kbench check --impl NAME=refuse_all.so checks it
 * on nothing, and must fail saying so (exit 1); plugin info --cases shows
 * the reason. */
#include "kbench_plugin.h"

#include <stdio.h>

static int supports(const kbp_case *c, char *why, size_t n)
{
    if (kbp_param_int(c, "rows", 0) % 4096 == 0) return 0;
    snprintf(why, n, "rows a multiple of 4096 only");
    return 1;
}

static int launch(const kbp_case *c, void *state, void *stream)
{
    (void)c, (void)state, (void)stream;
    return 0;
}

static const kbp_impl impls[] = {
    {"layernorm", "picky", "takes rows that are multiples of 4096 only", supports, NULL, launch, NULL, 0, NULL, NULL, NULL, 0},
};
static const kbp_table table = {KBP_ABI_VERSION, 1, impls};

const kbp_table *kbench_plugin(void) { return &table; }
