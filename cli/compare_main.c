/* kbench compare: the table and the subcommand (kb_compare_main). */
#include "compare.h"
#include "compare_int.h"
#include "core/errors.h"
#include "report/files.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- output --------------------------------------------------------------- */
static void ms_text(char *buf, size_t n, const kb_cmp_row *r)
{
    if (r && kb_cmp_timed(r)) snprintf(buf, n, "%.4f", r->median_ms);
    else snprintf(buf, n, "-");
}

static void print_pair(FILE *f, const kb_cmp_pair *p, int wop, int wlab, double threshold_pct)
{
    char bm[32], nm[32], sp[32] = "-", note[512];
    ms_text(bm, sizeof bm, p->base);
    ms_text(nm, sizeof nm, p->cur);
    if (isfinite(p->speedup)) snprintf(sp, sizeof sp, "%.2fx", p->speedup);
    kb_cmp_pair_note(p, threshold_pct, note, sizeof note);
    fprintf(f, "%-*s  %-*s  %-10s %10s %10s %8s  %-7s  %-*s%s%s\n", wop, p->base->op, wlab, p->base->label, p->base->impl,
            bm, nm, sp, kb_cmp_verdict_name(p->verdict), note[0] ? 12 : 0, kb_cmp_rule_name(p->rule),
            note[0] ? "  " : "", note);
}

/* "base FILE: kbench VERSION (GIT), DEVICE, STARTED, N rows": one line,
 * whatever the file's strings hold (control characters escaped) */
static void describe(FILE *f, const char *tag, const kb_cmp_file *file)
{
    char run[512], line[2048];
    snprintf(run, sizeof run, "kbench %s%s%s%s, %s%s%s", file->version[0] ? file->version : "?",
             file->git[0] ? " (" : "", file->git, file->git[0] ? ")" : "",
             file->device[0] ? file->device : "device unknown", file->started[0] ? ", " : "", file->started);
    kb_errf(line, sizeof line, "%s: %s", file->name, run);
    fprintf(f, "%-4s %s, %d rows\n", tag, line, file->nrows);
}

void kb_cmp_print(FILE *f, const kb_cmp_file *base, const kb_cmp_file *cur, const kb_cmp_result *r,
                  double threshold_pct, int quiet)
{
    int wop = 2, wlab = 4;
    for (int i = 0; i < r->npairs; i++) {
        const kb_cmp_row *row = r->pairs[i].base ? r->pairs[i].base : r->pairs[i].cur;
        int lop = (int)strlen(row->op), llab = (int)strlen(row->label);
        if (lop > wop) wop = lop;
        if (llab > wlab) wlab = llab;
    }
    if (wlab > 120) wlab = 120; /* a long seqlens list: its own line overflows */
    if (!quiet) {
        describe(f, "base", base);
        describe(f, "new", cur);
        fprintf(f, "a case is slower or faster beyond %g%% (or beyond the two rows' noise added, if larger)\n",
                threshold_pct);
        if (r->by_mann_whitney)
            fprintf(f,
                    "or, where both rows hold %d samples or more (rule mann-whitney): by a Mann-Whitney U test at "
                    "p < %g,\nand only when the medians differ by %g%% or more\n",
                    KB_CMP_MIN_SAMPLES, KB_CMP_ALPHA, r->min_effect_pct);
        fprintf(f, "medians less than %g us apart are the same (the event timer's resolution)\n",
                KB_CMP_MIN_DELTA_MS * 1e3);
    }
    int header = 0;
    for (int i = 0; i < r->npairs; i++) {
        const kb_cmp_pair *p = &r->pairs[i];
        if (!p->base || !p->cur) continue;
        if (quiet && p->verdict != KB_CMP_SLOWER && p->verdict != KB_CMP_FAILED) continue;
        if (!header) {
            fprintf(f, "\n%-*s  %-*s  %-10s %10s %10s %8s  %-7s  %s\n", wop, "op", wlab, "case", "impl", "base_ms",
                    "new_ms", "speedup", "verdict", "rule");
            header = 1;
        }
        print_pair(f, p, wop, wlab, threshold_pct);
    }
    if (!quiet)
        for (int side = 0; side < 2; side++) {
            int cnt = side ? r->only_new : r->only_base;
            if (!cnt) continue;
            fprintf(f, "\nonly in %s (%d):\n", side ? "new" : "base", cnt);
            for (int i = 0; i < r->npairs; i++) {
                const kb_cmp_pair *p = &r->pairs[i];
                if (p->verdict != (side ? KB_CMP_ONLY_NEW : KB_CMP_ONLY_BASE)) continue;
                const kb_cmp_row *row = side ? p->cur : p->base;
                fprintf(f, "  %-*s  %-*s  %s\n", wop, row->op, wlab, row->label, row->impl);
            }
        }
    if (!quiet || header) fputc('\n', f);
    fprintf(f, "compare: %d cases, %d faster, %d slower, %d same, %d only in base, %d only in new", r->cases, r->faster,
            r->slower, r->same, r->only_base, r->only_new);
    if (r->failed) fprintf(f, ", %d FAILED", r->failed);
    if (r->na) fprintf(f, ", %d n/a", r->na);
    if (r->kernel_differs) fprintf(f, ", %d ran another kernel", r->kernel_differs);
    fprintf(f, "; by rule: %d threshold, %d mann-whitney\n", r->by_threshold, r->by_mann_whitney);
}

/* ---- the subcommand ------------------------------------------------------- */
static void print_help(FILE *f)
{
    fprintf(f,
            "usage: kbench compare BASE.json NEW.json [--threshold PCT] [--min-effect PCT] [--impl LIST]\n"
            "                      [--csv FILE] [--plot FILE.png] [--quiet]\n\n"
            "Compares two result files written by kbench (--json FILE, or DIR/NAME.json of --out-dir)\n"
            "case by case and exits 4 if NEW regressed anywhere. Needs no GPU.\n\n"
            "Matching: a row of NEW matches the row of BASE with the same op, implementation and\n"
            "every parameter of the case (the row's \"params\": pass, dtype, layout, shapes, ...; in\n"
            "any order). A case in one file only is listed under 'only in base' or 'only in new'\n"
            "(not an error); a case that appears more than once pairs up in order of appearance.\n\n"
            "Verdicts (speedup = base median / new median). Rule 'threshold', by median:\n"
            "  faster   base/new > 1 + PCT/100\n"
            "  slower   new/base > 1 + PCT/100: a regression\n"
            "  same     neither\n"
            "  FAILED   the new row failed verification or has an error where the base row passed:\n"
            "           a regression\n"
            "  n/a      nothing to compare: not timed in one file, or failed in base (and in new)\n"
            "Noise: where both rows carry noise_pct (stddev/mean, %%), PCT is raised to the sum of\n"
            "the two rows' noise when that is larger, so a difference within the measurements' own\n"
            "scatter is 'same', never a regression (the line says 'noise N%%').\n"
            "Rule 'mann-whitney': where both rows hold their samples (\"samples_ms\", kept by\n"
            "--save-samples), %d or more each, a two-sided Mann-Whitney U test on them (normal\n"
            "approximation, tie- and continuity-corrected) decides instead: slower when p < %g and\n"
            "new median > base median * (1 + E/100), faster the other way round, else same\n"
            "(E: --min-effect). Two runs of one build, in two processes, moved medians by up to\n"
            "3.7%% with p < 1e-80 (the samples of one process share its clocks and buffer\n"
            "placement), so a smaller change is not called even when the test finds it\n"
            "significant. Rows without samples, or with fewer, use the threshold rule; each line\n"
            "says which rule decided it.\n"
            "Under both rules, medians less than %g us apart are 'same' (the line says 'change under\n"
            "%g us'): the CUDA event timer's resolution. Two runs of one build move the medians of\n"
            "kernels of a few microseconds by up to about that much.\n"
            "Files from different devices (name) or kbench versions are compared all the same,\n"
            "with a note on stderr.\n\n"
            "Options:\n"
            "  --threshold PCT        the change in median that counts, in %% [5] (rule threshold)\n"
            "  --min-effect PCT       the smallest change in median that the mann-whitney rule\n"
            "                         calls, in %% [%g]: above what two runs of one build differ by;\n"
            "                         lower it for A/B runs that alternate in one session\n"
            "  --impl LIST            only these implementations (comma list: naive,opt)\n"
            "  --csv FILE             also write the comparison to FILE, one row per case (only-in\n"
            "                         cases included): op, impl, parameters, both medians and noise,\n"
            "                         speedup, threshold_pct (the change that counts: under\n"
            "                         mann-whitney the minimum effect), verdict, rule, p_value, note\n"
            "  --plot FILE.png        also draw the comparison (scripts/plot.sh, gnuplot): a bar per\n"
            "                         case, its speedup from 1, sorted, regressions in red, the band\n"
            "                         its rule calls same behind it; the two runs in the title\n"
            "  --quiet                print only the regressions and the summary line\n"
            "  -h, --help             this help\n\n"
            "Output: a line per matched case (op, case, impl, base_ms, new_ms, speedup, verdict, rule,\n"
            "note: p=P under mann-whitney), the cases in one file only, and\n"
            "  compare: N cases, N faster, N slower, N same, N only in base, N only in new; by rule:\n"
            "  N threshold, N mann-whitney\n"
            "(N cases: those in both files; ', N FAILED' and ', N n/a' follow the counts when there\n"
            "are any; FAILED and n/a come from no rule).\n\n"
            "Exit codes: 0 no regression, 4 at least one case slower or FAILED, 2 usage error, a\n"
            "file that is missing, not JSON or not a kbench result file (a key twice in one\n"
            "object included), or a --csv or --plot path that cannot be written or is one of the\n"
            "two files (said before comparing), 1 the --plot chart could not be drawn and\n"
            "nothing regressed (gnuplot missing or failing; the comparison is printed all the\n"
            "same).\n\n"
            "Examples:\n"
            "  kbench compare results/main/rope.json results/rope.json\n"
            "  kbench compare base.json new.json --threshold 10 --impl opt --csv results/compare.csv\n"
            "  kbench compare base.json new.json --plot results/compare.png\n",
            KB_CMP_MIN_SAMPLES, KB_CMP_ALPHA, KB_CMP_MIN_DELTA_MS * 1e3, KB_CMP_MIN_DELTA_MS * 1e3,
            KB_CMP_MIN_EFFECT_PCT);
}


enum { O_THRESHOLD = 1000, O_MIN_EFFECT, O_IMPL, O_CSV, O_QUIET, O_PLOT };

/* scripts/plot.sh of the tree the kbench executable was built in: beside it
 * (./kbench) or one level up (a build directory's, build-asan/kbench): 0
 * with its path, or -1 with why not */
static int find_plot_script(char *path, size_t n, char *err, size_t errlen)
{
    char exe[4096];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (k <= 0) { kb_errf(err, errlen, "--plot: cannot find the kbench executable (/proc/self/exe)"); return -1; }
    exe[k] = 0;
    char *slash = strrchr(exe, '/');
    if (slash) *slash = 0;
    snprintf(path, n, "%s/scripts/plot.sh", exe);
    if (!access(path, X_OK)) return 0;
    snprintf(path, n, "%s/../scripts/plot.sh", exe);
    if (!access(path, X_OK)) return 0;
    kb_errf(err, errlen, "--plot: no scripts/plot.sh beside %s or above it: %s (the chart is drawn by kbench's tree)",
            exe, strerror(errno));
    return -1;
}

/* scripts/plot.sh CSV PNG: 0, or -1 with err */
static int run_plot(const char *script, const char *csv, const char *png, char *err, size_t errlen)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) { kb_errf(err, errlen, "--plot: fork: %s", strerror(errno)); return -1; }
    if (pid == 0) {
        if (!freopen("/dev/null", "w", stdout)) _exit(127); /* plot.sh prints the PNG's path; compare says it */
        execl(script, script, csv, png, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) { kb_errf(err, errlen, "--plot: waitpid: %s", strerror(errno)); return -1; }
    if (!WIFEXITED(st) || WEXITSTATUS(st)) {
        kb_errf(err, errlen, "--plot: %s failed (exit %d) drawing %s", script, WIFEXITED(st) ? WEXITSTATUS(st) : -1, png);
        return -1;
    }
    return 0;
}

/* a percentage >= 0 (a trailing % allowed); -1 if it is not one */
static int parse_pct(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end != s && *end == '%') end++;
    if (end == s || *end || errno || !isfinite(v) || v < 0 || v > 1e6) return -1;
    *out = v;
    return 0;
}

/* kbench compare's command line */
typedef struct {
    double threshold, min_effect;
    const char *impls, *csv, *plot;
    int quiet;
    const char *bpath, *npath;
} compare_args;

/* an option getopt_long does not know (bad: the word it stopped at): its
 * usage error, the exit code */
static int unknown_option(const char *bad)
{
    const char *cands[] = {"threshold", "min-effect", "impl", "csv", "quiet", "plot", "help"};
    const int ncands = (int)(sizeof cands / sizeof *cands);
    if (optopt > 0 && optopt < 0x7f) /* a short option, maybe inside a cluster (-qx): name it, not the word */
        return kb_usage("compare", "unknown option '-%c' (see: kbench compare --help)", optopt);
    if (bad[0] == '-' && bad[1] == '-') {
        char word[128];
        snprintf(word, sizeof word, "%s", bad + 2);
        word[strcspn(word, "=")] = 0;
        for (int i = 0; i < ncands; i++)
            if (!strcmp(word, cands[i])) return kb_usage("compare", "option '--%s' takes no value", word);
        const char *near = kb_nearest(word, cands, ncands);
        if (near) return kb_usage("compare", "unknown option '--%s' (did you mean --%s?)", word, near);
        return kb_usage("compare", "unknown option '--%s' (see: kbench compare --help)", word);
    }

    return kb_usage("compare", "unknown option '%s' (see: kbench compare --help)", bad);
}

/* argv into a: -1, or the exit code to end with (--help, a usage error) */
static int parse_args(int argc, char **argv, compare_args *a)
{
    static const struct option opts[] = {
        {"threshold", required_argument, NULL, O_THRESHOLD},
        {"min-effect", required_argument, NULL, O_MIN_EFFECT},
        {"impl", required_argument, NULL, O_IMPL},
        {"csv", required_argument, NULL, O_CSV},
        {"quiet", no_argument, NULL, O_QUIET},
        {"plot", required_argument, NULL, O_PLOT},
        {"help", no_argument, NULL, 'h'},
        {0},
    };
    *a = (compare_args){.threshold = 5, .min_effect = KB_CMP_MIN_EFFECT_PCT, .impls = ""};
    int c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        const char *bad = argv[optind - 1];
        switch (c) {
        case 'h': print_help(stdout); return KB_EXIT_OK;
        case O_THRESHOLD:
            if (parse_pct(optarg, &a->threshold)) return kb_usage("compare", "--threshold: expected a percentage >= 0, got '%s'", optarg);
            break;
        case O_MIN_EFFECT:
            if (parse_pct(optarg, &a->min_effect))
                return kb_usage("compare", "--min-effect: expected a percentage >= 0, got '%s'", optarg);
            break;
        case O_IMPL:
            if (!*optarg) {
                fprintf(stderr, "kbench compare: --impl: an empty list (leave --impl out to compare every implementation)\n");
                return KB_EXIT_USAGE;
            }
            a->impls = optarg;
            break;
        case O_CSV: a->csv = optarg; break;
        case O_QUIET: a->quiet = 1; break;
        case O_PLOT:
            if (strlen(optarg) < 5 || strcmp(optarg + strlen(optarg) - 4, ".png"))
                return kb_usage("compare", "--plot: expected a .png file, got '%s'", optarg);
            a->plot = optarg;
            break;
        case ':': return kb_usage("compare", "option '%s' needs a value (see: kbench compare --help)", bad);
        default: return unknown_option(bad);
        }
    }
    int npos = argc - optind;
    if (npos != 2)
        return kb_usage("compare", "want two result files, BASE.json and NEW.json (got %d; see: kbench compare --help)", npos);
    a->bpath = argv[optind];
    a->npath = argv[optind + 1];
    return -1;
}

/* --plot: the chart drawn by script from the CSV (--csv's, or one of its
 * own); rc, the comparison's exit code, back, or 1 where it is 0 and the
 * chart was not drawn */
static int draw_plot(const compare_args *a, const char *script, const kb_cmp_result *res, int rc)
{
    char err[KB_ERRLEN], tmpcsv[] = "/tmp/kbench-compare-XXXXXX.csv";
    const char *src = a->csv;
    if (!src) {
        int fd = mkstemps(tmpcsv, 4);
        if (fd < 0 || (close(fd), kb_cmp_write_csv(tmpcsv, res, a->threshold, err, sizeof err))) {
            if (fd < 0) kb_errf(err, sizeof err, "--plot: a temporary CSV: %s", strerror(errno));
            fprintf(stderr, "kbench compare: %s\n", err);
            if (fd >= 0) unlink(tmpcsv);
            if (rc == KB_EXIT_OK) rc = KB_EXIT_VERIFY; /* a regression's 4 stands */
            return rc;
        }
        src = tmpcsv;
    }
    if (run_plot(script, src, a->plot, err, sizeof err)) {
        fprintf(stderr, "kbench compare: %s\n", err);
        if (rc == KB_EXIT_OK) rc = KB_EXIT_VERIFY; /* a regression's 4 stands */
    } else if (!a->quiet) {
        printf("wrote %s\n", a->plot);
    }
    if (!a->csv) unlink(tmpcsv);
    return rc;
}

/* the notes on stderr: what differs between the two files beyond their rows */
static void note_differences(const kb_cmp_file *base, const kb_cmp_file *cur, const kb_cmp_result *res)
{
    char line[KB_ERRLEN * 2];
    if (base->device[0] && cur->device[0] && strcmp(base->device, cur->device)) {
        kb_errf(line, sizeof line, "different devices: base %s, new %s", base->device, cur->device);
        fprintf(stderr, "kbench compare: note: %s\n", line);
    }
    if (base->version[0] && cur->version[0] && strcmp(base->version, cur->version)) {
        kb_errf(line, sizeof line, "different kbench versions: base %s, new %s", base->version, cur->version);
        fprintf(stderr, "kbench compare: note: %s\n", line);
    }
    if (res->cases == 0 && res->only_base && res->only_new)
        fprintf(stderr, "kbench compare: note: no case is in both files (same op, impl and parameters)\n");
}

/* --csv and --plot: each one a path it can write (kb_output_check), neither
 * an input (one file: its device and inode) nor the other. -1, or the usage
 * error's exit code: said before anything is read or written. */
static int check_outputs(const compare_args *a)
{
    const char *outs[2] = {a->csv, a->plot}, *what[2] = {"--csv", "--plot"};
    char err[KB_ERRLEN];
    for (int i = 0; i < 2; i++) {
        if (!outs[i]) continue;
        int base = kb_same_file(outs[i], a->bpath);
        if (base || kb_same_file(outs[i], a->npath))
            return kb_usage("compare", "%s %s is the %s file %s: it would be overwritten (give another path)", what[i],
                            outs[i], base ? "base" : "new", base ? a->bpath : a->npath);
        if (kb_output_check(outs[i], what[i], err, sizeof err)) return kb_usage("compare", "%s", err);
    }
    if (a->csv && a->plot && (!strcmp(a->csv, a->plot) || kb_same_file(a->csv, a->plot)))
        return kb_usage("compare", "--csv and --plot are the same file %s: give each its own", a->csv);
    return -1;
}

int kb_compare_main(int argc, char **argv)
{
    compare_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc >= 0) return rc;
    if ((rc = check_outputs(&a)) >= 0) return rc;

    char err[KB_ERRLEN], script[4200];
    if (a.plot && find_plot_script(script, sizeof script, err, sizeof err)) return kb_usage("compare", "%s", err);
    kb_cmp_file base, cur;
    if (kb_cmp_load(a.bpath, &base, err, sizeof err)) return kb_usage("compare", "%s", err);
    if (kb_cmp_load(a.npath, &cur, err, sizeof err)) {
        kb_cmp_free(&base);
        return kb_usage("compare", "%s", err);
    }
    kb_cmp_result res;
    rc = KB_EXIT_USAGE;
    if (kb_cmp_match_effect(&base, &cur, a.impls, a.threshold, a.min_effect, &res, err, sizeof err)) {
        kb_usage("compare", "%s", err);
        goto out_files;
    }
    if (a.csv && kb_cmp_write_csv(a.csv, &res, a.threshold, err, sizeof err)) {
        kb_usage("compare", "%s", err);
        goto out;
    }
    note_differences(&base, &cur, &res);
    kb_cmp_print(stdout, &base, &cur, &res, a.threshold, a.quiet);
    rc = kb_cmp_regressions(&res) ? KB_EXIT_REGRESSION : KB_EXIT_OK;
    if (a.plot) rc = draw_plot(&a, script, &res, rc);
out:
    kb_cmp_result_free(&res);
out_files:
    kb_cmp_free(&base);
    kb_cmp_free(&cur);
    return rc;
}
