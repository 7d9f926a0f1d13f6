/* What a plugin's implementations take of a sweep (coverage.c). */
#ifndef KB_CORE_COVERAGE_H
#define KB_CORE_COVERAGE_H

#include <stddef.h>
#include <stdio.h>

/* kbench plugin info LIB --cases SWEEP: LIB loaded (its own names),
 * SWEEP's cases expanded, and for each implementation of LIB the cases of
 * its op it takes, and the ones it refuses grouped by its supports()'s
 * reason, with an example case each. No GPU. 0, or -1 with err. */
#include "config.h"
/* plan: SWEEP's (kb_config_load; sweep names it in the output) */
int kb_plugin_coverage(const char *lib, const char *sweep, const kb_plan *plan, FILE *f, char *err, size_t n);

#endif
