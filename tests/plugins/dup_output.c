/* An output both written in place and accumulated into: refused at load
 * (the harness would zero it while the kernel writes the input's buffer). */
#include "kbench_plugin.h"

static int launch(const kbp_case *c, void *state, void *stream)
{
    (void)c, (void)state, (void)stream;
    return 0;
}

static const kbp_impl impls[] = {
    {"rope", "twice", "out in place and accumulated", NULL, NULL, launch, NULL, 0, "out=t", "out", NULL, 0},
};
static const kbp_table table = {KBP_ABI_VERSION, 1, impls};

const kbp_table *kbench_plugin(void) { return &table; }
