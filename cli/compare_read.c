/* kbench compare: reading a result file into rows (kb_cmp_parse, kb_cmp_load):
 * each row's key (op, impl and every parameter, canonically: parameter order
 * does not matter, values compare as JSON), its label, its figures and its
 * samples. */
#include "compare.h"
#include "compare_int.h"
#include "core/config.h"
#include "core/errors.h"
#include "report/json.h"

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
void sb_put(sbuf *b, const char *s, size_t n)
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

void sb_str(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

char *sb_take(sbuf *b)
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
void kb_cmp_value_text(sbuf *b, const cJSON *v)
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
        kb_cmp_value_text(&b, e);
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
    int cut = 0;
    cJSON *root = kb_json_result(text, name, &cut, err, errlen);
    if (!root) return -1;
    f->root = root;
    f->cut = cut;
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
    char *text;
    if (kb_read_text(path, "result file", MAX_FILE_BYTES, &text, err, errlen)) return -1;
    int rc = kb_cmp_parse(text, path, f, err, errlen);
    free(text);
    if (!rc && f->cut) {
        char name[1100];
        kb_escape_controls(path, name, sizeof name);
        fprintf(stderr, "kbench compare: %s: its last row was cut (a run killed while writing it): the %d rows before it are compared\n",
                name, f->nrows);
    }
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

