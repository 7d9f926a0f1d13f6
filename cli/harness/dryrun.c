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

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
                const kb_impl *im = kb_op_impl(op, i);
                char tok[128];
                snprintf(tok, sizeof tok, "%.*s", (int)(l < sizeof tok - 1 ? l : sizeof tok - 1), s);
                if (l < sizeof tok && kb_impl_named(tok, im)) found = 1;
                if (nn < 64) names[nn++] = im->name;
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

/* One output: the flag's path (flag: "--csv"), else, where dflt, DIR/NAME.EXT,
 * into buf[n]; 0, or -1 with err where it does not fit (kb_path_fits) */
static int output_path(const char *given, const char *dir, const char *name, const char *ext, int dflt,
                       const char *flag, char *buf, size_t n, char *err, size_t errlen)
{
    char *p = NULL;
    if (given[0] || !dflt) p = strdup(given);
    else if (asprintf(&p, "%s/%s.%s", dir, name, ext) < 0) p = NULL;
    if (!p) abort();
    const char *what = given[0] ? flag : "--out-dir's output";
    int rc = p[0] && kb_path_fits(p, what, err, errlen) ? -1 : 0;
    if (!rc && strlen(p) >= n) rc = -1, kb_errf(err, errlen, "%s %s: too long (%zu characters at most)", what, p, n - 1);
    if (!rc) memcpy(buf, p, strlen(p) + 1);
    free(p);
    return rc;
}

/* run.h */
int kb_output_paths(const kb_plan *plan, const kb_run_info *info, char *csv, char *json, size_t n, char *err,
                    size_t errlen)
{
    const kb_opts *o = &plan->opts;
    const int dflt = !info->check_mode;
    csv[0] = json[0] = 0;
    if (output_path(o->csv, o->out_dir, info->name, "csv", dflt, "--csv", csv, n, err, errlen) ||
        output_path(o->json, o->out_dir, info->name, "json", dflt, "--json", json, n, err, errlen))
        return -1;
    return 0;
}

/* Everything that can be refused before the GPU is touched; the plugins
 * (--plugin, --impl NAME=PATH, a sweep file's "plugins") are loaded here. */
int kb_plan_check(kb_plan *plan, const kb_run_info *info, char *err, size_t errlen)
{
    if (kb_plugin_load_list(plan->opts.plugin, err, errlen) ||
        kb_plugin_take_impls(plan->opts.impl, sizeof plan->opts.impl, err, errlen))
        return -1;
    if (check_impl_filter(plan, err, errlen)) return -1;
    char csv[PATH_MAX], json[PATH_MAX];
    if (kb_output_paths(plan, info, csv, json, sizeof csv, err, errlen)) return -1;
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
    for (i = 0; i < plan->ncases && !kb_stop_signal && !ferror(out); i++) { /* a failed write ends it (kb_main says so) */
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
