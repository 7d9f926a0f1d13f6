/* kbench compare BASE.json NEW.json: per-case speedups between two result
 * files, exit 4 on a regression. Needs no GPU and no op descriptor: cases are
 * read from the files' own "params", so files from other kbench versions
 * compare too (a parameter added since then makes its cases unmatched).
 *
 * Matching: op, impl and every parameter, canonically (parameter order does
 * not matter, values compare as JSON). Verdicts: kb_cmp_decide, by one of two
 * rules: the Mann-Whitney U test on the rows' samples ("samples_ms") where both
 * keep 10 or more, else the threshold on the medians (kb_cmp_judge). */
#include "kbench.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_FILE_BYTES (512L << 20)

/* ---- a growable string -------------------------------------------------- */
typedef struct {
    char *s;
    size_t len, cap;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (b->len + n + 1 > cap) cap *= 2;
        char *p = realloc(b->s, cap);
        if (!p) abort();
        b->s = p;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
}

static void sb_str(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

static char *sb_take(sbuf *b)
{
    if (!b->s) sb_put(b, "", 0);
    return b->s;
}

/* ---- values as the sweep tables print them ------------------------------ */
static void fmt_number(char *buf, size_t n, double v)
{
    if (v == floor(v) && fabs(v) < 1e15) snprintf(buf, n, "%.0f", v);
    else snprintf(buf, n, "%.10g", v);
}

/* One parameter value: numbers like kb_format_value, int lists joined by '+',
 * anything else as compact JSON. */
static void value_text(sbuf *b, const cJSON *v)
{
    char num[64];
    int plain = cJSON_IsArray(v);
    const cJSON *e;
    if (plain) cJSON_ArrayForEach(e, v) plain &= cJSON_IsNumber(e);
    if (cJSON_IsString(v)) {
        sb_str(b, v->valuestring);
    } else if (cJSON_IsNumber(v)) {
        fmt_number(num, sizeof num, v->valuedouble);
        sb_str(b, num);
    } else if (plain) {
        int first = 1;
        cJSON_ArrayForEach(e, v) {
            fmt_number(num, sizeof num, e->valuedouble);
            if (!first) sb_str(b, "+");
            sb_str(b, num);
            first = 0;
        }
    } else {
        char *t = cJSON_PrintUnformatted(v);
        sb_str(b, t ? t : "?");
        free(t);
    }
}

static int empty_array(const cJSON *v) { return cJSON_IsArray(v) && cJSON_GetArraySize(v) == 0; }

static int cmp_names(const void *a, const void *b)
{
    const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;
    return strcmp(x->string ? x->string : "", y->string ? y->string : "");
}

/* The matching key: op, impl, then every parameter sorted by name, values as
 * compact JSON (so 16 and "16" differ, 1e-5 and 1e-05 do not). */
static char *row_key(const char *op, const char *impl, const cJSON *params)
{
    sbuf b = {0};
    sb_str(&b, op);
    sb_put(&b, "\x1f", 1);
    sb_str(&b, impl);
    int n = cJSON_GetArraySize(params);
    const cJSON **p = malloc(sizeof *p * (size_t)(n ? n : 1));
    if (!p) abort();
    int k = 0;
    const cJSON *e;
    /* a tunable at "auto" is the planner's choice, as in a file written
     * before the tunable existed: it leaves the key, so such files match */
    cJSON_ArrayForEach(e, params) if (!(cJSON_IsString(e) && !strcmp(e->valuestring, "auto"))) p[k++] = e;
    qsort(p, (size_t)k, sizeof *p, cmp_names);
    for (int i = 0; i < k; i++) {
        char *t = cJSON_PrintUnformatted(p[i]);
        sb_put(&b, "\x1f", 1);
        sb_str(&b, p[i]->string ? p[i]->string : "");
        sb_put(&b, "=", 1);
        sb_str(&b, t ? t : "?");
        free(t);
    }
    free(p);
    return sb_take(&b);
}

/* "pass=fwd dtype=bf16 layout=bshd seq=4096 ..." in the file's order, empty
 * lists left out: what `kbench rope` prints above each case's table. */
static char *row_label(const cJSON *params)
{
    sbuf b = {0};
    const cJSON *e;
    cJSON_ArrayForEach(e, params) {
        if (empty_array(e)) continue;
        if (b.len) sb_str(&b, " ");
        sb_str(&b, e->string ? e->string : "?");
        sb_str(&b, "=");
        value_text(&b, e);
    }
    char *raw = sb_take(&b);
    size_t n = 4 * strlen(raw) + 1; /* the label goes to the table: one line, whatever the file holds */
    char *out = malloc(n);
    if (!out) abort();
    kb_escape_controls(raw, out, n);
    free(raw);
    return out;
}

static int has_controls(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f) return 1;
    return 0;
}

/* ---- reading a result file ---------------------------------------------- */
static int opt_number(const cJSON *row, const char *key, double *out, int idx, const char *name, char *err,
                      size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(row, key);
    *out = NAN;
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsNumber(v)) {
        kb_errf(err, errlen, "%s: not a kbench result file (results[%d]: \"%s\" is not a number)", name, idx, key);
        return -1;
    }
    *out = v->valuedouble;
    return 0;
}

/* "samples_ms": absent or null (none), or an array of at most KB_CMP_MAX_SAMPLES
 * positive finite numbers; *out is owned by the caller (NULL when none). */
static int opt_samples(const cJSON *row, double **out, int *n, int idx, const char *name, char *err, size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(row, "samples_ms");
    *out = NULL;
    *n = 0;
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsArray(v)) {
        kb_errf(err, errlen, "%s: not a kbench result file (results[%d]: \"samples_ms\" is not an array of numbers)",
                name, idx);
        return -1;
    }
    int cnt = cJSON_GetArraySize(v);
    if (cnt > KB_CMP_MAX_SAMPLES) {
        kb_errf(err, errlen, "%s: not a kbench result file (results[%d]: \"samples_ms\" holds %d samples, at most %d)",
                name, idx, cnt, KB_CMP_MAX_SAMPLES);
        return -1;
    }
    if (cnt == 0) return 0;
    double *s = malloc(sizeof *s * (size_t)cnt);
    if (!s) abort();
    int k = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, v) {
        if (!cJSON_IsNumber(e) || !isfinite(e->valuedouble) || e->valuedouble <= 0) {
            kb_errf(err, errlen,
                    "%s: not a kbench result file (results[%d]: \"samples_ms\"[%d] is not a positive number of "
                    "milliseconds)",
                    name, idx, k);
            free(s);
            return -1;
        }
        s[k++] = e->valuedouble;
    }
    *out = s;
    *n = k;
    return 0;
}

static const char *opt_string(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) && v->valuestring ? v->valuestring : "";
}

int kb_cmp_parse(const char *text, const char *name, kb_cmp_file *f, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    snprintf(f->name, sizeof f->name, "%s", name);
    f->version = f->git = f->device = f->started = "";
    size_t skip = strspn(text, " \t\r\n");
    if (!text[skip]) { kb_errf(err, errlen, "%s: not JSON (the file is empty)", name); return -1; }
    const char *at;
    int line, col;
    cJSON *root = kb_json_parse(text, &at, &line, &col);
    if (!root) {
        kb_errf(err, errlen, "%s: not JSON (syntax error at line %d, column %d)", name, line, col);
        return -1;
    }
    f->root = root;
    const char *what = NULL;
    const cJSON *kb = cJSON_GetObjectItemCaseSensitive(root, "kbench");
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(root, "results");
    if (!cJSON_IsObject(root)) what = "the top level is not an object";
    else if (!cJSON_IsObject(kb)) what = "no \"kbench\" object; result files come from kbench --json or --out-dir";
    else if (!cJSON_IsArray(res)) what = "no \"results\" array";
    if (what) {
        kb_errf(err, errlen, "%s: not a kbench result file (%s)", name, what);
        goto fail;
    }
    f->version = opt_string(kb, "version");
    f->git = opt_string(kb, "git_commit");
    f->started = opt_string(kb, "started");
    f->device = opt_string(cJSON_GetObjectItemCaseSensitive(root, "device"), "name");

    int n = cJSON_GetArraySize(res);
    f->rows = calloc((size_t)(n ? n : 1), sizeof *f->rows);
    if (!f->rows) abort();
    const cJSON *o;
    int i = 0;
    cJSON_ArrayForEach(o, res) {
        kb_cmp_row *r = &f->rows[i];
        const cJSON *op = cJSON_GetObjectItemCaseSensitive(o, "op");
        const cJSON *impl = cJSON_GetObjectItemCaseSensitive(o, "impl");
        const cJSON *params = cJSON_GetObjectItemCaseSensitive(o, "params");
        const cJSON *ver = cJSON_GetObjectItemCaseSensitive(o, "verified");
        const cJSON *er = cJSON_GetObjectItemCaseSensitive(o, "error");
        what = !cJSON_IsObject(o)                                        ? "is not an object"
               : !cJSON_IsString(op) || !op->valuestring[0]              ? "no \"op\" string"
               : !cJSON_IsString(impl) || !impl->valuestring[0]          ? "no \"impl\" string"
               : has_controls(op->valuestring) || has_controls(impl->valuestring) ? "\"op\" or \"impl\" holds control characters"
               : !cJSON_IsObject(params)                                 ? "no \"params\" object"
               : ver && !cJSON_IsString(ver) && !cJSON_IsNull(ver)       ? "\"verified\" is not a string"
               : er && !cJSON_IsString(er) && !cJSON_IsNull(er)          ? "\"error\" is not a string"
                                                                         : NULL;
        if (what) {
            kb_errf(err, errlen, "%s: not a kbench result file (results[%d] %s)", name, i, what);
            goto fail;
        }
        if (opt_number(o, "median_ms", &r->median_ms, i, name, err, errlen) ||
            opt_number(o, "noise_pct", &r->noise_pct, i, name, err, errlen) ||
            opt_number(o, "p25_ms", &r->p25_ms, i, name, err, errlen) ||
            opt_number(o, "p75_ms", &r->p75_ms, i, name, err, errlen) ||
            opt_samples(o, &r->samples_ms, &r->nsamples, i, name, err, errlen))
            goto fail; /* opt_samples keeps nothing on failure */
        r->op = op->valuestring;
        r->impl = impl->valuestring;
        r->params = params;
        r->verified = opt_string(o, "verified");
        r->error = opt_string(o, "error");
        r->kernel = opt_string(o, "kernel");
        r->ok = strcmp(r->verified, "fail") != 0 && !r->error[0];
        r->index = i;
        r->key = row_key(r->op, r->impl, params);
        r->label = row_label(params);
        f->nrows = ++i;
    }
    return 0;
fail:
    kb_cmp_free(f);
    return -1;
}

int kb_cmp_load(const char *path, kb_cmp_file *f, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    struct stat sb;
    if (stat(path, &sb)) {
        if (errno == ENOENT) kb_errf(err, errlen, "%s: not found", path);
        else kb_errf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        return -1;
    }
    if (S_ISDIR(sb.st_mode)) { kb_errf(err, errlen, "%s: is a directory, not a result file", path); return -1; }
    if (!S_ISREG(sb.st_mode)) { /* a FIFO with no writer would block in fopen for ever */
        kb_errf(err, errlen, "%s: not a regular file (a device or a pipe); save the results to a file", path);
        return -1;
    }
    FILE *fp = fopen(path, "rb");
    if (!fp) { kb_errf(err, errlen, "%s: cannot read: %s", path, strerror(errno)); return -1; }
    sbuf b = {0};
    char chunk[65536];
    size_t got;
    int toobig = 0;
    while ((got = fread(chunk, 1, sizeof chunk, fp)) > 0) {
        if ((long)(b.len + got) > MAX_FILE_BYTES) { toobig = 1; break; }
        sb_put(&b, chunk, got);
    }
    int rerr = ferror(fp) ? errno : 0;
    fclose(fp);
    char *text = sb_take(&b);
    int rc = -1;
    if (rerr) kb_errf(err, errlen, "%s: cannot read: %s", path, strerror(rerr));
    else if (toobig) kb_errf(err, errlen, "%s: not a kbench result file (larger than %ld MiB)", path, MAX_FILE_BYTES >> 20);
    else if (strlen(text) != b.len)
        kb_errf(err, errlen, "%s: not JSON (binary data: a NUL byte at offset %zu)", path, strlen(text));
    else rc = kb_cmp_parse(text, path, f, err, errlen);
    free(text);
    return rc;
}

void kb_cmp_free(kb_cmp_file *f)
{
    for (int i = 0; i < f->nrows; i++) {
        free(f->rows[i].key);
        free(f->rows[i].label);
        free(f->rows[i].samples_ms);
    }
    free(f->rows);
    cJSON_Delete(f->root);
    f->rows = NULL;
    f->root = NULL;
    f->nrows = 0;
}

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

static int timed(const kb_cmp_row *r) { return isfinite(r->median_ms) && r->median_ms > 0; }

kb_cmp_verdict kb_cmp_judge(const kb_cmp_row *base, const kb_cmp_row *cur, double threshold_pct, double *speedup,
                            double *bound_pct)
{
    *speedup = timed(base) && timed(cur) ? base->median_ms / cur->median_ms : NAN;
    *bound_pct = threshold_pct;
    if (base->ok && !cur->ok) return KB_CMP_FAILED;
    if (!cur->ok || !timed(base) || !timed(cur)) return KB_CMP_NA;
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

kb_cmp_verdict kb_cmp_decide(const kb_cmp_row *base, const kb_cmp_row *cur, double threshold_pct,
                             double min_effect_pct, kb_cmp_pair *out)
{
    out->verdict = kb_cmp_judge(base, cur, threshold_pct, &out->speedup, &out->bound_pct);
    out->p_value = NAN;
    out->rule = KB_CMP_RULE_NONE;
    if (out->verdict == KB_CMP_FAILED || out->verdict == KB_CMP_NA) return out->verdict;
    if (base->nsamples < KB_CMP_MIN_SAMPLES || cur->nsamples < KB_CMP_MIN_SAMPLES || !base->samples_ms ||
        !cur->samples_ms) {
        out->rule = KB_CMP_RULE_THRESHOLD;
        return out->verdict;
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
    return out->verdict;
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
            sbuf have = {0}; /* ", naive, opt, " */
            for (int f = 0; f < 2; f++)
                for (int i = 0; i < fs[f]->nrows; i++) {
                    const char *im = fs[f]->rows[i].impl;
                    size_t n = strlen(im);
                    int dup = 0;
                    for (const char *h = have.s; h && (h = strstr(h, im)) && !dup; h++)
                        dup = h >= have.s + 2 && !strncmp(h - 2, ", ", 2) && !strncmp(h + n, ", ", 2);
                    if (dup) continue;
                    if (!have.len) sb_str(&have, ", ");
                    sb_str(&have, im);
                    sb_str(&have, ", ");
                }
            if (have.len) have.s[have.len - 2] = 0;
            kb_errf(err, errlen, "--impl: no implementation '%.*s' in either file (they have: %s)", (int)k, p,
                 have.len ? have.s + 2 : "none");
            free(have.s);
            return -1;
        }
        p += k;
        if (*p) p++;
    }
    return 0;
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
    if (check_impls(base, cur, impls, err, errlen)) return -1;
    res->pairs = calloc((size_t)(base->nrows + cur->nrows + 1), sizeof *res->pairs);
    int *order = malloc(sizeof *order * (size_t)(cur->nrows + 1));
    char *used = calloc((size_t)cur->nrows + 1, 1);
    if (!res->pairs || !order || !used) abort();
    int nc = 0;
    for (int i = 0; i < cur->nrows; i++)
        if (impl_wanted(impls, cur->rows[i].impl)) order[nc++] = i;
    sort_file = cur;
    qsort(order, (size_t)nc, sizeof *order, cmp_rows);

    for (int i = 0; i < base->nrows; i++) {
        const kb_cmp_row *b = &base->rows[i];
        if (!impl_wanted(impls, b->impl)) continue;
        /* the first row of cur with this key (lower bound), then the first unused one:
         * a case that appears several times pairs up in order of appearance */
        int lo = 0, hi = nc;
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (strcmp(cur->rows[order[mid]].key, b->key) < 0) lo = mid + 1;
            else hi = mid;
        }
        while (lo < nc && used[order[lo]] && !strcmp(cur->rows[order[lo]].key, b->key)) lo++;
        kb_cmp_pair *p = &res->pairs[res->npairs++];
        p->base = b;
        if (lo < nc && !strcmp(cur->rows[order[lo]].key, b->key)) {
            used[order[lo]] = 1;
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
    free(used);
    return 0;
}

void kb_cmp_result_free(kb_cmp_result *r)
{
    free(r->pairs);
    memset(r, 0, sizeof *r);
}

int kb_cmp_regressions(const kb_cmp_result *r) { return r->slower + r->failed; }

/* ---- output --------------------------------------------------------------- */
static void p_text(char *buf, size_t n, double p);

/* Why a verdict is what it is, where that is not obvious; "" otherwise. */
static void pair_note(const kb_cmp_pair *p, double threshold_pct, char *buf, size_t n)
{
    buf[0] = 0;
    if (p->verdict == KB_CMP_FAILED) {
        snprintf(buf, n, "new: %s", p->cur->error[0] ? p->cur->error : "verification failed");
    } else if (p->verdict == KB_CMP_NA) {
        if (!p->base->ok && !p->cur->ok) snprintf(buf, n, "failed in both");
        else if (!p->cur->ok) snprintf(buf, n, "new: %s", p->cur->error[0] ? p->cur->error : "verification failed");
        else if (!timed(p->base)) snprintf(buf, n, "%s", p->base->ok ? "not timed in base" : "failed in base");
        else snprintf(buf, n, "not timed in new");
    } else if (p->rule == KB_CMP_RULE_MANN_WHITNEY) {
        char pv[32];
        p_text(pv, sizeof pv, p->p_value);
        if (p->verdict == KB_CMP_SAME && p->p_value < KB_CMP_ALPHA) /* real, but too small to call */
            snprintf(buf, n, "p=%s, change under %g%%", pv, p->bound_pct);
        else snprintf(buf, n, "p=%s", pv);
    } else if (p->rule == KB_CMP_RULE_THRESHOLD) {
        if (p->bound_pct > threshold_pct) snprintf(buf, n, "noise %.1f%%", p->bound_pct);
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
    for (char *s = buf; *s; s++)
        if (*s == '\n' || *s == '\r') *s = ' ';
}

static void p_text(char *buf, size_t n, double p)
{
    if (p > 0 || !isfinite(p)) snprintf(buf, n, "%.2g", p);
    else snprintf(buf, n, "<1e-300"); /* below what a double holds */
}

static void ms_text(char *buf, size_t n, const kb_cmp_row *r)
{
    if (r && timed(r)) snprintf(buf, n, "%.4f", r->median_ms);
    else snprintf(buf, n, "-");
}

static void print_pair(FILE *f, const kb_cmp_pair *p, int wop, int wlab, double threshold_pct)
{
    char bm[32], nm[32], sp[32] = "-", note[512];
    ms_text(bm, sizeof bm, p->base);
    ms_text(nm, sizeof nm, p->cur);
    if (isfinite(p->speedup)) snprintf(sp, sizeof sp, "%.2fx", p->speedup);
    pair_note(p, threshold_pct, note, sizeof note);
    fprintf(f, "%-*s  %-*s  %-10s %10s %10s %8s  %-7s  %-*s%s%s\n", wop, p->base->op, wlab, p->base->label, p->base->impl,
            bm, nm, sp, kb_cmp_verdict_name(p->verdict), note[0] ? 12 : 0, kb_cmp_rule_name(p->rule),
            note[0] ? "  " : "", note);
}

static void describe(FILE *f, const char *tag, const kb_cmp_file *file)
{
    fprintf(f, "%-4s %s: kbench %s", tag, file->name, file->version[0] ? file->version : "?");
    if (file->git[0]) fprintf(f, " (%s)", file->git);
    fprintf(f, ", %s", file->device[0] ? file->device : "device unknown");
    if (file->started[0]) fprintf(f, ", %s", file->started);
    fprintf(f, ", %d rows\n", file->nrows);
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

static void csv_str(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\n\r")) { fputs(s, f); return; }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s == '\n' || *s == '\r' ? ' ' : *s, f);
    }
    fputc('"', f);
}

static void csv_num(FILE *f, double v, const char *fmt)
{
    fputc(',', f);
    if (isfinite(v)) fprintf(f, fmt, v);
}

int kb_cmp_write_csv(const char *path, const kb_cmp_result *r, double threshold_pct, char *err, size_t errlen)
{
    FILE *f = fopen(path, "w");
    if (!f) { kb_errf(err, errlen, "--csv: cannot write %s: %s", path, strerror(errno)); return -1; }
    /* parameter columns: the union over every row, in order of appearance */
    const char **cols = malloc(sizeof *cols * 64);
    int ncols = 0, capcols = 64;
    if (!cols) abort();
    for (int i = 0; i < r->npairs; i++)
        for (int s = 0; s < 2; s++) {
            const kb_cmp_row *row = s ? r->pairs[i].cur : r->pairs[i].base;
            if (!row) continue;
            const cJSON *e;
            cJSON_ArrayForEach(e, row->params) {
                const char *nm = e->string ? e->string : "";
                int seen = 0;
                for (int k = 0; k < ncols && !seen; k++) seen = !strcmp(cols[k], nm);
                if (seen) continue;
                if (ncols == capcols) {
                    capcols *= 2;
                    const char **c2 = realloc(cols, sizeof *cols * (size_t)capcols);
                    if (!c2) abort();
                    cols = c2;
                }
                cols[ncols++] = nm;
            }
        }
    fputs("op,impl", f);
    for (int k = 0; k < ncols; k++) {
        fputc(',', f);
        csv_str(f, cols[k]);
    }
    fputs(",base_median_ms,new_median_ms,base_noise_pct,new_noise_pct,speedup,threshold_pct,verdict,rule,p_value,note\n",
          f);
    for (int i = 0; i < r->npairs; i++) {
        const kb_cmp_pair *p = &r->pairs[i];
        const kb_cmp_row *row = p->base ? p->base : p->cur;
        csv_str(f, row->op);
        fputc(',', f);
        csv_str(f, row->impl);
        for (int k = 0; k < ncols; k++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(row->params, cols[k]);
            fputc(',', f);
            if (!v) continue;
            sbuf b = {0};
            value_text(&b, v);
            csv_str(f, sb_take(&b));
            free(b.s);
        }
        csv_num(f, p->base && timed(p->base) ? p->base->median_ms : NAN, "%.6f");
        csv_num(f, p->cur && timed(p->cur) ? p->cur->median_ms : NAN, "%.6f");
        csv_num(f, p->base ? p->base->noise_pct : NAN, "%.3f");
        csv_num(f, p->cur ? p->cur->noise_pct : NAN, "%.3f");
        csv_num(f, p->speedup, "%.4f");
        csv_num(f, p->base && p->cur ? p->bound_pct : NAN, "%.3f");
        fputc(',', f);
        csv_str(f, kb_cmp_verdict_name(p->verdict));
        fputc(',', f);
        if (p->rule != KB_CMP_RULE_NONE) csv_str(f, kb_cmp_rule_name(p->rule));
        csv_num(f, p->p_value, "%.4g");
        char note[512] = "";
        if (p->base && p->cur) pair_note(p, threshold_pct, note, sizeof note);
        fputc(',', f);
        csv_str(f, note);
        fputc('\n', f);
    }
    free(cols);
    if (fclose(f)) { kb_errf(err, errlen, "--csv: cannot write %s: %s", path, strerror(errno)); return -1; }
    return 0;
}

/* ---- the subcommand ------------------------------------------------------- */
static void print_help(FILE *f)
{
    fprintf(f,
            "usage: kbench compare BASE.json NEW.json [--threshold PCT] [--min-effect PCT] [--impl LIST]\n"
            "                      [--csv FILE] [--quiet]\n\n"
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
            "(E: --min-effect). Clocks drift by about 1%% from run to run, so a smaller change is\n"
            "not called even when the test finds it significant. Rows without samples, or with\n"
            "fewer, use the threshold rule; each line says which rule decided it.\n"
            "Files from different devices (name) or kbench versions are compared all the same,\n"
            "with a note on stderr.\n\n"
            "Options:\n"
            "  --threshold PCT        the change in median that counts, in %% [5] (rule threshold)\n"
            "  --min-effect PCT       the smallest change in median that the mann-whitney rule\n"
            "                         calls, in %% [%g]: run-to-run drift of clocks is of this order\n"
            "  --impl LIST            only these implementations (comma list: naive,opt)\n"
            "  --csv FILE             also write the comparison to FILE, one row per case (only-in\n"
            "                         cases included): op, impl, parameters, both medians and noise,\n"
            "                         speedup, threshold_pct (the change that counts: under\n"
            "                         mann-whitney the minimum effect), verdict, rule, p_value, note\n"
            "  --quiet                print only the regressions and the summary line\n"
            "  -h, --help             this help\n\n"
            "Output: a line per matched case (op, case, impl, base_ms, new_ms, speedup, verdict, rule,\n"
            "note: p=P under mann-whitney), the cases in one file only, and\n"
            "  compare: N cases, N faster, N slower, N same, N only in base, N only in new; by rule:\n"
            "  N threshold, N mann-whitney\n"
            "(N cases: those in both files; ', N FAILED' and ', N n/a' follow the counts when there\n"
            "are any; FAILED and n/a come from no rule).\n\n"
            "Exit codes: 0 no regression, 4 at least one case slower or FAILED, 2 usage error or a\n"
            "file that is missing, not JSON or not a kbench result file.\n\n"
            "Examples:\n"
            "  kbench compare results/main/rope.json results/rope.json\n"
            "  kbench compare base.json new.json --threshold 10 --impl opt --csv results/compare.csv\n",
            KB_CMP_MIN_SAMPLES, KB_CMP_ALPHA, KB_CMP_MIN_EFFECT_PCT);
}

/* one line: what the user typed is echoed with its control characters escaped */
static int usage(const char *fmt, ...)
{
    char raw[KB_ERRLEN], esc[KB_ERRLEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    kb_escape_controls(raw, esc, sizeof esc);
    fprintf(stderr, "kbench compare: %s\n", esc);
    return KB_EXIT_USAGE;
}

enum { O_THRESHOLD = 1000, O_MIN_EFFECT, O_IMPL, O_CSV, O_QUIET };

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

int kb_compare_main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"threshold", required_argument, NULL, O_THRESHOLD},
        {"min-effect", required_argument, NULL, O_MIN_EFFECT},
        {"impl", required_argument, NULL, O_IMPL},
        {"csv", required_argument, NULL, O_CSV},
        {"quiet", no_argument, NULL, O_QUIET},
        {"help", no_argument, NULL, 'h'},
        {0},
    };
    const char *cands[] = {"threshold", "min-effect", "impl", "csv", "quiet", "help"};
    const int ncands = (int)(sizeof cands / sizeof *cands);
    double threshold = 5, min_effect = KB_CMP_MIN_EFFECT_PCT;
    const char *impls = "", *csv = NULL;
    int quiet = 0, c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        const char *bad = argv[optind - 1];
        switch (c) {
        case 'h': print_help(stdout); return KB_EXIT_OK;
        case O_THRESHOLD:
            if (parse_pct(optarg, &threshold)) return usage("--threshold: expected a percentage >= 0, got '%s'", optarg);
            break;
        case O_MIN_EFFECT:
            if (parse_pct(optarg, &min_effect))
                return usage("--min-effect: expected a percentage >= 0, got '%s'", optarg);
            break;
        case O_IMPL:
            if (!*optarg) {
                fprintf(stderr, "kbench compare: --impl: an empty list (leave --impl out to compare every implementation)\n");
                return KB_EXIT_USAGE;
            }
            impls = optarg;
            break;
        case O_CSV: csv = optarg; break;
        case O_QUIET: quiet = 1; break;
        case ':': return usage("option '%s' needs a value (see: kbench compare --help)", bad);
        default:
            if (optopt > 0 && optopt < 0x7f) /* a short option, maybe inside a cluster (-qx): name it, not the word */
                return usage("unknown option '-%c' (see: kbench compare --help)", optopt);
            if (bad[0] == '-' && bad[1] == '-') {
                char word[128];
                snprintf(word, sizeof word, "%s", bad + 2);
                word[strcspn(word, "=")] = 0;
                for (int i = 0; i < ncands; i++)
                    if (!strcmp(word, cands[i])) return usage("option '--%s' takes no value", word);
                const char *near = kb_nearest(word, cands, ncands);
                if (near) return usage("unknown option '--%s' (did you mean --%s?)", word, near);
                return usage("unknown option '--%s' (see: kbench compare --help)", word);
            }

            return usage("unknown option '%s' (see: kbench compare --help)", bad);
        }
    }
    int npos = argc - optind;
    if (npos != 2)
        return usage("want two result files, BASE.json and NEW.json (got %d; see: kbench compare --help)", npos);
    const char *bpath = argv[optind], *npath = argv[optind + 1];

    char err[KB_ERRLEN];
    kb_cmp_file base, cur;
    if (kb_cmp_load(bpath, &base, err, sizeof err)) return usage("%s", err);
    if (kb_cmp_load(npath, &cur, err, sizeof err)) {
        kb_cmp_free(&base);
        return usage("%s", err);
    }
    kb_cmp_result res;
    int rc = KB_EXIT_USAGE;
    if (kb_cmp_match_effect(&base, &cur, impls, threshold, min_effect, &res, err, sizeof err)) {
        usage("%s", err);
        goto out_files;
    }
    if (csv && kb_cmp_write_csv(csv, &res, threshold, err, sizeof err)) {
        usage("%s", err);
        goto out;
    }
    if (base.device[0] && cur.device[0] && strcmp(base.device, cur.device))
        fprintf(stderr, "kbench compare: note: different devices: base %s, new %s\n", base.device, cur.device);
    if (base.version[0] && cur.version[0] && strcmp(base.version, cur.version))
        fprintf(stderr, "kbench compare: note: different kbench versions: base %s, new %s\n", base.version, cur.version);
    if (res.cases == 0 && res.only_base && res.only_new)
        fprintf(stderr, "kbench compare: note: no case is in both files (same op, impl and parameters)\n");
    kb_cmp_print(stdout, &base, &cur, &res, threshold, quiet);
    rc = kb_cmp_regressions(&res) ? KB_EXIT_REGRESSION : KB_EXIT_OK;
out:
    kb_cmp_result_free(&res);
out_files:
    kb_cmp_free(&base);
    kb_cmp_free(&cur);
    return rc;
}
