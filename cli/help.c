/* kbench's help: the main command list, an op's help (its parameters,
 * implementations and tunables from its descriptor) and the settings' flags,
 * all from the tables that drive the command line (main.c). */
#include "help.h"
#include "core/op.h"
#include "core/plugin.h"
#include "core/registry.h"
#include "core/settings.h"

#include <stdio.h>
#include <string.h>

void kb_help_impls(FILE *f, const kb_op *op, const char *indent)
{
    for (int k = 0; k < kb_op_nimpls(op); k++) {
        const kb_impl *im = kb_op_impl(op, k);
        fprintf(f, "%s%-12s %s%s", indent, im->name, im->help, k == 0 ? " (baseline)" : "");
        if (im->tunables) fprintf(f, " [tunables: %s]", im->tunables);
        fprintf(f, "\n");
    }
}

void kb_flag_name(const char *name, char *buf, size_t n)
{
    snprintf(buf, n, "%s", name);
    for (char *p = buf; *p; p++)
        if (*p == '_') *p = '-';
}

void kb_help_settings(FILE *f)
{
    fprintf(f, "Options (also the \"settings\" of a sweep file, with _ for -; a long option may be\n"
               "shortened to any unique prefix, --min-s for --min-samples; numbers are decimal):\n");
    for (int i = 0; i < kb_nsettings; i++) {
        const kb_setting *s = &kb_settings[i];
        char fl[64], left[96];
        kb_flag_name(s->name, fl, sizeof fl);
        const char *arg = s->type == KB_S_BOOL ? "" : s->type == KB_S_STR ? " S" : " N";
        snprintf(left, sizeof left, "--%s%s", fl, arg);
        fprintf(f, "  %-22s %s", left, s->help);
        if (s->type != KB_S_BOOL && s->def[0]) fprintf(f, " [%s]", s->def);
        fprintf(f, "\n");
    }
    fprintf(f, "  %-22s %s\n", "--dry-run", "expand and validate the cases, print them with their memory; no GPU");
    fprintf(f, "  %-22s %s\n", "-h, --help", "this help");
}

static void print_op_params(FILE *f, const kb_op *op)
{
    for (int i = 0; i < op->nparams; i++) {
        const kb_param *p = &op->params[i];
        char fl[64], left[128], bounds[96] = "";
        kb_flag_name(p->name, fl, sizeof fl);
        if (p->type == KB_P_ENUM) snprintf(left, sizeof left, "--%s {%s}", fl, p->choices);
        else if (p->type == KB_P_INTLIST) snprintf(left, sizeof left, "--%s LIST", fl);
        else snprintf(left, sizeof left, "--%s %s", fl, p->type == KB_P_INT ? "N" : "X");
        if (p->type == KB_P_INT || p->type == KB_P_FLOAT) snprintf(bounds, sizeof bounds, ", %.10g..%.10g", p->min, p->max);
        fprintf(f, "  %-30s %s%s [%s%s]\n", left, p->tunable ? "(tunable) " : "", p->help, p->def[0] ? p->def : "none",
                bounds);
    }
}

void kb_help_op(FILE *f, const kb_op *op)
{
    fprintf(f, "usage: %s %s [PARAMETERS] [OPTIONS]\n\n%s %s: %s.\n", KB_PROG, op->name, KB_PROG, op->name, op->summary);
    fprintf(f, "\nEvery case runs each implementation: verified against a CPU reference in double\n"
               "precision (outputs poisoned with NaN first), then timed with CUDA events, L2\n"
               "flushed before each sample. Results go to the table, CSV and JSON.\n");
    const char *a = "seq", *b = "batch"; /* examples from this op's own integer parameters */
    for (int i = 0, k = 0; i < op->nparams && k < 2; i++)
        if (op->params[i].type == KB_P_INT) {
            if (k++ == 0) a = op->params[i].name;
            else b = op->params[i].name;
        }
    char fa[64], fb[64];
    kb_flag_name(a, fa, sizeof fa);
    kb_flag_name(b, fb, sizeof fb);
    fprintf(f, "\nParameters (a comma list or a range sweeps: --%s 512,1024,2048  --%s 512:8192:x2\n"
               "  --%s 1:4:1  --dtype all; cases are the cartesian product) [default, bounds]:\n", fa, fa, fb);
    print_op_params(f, op);
    fprintf(f, "\nImplementations (the first is the baseline of the speedup column; --impl A,B runs\n"
               "those; the kernel column says which variant and tunables ran; an implementation\n"
               "that cannot take a case gives a row n/a with the reason):\n");
    kb_help_impls(f, op, "  ");
    int ntun = 0;
    for (int i = 0; i < op->nparams; i++) ntun += op->params[i].tunable;
    if (ntun)
        fprintf(f, "\nTunables (parameters marked so above) default to auto, the planner's choice; fixing\n"
                   "one (--vec 2) runs the implementations that take it with that value and gives n/a\n"
                   "rows for the others, or where the value cannot run the case.\n");
    fprintf(f, "\n");
    kb_help_settings(f);
    if (!strcmp(op->name, "rope"))
        fprintf(f, "\nExamples:\n"
                   "  %s rope --seq 2048 --batch 16 --heads 8 --dim 256 --dtype fp32,bf16,fp16 --pass fwd,bwd\n"
                   "  %s rope --layout bshd --seq 4096 --batch 2 --heads 32 --dim 128 --dtype bf16\n"
                   "  %s rope --layout thd --seqlens 100,2048,900 --heads 16 --dim 128 --rotary-dim 64\n",
                KB_PROG, KB_PROG, KB_PROG);
}

void kb_help_main(FILE *f)
{
    fprintf(f,
            "usage: %s COMMAND [ARGS]\n\n"
            "Benchmarks and verifies GPU kernels for LLM building blocks.\n\n"
            "Commands:\n",
            KB_PROG);
    for (int i = 0; i < kb_nops; i++) fprintf(f, "  %-18s %s\n", kb_ops[i]->name, kb_ops[i]->summary);
    fprintf(f,
            "  %-18s %s\n  %-18s %s\n  %-18s %s\n  %-18s %s\n  %-18s %s\n  %-18s %s\n  %-18s %s\n  %-18s %s\n"
            "  %-18s %s\n",
            "sweep [FILE.json]", "run a JSON sweep (no FILE: the built-in configs/default.json)",
            "list [OP]", "ops, their parameters (defaults, bounds) and implementations",
            "check [OP...]", "every op x impl x dtype x layout at small and odd shapes; exit 1 on a failure",
            "device", "GPU name, SMs, L2, clocks, NVML state, the copy ceiling's candidates, GEMM ceilings",
            "selftest", "the harness against known truths (a clock64 spin, the launch floor, the copy ceiling, the L2 flush)",
            "plugin info LIB.so", "check and list your own kernel's library (include/kbench_plugin.h)",
            "compare BASE NEW", "per-case speedups between two result JSON files; exit 4 on a regression",
            "merge PART...", "join the result files of a sweep's shards (--shard K/N) in case order",
            "help [COMMAND]", "help on a command (or: COMMAND --help)");
    fprintf(f,
            "\nExamples:\n"
            "  %s rope --seq 2048 --batch 16 --dtype fp32,bf16 --pass fwd,bwd\n"
            "  %s sweep configs/rope.json --out-dir results/today\n"
            "  %s sweep configs/ci.json --dry-run\n"
            "  %s compare results/base/rope.json results/rope.json\n"
            "\nExit codes: 0 ok, 1 a verification failed, 2 usage or config error,\n"
            "3 CUDA/device error (no GPU, driver too old, out of memory), 4 a regression found by compare.\n",
            KB_PROG, KB_PROG, KB_PROG, KB_PROG);
}
