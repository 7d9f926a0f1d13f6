/* An entry point that returns no table (NULL). */
#include "kbench_plugin.h"

const kbp_table *kbench_plugin(void) { return NULL; }
