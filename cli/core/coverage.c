/* kbench plugin info LIB --cases SWEEP: what each implementation of a
 * plugin takes of a sweep's cases, and why it refuses the rest, from its
 * supports() (host code: no GPU). */
#include "config.h"
#include "coverage.h"
#include "errors.h"
#include "op.h"
#include "params.h"
#include "plugin.h"
#include "registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_REASONS 8

typedef struct {
    char why[256];
    int n;
    int example; /* the first case refused so */
} reason;

/* impl's verdicts on the plan's cases of its op, printed */
static void cover_impl(FILE *f, const kb_impl *impl, const kb_op *op, const kb_plan *plan)
{
    reason rs[MAX_REASONS];
    int nr = 0, cases = 0, takes = 0, other = 0;
    for (int i = 0; i < plan->ncases; i++) {
        const kb_case *c = &plan->cases[i];
        if (c->op != op) continue;
        cases++;
        char why[256] = "";
        if (!kb_impl_supports(impl, c, NULL, why, sizeof why)) { takes++; continue; } /* kbench's own tunables fixed: n/a */
        int k = 0;
        while (k < nr && strcmp(rs[k].why, why)) k++;
        if (k == nr && nr == MAX_REASONS) { other++; continue; }
        if (k == nr) rs[nr++] = (reason){.n = 0, .example = i}, snprintf(rs[k].why, sizeof rs[k].why, "%s", why);
        rs[k].n++;
    }
    fprintf(f, "  %-10s %-20s takes %d of %d case%s", op->name, impl->name, takes, cases, cases == 1 ? "" : "s");
    fprintf(f, "%s\n", takes < cases ? "; refuses:" : "");
    for (int k = 0; k < nr; k++) {
        char label[1024], why[300];
        kb_case_label(&plan->cases[rs[k].example], label, sizeof label);
        kb_escape_controls(rs[k].why, why, sizeof why);
        fprintf(f, "    %5d  %s (e.g. %.200s)\n", rs[k].n, why, label);
    }
    if (other) fprintf(f, "    %5d  for other reasons\n", other);
}

int kb_plugin_coverage(const char *lib, const char *sweep, const kb_plan *plan, FILE *f, char *err, size_t n)
{
    int rc = kb_plugin_load(NULL, lib, err, n); /* its own names (plugin info has checked them) */
    if (!rc) {
        char name[1100];
        kb_escape_controls(sweep, name, sizeof name);
        fprintf(f, "\ncoverage of %s (%d case%s), by supports():\n", name, plan->ncases, plan->ncases == 1 ? "" : "s");
        int any = 0;
        for (int o = 0; o < kb_nops; o++) {
            const kb_op *op = kb_ops[o];
            for (int i = op->nimpls; i < kb_op_nimpls(op); i++) {
                const kb_impl *impl = kb_op_impl(op, i);
                if (strcmp(kb_plugin_path(impl), lib)) continue;
                cover_impl(f, impl, op, plan);
                any = 1;
            }
        }
        if (!any) fprintf(f, "  (no implementation of the library's ops)\n");
    }
    return rc;
}
