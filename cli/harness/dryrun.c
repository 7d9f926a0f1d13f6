/* What can be refused before the GPU is touched, and --dry-run (run.h). */
#include "hooks.h"
#include "run.h"
#include "watch.h"
#include "../core/config.h"
#include "../core/errors.h"
#include "../core/op.h"
#include "../core/params.h"
#include "../core/plugin.h"
#include "../core/settings.h"
#include "../report/files.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
void kb_human_bytes(double b, char *buf, size_t n)
{
    const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int i = 0;
    while (b >= 1024 && i < 4) { b /= 1024; i++; }
    snprintf(buf, n, i ? "%.1f %s" : "%.0f %s", b, u[i]);
}

/* Is impl name selected by the --impl filter (comma list)? */
int kb_impl_selected(const char *filter, const char *name) { return !filter[0] || kb_list_has(filter, name); }

static int check_impl_filter(const kb_plan *plan, char *err, size_t errlen)
{
    const char *f = plan->opts.impl;
    const kb_op *const *ops = plan->ops_all; /* the whole sweep's (kb_plan_shard): every shard takes the same names */
    const int nops = plan->nops_all;
    for (const char *s = f; *s;) {
        size_t l = strcspn(s, ",");
        int found = 0;
        const char *names[64];
        int nn = 0;
        for (int c = 0; c < nops && !found; c++) {
            const kb_op *op = ops[c];
            for (int i = 0; i < kb_op_nimpls(op); i++) {
                const char *nm = kb_op_impl(op, i)->name;
                if (strlen(nm) == l && !strncmp(nm, s, l)) found = 1;
                if (nn < 64) names[nn++] = nm;
            }
        }
        if (!found) {
            char w[64];
            snprintf(w, sizeof w, "%.*s", (int)(l < 63 ? l : 63), s);
            const char *near = kb_nearest(w, names, nn);
            kb_errf(err, errlen, "--impl: no implementation '%s' in this sweep%s%s%s", w, near ? " (did you mean '" : "",
                    near ? near : "", near ? "'?)" : " (see: kbench list)");
            return -1;
        }
        s += l + (s[l] == ',');
    }
    return 0;
}

/* run.h */
void kb_output_paths(const kb_plan *plan, const kb_run_info *info, char *csv, char *json, size_t n)
{
    const kb_opts *o = &plan->opts;
    snprintf(csv, n, "%s", o->csv);
    snprintf(json, n, "%s", o->json);
    if (!info->check_mode) {
        if (!csv[0]) snprintf(csv, n, "%s/%s.csv", o->out_dir, info->name);
        if (!json[0]) snprintf(json, n, "%s/%s.json", o->out_dir, info->name);
    }
}

/* Everything that can be refused before the GPU is touched; the plugins
 * (--plugin, --impl NAME=PATH, a sweep file's "plugins") are loaded here. */
int kb_plan_check(kb_plan *plan, const kb_run_info *info, char *err, size_t errlen)
{
    if (kb_plugin_load_list(plan->opts.plugin, err, errlen) ||
        kb_plugin_take_impls(plan->opts.impl, sizeof plan->opts.impl, err, errlen))
        return -1;
    if (check_impl_filter(plan, err, errlen)) return -1;
    char csv[1100], json[1100];
    kb_output_paths(plan, info, csv, json, sizeof csv);
    if (kb_output_check(csv, "--csv", err, errlen) || kb_output_check(json, "--json", err, errlen)) return -1;
    return 0;
}

int kb_dry_run(kb_plan *plan, const kb_run_info *info, FILE *out)
{
    char err[KB_ERRLEN];
    if (kb_plan_check(plan, info, err, sizeof err)) {
        fprintf(stderr, "kbench: %s\n", err);
        return KB_EXIT_USAGE;
    }
    /* SIGINT or SIGTERM: the plan stops at a line's end, said so, exit 128 + the signal */
    struct sigaction old[2];
    kb_catch_stop(old);
    double total = 0;
    int i;
    for (i = 0; i < plan->ncases && !kb_stop_signal; i++) {
        const kb_case *c = &plan->cases[i];
        char label[1024], mem[32], mv[32];
        kb_case_label(c, label, sizeof label);
        double db = (double)c->op->device_bytes(c);
        kb_human_bytes(db, mem, sizeof mem);
        kb_human_bytes(c->op->bytes(c), mv, sizeof mv);
        if (db > total) total = db;
        fprintf(out, "%4d  %-6s %-70s device %10s  moves %10s\n", c->index + 1, c->op->name, label, mem, mv);
    }
    kb_uncatch_stop(old);
    const int sig = kb_stop_signal;
    if (sig) {
        fflush(out);
        fprintf(stderr, "kbench: stopped by %s after %d of %d cases (a dry run: nothing was written)\n",
                sig == SIGINT ? "SIGINT" : "SIGTERM", i, plan->ncases);
        return 128 + sig;
    }
    char mx[32];
    kb_human_bytes(total, mx, sizeof mx);
    fprintf(out, "%d cases; the largest needs %s of device memory (plus the L2 flush buffer)\n", plan->ncases, mx);
    if (plan->shard_n)
        fprintf(out, "shard %d/%d of sweep %s (%d cases in all)\n", plan->shard_k, plan->shard_n, plan->sweep_id,
                plan->sweep_cases);
    return KB_EXIT_OK;
}
