/* kbench compare --csv: the comparison as a CSV (kb_cmp_write_csv), a row a
 * case. The parameter columns are the union of every row's parameters, in
 * order of appearance, found through a hash of their names: the cost is the
 * cells written, whatever the number of columns. The text is made in memory
 * and written whole (a temporary renamed over the file): a write that fails
 * leaves the file as it was. */
#include "compare.h"
#include "compare_int.h"
#include "core/errors.h"
#include "report/csv.h"
#include "report/files.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the parameter columns: names in order of appearance, and a hash of them */
typedef struct {
    const char **names; /* in order of appearance */
    int n, cap;
    int *slot;          /* open addressing: a column's index + 1, 0 empty */
    size_t nslots;      /* a power of two, at least twice n */
} csv_cols;

static uint64_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

/* where name is, or the empty slot where it would go */
static size_t col_slot(const csv_cols *c, const char *name)
{
    size_t m = c->nslots - 1, i = (size_t)name_hash(name) & m;
    while (c->slot[i] && strcmp(c->names[c->slot[i] - 1], name)) i = (i + 1) & m;
    return i;
}

/* name's column, or -1 */
static int col_find(const csv_cols *c, const char *name)
{
    int k = c->slot[col_slot(c, name)];
    return k - 1;
}

static void col_grow(csv_cols *c)
{
    free(c->slot);
    c->nslots = c->nslots ? 2 * c->nslots : 64;
    c->slot = calloc(c->nslots, sizeof *c->slot);
    if (!c->slot) abort();
    for (int k = 0; k < c->n; k++) c->slot[col_slot(c, c->names[k])] = k + 1;
}

static void col_add(csv_cols *c, const char *name)
{
    if (!c->nslots) col_grow(c);
    size_t i = col_slot(c, name);
    if (c->slot[i]) return;
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 64;
        const char **nn = realloc(c->names, sizeof *nn * (size_t)c->cap);
        if (!nn) abort();
        c->names = nn;
    }
    c->names[c->n++] = name;
    c->slot[i] = c->n;
    if ((size_t)c->n * 2 > c->nslots) col_grow(c);
}

/* the union of the rows' parameters, in order of appearance */
static void csv_columns(const kb_cmp_result *r, csv_cols *c)
{
    memset(c, 0, sizeof *c);
    col_grow(c);
    for (int i = 0; i < r->npairs; i++)
        for (int s = 0; s < 2; s++) {
            const kb_cmp_row *row = s ? r->pairs[i].cur : r->pairs[i].base;
            if (!row) continue;
            const cJSON *e;
            cJSON_ArrayForEach(e, row->params) col_add(c, e->string ? e->string : "");
        }
}

/* ---- the rows --------------------------------------------------------- */
static void csv_num(FILE *f, double v, const char *fmt)
{
    fputc(',', f);
    if (isfinite(v)) fprintf(f, fmt, v);
}

/* a pair's parameter cells; vals: scratch of c->n entries, NULL on entry and on return */
static void csv_params(FILE *f, const kb_cmp_row *row, const csv_cols *c, const cJSON **vals)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, row->params) {
        int k = col_find(c, e->string ? e->string : "");
        if (k >= 0 && !vals[k]) vals[k] = e; /* the first, as a lookup by name finds */
    }
    for (int k = 0; k < c->n; k++) {
        fputc(',', f);
        if (!vals[k]) continue;
        sbuf b = {0};
        kb_cmp_value_text(&b, vals[k]);
        kb_csv_str(f, sb_take(&b));
        free(b.s);
        vals[k] = NULL;
    }
}

static void csv_pair(FILE *f, const kb_cmp_result *r, const kb_cmp_pair *p, double threshold_pct, const csv_cols *c,
                     const cJSON **vals)
{
    const kb_cmp_row *row = p->base ? p->base : p->cur;
    kb_csv_str(f, row->op);
    fputc(',', f);
    kb_csv_str(f, row->impl);
    csv_params(f, row, c, vals);
    csv_num(f, p->base && kb_cmp_timed(p->base) ? p->base->median_ms : NAN, "%.6f");
    csv_num(f, p->cur && kb_cmp_timed(p->cur) ? p->cur->median_ms : NAN, "%.6f");
    csv_num(f, p->base ? p->base->noise_pct : NAN, "%.3f");
    csv_num(f, p->cur ? p->cur->noise_pct : NAN, "%.3f");
    csv_num(f, p->speedup, "%.4f");
    csv_num(f, p->base && p->cur ? p->bound_pct : NAN, "%.3f");
    fputc(',', f);
    kb_csv_str(f, kb_cmp_verdict_name(p->verdict));
    fputc(',', f);
    if (p->rule != KB_CMP_RULE_NONE) kb_csv_str(f, kb_cmp_rule_name(p->rule));
    csv_num(f, p->p_value, "%.4g");
    char note[512] = "";
    if (p->base && p->cur) kb_cmp_pair_note(p, threshold_pct, note, sizeof note);
    fputc(',', f);
    kb_csv_str(f, note);
    fputc(',', f);
    kb_csv_str(f, r->base_run);
    fputc(',', f);
    kb_csv_str(f, r->new_run);
    fputc('\n', f);
}

/* the CSV's whole text (malloc'd, ending in a newline) */
static char *csv_text(const kb_cmp_result *r, double threshold_pct)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) abort();
    csv_cols c;
    csv_columns(r, &c);
    const cJSON **vals = calloc((size_t)c.n + 1, sizeof *vals);
    if (!vals) abort();
    fputs("op,impl", f);
    for (int k = 0; k < c.n; k++) {
        fputc(',', f);
        kb_csv_str(f, c.names[k]);
    }
    fputs(",base_median_ms,new_median_ms,base_noise_pct,new_noise_pct,speedup,threshold_pct,verdict,rule,p_value,note,"
          "base_run,new_run\n",
          f);
    for (int i = 0; i < r->npairs; i++) csv_pair(f, r, &r->pairs[i], threshold_pct, &c, vals);
    free(vals);
    free(c.names);
    free(c.slot);
    if (fclose(f) || !text) abort(); /* a stream in memory fails only when memory does */
    return text;
}

int kb_cmp_write_csv(const char *path, const kb_cmp_result *r, double threshold_pct, char *err, size_t errlen)
{
    char *text = csv_text(r, threshold_pct), werr[KB_ERRLEN];
    size_t len = strlen(text);
    if (len && text[len - 1] == '\n') text[len - 1] = 0; /* kb_write_whole adds the last newline */
    int rc = kb_write_whole(path, text, werr, sizeof werr);
    free(text);
    if (rc) kb_errf(err, errlen, "--csv: %s", werr);
    return rc ? -1 : 0;
}
