/* Parameter tables: parsing, bounds, formatting, and sweep expansion. */
#include "errors.h"
#include "op.h"
#include "params.h"
#include "../../include/kb_dtype.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <unistd.h>

int kb_list_has(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *s = list ? list : ""; *s;) {
        size_t l = strcspn(s, ",");
        if (l == n && !strncmp(s, name, n)) return 1;
        s += l + (s[l] == ',');
    }
    return 0;
}

/* An int list's values live in one block that counts its holders: an axis's
 * value and every case expanded from it share the block (the cases of a
 * sweep over a 5000-long seqlens held a copy each: a million cases, 20 GB).
 * The last holder to let go frees it. */
typedef struct {
    long holders;
    long sum; /* of the values, and their largest (0 for none): an op reads them a case */
    int max, pad;
    int v[];
} list_block;

static list_block *block_of(const int *l) { return (list_block *)(void *)((char *)(uintptr_t)l - offsetof(list_block, v)); }

/* a new list of the n values v, one holder; NULL when out of memory */
static int *list_new(const int *v, int n)
{
    list_block *b = malloc(sizeof *b + (size_t)n * sizeof *v);
    if (!b) return NULL;
    b->holders = 1;
    b->sum = 0;
    b->max = 0;
    for (int i = 0; i < n; i++) {
        b->v[i] = v[i];
        b->sum += v[i];
        if (v[i] > b->max) b->max = v[i];
    }
    return b->v;
}

long kb_list_sum(const kb_val *v) { return v->nlist ? block_of(v->list)->sum : 0; }

int kb_list_max(const kb_val *v) { return v->nlist ? block_of(v->list)->max : 0; }

static void list_hold(int *l)
{
    if (l) __atomic_add_fetch(&block_of(l)->holders, 1, __ATOMIC_RELAXED);
}

static void list_drop(int *l)
{
    if (l && __atomic_sub_fetch(&block_of(l)->holders, 1, __ATOMIC_ACQ_REL) == 0) free(block_of(l));
}

int kb_val_list(kb_val *v, const int *vals, int n)
{
    v->list = n > 0 ? list_new(vals, n) : NULL;
    v->nlist = v->list ? n : 0;
    return n > 0 && !v->list ? -1 : 0;
}

void kb_val_list_drop(kb_val *v)
{
    list_drop(v->list);
    v->list = NULL;
    v->nlist = 0;
}

void kb_vals_free(kb_val *vals, int n)
{
    for (int k = 0; vals && k < n; k++) list_drop(vals[k].list);
    free(vals);
}

int kb_param_index(const kb_op *op, const char *name)
{
    for (int i = 0; i < op->nparams; i++)
        if (strcmp(op->params[i].name, name) == 0) return i;
    return -1;
}

const kb_val *kb_case_val(const kb_case *c, const char *name)
{
    int i = kb_param_index(c->op, name);
    return i < 0 ? NULL : &c->v[i];
}

long kb_case_int(const kb_case *c, const char *name)
{
    const kb_val *v = kb_case_val(c, name);
    return v ? (long)v->num : 0;
}

double kb_case_float(const kb_case *c, const char *name)
{
    const kb_val *v = kb_case_val(c, name);
    return v ? v->num : 0.0;
}

#define KB_MAX_CHOICES 32 /* the most choices a did-you-mean weighs */

int kb_choice_count(const kb_param *p)
{
    if (p->type != KB_P_ENUM) return 0;
    int n = 1;
    for (const char *s = p->choices; *s; s++) n += *s == ',';
    return n;
}

const char *kb_choice(const kb_param *p, int idx, char *buf, size_t n)
{
    const char *s = p->choices;
    for (int i = 0; i < idx && s; i++) {
        s = strchr(s, ',');
        if (s) s++;
    }
    if (!s) { snprintf(buf, n, "?"); return buf; }
    size_t len = strcspn(s, ",");
    if (len >= n) len = n - 1;
    memcpy(buf, s, len);
    buf[len] = 0;
    return buf;
}

int kb_case_choice_num(const kb_case *c, int k, int auto_value)
{
    char buf[32];
    const char *s = kb_choice(&c->op->params[k], (int)c->v[k].num, buf, sizeof buf);
    return strcmp(s, "auto") ? atoi(s) : auto_value;
}

static int choice_index(const kb_param *p, const char *word, size_t len)
{
    char buf[64];
    int n = kb_choice_count(p);
    for (int i = 0; i < n; i++) {
        kb_choice(p, i, buf, sizeof buf);
        if (strlen(buf) == len && strncmp(buf, word, len) == 0) return i;
    }
    return -1;
}

/* Enum strings come from a small ring of buffers, one ring a thread: the
 * cases' references run on threads of their own (kb_case_dtype) while the
 * main thread sets up and labels the next cases. */
const char *kb_case_enum(const kb_case *c, const char *name)
{
    static _Thread_local char ring[8][64];
    static _Thread_local int next;
    int i = kb_param_index(c->op, name);
    if (i < 0 || c->op->params[i].type != KB_P_ENUM) return NULL;
    char *buf = ring[next++ & 7];
    return kb_choice(&c->op->params[i], (int)c->v[i].num, buf, 64);
}

kb_dtype kb_case_dtype(const kb_case *c)
{
    const char *d = kb_case_enum(c, "dtype");
    if (d && strcmp(d, "fp16") == 0) return KB_FP16;
    if (d && strcmp(d, "bf16") == 0) return KB_BF16;
    return KB_FP32;
}

int kb_check_value(const kb_param *p, const kb_val *v, char *err, size_t errlen)
{
    switch (p->type) {
    case KB_P_INT:
    case KB_P_FLOAT:
        if (!(v->num >= p->min && v->num <= p->max)) {
            char a[32], b[32], x[32];
            snprintf(x, sizeof x, "%.10g", v->num);
            snprintf(a, sizeof a, "%.10g", p->min);
            snprintf(b, sizeof b, "%.10g", p->max);
            kb_errf(err, errlen, "%s = %s is out of bounds [%s, %s]", p->name, x, a, b);
            return -1;
        }
        return 0;
    case KB_P_ENUM:
        if (v->num < 0 || v->num >= kb_choice_count(p)) {
            kb_errf(err, errlen, "%s: no such choice (choose from %s)", p->name, p->choices);
            return -1;
        }
        return 0;
    case KB_P_INTLIST:
        for (int i = 0; i < v->nlist; i++)
            if (v->list[i] < p->min || v->list[i] > p->max) {
                kb_errf(err, errlen, "%s: element %d = %d is out of bounds [%.10g, %.10g]", p->name, i,
                     v->list[i], p->min, p->max);
                return -1;
            }
        return 0;
    }
    return 0;
}

/* Parse a number for parameter p from [s, s+len). */
int kb_decimal_syntax(const char *s, size_t len)
{
    size_t i = 0, digits = 0;
    if (i < len && (s[i] == '+' || s[i] == '-')) i++;
    while (i < len && isdigit((unsigned char)s[i])) i++, digits++;
    if (i < len && s[i] == '.') {
        i++;
        while (i < len && isdigit((unsigned char)s[i])) i++, digits++;
    }
    if (!digits) return 0;
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < len && (s[i] == '+' || s[i] == '-')) i++;
        size_t e = i;
        while (i < len && isdigit((unsigned char)s[i])) i++;
        if (i == e) return 0;
    }
    return i == len;
}

static int parse_num(const kb_param *p, const char *s, size_t len, double *out, char *err, size_t errlen)
{
    char buf[64];
    if (len == 0 || len >= sizeof buf) {
        kb_errf(err, errlen, "%s: expected a number, got '%.*s'", p->name, (int)len, s);
        return -1;
    }
    memcpy(buf, s, len);
    buf[len] = 0;
    char *end;
    errno = 0;
    double v = strtod(buf, &end);
    /* accept k/M suffixes for ints: 4k = 4096 */
    size_t numlen = len;
    if (end != buf && p->type != KB_P_FLOAT && (*end == 'k' || *end == 'K') && end[1] == 0) { v *= 1024; end++; numlen--; }
    if (end == buf || *end || !kb_decimal_syntax(buf, numlen) || !isfinite(v)) { /* decimal only: no 0x10, no inf */
        kb_errf(err, errlen, "%s: expected a decimal number, got '%s'", p->name, buf);
        return -1;
    }
    if (errno == ERANGE) {
        kb_errf(err, errlen, "%s: '%s' is out of the range of a double (about 1e-308 to 1e308)", p->name, buf);
        return -1;
    }
    if (p->type != KB_P_FLOAT && v != floor(v)) {
        kb_errf(err, errlen, "%s: expected an integer, got '%s'", p->name, buf);
        return -1;
    }
    *out = v;
    return 0;
}

/* 0, or -1 when out of memory (vals as it was) */
static int push(kb_val **vals, int *n, int *cap, kb_val v)
{
    if (*n == *cap) {
        int c = *cap ? *cap * 2 : 8;
        kb_val *t = realloc(*vals, (size_t)c * sizeof **vals);
        if (!t) return -1;
        *vals = t;
        *cap = c;
    }
    (*vals)[(*n)++] = v;
    return 0;
}

static int out_of_memory(const kb_param *p, char *err, size_t errlen)
{
    kb_errf(err, errlen, "%s: out of memory for its values", p->name);
    return -1;
}

/* "a:b:xK" (multiply) or "a:b:K" (add) or "a:b" (step 1) */
static int parse_range(const kb_param *p, const char *s, size_t len, kb_val **vals, int *n, int *cap,
                       char *err, size_t errlen)
{
    const char *c1 = memchr(s, ':', len);
    const char *c2 = memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - s));
    double a, b, step = 1;
    int mul = 0;
    if (parse_num(p, s, (size_t)(c1 - s), &a, err, errlen)) return -1;
    size_t blen = c2 ? (size_t)(c2 - c1 - 1) : len - (size_t)(c1 + 1 - s);
    if (parse_num(p, c1 + 1, blen, &b, err, errlen)) return -1;
    if (c2) {
        const char *st = c2 + 1;
        size_t slen = len - (size_t)(st - s);
        if (slen && (*st == 'x' || *st == '*')) { mul = 1; st++; slen--; }
        kb_param fp = *p;
        fp.type = KB_P_FLOAT;
        if (parse_num(&fp, st, slen, &step, err, errlen)) return -1;
    }
    if ((mul && step <= 1) || (!mul && step <= 0) || b < a) {
        kb_errf(err, errlen, "%s: bad range '%.*s' (write start:end:step or start:end:xfactor, end >= start)",
             p->name, (int)len, s);
        return -1;
    }
    int count = 0;
    for (double v = a; v <= b * (1 + 1e-12); v = mul ? v * step : v + step) {
        if (++count > 100000) { kb_errf(err, errlen, "%s: range '%.*s' has too many values", p->name, (int)len, s); return -1; }
        kb_val x = {.num = p->type == KB_P_FLOAT ? v : floor(v + 0.5)};
        if (push(vals, n, cap, x)) return out_of_memory(p, err, errlen);
    }
    return 0;
}

static int parse_axis(const kb_param *p, const char *text, kb_val **vals, char *err, size_t errlen);

/* An axis given up half-made: its n values' lists, the array. */
static void drop_axis(kb_val **vals, int n)
{
    kb_vals_free(*vals, n);
    *vals = NULL;
}

static int same_val(const kb_param *p, const kb_val *a, const kb_val *b)
{
    if (p->type != KB_P_INTLIST) return a->num == b->num;
    return a->nlist == b->nlist && (!a->nlist || !memcmp(a->list, b->list, (size_t)a->nlist * sizeof *a->list));
}

/* An axis's values in order (value, then position): equal values side by side. */
typedef struct {
    const kb_val *v;
    int idx, list;
} val_ref;

static int cmp_val_ref(const void *pa, const void *pb)
{
    const val_ref *a = pa, *b = pb;
    int c;
    if (a->list) {
        c = (a->v->nlist > b->v->nlist) - (a->v->nlist < b->v->nlist);
        for (int i = 0; !c && i < a->v->nlist; i++) c = (a->v->list[i] > b->v->list[i]) - (a->v->list[i] < b->v->list[i]);
    } else {
        c = (a->v->num > b->v->num) - (a->v->num < b->v->num);
    }
    return c ? c : (a->idx > b->idx) - (a->idx < b->idx);
}

/* The first value (in order) that equals an earlier one, -1 if none, -2
 * when out of memory. Sorted, not pairwise: a range makes up to 100000
 * values and a list of ranges more, and comparing every pair took seconds
 * (1:100000,100001:200000: 8 s). */
static int first_duplicate(const kb_param *p, const kb_val *vals, int n)
{
    if (n < 2) return -1;
    val_ref *r = malloc((size_t)n * sizeof *r);
    if (!r) return -2;
    for (int i = 0; i < n; i++) r[i] = (val_ref){&vals[i], i, p->type == KB_P_INTLIST};
    qsort(r, (size_t)n, sizeof *r, cmp_val_ref);
    int first = -1;
    for (int i = 1; i < n; i++) /* within a run of equal values the second is its first repeat */
        if (same_val(p, r[i].v, r[i - 1].v) && (first < 0 || r[i].idx < first)) first = r[i].idx;
    free(r);
    return first;
}

/* A value twice in one axis makes the same case twice: refused, named. */
int kb_parse_axis(const kb_param *p, const char *text, kb_val **vals, char *err, size_t errlen)
{
    int n = parse_axis(p, text, vals, err, errlen);
    int i = n < 0 ? -1 : first_duplicate(p, *vals, n);
    if (i == -2) {
        drop_axis(vals, n);
        return out_of_memory(p, err, errlen);
    }
    if (i >= 0) {
        char v[256];
        kb_format_value(p, &(*vals)[i], v, sizeof v);
        kb_errf(err, errlen, "%s: the value %s comes twice in '%.200s' (the same cases twice)", p->name, v[0] ? v : "none",
                text);
        drop_axis(vals, n);
        return -1;
    }
    return n;
}

/* One int-list value, s[0..len) ("5,7,9"; "" or "none": the empty list), into *v. */
static int parse_intlist(const kb_param *p, const char *s, size_t len, kb_val *v, char *err, size_t errlen)
{
    *v = (kb_val){0};
    if (len == 0 || (len == 4 && strncmp(s, "none", 4) == 0)) return 0;
    int *tmp = NULL, lc = 0, cap = 0;
    for (const char *e = s;;) {
        size_t l = strcspn(e, ",/");
        if (e + l > s + len) l = (size_t)(s + len - e);
        double x;
        if (l == 0) { kb_errf(err, errlen, "%s: empty element in '%.*s'", p->name, (int)len, s); goto fail; }
        if (parse_num(p, e, l, &x, err, errlen)) goto fail;
        if (lc == cap) {
            int *t = realloc(tmp, (size_t)(cap = cap ? cap * 2 : 16) * sizeof *tmp);
            if (!t) { out_of_memory(p, err, errlen); goto fail; }
            tmp = t;
        }
        tmp[lc++] = x < -2e9 ? -2000000000 : x > 2e9 ? 2000000000 : (int)x;
        e += l;
        if (e >= s + len) break;
        e++; /* the comma */
    }
    v->nlist = lc;
    v->list = list_new(tmp, lc);
    free(tmp);
    if (!v->list) { v->nlist = 0; return out_of_memory(p, err, errlen); }
    return 0;
fail:
    free(tmp);
    return -1;
}

/* values separated by '/', each a comma list; "" or "none" = empty list */
static int parse_intlist_axis(const kb_param *p, const char *text, kb_val **vals, char *err, size_t errlen)
{
    int n = 0, cap = 0;
    for (const char *s = text;;) {
        size_t len = strcspn(s, "/");
        kb_val v;
        if (len == 0 && text[0]) { /* "5/7/": an empty value that would add the default case */
            kb_errf(err, errlen, "%s: an empty value in '%.200s' (write none for the default)", p->name, text);
            drop_axis(vals, n);
            return -1;
        }
        if (parse_intlist(p, s, len, &v, err, errlen)) { drop_axis(vals, n); return -1; }
        if (kb_check_value(p, &v, err, errlen)) { list_drop(v.list); drop_axis(vals, n); return -1; }
        if (push(vals, &n, &cap, v)) { list_drop(v.list); drop_axis(vals, n); return out_of_memory(p, err, errlen); }
        if (s[len] == 0) break;
        s += len + 1;
    }
    return n;
}

/* The choice of p that word (len bytes) means in other case ("FP16"), or is
 * a near miss of ("bf61"), into near; "" for none. */
static void nearest_choice(const kb_param *p, const char *word, size_t len, char *near, size_t n)
{
    char w[64], names[KB_MAX_CHOICES][64];
    const char *cands[KB_MAX_CHOICES];
    int k = kb_choice_count(p);
    if (k > KB_MAX_CHOICES) k = KB_MAX_CHOICES;
    near[0] = 0;
    if (len >= sizeof w) return;
    memcpy(w, word, len);
    w[len] = 0;
    for (int i = 0; i < k; i++) {
        cands[i] = kb_choice(p, i, names[i], sizeof names[i]);
        if (!strcasecmp(w, cands[i])) { snprintf(near, n, "%s", cands[i]); return; }
    }
    const char *c = kb_nearest(w, cands, k);
    if (c) snprintf(near, n, "%s", c);
}

/* one word of an enum or number axis, s[0..len), appended */
static int parse_word(const kb_param *p, const char *text, const char *s, size_t len, kb_val **vals, int *n, int *cap,
                      char *err, size_t errlen)
{
    if (len == 0) {
        kb_errf(err, errlen, "%s: empty value in '%s'", p->name, text);
        return -1;
    }
    if (p->type == KB_P_ENUM) {
        int idx = choice_index(p, s, len);
        if (idx < 0 && len == 3 && !strncmp(s, "all", 3)) {
            kb_errf(err, errlen, "%s: 'all' stands alone (every choice), not in a list: '%s'", p->name, text);
            return -1;
        }
        if (idx < 0) {
            char near[64];
            nearest_choice(p, s, len, near, sizeof near);
            kb_errf(err, errlen, "%s: unknown value '%.*s' (%s%s%schoose from %s, or all)", p->name, (int)len, s,
                    near[0] ? "did you mean " : "", near, near[0] ? "? " : "", p->choices);
            return -1;
        }
        kb_val v = {.num = idx};
        return push(vals, n, cap, v) ? out_of_memory(p, err, errlen) : 0;
    }
    if (memchr(s, ':', len)) return parse_range(p, s, len, vals, n, cap, err, errlen);
    double x;
    if (parse_num(p, s, len, &x, err, errlen)) return -1;
    kb_val v = {.num = x};
    return push(vals, n, cap, v) ? out_of_memory(p, err, errlen) : 0;
}

static int parse_axis(const kb_param *p, const char *text, kb_val **vals, char *err, size_t errlen)
{
    int n = 0, cap = 0;
    *vals = NULL;
    if (p->type == KB_P_INTLIST) return parse_intlist_axis(p, text, vals, err, errlen);
    if (p->type == KB_P_ENUM && strcmp(text, "all") == 0) {
        int c = kb_choice_count(p);
        for (int i = 0; i < c; i++) {
            kb_val v = {.num = i};
            if (push(vals, &n, &cap, v)) { drop_axis(vals, n); return out_of_memory(p, err, errlen); }
        }
        return n;
    }
    for (const char *s = text;;) {
        size_t len = strcspn(s, ",");
        if (parse_word(p, text, s, len, vals, &n, &cap, err, errlen)) { drop_axis(vals, n); return -1; }
        if (s[len] == 0) break;
        s += len + 1;
    }
    for (int i = 0; i < n; i++)
        if (kb_check_value(p, &(*vals)[i], err, errlen)) { drop_axis(vals, n); return -1; }
    return n;
}

/* x in decimal at t (no NUL): its length. snprintf took 50 ns a number, and a
 * label of a long list is formatted once a case. */
static int put_int(char *t, int x)
{
    char d[12];
    unsigned u = x < 0 ? 0u - (unsigned)x : (unsigned)x;
    int k = 0, o = 0;
    do d[k++] = (char)('0' + u % 10); while (u /= 10);
    if (x < 0) t[o++] = '-';
    while (k) t[o++] = d[--k];
    return o;
}

/* the list joined by sep into buf (n bytes, NUL-terminated when n > 0);
 * whole: the length it needs (as snprintf), else stop once it does not fit */
static size_t format_list(const kb_val *v, char sep, char *buf, size_t n, int whole)
{
    size_t o = 0;
    int fits = n > 0;
    if (n) buf[0] = 0;
    for (int i = 0; i < v->nlist; i++) {
        char t[16];
        int k = 0;
        if (i) t[k++] = sep;
        k += put_int(t + k, v->list[i]);
        if (fits && o + (size_t)k < n) {
            memcpy(buf + o, t, (size_t)k);
            buf[o + (size_t)k] = 0;
        } else {
            fits = 0;
            if (!whole) return o + (size_t)k;
        }
        o += (size_t)k;
    }
    return o;
}

size_t kb_format_list(const kb_val *v, char sep, char *buf, size_t n) { return format_list(v, sep, buf, n, 1); }

void kb_format_value(const kb_param *p, const kb_val *v, char *buf, size_t n)
{
    switch (p->type) {
    case KB_P_INT: snprintf(buf, n, "%.0f", v->num); break;
    case KB_P_FLOAT: snprintf(buf, n, "%.10g", v->num); break;
    case KB_P_ENUM: kb_choice(p, (int)v->num, buf, n); break;
    case KB_P_INTLIST: /* too long for buf: the values that fit, then "..." */
        if (format_list(v, '+', buf, n, 0) >= n && n > 4) {
            size_t o = strlen(buf);
            memcpy(buf + (o < n - 4 ? o : n - 4), "...", 4);
        }
        break;
    }
}

uint64_t kb_fnv(uint64_t h, const char *s)
{
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

uint64_t kb_case_hash(const kb_case *c, uint64_t h)
{
    char buf[KB_MAX_PARAMS * 512]; /* the whole label: a value is at most 255 characters (kb_format_value) */
    kb_case_label(c, buf, sizeof buf);
    return kb_fnv(kb_fnv(kb_fnv(h, c->op->name), " "), buf);
}

void kb_case_label(const kb_case *c, char *buf, size_t n)
{
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < c->op->nparams && o < n; i++) {
        const kb_param *p = &c->op->params[i];
        if (p->type == KB_P_INTLIST && c->v[i].nlist == 0) continue;
        char v[256];
        kb_format_value(p, &c->v[i], v, sizeof v);
        o += (size_t)snprintf(buf + o, n - o, "%s%s=%s", o ? " " : "", p->name, v);
    }
}

void kb_sweep_init(kb_sweep *s, const kb_op *op)
{
    char err[KB_ERRLEN];
    memset(s, 0, sizeof *s);
    s->op = op;
    for (int i = 0; i < op->nparams; i++) {
        s->naxis[i] = kb_parse_axis(&op->params[i], op->params[i].def, &s->axis[i], err, sizeof err);
        if (s->naxis[i] < 1) { fprintf(stderr, "kbench: internal: bad default for %s: %s\n", op->params[i].name, err); abort(); }
    }
}

int kb_sweep_set(kb_sweep *s, const char *param, const char *text, char *err, size_t errlen)
{
    int i = kb_param_index(s->op, param);
    if (i < 0) {
        const char *names[KB_MAX_PARAMS];
        for (int k = 0; k < s->op->nparams; k++) names[k] = s->op->params[k].name;
        const char *near = kb_nearest(param, names, s->op->nparams);
        if (near) kb_errf(err, errlen, "%s has no parameter '%s' (did you mean '%s'?)", s->op->name, param, near);
        else kb_errf(err, errlen, "%s has no parameter '%s' (see: kbench list)", s->op->name, param);
        return -1;
    }
    kb_val *vals;
    int n = kb_parse_axis(&s->op->params[i], text, &vals, err, errlen);
    if (n < 0) return -1;
    kb_vals_free(s->axis[i], s->naxis[i]);
    s->axis[i] = vals;
    s->naxis[i] = n;
    return 0;
}

long kb_sweep_count(const kb_sweep *s)
{
    long n = 1; /* saturates past KB_MAX_CASES: the product of the axes can overflow */
    for (int i = 0; i < s->op->nparams; i++) {
        if (s->naxis[i] == 0) return 0;
        n = n > KB_MAX_CASES / s->naxis[i] ? KB_MAX_CASES + 1 : n * s->naxis[i];
    }
    return n;
}

double kb_plan_bytes(long ncases) { return (double)ncases * (double)(sizeof(kb_case) + KB_CASE_WORK_BYTES); }

/* lim, or half of the limit r where that is less (*why then says which) */
static double halve_limit(double lim, rlim_t r, const char *what, const char **why)
{
    if (r == RLIM_INFINITY || (double)r / 2 >= lim) return lim;
    *why = what;
    return (double)r / 2;
}

double kb_plan_bytes_max(const char **why)
{
    double lim = KB_MAX_PLAN_BYTES > 0 ? (double)KB_MAX_PLAN_BYTES : 1e300;
    *why = "kbench's cap";
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    if (pages > 0 && psz > 0 && (double)pages * (double)psz / 2 < lim) {
        lim = (double)pages * (double)psz / 2;
        *why = "half this machine's memory";
    }
    struct rlimit r;
    if (!getrlimit(RLIMIT_AS, &r)) lim = halve_limit(lim, r.rlim_cur, "half the address-space limit, ulimit -v", why);
    if (!getrlimit(RLIMIT_DATA, &r)) lim = halve_limit(lim, r.rlim_cur, "half the data limit, ulimit -d", why);
    return lim;
}

void kb_human_bytes(double b, char *buf, size_t n)
{
    const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int i = 0;
    while (b >= 1024 && i < 5) { b /= 1024; i++; }
    snprintf(buf, n, i ? "%.1f %s" : "%.0f %s", b, u[i]);
}

/* Too many cases, or more than memory holds: refused before any is made. */
static int check_size(const kb_sweep *s, long total, int have, char *err, size_t errlen)
{
    if (total + have > KB_MAX_CASES) {
        double exact = 1; /* for the message: the product in floating point, which cannot overflow */
        for (int i = 0; i < s->op->nparams; i++) exact *= s->naxis[i];
        kb_errf(err, errlen, "%s: the sweep has %.4g cases%s; at most %d in one plan", s->op->name, exact,
                have ? " more" : "", KB_MAX_CASES);
        return -1;
    }
    const char *why;
    double need = kb_plan_bytes(total + have), max = kb_plan_bytes_max(&why);
    if (need > max) {
        char a[32], b[32], c[32];
        kb_human_bytes(need, a, sizeof a);
        kb_human_bytes(max, b, sizeof b);
        kb_human_bytes(kb_plan_bytes(1), c, sizeof c);
        kb_errf(err, errlen, "%s: the plan's %ld cases need about %s to hold (%s a case), more than the %s allowed (%s); "
                "split the sweep", s->op->name, total + have, a, c, b, why);
        return -1;
    }
    return 0;
}

/* c from the axes' values at idx: its lists are the axes' own, held (not copied) */
static void make_case(const kb_sweep *s, const int *idx, int index, kb_case *c)
{
    memset(c, 0, sizeof *c);
    c->op = s->op;
    c->index = index;
    for (int i = 0; i < s->op->nparams; i++) {
        c->v[i] = s->axis[i][idx[i]];
        if (c->v[i].nlist) list_hold(c->v[i].list);
        else c->v[i].list = NULL;
    }
}

int kb_sweep_expand(const kb_sweep *s, kb_case **cases, int *ncases, char *err, size_t errlen)
{
    long total = kb_sweep_count(s);
    if (check_size(s, total, *ncases, err, errlen)) return -1;
    if (total) {
        kb_case *t = realloc(*cases, (size_t)(*ncases + total) * sizeof **cases);
        if (!t) {
            kb_errf(err, errlen, "%s: out of memory for %ld cases", s->op->name, *ncases + total);
            return -1;
        }
        *cases = t;
    }
    int np = s->op->nparams;
    int idx[KB_MAX_PARAMS] = {0};
    for (long k = 0; k < total; k++) {
        kb_case *c = &(*cases)[*ncases];
        make_case(s, idx, *ncases, c);
        if (s->op->validate && s->op->validate(c, err, errlen)) {
            char label[512], e2[KB_ERRLEN];
            kb_case_label(c, label, sizeof label);
            kb_case_free_lists(c);
            snprintf(e2, sizeof e2, "%s", err);
            kb_errf(err, errlen, "%s %s: %s", s->op->name, label, e2);
            return -1;
        }
        (*ncases)++;
        /* last parameter varies fastest */
        for (int i = np - 1; i >= 0; i--) {
            if (++idx[i] < s->naxis[i]) break;
            idx[i] = 0;
        }
    }
    return 0;
}

void kb_case_free_lists(kb_case *c)
{
    for (int i = 0; c->op && i < c->op->nparams; i++) {
        list_drop(c->v[i].list);
        c->v[i].list = NULL;
        c->v[i].nlist = 0;
    }
}

void kb_cases_free(kb_case *cases, int n)
{
    for (int i = 0; i < n; i++) kb_case_free_lists(&cases[i]);
    free(cases);
}

void kb_sweep_free(kb_sweep *s)
{
    for (int i = 0; s->op && i < s->op->nparams; i++) {
        kb_vals_free(s->axis[i], s->naxis[i]);
        s->axis[i] = NULL;
        s->naxis[i] = 0;
    }
}

void kb_case_value_text(const kb_case *c, const char *name, char *buf, size_t n)
{
    buf[0] = 0;
    int i = kb_param_index(c->op, name);
    if (i >= 0) kb_format_value(&c->op->params[i], &c->v[i], buf, n);
}
