/* A layernorm implementation with a tunable of its own, rows_per_block
 * (1, 2 or 4; 2 at auto): a flag, a sweep key and a `list` column while it
 * is loaded. Its supports() refuses rows_per_block above rows, naming the
 * value it saw (the default at auto). The launch does nothing: on a GPU its
 * outputs stay poisoned. */
#include "kbench_plugin.h"

#include <stdio.h>

static int supports(const kbp_case *c, char *why, size_t n)
{
    long rpb = kbp_param_int(c, "rows_per_block", 0), rows = kbp_param_int(c, "rows", 0);
    if (rpb >= 1 && rpb <= rows) return 0;
    snprintf(why, n, "rows_per_block %ld > rows %ld", rpb, rows);
    return 1;
}

static int launch(const kbp_case *c, void *state, void *stream)
{
    (void)c, (void)state, (void)stream;
    return 0;
}

static const kbp_tunable tunables[] = {{"rows_per_block", "1,2,4", "2", "rows a block normalises"}};
static const kbp_impl impls[] = {
    {"layernorm", "tiled", "rows_per_block rows a block", supports, NULL, launch, NULL, 0, NULL, NULL, tunables, 1},
};
static const kbp_table table = {KBP_ABI_VERSION, 1, impls};

const kbp_table *kbench_plugin(void) { return &table; }
