/* kbench compare BASE.json NEW.json: per-case speedups between two result
 * files, exit 4 on a regression. Needs no GPU and no op descriptor: cases are
 * read from the files' own "params", so files from other kbench versions
 * compare too (a parameter added since then makes its cases unmatched).
 *
 * Matching: op, impl and every parameter, canonically (parameter order does
 * not matter, values compare as JSON). Verdicts: kb_cmp_decide, by one of two
 * rules: the Mann-Whitney U test on the rows' samples ("samples_ms") where both
 * keep 10 or more, else the threshold on the medians (kb_cmp_judge). */
#include "compare.h"
#include "compare_int.h"
#include "core/errors.h"
#include "core/params.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- verdicts ------------------------------------------------------------- */
const char *kb_cmp_verdict_name(kb_cmp_verdict v)
{
    switch (v) {
    case KB_CMP_SAME: return "same";
    case KB_CMP_FASTER: return "faster";
    case KB_CMP_SLOWER: return "slower";
    case KB_CMP_FAILED: return "FAILED";
    case KB_CMP_NA: return "n/a";
    case KB_CMP_ONLY_BASE: return "only in base";
    case KB_CMP_ONLY_NEW: return "only in new";
    }
    return "?";
}

int kb_cmp_timed(const kb_cmp_row *r) { return isfinite(r->median_ms) && r->median_ms > 0; }

kb_cmp_verdict kb_cmp_judge(const kb_cmp_row *base, const kb_cmp_row *cur, double threshold_pct, double *speedup,
                            double *bound_pct)
{
    *speedup = kb_cmp_timed(base) && kb_cmp_timed(cur) ? base->median_ms / cur->median_ms : NAN;
    *bound_pct = threshold_pct;
    if (base->ok && !cur->ok) return KB_CMP_FAILED;
    if (!cur->ok || !kb_cmp_timed(base) || !kb_cmp_timed(cur)) return KB_CMP_NA;
    /* a difference inside the two measurements' own scatter is not one */
    double nb = base->noise_pct, nc = cur->noise_pct;
    if (isfinite(nb) && isfinite(nc) && nb >= 0 && nc >= 0 && nb + nc > threshold_pct) *bound_pct = nb + nc;
    double lim = 1 + *bound_pct / 100;
    if (base->median_ms / cur->median_ms > lim) return KB_CMP_FASTER;
    if (cur->median_ms / base->median_ms > lim) return KB_CMP_SLOWER;
    return KB_CMP_SAME;
}

/* ---- the Mann-Whitney rule -------------------------------------------------- */
const char *kb_cmp_rule_name(kb_cmp_rule r)
{
    switch (r) {
    case KB_CMP_RULE_NONE: return "-";
    case KB_CMP_RULE_THRESHOLD: return "threshold";
    case KB_CMP_RULE_MANN_WHITNEY: return "mann-whitney";
    }
    return "?";
}

typedef struct {
    double v;
    int in_a;
} mw_obs;

static int cmp_obs(const void *x, const void *y)
{
    double p = ((const mw_obs *)x)->v, q = ((const mw_obs *)y)->v;
    return (p > q) - (p < q);
}

double kb_mann_whitney_p(const double *a, int na, const double *b, int nb)
{
    if (!a || !b || na < 1 || nb < 1) return NAN;
    size_t n = (size_t)na + (size_t)nb;
    mw_obs *o = malloc(sizeof *o * n);
    if (!o) abort();
    for (int i = 0; i < na; i++) o[i] = (mw_obs){a[i], 1};
    for (int i = 0; i < nb; i++) o[(size_t)na + (size_t)i] = (mw_obs){b[i], 0};
    for (size_t i = 0; i < n; i++)
        if (!isfinite(o[i].v)) {
            free(o);
            return NAN;
        }
    qsort(o, n, sizeof *o, cmp_obs);
    /* rank sum of a, ties at their mean rank; the tie term sum(t^3 - t) */
    double ra = 0, ties = 0;
    int groups = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && o[j].v == o[i].v) j++;
        double t = (double)(j - i), rank = ((double)i + 1 + (double)j) / 2; /* ranks i+1 .. j */
        for (size_t k = i; k < j; k++)
            if (o[k].in_a) ra += rank;
        ties += t * t * t - t;
        groups++;
        i = j;
    }
    free(o);
    if (groups == 1) return 1; /* every value equal: no evidence either way */
    double N = (double)n, ma = na, mb = nb;
    double u = ra - ma * (ma + 1) / 2, mu = ma * mb / 2;
    double var = ma * mb / 12 * ((N + 1) - ties / (N * (N - 1)));
    if (!(var > 0)) return 1;
    /* |U - mu| less the continuity correction, two-sided: 2 * (1 - Phi(z)) */
    double z = (fabs(u - mu) - 0.5) / sqrt(var);
    double p = erfc(z / sqrt(2.0));
    return p > 1 ? 1 : p;
}

/* a change under the event timer's resolution is not called, by either rule */
static kb_cmp_verdict resolve(const kb_cmp_row *base, const kb_cmp_row *cur, kb_cmp_pair *out)
{
    if ((out->verdict == KB_CMP_FASTER || out->verdict == KB_CMP_SLOWER) &&
        fabs(cur->median_ms - base->median_ms) < KB_CMP_MIN_DELTA_MS) {
        out->verdict = KB_CMP_SAME;
        out->under_resolution = 1;
    }
    return out->verdict;
}

kb_cmp_verdict kb_cmp_decide(const kb_cmp_row *base, const kb_cmp_row *cur, double threshold_pct,
                             double min_effect_pct, kb_cmp_pair *out)
{
    out->verdict = kb_cmp_judge(base, cur, threshold_pct, &out->speedup, &out->bound_pct);
    out->p_value = NAN;
    out->rule = KB_CMP_RULE_NONE;
    out->under_resolution = 0;
    if (out->verdict == KB_CMP_FAILED || out->verdict == KB_CMP_NA) return out->verdict;
    if (base->nsamples < KB_CMP_MIN_SAMPLES || cur->nsamples < KB_CMP_MIN_SAMPLES || !base->samples_ms ||
        !cur->samples_ms) {
        out->rule = KB_CMP_RULE_THRESHOLD;
        return resolve(base, cur, out);
    }
    /* a difference must be both real (the test) and large enough to matter
     * (the medians, as printed, apart by min_effect_pct at least) */
    out->rule = KB_CMP_RULE_MANN_WHITNEY;
    out->bound_pct = min_effect_pct;
    out->p_value = kb_mann_whitney_p(base->samples_ms, base->nsamples, cur->samples_ms, cur->nsamples);
    double lim = 1 + min_effect_pct / 100;
    int significant = out->p_value < KB_CMP_ALPHA;
    if (significant && cur->median_ms > base->median_ms * lim) out->verdict = KB_CMP_SLOWER;
    else if (significant && base->median_ms > cur->median_ms * lim) out->verdict = KB_CMP_FASTER;
    else out->verdict = KB_CMP_SAME;
    return resolve(base, cur, out);
}

/* ---- a verdict's note ------------------------------------------------------ */
static void p_text(char *buf, size_t n, double p)
{
    if (p > 0 || !isfinite(p)) snprintf(buf, n, "%.2g", p);
    else snprintf(buf, n, "<1e-300"); /* below what a double holds */
}

/* why a verdict is what it is (compare_int.h) */
void kb_cmp_pair_note(const kb_cmp_pair *p, double threshold_pct, char *buf, size_t n)
{
    buf[0] = 0;
    if (p->verdict == KB_CMP_FAILED) {
        snprintf(buf, n, "new: %s", p->cur->error[0] ? p->cur->error : "verification failed");
    } else if (p->verdict == KB_CMP_NA) {
        if (!p->base->ok && !p->cur->ok) snprintf(buf, n, "failed in both");
        else if (!p->cur->ok) snprintf(buf, n, "new: %s", p->cur->error[0] ? p->cur->error : "verification failed");
        else if (!kb_cmp_timed(p->base)) snprintf(buf, n, "%s", p->base->ok ? "not timed in base" : "failed in base");
        else snprintf(buf, n, "not timed in new");
    } else if (p->rule == KB_CMP_RULE_MANN_WHITNEY) {
        char pv[32];
        p_text(pv, sizeof pv, p->p_value);
        if (p->under_resolution) /* real and over the minimum effect, but under the timer's resolution */
            snprintf(buf, n, "p=%s, change under %g us", pv, KB_CMP_MIN_DELTA_MS * 1e3);
        else if (p->verdict == KB_CMP_SAME && p->p_value < KB_CMP_ALPHA) /* real, but too small to call */
            snprintf(buf, n, "p=%s, change under %g%%", pv, p->bound_pct);
        else snprintf(buf, n, "p=%s", pv);
    } else if (p->rule == KB_CMP_RULE_THRESHOLD) {
        if (p->under_resolution) snprintf(buf, n, "change under %g us", KB_CMP_MIN_DELTA_MS * 1e3);
        else if (p->bound_pct > threshold_pct) snprintf(buf, n, "noise %.1f%%", p->bound_pct);
        if (p->base->nsamples || p->cur->nsamples) { /* why the samples kept were not tested */
            size_t l = strlen(buf);
            snprintf(buf + l, n - l, "%ssamples: base %d, new %d (the test needs %d each)", l ? "; " : "",
                     p->base->nsamples, p->cur->nsamples, KB_CMP_MIN_SAMPLES);
        }
    }
    if (p->kernel_differs) { /* the same case, not the same kernel: said on the row */
        size_t l = strlen(buf);
        snprintf(buf + l, n - l, "%skernel %s -> %s", l ? "; " : "", p->base->kernel, p->cur->kernel);
    }
    /* one line on the table, whatever the file's error or kernel holds: its
     * control characters (a newline, an ESC) spelled out (\n, \x1b) */
    char *raw = strdup(buf);
    if (!raw) abort();
    kb_escape_controls(raw, buf, n);
    free(raw);
}

/* ---- matching ------------------------------------------------------------- */
static int impl_wanted(const char *impls, const char *impl) { return !impls || !*impls || kb_list_has(impls, impl); }

static const kb_cmp_file *sort_file; /* qsort has no context argument in C11 */

static int cmp_rows(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    int c = strcmp(sort_file->rows[x].key, sort_file->rows[y].key);
    return c ? c : (x > y) - (x < y);
}

/* Every name in the --impl list must name an implementation in one of the files. */
static int check_impls(const kb_cmp_file *base, const kb_cmp_file *cur, const char *impls, char *err, size_t errlen)
{
    if (!impls || !*impls) return 0;
    if (impls[strlen(impls) - 1] == ',') { /* the loop below never sees the empty last name */
        kb_errf(err, errlen, "--impl: an empty name in the list '%s'", impls);
        return -1;
    }
    const kb_cmp_file *fs[2] = {base, cur};
    for (const char *p = impls; *p;) {
        size_t k = strcspn(p, ",");
        if (k == 0) { /* ",", "opt,", ",,": a name left out, not "every implementation" */
            kb_errf(err, errlen, "--impl: an empty name in the list '%s'", impls);
            return -1;
        }
        int found = 0;
        for (int f = 0; f < 2 && !found; f++)
            for (int i = 0; i < fs[f]->nrows && !found; i++)
                found = strlen(fs[f]->rows[i].impl) == k && !strncmp(fs[f]->rows[i].impl, p, k);
        if (!found) {
            sbuf have = {0}, names = {0}; /* "naive, opt" to print; "naive,opt" to look names up in */
            for (int f = 0; f < 2; f++)
                for (int i = 0; i < fs[f]->nrows; i++) {
                    const char *im = fs[f]->rows[i].impl;
                    if (names.s && kb_list_has(names.s, im)) continue;
                    sb_str(&names, names.len ? "," : "");
                    sb_str(&names, im);
                    sb_str(&have, have.len ? ", " : "");
                    sb_str(&have, im);
                }
            free(names.s);
            kb_errf(err, errlen, "--impl: no implementation '%.*s' in either file (they have: %s)", (int)k, p,
                    have.len ? have.s : "none");
            free(have.s);
            return -1;
        }
        p += k;
        if (*p) p++;
    }
    return 0;
}

/* what a file says of its run: "kbench VERSION (GIT), DEVICE, STARTED"
 * (for the CSV and the plot's title: control characters escaped) */
static void run_text(char *buf, size_t n, const kb_cmp_file *f)
{
    kb_errf(buf, n, "kbench %s%s%s%s, %s%s%s", f->version[0] ? f->version : "?", f->git[0] ? " (" : "", f->git,
            f->git[0] ? ")" : "", f->device[0] ? f->device : "device unknown", f->started[0] ? ", " : "", f->started);
}

int kb_cmp_match(const kb_cmp_file *base, const kb_cmp_file *cur, const char *impls, double threshold_pct,
                 kb_cmp_result *res, char *err, size_t errlen)
{
    return kb_cmp_match_effect(base, cur, impls, threshold_pct, KB_CMP_MIN_EFFECT_PCT, res, err, errlen);
}

int kb_cmp_match_effect(const kb_cmp_file *base, const kb_cmp_file *cur, const char *impls, double threshold_pct,
                        double min_effect_pct, kb_cmp_result *res, char *err, size_t errlen)
{
    memset(res, 0, sizeof *res);
    res->min_effect_pct = min_effect_pct;
    run_text(res->base_run, sizeof res->base_run, base);
    run_text(res->new_run, sizeof res->new_run, cur);
    if (check_impls(base, cur, impls, err, errlen)) return -1;
    res->pairs = calloc((size_t)(base->nrows + cur->nrows + 1), sizeof *res->pairs);
    int *order = malloc(sizeof *order * (size_t)(cur->nrows + 1));
    int *next = malloc(sizeof *next * (size_t)(cur->nrows + 1)); /* next[lo]: the first unused row of lo's key */
    char *used = calloc((size_t)cur->nrows + 1, 1);
    if (!res->pairs || !order || !next || !used) abort();
    int nc = 0;
    for (int i = 0; i < cur->nrows; i++)
        if (impl_wanted(impls, cur->rows[i].impl)) order[nc++] = i;
    sort_file = cur;
    qsort(order, (size_t)nc, sizeof *order, cmp_rows);
    for (int i = 0; i < nc; i++) next[i] = i;

    for (int i = 0; i < base->nrows; i++) {
        const kb_cmp_row *b = &base->rows[i];
        if (!impl_wanted(impls, b->impl)) continue;
        /* the first row of cur with this key (lower bound), then the first unused one:
         * a case that appears several times pairs up in order of appearance.
         * Rows of one key are used in order (order sorts them by key, then
         * place), so next[lo] says where the unused ones start: each base
         * row costs a binary search, however many rows share its key */
        int lo = 0, hi = nc;
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (strcmp(cur->rows[order[mid]].key, b->key) < 0) lo = mid + 1;
            else hi = mid;
        }
        int first = lo;
        if (lo < nc) lo = next[first];
        kb_cmp_pair *p = &res->pairs[res->npairs++];
        p->base = b;
        if (lo < nc && !strcmp(cur->rows[order[lo]].key, b->key)) {
            used[order[lo]] = 1;
            next[first] = lo + 1;
            p->cur = &cur->rows[order[lo]];
            kb_cmp_decide(b, p->cur, threshold_pct, min_effect_pct, p);
            res->by_threshold += p->rule == KB_CMP_RULE_THRESHOLD;
            res->by_mann_whitney += p->rule == KB_CMP_RULE_MANN_WHITNEY;
            p->kernel_differs = b->kernel[0] && p->cur->kernel[0] && strcmp(b->kernel, p->cur->kernel) != 0;
            res->kernel_differs += p->kernel_differs;
            res->cases++;
            switch (p->verdict) {
            case KB_CMP_FASTER: res->faster++; break;
            case KB_CMP_SLOWER: res->slower++; break;
            case KB_CMP_SAME: res->same++; break;
            case KB_CMP_FAILED: res->failed++; break;
            default: res->na++; break;
            }
        } else {
            p->verdict = KB_CMP_ONLY_BASE;
            p->speedup = p->p_value = NAN;
            p->bound_pct = threshold_pct;
            res->only_base++;
        }
    }
    for (int i = 0; i < cur->nrows; i++) {
        if (used[i] || !impl_wanted(impls, cur->rows[i].impl)) continue;
        kb_cmp_pair *p = &res->pairs[res->npairs++];
        p->cur = &cur->rows[i];
        p->verdict = KB_CMP_ONLY_NEW;
        p->speedup = p->p_value = NAN;
        p->bound_pct = threshold_pct;
        res->only_new++;
    }
    free(order);
    free(next);
    free(used);
    return 0;
}

void kb_cmp_result_free(kb_cmp_result *r)
{
    free(r->pairs);
    memset(r, 0, sizeof *r);
}

int kb_cmp_regressions(const kb_cmp_result *r) { return r->slower + r->failed; }

