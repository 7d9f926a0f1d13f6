/* kbench: subcommands and flags (getopt_long). kb_main is the whole
 * command line: it returns the exit code (no exit() on any path), frees what
 * it allocates and keeps no state between calls, so that one process can run
 * it many times (tests/fuzz/fuzz_cmdline.c). */
#include "compare.h"
#include "core/config.h"
#include "core/coverage.h"
#include "core/errors.h"
#include "core/hostmem.h"
#include "core/op.h"
#include "core/params.h"
#include "core/plugin.h"
#include "core/pyrt.h"
#include "harness/isolate.h"
#include "core/registry.h"
#include "core/settings.h"
#include "core/tensors.h"
#include "fleet/devices.h"
#include "fleet/merge.h"
#include "fleet/shard.h"
#include "harness/device.h"
#include "harness/hooks.h"
#include "harness/run.h"
#include "help.h"
#include "main.h"
#include "report/device.h"
#include "selftest.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const prog = KB_PROG;

/* getopt keeps state between calls: glibc's points into the last argv when a
 * parse stopped inside a cluster of short options ("-hx": after -h, at x),
 * and a later parse that starts with optind = 1 reads on from there, into an
 * argv that may be gone. optind = 0 asks for a full reinitialisation, done by
 * the next getopt call: this one, on an empty command line. */
static void getopt_reset(void)
{
    static char arg0[] = "kbench";
    char *argv[] = {arg0, NULL};
    opterr = 0;
    optind = 0;
    while (getopt(1, argv, "") != -1) {}
    optind = 1;
}

/* the end of every command that runs a plan: seeds, a dry or a real run, the cases freed */
static int run_and_free(kb_plan *plan, int argc, char **argv, const char *name, int check, int dry)
{
    kb_plan_seed(plan);
    char err[KB_ERRLEN];
    if (kb_plan_shard(plan, err, sizeof err)) {
        kb_cases_free(plan->cases, plan->ncases);
        return kb_usage(NULL, "%s", err);
    }
    kb_run_info info = {.argc = argc, .argv = argv, .name = name, .check_mode = check};
    int rc = plan->opts.devices[0] ? kb_run_devices(plan, &info, dry)
             : dry                 ? kb_dry_run(plan, &info, stdout)
                                   : kb_run_plan(plan, &info);
    kb_cases_free(plan->cases, plan->ncases);
    return rc;
}

/* an op's implementations, its own then the loaded plugins' (OP --help, list) */
/* Flags shared by the run commands, plus an op's parameters. */
typedef struct {
    const kb_op *op; /* NULL: settings only */
    kb_sweep sweep;
    kb_opts opts;
    int dry_run;
    /* settings given as flags, applied after a sweep file's own */
    const char *set_name[64];
    const char *set_val[64];
    int nset;
    /* sweep --set NAME=VALUES */
    char axis_buf[KB_MAX_SET_AXES][4096];
    const char *axis_name[KB_MAX_SET_AXES], *axis_val[KB_MAX_SET_AXES];
    int naxes;
    char **pos;
    int npos;
    const char *shapes; /* check --shapes FILE: the sweep file check runs instead of its own shapes */
} kb_cli;

enum { OPT_HELP = 'h', OPT_DRY = 900, OPT_SET = 901, OPT_SHAPES = 902, OPT_SETTING = 1000, OPT_PARAM = 2000 };

/* getopt_long's '?' or ':' for the word before optind: one line why (the
 * exit code of kb_usage) */
static int bad_flag(const char *cmd, int c, char **argv, const struct option *opts, int n)
{
    const char *cands[KB_MAX_PARAMS + 64];
    for (int i = 0; i < n; i++) cands[i] = opts[i].name;
    /* a short option that is not -h ("-x", or "-seq" read as -s -e -q): getopt
     * stays inside the word and argv[optind - 1] is the word before it */
    if (c == '?' && optopt != 0 && optopt != 'h' && optopt < OPT_DRY)
        return kb_usage(cmd, "unknown option '-%c' (long options take two dashes; see: %s %s --help)", optopt, prog, cmd);
    const char *bad = argv[optind - 1];
    if (c == ':') return kb_usage(cmd, "option '%s' needs a value (see: %s %s --help)", bad, prog, cmd);
    if (bad[0] != '-' || bad[1] != '-') return kb_usage(cmd, "unknown option '%s' (see: %s %s --help)", bad, prog, cmd);
    char word[128];
    snprintf(word, sizeof word, "%s", bad + 2);
    word[strcspn(word, "=")] = 0;
    /* an exact name that getopt rejected is ambiguous or takes no value */
    for (int i = 0; i < n; i++)
        if (!strcmp(word, cands[i])) return kb_usage(cmd, "option '--%s' takes no value", word);
    /* a prefix of several names: ambiguous, said as such with the names */
    char which[512] = "";
    int nprefix = 0;
    size_t wl = strlen(word), o = 0;
    for (int i = 0; i < n && wl; i++)
        if (!strncmp(cands[i], word, wl) && o < sizeof which) {
            o += (size_t)snprintf(which + o, sizeof which - o, "%s--%s", nprefix ? ", " : "", cands[i]);
            nprefix++;
        }
    if (nprefix > 1) return kb_usage(cmd, "option '--%s' is ambiguous: %s", word, which);
    const char *near = kb_nearest(word, cands, n);
    if (near) return kb_usage(cmd, "unknown option '--%s' (did you mean --%s?)", word, near);
    return kb_usage(cmd, "unknown option '--%s' (see: %s %s --help)", word, prog, cmd);
}

/* A flag given twice with two values: one would be lost without a word
 * (--seq 2048 --seq 4096 ran 4096). The same value twice is harmless. */
static int given_twice(const char *cmd, const char *flag, const char **was, const char *now, char axis_sep)
{
    if (!*was || !strcmp(*was, now)) {
        *was = now;
        return 0;
    }
    if (axis_sep) /* an axis: both values in one (--seq 2048,4096; --set seq=2048,4096) */
        return kb_usage(cmd, "--%s given twice ('%s', then '%s'): one flag takes the whole axis (--%s%c%s,%s)", flag, *was,
                        now, flag, axis_sep, *was, now);
    return kb_usage(cmd, "--%s given twice ('%s', then '%s'): give it once", flag, *was, now);
}

/* 0, -1 for --help (the caller prints its help), or the exit code of a
 * usage error (its line printed). */
static int parse_flags(const char *cmd, int argc, char **argv, kb_cli *cli)
{
    struct option opts[KB_MAX_PARAMS + 64];
    char names[KB_MAX_PARAMS + 64][64];
    int n = 0;
    for (int i = 0; i < kb_nsettings; i++) {
        kb_flag_name(kb_settings[i].name, names[n], 64);
        opts[n] = (struct option){names[n], kb_settings[i].type == KB_S_BOOL ? no_argument : required_argument, NULL,
                                  OPT_SETTING + i};
        n++;
    }
    if (cli->op)
        for (int i = 0; i < cli->op->nparams; i++) {
            kb_flag_name(cli->op->params[i].name, names[n], 64);
            opts[n] = (struct option){names[n], required_argument, NULL, OPT_PARAM + i};
            n++;
        }
    opts[n++] = (struct option){"dry-run", no_argument, NULL, OPT_DRY};
    if (!strcmp(cmd, "sweep")) opts[n++] = (struct option){"set", required_argument, NULL, OPT_SET};
    if (!strcmp(cmd, "check")) opts[n++] = (struct option){"shapes", required_argument, NULL, OPT_SHAPES};
    opts[n++] = (struct option){"help", no_argument, NULL, OPT_HELP};
    opts[n] = (struct option){0};
    const char *given[KB_MAX_PARAMS + 64] = {0}; /* each flag's value so far: settings, then parameters */

    opterr = 0;
    optind = 0; /* 0, not 1: glibc reinitialises in full (getopt_reset) */
    char err[KB_ERRLEN];
    int c;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        if (c == '?' || c == ':') return bad_flag(cmd, c, argv, opts, n);
        if (c == OPT_HELP) return -1; /* the caller prints its help and returns KB_EXIT_OK */
        if (c == OPT_DRY) { cli->dry_run = 1; continue; }
        if (c == OPT_SHAPES) {
            if (!optarg[0]) return kb_usage(cmd, "--shapes wants a sweep file (--shapes FILE.json)");
            if (cli->shapes) return kb_usage(cmd, "--shapes given twice");
            cli->shapes = optarg;
            continue;
        }
        if (c == OPT_SET) {
            const char *eq = strchr(optarg, '=');
            if (strlen(optarg) >= sizeof cli->axis_buf[0])
                return kb_usage(cmd, "--set: NAME=VALUES longer than %zu characters", sizeof cli->axis_buf[0] - 1);
            if (!eq || eq == optarg || !eq[1])
                return kb_usage(cmd, "--set takes NAME=VALUES, a parameter and its axis (--set dtype=fp16,bf16), not '%s'",
                                optarg);
            int k = 0; /* the same NAME again: given twice */
            while (k < cli->naxes && (strncmp(cli->axis_name[k], optarg, (size_t)(eq - optarg)) ||
                                      cli->axis_name[k][eq - optarg]))
                k++;
            if (k < cli->naxes) {
                char flag[80];
                snprintf(flag, sizeof flag, "set %s", cli->axis_name[k]);
                const char *was = cli->axis_val[k];
                int rc = given_twice(cmd, flag, &was, eq + 1, '=');
                if (rc) return rc;
                continue;
            }
            if (cli->naxes == KB_MAX_SET_AXES) return kb_usage(cmd, "--set: at most %d axes", KB_MAX_SET_AXES);
            char *b = cli->axis_buf[cli->naxes];
            snprintf(b, sizeof cli->axis_buf[0], "%s", optarg);
            b[eq - optarg] = 0;
            cli->axis_name[cli->naxes] = b;
            cli->axis_val[cli->naxes++] = b + (eq - optarg) + 1;
            continue;
        }
        if (c >= OPT_PARAM) {
            int rc = given_twice(cmd, opts[kb_nsettings + c - OPT_PARAM].name, &given[64 + c - OPT_PARAM], optarg, ' ');
            if (rc) return rc;
            if (kb_sweep_set(&cli->sweep, cli->op->params[c - OPT_PARAM].name, optarg, err, sizeof err))
                return kb_usage(cmd, "%s", err);
            continue;
        }
        const kb_setting *s = &kb_settings[c - OPT_SETTING];
        const char *val = s->type == KB_S_BOOL ? "1" : optarg;
        int rc = given_twice(cmd, opts[c - OPT_SETTING].name, &given[c - OPT_SETTING], val, 0);
        if (rc) return rc;
        if (kb_opts_set(&cli->opts, s->name, val, err, sizeof err)) return kb_usage(cmd, "--%s", err);
        if (cli->nset == 64) return kb_usage(cmd, "more than 64 option flags (each setting once is enough)");
        cli->set_name[cli->nset] = s->name;
        cli->set_val[cli->nset++] = val;
    }
    cli->pos = argv + optind;
    cli->npos = argc - optind;
    return 0;
}

static void apply_flag_settings(const kb_cli *cli, kb_opts *o)
{
    char err[KB_ERRLEN];
    for (int i = 0; i < cli->nset; i++) kb_opts_set(o, cli->set_name[i], cli->set_val[i], err, sizeof err);
}

static int cmd_op(const kb_op *op, int argc, char **argv, int full_argc, char **full_argv)
{
    kb_cli cli;
    memset(&cli, 0, sizeof cli);
    cli.op = op;
    kb_sweep_init(&cli.sweep, op);
    kb_opts_default(&cli.opts);
    int rc = parse_flags(op->name, argc, argv, &cli);
    if (rc < 0) kb_help_op(stdout, op);
    else if (!rc && cli.npos)
        rc = kb_usage(op->name, "unexpected argument '%s' (parameters are flags: --seq 2048)", cli.pos[0]);
    if (rc) {
        kb_sweep_free(&cli.sweep);
        return rc < 0 ? KB_EXIT_OK : rc;
    }
    kb_plan plan;
    memset(&plan, 0, sizeof plan);
    plan.opts = cli.opts;
    char err[KB_ERRLEN];
    int erc = kb_sweep_expand(&cli.sweep, &plan.cases, &plan.ncases, err, sizeof err);
    kb_sweep_free(&cli.sweep); /* the cases own their values */
    if (erc) {
        kb_cases_free(plan.cases, plan.ncases);
        return kb_usage(NULL, "%s", err);
    }
    return run_and_free(&plan, full_argc, full_argv, op->name, 0, cli.dry_run);
}

static int cmd_sweep(int argc, char **argv, int full_argc, char **full_argv)
{
    kb_cli cli;
    memset(&cli, 0, sizeof cli);
    kb_opts_default(&cli.opts);
    int rc = parse_flags("sweep", argc, argv, &cli);
    if (rc < 0) {
        printf("usage: %s sweep [FILE.json] [OPTIONS]\n\n"
               "Runs a JSON sweep; without FILE, the built-in configs/default.json.\n\n"
               "  {\"settings\": {\"min_time\": 0.5, \"out_dir\": \"results/run1\"},\n"
               "   \"sweeps\": [{\"op\": \"rope\", \"pass\": [\"fwd\", \"bwd\"], \"seq\": [512, 1024],\n"
               "                \"dtype\": \"bf16\"},\n"
               "               {\"op\": \"rope\", \"layout\": \"thd\", \"seqlens\": [[100, 200], [7]]}]}\n\n"
               "Every array is an axis and a sweep's cases are the cartesian product; a scalar is a\n"
               "one-value axis; a string is read like a flag value (\"512:8192:x2\", \"all\"). Keys are\n"
               "the parameter names of `%s list`. Flags override the file's settings.\n\n"
               "  --set NAME=VALUES      replace the axis NAME in every sweep whose op has that\n"
               "                         parameter (VALUES read like a flag value), or a setting\n"
               "                         below as its flag would (--set impl=opt,mine); repeatable:\n"
               "                         %s sweep configs/layernorm.json --set dtype=all --set rows=1024\n\n",
               prog, prog, prog);
        kb_help_settings(stdout);
        return KB_EXIT_OK;
    }
    if (rc) return rc;
    if (cli.npos > 1) return kb_usage("sweep", "one sweep file at a time (got '%s' and '%s')", cli.pos[0], cli.pos[1]);
    kb_plan plan;
    memset(&plan, 0, sizeof plan);
    kb_opts_default(&plan.opts);
    plan.nset = cli.naxes;
    for (int i = 0; i < cli.naxes; i++) {
        plan.set_name[i] = cli.axis_name[i];
        plan.set_val[i] = cli.axis_val[i];
    }
    char err[KB_ERRLEN];
    const char *name = "default";
    char base[256]; /* the output's base name: lives until the plan has run */
    if (cli.npos == 1) {
        if (kb_config_load(cli.pos[0], &plan, err, sizeof err)) return kb_usage(NULL, "%s", err);
        const char *b = strrchr(cli.pos[0], '/');
        snprintf(base, sizeof base, "%s", b ? b + 1 : cli.pos[0]);
        char *dot = strrchr(base, '.');
        if (dot && dot != base) *dot = 0;
        name = base;
    } else if (kb_config_parse(kb_default_config, "configs/default.json (built in)", &plan, err, sizeof err)) {
        return kb_usage(NULL, "%s", err);
    }
    apply_flag_settings(&cli, &plan.opts);
    return run_and_free(&plan, full_argc, full_argv, name, 0, cli.dry_run);
}

/* check's cases: the ops' own check sweeps (the ones named, or all). 0, or
 * the exit code (said). */
static int check_cases(const kb_cli *cli, kb_plan *plan)
{
    char err[KB_ERRLEN];
    for (int i = 0; i < kb_nops; i++) {
        const kb_op *op = kb_ops[i];
        int want = cli->npos == 0;
        for (int k = 0; k < cli->npos; k++) want |= !strcmp(cli->pos[k], op->name);
        if (!want) continue;
        for (int k = 0; k < op->ncheck; k++) {
            char json[4096], where[64];
            snprintf(json, sizeof json, "%.*s\"op\": \"%s\", %s", 1, op->check_sweeps[k], op->name, op->check_sweeps[k] + 1);
            cJSON *sw = cJSON_Parse(json);
            snprintf(where, sizeof where, "%s check %d", op->name, k);
            int rc = sw ? kb_config_sweep(sw, where, 1, &plan->cases, &plan->ncases, err, sizeof err) : -1;
            cJSON_Delete(sw);
            if (rc) {
                fprintf(stderr, "kbench: internal: %s\n", sw ? err : where);
                return KB_EXIT_USAGE;
            }
        }
    }
    return 0;
}

/* check --shapes FILE's cases: the file's (of the ops named, or all), its
 * settings left aside but its plugins. 0, or the exit code (said). */
static int shapes_cases(const kb_cli *cli, const char *file, kb_plan *plan)
{
    char err[KB_ERRLEN];
    kb_plan fp;
    memset(&fp, 0, sizeof fp);
    if (kb_config_load(file, &fp, err, sizeof err)) {
        kb_cases_free(fp.cases, fp.ncases);
        return kb_usage("check", "--shapes: %s", err);
    }
    for (int i = 0; i < fp.ncases; i++) {
        int want = cli->npos == 0;
        for (int k = 0; k < cli->npos; k++) want |= !strcmp(cli->pos[k], fp.cases[i].op->name);
        if (!want) {
            kb_case_free_lists(&fp.cases[i]);
            continue;
        }
        fp.cases[plan->ncases++] = fp.cases[i];
    }
    plan->cases = fp.cases;
    if (fp.opts.plugin[0]) { /* the file's plugins beside --plugin's */
        char both[sizeof plan->opts.plugin];
        const int w = snprintf(both, sizeof both, "%s%s%s", plan->opts.plugin, plan->opts.plugin[0] ? "," : "", fp.opts.plugin);
        if (w < 0 || (size_t)w >= sizeof both) return kb_usage("check", "--shapes %s: its plugins and --plugin's: too long", file);
        memcpy(plan->opts.plugin, both, (size_t)w + 1);
    }
    if (plan->ncases == 0) return kb_usage("check", "--shapes %s: no case of the ops named", file);
    return 0;
}

static int cmd_check(int argc, char **argv, int full_argc, char **full_argv)
{
    kb_cli cli;
    memset(&cli, 0, sizeof cli);
    kb_opts_default(&cli.opts);
    int rc = parse_flags("check", argc, argv, &cli);
    if (rc < 0) {
        printf("usage: %s check [OP...] [--impl LIST] [--shapes SWEEP.json] [--seed N] [--dry-run]\n\n"
               "Verifies every implementation of every op (or the named ones) against the CPU\n"
               "reference, over every dtype, layout, style and pass, at small and odd shapes\n"
               "(sizes that are not multiples of the vector width or the block); --shapes takes\n"
               "a sweep file's cases instead (its plugins too). No timing. Prints each failure,\n"
               "each implementation's passed, failed and n/a, and a closing 'check: N passed,\n"
               "N failed, N n/a'; exit 1 on any failure, or when an implementation named by\n"
               "--impl passed no case.\n",
               prog);
        return KB_EXIT_OK;
    }
    if (rc) return rc;
    for (int k = 0; k < cli.npos; k++) /* before any case is made: nothing to free */
        if (!kb_find_op(cli.pos[k])) return kb_usage("check", "unknown op '%s' (see: %s list)", cli.pos[k], prog);
    kb_plan plan;
    memset(&plan, 0, sizeof plan);
    plan.opts = cli.opts;
    rc = cli.shapes ? shapes_cases(&cli, cli.shapes, &plan) : check_cases(&cli, &plan);
    if (rc) {
        kb_cases_free(plan.cases, plan.ncases);
        return rc;
    }
    return run_and_free(&plan, full_argc, full_argv, "check", 1, cli.dry_run);
}

static int cmd_list(int argc, char **argv)
{
    for (int k = 0; k < argc; k++)
        if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h")) {
            printf("usage: %s list [OP...] [--plugin NAME=LIB.so]...\n\nPrints each op (all, or those named): its parameters with their defaults and\n"
                   "bounds (tunables marked), and its implementations with what each does and the\n"
                   "tunables it takes. With --plugin (or --impl NAME=LIB.so), the library's\n"
                   "implementations and its own tunables (parameters, flags and sweep keys) too.\n", prog);
            return KB_EXIT_OK;
        }
    int nops = 0; /* the op names, --plugin and --impl (preloaded) taken out */
    for (int k = 0; k < argc; k++) {
        if ((!strcmp(argv[k], "--plugin") || !strcmp(argv[k], "--impl")) && k + 1 < argc) { k++; continue; }
        if (!strncmp(argv[k], "--plugin=", 9) || !strncmp(argv[k], "--impl=", 7)) continue;
        if (argv[k][0] == '-') return kb_usage("list", "unknown option '%s' (list takes op names, --plugin and --impl)", argv[k]);
        argv[nops++] = argv[k];
    }
    argc = nops;
    int shown = 0;
    for (int i = 0; i < kb_nops; i++) {
        const kb_op *op = kb_ops[i];
        int want = argc == 0;
        for (int k = 0; k < argc; k++) want |= !strcmp(argv[k], op->name);
        if (!want) continue;
        shown++;
        printf("%s: %s (%s-bound)\n  parameters [default, bounds]:\n", op->name, op->summary,
               op->bound == KB_MEMORY_BOUND ? "memory" : "compute");
        for (int p = 0; p < op->nparams; p++) {
            const kb_param *pp = &op->params[p];
            char left[128], bounds[96] = "";
            if (pp->type == KB_P_ENUM) snprintf(left, sizeof left, "%s {%s}", pp->name, pp->choices);
            else snprintf(left, sizeof left, "%s", pp->name);
            if (pp->type == KB_P_INT || pp->type == KB_P_FLOAT) snprintf(bounds, sizeof bounds, ", %.10g..%.10g", pp->min, pp->max);
            printf("    %-28s %s%s [%s%s]\n", left, pp->tunable ? "(tunable) " : "", pp->help, pp->def[0] ? pp->def : "none",
                   bounds);
        }
        printf("  implementations:\n");
        kb_help_impls(stdout, op, "    ");
        if (op->ntensors) { /* what an external implementation is given (include/kbench_plugin.h) */
            printf("  tensors (for plugins):\n");
            kb_op_print_tensors(stdout, op);
        }
    }
    for (int k = 0; k < argc; k++)
        if (!kb_find_op(argv[k])) return kb_usage("list", "unknown op '%s'", argv[k]);
    return shown ? KB_EXIT_OK : KB_EXIT_USAGE;
}

static int cmd_device(int argc, char **argv)
{
    if (argc > 0 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h"))) {
        printf("usage: %s device\n\nPrints the GPU, its clocks, driver and runtime, what NVML says of it (UUID,\n"
               "persistence, power limit, ECC, application clocks), and measures the ceilings:\n"
               "  copy  every candidate of the copy ceiling (cudaMemcpy and kbench's copy kernels)\n"
               "        at 16 MiB, 256 MiB and 1 GiB moved and read:write 1:1, 2:1, 3:1 (GB/s of\n"
               "        bytes read + written, median, L2 flushed); a row's ceiling is the best one\n"
               "        at its own bytes read and written;\n"
               "  GEMM  cuBLAS per element type (fp32, fp16, bf16, and tf32: fp32 on TF32 tensor\n"
               "        cores): the best square GEMM of n = 2048 to 16384, fp32 accumulation, median.\n",
               prog);
        return KB_EXIT_OK;
    }
    if (argc > 0) return kb_usage("device", "unexpected argument '%s'", argv[0]);
    kb_device d;
    int rc = kb_device_open(&d);
    if (rc) return rc;
    printf("device        %s (compute capability %d.%d)\n", d.name, d.cc_major, d.cc_minor);
    printf("SMs           %d\n", d.sm_count);
    printf("L2            %.1f MiB\n", (double)d.l2_bytes / (1 << 20));
    printf("memory        %.1f GiB, %d-bit bus, %d GB/s peak (the planners' measure of it)\n",
           (double)d.mem_bytes / (1u << 30), d.mem_bus_bits, d.attr.dram_gbps);
    printf("clocks        SM max %d MHz, memory max %d MHz", d.sm_clock_mhz, d.mem_clock_mhz);
    if (d.cur_sm_clock_mhz) printf("; now SM %d MHz, memory %d MHz (NVML)", d.cur_sm_clock_mhz, d.cur_mem_clock_mhz);
    printf("\ndriver        %d.%d\nruntime       %d.%d\n", d.driver / 1000, d.driver % 1000 / 10, d.runtime / 1000,
           d.runtime % 1000 / 10);
    fflush(stdout);
    return kb_device_copy_report(&d);
}

static int cmd_plugin(int argc, char **argv)
{
    if (argc == 0) return kb_usage("plugin", "want a subcommand: plugin info LIB.so (see: %s plugin --help)", prog);
    if (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")) {
        FILE *f = stdout;
        fprintf(f,
                "usage: %s plugin info LIB.so [--cases SWEEP.json]\n\n"
                "Your own kernel as an implementation of a kbench op: a shared library that\n"
                "exports kbench_plugin(), returning the table of include/kbench_plugin.h (the\n"
                "contract: the ABI version, and per implementation its op, name, supports(),\n"
                "prepare(), launch() and release()). Build one with\n"
                "  nvcc -shared -Xcompiler -fPIC,-Wall,-Wextra -O3 -gencode arch=compute_90a,code=sm_90a -gencode arch=compute_80,code=sm_80 -gencode arch=compute_80,code=compute_80 -Iinclude mine.cu -o libmine.so\n"
                "(make examples builds examples/plugins/NAME.cu so, into build/examples/libkb_NAME.so);\nrun it like kbench's own:\n"
                "  %s layernorm --rows 4096 --cols 1024:16384:x2 --impl naive,opt,mine=./libmine.so\n"
                "  %s check --impl mine=./libmine.so\n"
                "  %s sweep configs/layernorm.json --plugin mine=./libmine.so --set impl=opt,mine\n"
                "or name it in a sweep file: \"settings\": {\"plugins\": {\"mine\": \"libmine.so\"}} (relative\n"
                "to the file). NAME names its implementation of each op (NAME.IMPL where the\n"
                "library has several of one op), and --impl NAME selects every one of them;\n"
                "--impl ./libmine.so alone names them after the file (mine); --plugin PATH\n"
                "without NAME= keeps their own names.\n\n"
                "plugin info loads LIB.so without touching the GPU, checks it (a shared library,\n"
                "the entry point, the ABI version, known ops, names that clash with no built-in\n"
                "implementation, a launch for each) and lists its implementations and the\n"
                "tensors of their ops. A refusal is one line and exit 2. With --cases SWEEP.json\n"
                "it also expands the sweep and calls each implementation's supports() on every\n"
                "case of its op: what it takes, and the reasons it refuses the rest (still no GPU).\n\n"
                "Plugin implementations run in a helper process (--isolate auto, the default):\n"
                "a kernel that faults or hangs costs its own rows (errors naming the plugin, the\n"
                "implementation and the case), the rest of the sweep goes on, and the exit is 3.\n"
                "--isolate off runs them in kbench's process (a fault then ends the sweep).\n"
                "ABI 2 (include/kbench_plugin.h): prepare gets the stream; inplace, accumulates\n"
                "and tunables (flags and sweep keys while loaded: kbench list OP --plugin LIB).\n",
                prog, prog, prog, prog);
        return KB_EXIT_OK;
    }
    if (strcmp(argv[0], "info")) return kb_usage("plugin", "unknown subcommand '%s' (plugin info LIB.so)", argv[0]);
    const int cases = argc == 4 && !strcmp(argv[2], "--cases");
    if (argc != 2 && !cases)
        return kb_usage("plugin", "plugin info takes one library path, and --cases SWEEP.json (see: %s plugin --help)", prog);
    char err[KB_ERRLEN];
    kb_plan plan; /* --cases: the library loaded (its tunables are the sweep's keys), then the sweep, a bad
                   * one refused before the library's table is printed */
    memset(&plan, 0, sizeof plan);
    int rc = cases && (kb_plugin_load(NULL, argv[1], err, sizeof err) || kb_config_load(argv[3], &plan, err, sizeof err));
    if (!rc) rc = kb_plugin_info(argv[1], stdout, err, sizeof err) ||
                  (cases && kb_plugin_coverage(argv[1], argv[3], &plan, stdout, err, sizeof err));
    kb_cases_free(plan.cases, plan.ncases);
    if (rc) {
        fprintf(stderr, "kbench: %s\n", err);
        return KB_EXIT_USAGE;
    }
    return KB_EXIT_OK;
}

static int cmd_selftest(int argc, char **argv)
{
    if (argc > 0 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h"))) {
        printf("usage: %s selftest\n\n"
               "Checks the timing harness against known truths; exit 1 if one fails:\n"
               "  spin   a kernel spinning 2e7 SM cycles (clock64) must take cycles / SM clock\n"
               "         (NVML's median clock over its samples) within 1%%, under events and\n"
               "         graph timing;\n"
               "  empty  an empty kernel's time under each timing mode: the launch floor\n"
               "         (reported, not judged);\n"
               "  copy   the copy ceiling at 1 GiB (the best candidate, events, L2 flushed) must\n"
               "         match the same copy timed by the host clock over 100 launches within 3%%;\n"
               "  flush  a 32 MiB copy (it fits in L2) timed after the L2 flush on the buffers\n"
               "         the sample before it copied must not run more than 5%% faster than on\n"
               "         buffers untouched for 7 samples: the flush leaves nothing behind.\n"
               "make test runs it where a GPU is.\n", prog);
        return KB_EXIT_OK;
    }
    if (argc > 0) return kb_usage("selftest", "unexpected argument '%s'", argv[0]);
    kb_opts o;
    kb_opts_default(&o);
    return kb_selftest(&o);
}

/* The libraries that --plugin, --impl NAME=PATH (or PATH) and --set
 * plugin=/impl= name, loaded before the flags are parsed: a plugin's
 * tunables are parameters of its op (flags, `list`), and the run's later
 * load of the same is a no-op. 0, or exit 2 said. */
static int preload_plugins(int argc, char **argv)
{
    char err[KB_ERRLEN];
    for (int i = 2; i < argc; i++) /* the interpreter of .py implementations, before any is loaded */
        if (!strcmp(argv[i], "--python") && i + 1 < argc) kb_py_set_interpreter(argv[i + 1]);
        else if (!strncmp(argv[i], "--python=", 9)) kb_py_set_interpreter(argv[i] + 9);
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        int impl = 0;
        if (!strcmp(a, "--")) break;
        if ((!strcmp(a, "--plugin") || !strcmp(a, "--impl")) && i + 1 < argc) impl = a[2] == 'i', v = argv[++i];
        else if (!strncmp(a, "--plugin=", 9) || !strncmp(a, "--impl=", 7)) impl = a[2] == 'i', v = strchr(a, '=') + 1;
        else if (!strcmp(a, "--set") && i + 1 < argc && (!strncmp(argv[i + 1], "plugin=", 7) || !strncmp(argv[i + 1], "impl=", 5)))
            impl = argv[i + 1][0] == 'i', v = strchr(argv[++i], '=') + 1;
        if (!v) continue;
        char copy[sizeof((kb_opts *)0)->impl];
        snprintf(copy, sizeof copy, "%s", v);
        if (impl ? kb_plugin_take_impls(copy, sizeof copy, err, sizeof err) : kb_plugin_load_list(v, err, sizeof err))
            return kb_usage(NULL, "%s", err); /* as the run's own load would say it */
    }
    return 0;
}

static int run_command(int argc, char **argv)
{
    if (argc < 2) { /* a few lines, not the whole help */
        char ops[128] = "";
        for (int i = 0, o = 0; i < kb_nops && o < (int)sizeof ops; i++)
            o += snprintf(ops + o, sizeof ops - (size_t)o, "%s%s", i ? ", " : "", kb_ops[i]->name);
        fprintf(stderr,
                "usage: %s COMMAND [ARGS]\n"
                "  COMMAND: an op (%s), sweep, list, check, device, selftest, plugin, compare, merge\n"
                "see: %s --help (the commands, with examples), %s help COMMAND\n",
                prog, ops, prog, prog);
        return KB_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        if (argc > 3 && strcmp(cmd, "help") == 0)
            return kb_usage("help", "one command at a time (got '%s' and '%s')", argv[2], argv[3]);
        if (argc > 2 && strcmp(cmd, "help") == 0) {
            char help[] = "--help";
            char *sub[] = {argv[0], argv[2], help, NULL};
            return run_command(3, sub);
        }
        kb_help_main(stdout);
        return KB_EXIT_OK;
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
        printf("kbench %s\n", KB_VERSION);
        return KB_EXIT_OK;
    }
    if (!strcmp(cmd, "__helper")) return kb_helper_main(argc, argv); /* a plugin row's process (harness/isolate.h) */
    int prc = preload_plugins(argc, argv); /* their tunables are flags and keys: loaded before parsing */
    if (prc) return prc;
    const kb_op *op = kb_find_op(cmd);
    if (op) return cmd_op(op, argc - 1, argv + 1, argc, argv);
    if (!strcmp(cmd, "sweep")) return cmd_sweep(argc - 1, argv + 1, argc, argv);
    if (!strcmp(cmd, "check")) return cmd_check(argc - 1, argv + 1, argc, argv);
    if (!strcmp(cmd, "list")) return cmd_list(argc - 2, argv + 2); /* its --help too */
    if (!strcmp(cmd, "device")) return cmd_device(argc - 2, argv + 2);
    if (!strcmp(cmd, "selftest")) return cmd_selftest(argc - 2, argv + 2);
    if (!strcmp(cmd, "plugin")) return cmd_plugin(argc - 2, argv + 2);
    if (!strcmp(cmd, "compare")) return kb_compare_main(argc - 1, argv + 1);
    if (!strcmp(cmd, "merge")) return kb_merge_main(argc - 1, argv + 1);
    const char *cands[40];
    int n = 0;
    for (int i = 0; i < kb_nops; i++) cands[n++] = kb_ops[i]->name;
    const char *fixed[] = {"sweep", "check", "list", "device", "selftest", "plugin", "compare", "merge", "help"};
    for (int i = 0; i < KB_COUNT(fixed); i++) cands[n++] = fixed[i];
    const char *near = kb_nearest(cmd, cands, n);
    if (near) return kb_usage(NULL, "unknown command '%s' (did you mean '%s'?)", cmd, near);
    return kb_usage(NULL, "unknown command '%s' (see: %s --help)", cmd, prog);
}

/* Standard output flushed and checked, whatever the command: a write that
 * failed (a full disk, /dev/full, a closed stdout) is said in one line and
 * the exit is 2, unless the command already said an error (exit 2 or 3).
 * The error flag is cleared for the next kb_main. */
static int stdout_checked(int rc)
{
    errno = 0;
    const int flush_failed = fflush(stdout) != 0;
    const int e = flush_failed ? errno : 0, failed = flush_failed || ferror(stdout);
    clearerr(stdout);
    if (!failed || rc == KB_EXIT_USAGE || rc == KB_EXIT_CUDA) return rc;
    fprintf(stderr, "kbench: cannot write to standard output: %s\n", e ? strerror(e) : "a write failed");
    return KB_EXIT_USAGE;
}

int kb_main(int argc, char **argv)
{
    getopt_reset(); /* whatever an earlier parse left (compare's starts at optind = 1) */
    int rc = run_command(argc, argv);
    getopt_reset(); /* no pointer into this argv stays behind */
    kb_plugins_unload(); /* the next call loads its own */
    return stdout_checked(rc);
}

#ifndef KB_NO_MAIN /* tests and the fuzzer link kb_main alone (main.c built with -DKB_NO_MAIN) */
/* A closed standard stream (kbench >&-) held by /dev/null opened read-only:
 * no result file opened later takes its number (the table would go into it),
 * and a write to it fails (EBADF), as to a closed one. */
static void hold_closed_std_fds(void)
{
    for (int fd = 0; fd <= 2; fd++)
        if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
            int h = open("/dev/null", O_RDONLY);
            if (h >= 0 && h != fd) dup2(h, fd), close(h);
        }
}

int main(int argc, char **argv)
{
    hold_closed_std_fds();
    kb_host_recycle();
    kb_isolate_exe("/proc/self/exe"); /* plugin rows in a helper: this executable again (harness/isolate.h) */
    return kb_main(argc, argv);
}
#endif
