/* kbench compare BASE.json NEW.json (compare_read.c, compare.c, compare_csv.c, compare_main.c). */
#ifndef KB_COMPARE_H
#define KB_COMPARE_H

#include <stddef.h>
#include <stdio.h>

struct cJSON;
/* One row of a result file (pointers into the file's JSON tree). */
typedef struct {
    const char *op, *impl;
    const struct cJSON *params; /* the case's parameters */
    char *key;         /* op, impl and every parameter, canonical: rows match when keys are equal */
    char *label;       /* "pass=fwd dtype=bf16 seq=2048 ...", as the sweep tables print a case */
    double median_ms;  /* NAN: not timed */
    double noise_pct;  /* NAN: not recorded */
    double p25_ms, p75_ms; /* quartiles; NAN: not recorded */
    double *samples_ms; /* "samples_ms": every timed sample, in measurement order (owned; NULL: none) */
    int nsamples;      /* entries of samples_ms */
    const char *verified, *error; /* "" when absent */
    const char *kernel; /* what ran ("" when absent: a file from before kbench said) */
    int ok;            /* not "verified": "fail", and no error */
    int index;         /* position in results[] */
} kb_cmp_row;

typedef struct {
    struct cJSON *root;
    kb_cmp_row *rows;
    int nrows;
    char name[1024];  /* the path, for messages */
    const char *version, *git, *device, *started; /* "" when absent */
    int cut;          /* its last row was cut (a run killed while writing it): the rows before it read */
} kb_cmp_file;

/* 0, or -1 with err "NAME: not found | not JSON (...) | not a kbench result file (...)". */
int kb_cmp_parse(const char *text, const char *name, kb_cmp_file *f, char *err, size_t errlen);
int kb_cmp_load(const char *path, kb_cmp_file *f, char *err, size_t errlen);
void kb_cmp_free(kb_cmp_file *f);

#define KB_CMP_MAX_SAMPLES 1000000 /* "samples_ms" entries a row may hold */
#define KB_CMP_MIN_SAMPLES 10       /* both rows this many samples or more: the Mann-Whitney rule */
#define KB_CMP_ALPHA 0.001          /* its significance level (two-sided) */
/* The default --min-effect: the smallest change of median the Mann-Whitney
 * rule calls. Two runs of one build, in two processes, moved the medians of
 * configs/rope.json's 79 opt rows (8-720 us) by up to 3.65% (12 rows over
 * 1.8%, each p < 1e-80 on its thousands of samples; H100, 2026-11-25; the
 * session before: up to 2.9%): the samples of one process share its clocks and
 * the placement of its buffers, so a test on them cannot see what changes
 * between processes. 5% stays above that (tests/data/compare/twin-*.json). */
#define KB_CMP_MIN_EFFECT_PCT 5.0
/* The smallest change of median either rule calls, in ms: the resolution of
 * cudaEventElapsedTime ("around 0.5 microseconds", the CUDA Runtime API). Two
 * runs of the same build moved the medians of 8-50 us RoPE rows by up to
 * 0.42 us (1-3%, p < 1e-90 on thousands of samples; H100, 2026-11-25). */
#define KB_CMP_MIN_DELTA_MS 0.0005

typedef enum { KB_CMP_SAME, KB_CMP_FASTER, KB_CMP_SLOWER, KB_CMP_FAILED, KB_CMP_NA, KB_CMP_ONLY_BASE, KB_CMP_ONLY_NEW } kb_cmp_verdict;
/* Which rule decided a verdict: none (FAILED, n/a, only in one file), the
 * threshold on the medians, or the Mann-Whitney U test on the samples. */
typedef enum { KB_CMP_RULE_NONE, KB_CMP_RULE_THRESHOLD, KB_CMP_RULE_MANN_WHITNEY } kb_cmp_rule;
const char *kb_cmp_rule_name(kb_cmp_rule r); /* "-", "threshold", "mann-whitney" */
const char *kb_cmp_verdict_name(kb_cmp_verdict v); /* "same", "faster", "slower", "FAILED", "n/a", "only in base", ... */
/* speedup = base/new median (NAN unless both timed); bound_pct = the change that
 * counts: threshold_pct, or both rows' noise_pct added when that is larger.
 * FAILED: base ok and new not; n/a: new failed too, or one of them untimed. */
kb_cmp_verdict kb_cmp_judge(const kb_cmp_row *base, const kb_cmp_row *cur, double threshold_pct, double *speedup,
                            double *bound_pct);

typedef struct {
    const kb_cmp_row *base, *cur; /* NULL for a case only in the other file */
    kb_cmp_verdict verdict;
    double speedup, bound_pct; /* bound_pct: the change that counts (the Mann-Whitney rule: min_effect_pct) */
    kb_cmp_rule rule;
    double p_value;     /* the Mann-Whitney rule's two-sided p; NAN under the others */
    int kernel_differs; /* both files say what ran, and it differs */
    int under_resolution; /* the rule called it, but the medians are under KB_CMP_MIN_DELTA_MS apart: same */
} kb_cmp_pair;

/* The two-sided p-value of the Mann-Whitney U test of a against b: normal
 * approximation with the tie correction and the continuity correction (as
 * scipy.stats.mannwhitneyu(method="asymptotic")), ranks exact (the pooled
 * samples sorted, ties at their mean rank). 1 when every value is equal; NAN
 * when a side is empty or a value is not finite. */
double kb_mann_whitney_p(const double *a, int na, const double *b, int nb);
/* The verdict on a matched case, into out (verdict, speedup, bound_pct, rule,
 * p_value; base/cur and kernel_differs are left alone). FAILED and n/a as
 * kb_cmp_judge. Both rows with KB_CMP_MIN_SAMPLES samples or more: the
 * Mann-Whitney rule: slower when p < KB_CMP_ALPHA and new median > base median
 * * (1 + min_effect_pct/100), faster the other way round, else same. Otherwise
 * kb_cmp_judge's threshold rule. Under either, medians less than
 * KB_CMP_MIN_DELTA_MS apart are same (under_resolution set). */
kb_cmp_verdict kb_cmp_decide(const kb_cmp_row *base, const kb_cmp_row *cur, double threshold_pct,
                             double min_effect_pct, kb_cmp_pair *out);

typedef struct {
    kb_cmp_pair *pairs; /* base rows in order (matched or only in base), then those only in new */
    int npairs;
    int cases, faster, slower, same, failed, na, only_base, only_new; /* cases: matched */
    int kernel_differs; /* matched cases whose kernels differ */
    int by_threshold, by_mann_whitney; /* faster/slower/same verdicts each rule decided */
    double min_effect_pct; /* the Mann-Whitney rule's minimum effect it was matched with */
    char base_run[512], new_run[512]; /* "kbench VERSION (GIT), DEVICE, STARTED" of each file */
} kb_cmp_result;

/* Match cur's rows to base's (impls: comma list, "" = all); -1 with err when a
 * name in impls is in neither file. The result points into both files. */
int kb_cmp_match(const kb_cmp_file *base, const kb_cmp_file *cur, const char *impls, double threshold_pct,
                 kb_cmp_result *res, char *err, size_t errlen);
/* kb_cmp_match with the Mann-Whitney rule's minimum effect (kb_cmp_match: KB_CMP_MIN_EFFECT_PCT) */
int kb_cmp_match_effect(const kb_cmp_file *base, const kb_cmp_file *cur, const char *impls, double threshold_pct,
                        double min_effect_pct, kb_cmp_result *res, char *err, size_t errlen);
void kb_cmp_result_free(kb_cmp_result *r);
int kb_cmp_regressions(const kb_cmp_result *r); /* slower + FAILED */
void kb_cmp_print(FILE *f, const kb_cmp_file *base, const kb_cmp_file *cur, const kb_cmp_result *r,
                  double threshold_pct, int quiet);
/* the comparison as a CSV, written whole (kb_write_whole: a temporary renamed
 * over path, so a failed write leaves path as it was): 0, or -1 with err
 * ("--csv: cannot write PATH: why") (compare_csv.c) */
int kb_cmp_write_csv(const char *path, const kb_cmp_result *r, double threshold_pct, char *err, size_t errlen);
int kb_compare_main(int argc, char **argv); /* argv[0] = "compare"; returns the exit code */

#endif
