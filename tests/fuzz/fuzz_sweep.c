/* libFuzzer harness: the JSON sweep parser (kb_config_parse) and the
 * dry-run expansion of what it accepts, as `kbench sweep FILE --dry-run`
 * does. No GPU call is reached. Seeds: configs/, tests/fuzz/seeds/sweep (huge-*:
 * expansions refused for their count or their memory, a long list shared by
 * many cases). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../cli/core/config.h"
#include "../../cli/core/errors.h"
#include "../../cli/core/params.h"
#include "../../cli/core/settings.h"
#include "../../cli/harness/hooks.h"
#include "../../cli/harness/run.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    kb_plan plan;
    memset(&plan, 0, sizeof plan);
    kb_opts_default(&plan.opts);
    char err[KB_ERRLEN] = "";
    if (kb_config_parse(text, "fuzz.json", &plan, err, sizeof err) == 0) {
        const char *why;
        if (plan.ncases > KB_MAX_CASES || kb_plan_bytes(plan.ncases) > kb_plan_bytes_max(&why))
            abort(); /* a plan past the limits is refused before it is built */
        kb_plan_seed(&plan);
        static FILE *devnull;
        if (!devnull) devnull = fopen("/dev/null", "w");
        kb_run_info info = {.name = "fuzz"};
        snprintf(plan.opts.csv, sizeof plan.opts.csv, "/dev/null");
        snprintf(plan.opts.json, sizeof plan.opts.json, "/dev/null");
        kb_dry_run(&plan, &info, devnull);
    } else if (strchr(err, '\n')) {
        abort(); /* messages are one line */
    }
    kb_cases_free(plan.cases, plan.ncases);
    free(text);
    return 0;
}
