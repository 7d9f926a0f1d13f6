/* Python implementations as plugin tables (pyimpl.h). */
#include "errors.h"
#include "pyimpl.h"
#include "pyrt.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PY 64 /* implementations from Python files, all files together */

/* one loaded implementation: its ABI record, its strings, its index in the shim */
typedef struct {
    kbp_impl p;
    kbp_tunable tun[KBP_MAX_TUNABLES];
    char *text; /* the load line, cut into the strings p and tun point at */
    const char *writes; /* "y,mean": the outputs it writes (NULL: all) */
    long idx;
} pyimpl;

static pyimpl impls[MAX_PY];
static int nimpls;
#define MAX_FILES 16
static kbp_table tables[MAX_FILES];
static kbp_impl table_impls[MAX_FILES][MAX_PY];
static long table_idx[MAX_FILES][MAX_PY]; /* each one's index in the shim */
static char *blocks[MAX_FILES]; /* each file's load lines, which its implementations' strings point into */
static int ntables;

typedef struct { /* a prepared case (the state plugin.c keeps) */
    long handle;
} pyrun;

int kb_pyimpl_is_python(const char *path)
{
    const size_t l = strlen(path);
    return l > 3 && !strcmp(path + l - 3, ".py");
}

int kb_pyimpl_index(const kbp_impl *p)
{
    for (int t = 0; t < ntables; t++)
        if (p >= table_impls[t] && p < table_impls[t] + tables[t].nimpls) return (int)table_idx[t][p - table_impls[t]];
    return -1;
}

/* never called: plugin.c calls Python's launch (check_table wants one) */
static int no_launch(const kbp_case *c, void *state, void *stream)
{
    (void)c, (void)state, (void)stream;
    return KB_PY_FAILED;
}

/* The shim's function fn called with n arguments (references stolen). */
static PyObject *call(const char *fn, int n, PyObject **args)
{
    int bad = 0; /* an argument not made (a path that is not UTF-8): no call */
    for (int i = 0; i < n; i++) bad |= args[i] == NULL;
    if (bad) {
        for (int i = 0; i < n; i++)
            if (args[i]) kb_py.DecRef(args[i]);
        kb_py.Err_Clear();
        return NULL;
    }
    PyObject *f = kb_py_shim(fn), *t = kb_py_tuple(n, args);
    if (!t) {
        kb_py.Err_Clear();
        if (f) kb_py.DecRef(f);
        return NULL;
    }
    PyObject *r = f ? kb_py.Object_CallObject(f, t) : NULL;
    kb_py.DecRef(t);
    if (f) kb_py.DecRef(f);
    return r;
}

/* the call's text into buf; -1 on the shim's own failure (said in buf) */
static int call_text(const char *fn, int n, PyObject **args, char *buf, size_t bn)
{
    PyObject *r = call(fn, n, args);
    int rc = kb_py_text(r, buf, bn);
    if (r) kb_py.DecRef(r);
    return rc;
}

/* stand-ins that say "it has one" (plugin info's marks); Python's are called instead */
static int has_supports(const kbp_case *c, char *why, size_t n)
{
    (void)c, (void)why, (void)n;
    return 0;
}
static int has_prepare(const kbp_case *c, void **state, void *stream, char *kernel, size_t kn, char *why, size_t wn)
{
    (void)c, (void)state, (void)stream, (void)kernel, (void)kn, (void)why, (void)wn;
    return KB_PY_FAILED;
}

/* one load line: idx op name help inplace accumulates nondet tunables
 * has_prepare has_supports writes (tab-separated) */
#define NFIELDS 11
static int parse_line(char *ln, pyimpl *pi, const char *path, char *err, size_t n)
{
    char *f[NFIELDS];
    int k = 0;
    for (char *s = ln; k < NFIELDS; k++) {
        f[k] = s;
        char *tab = strchr(s, '\t');
        if (!tab) { k++; break; }
        *tab = 0;
        s = tab + 1;
    }
    if (k != NFIELDS) return kb_errf(err, n, "%s: internal: a declaration line of %d fields", path, k), -1;
    memset(pi, 0, sizeof *pi);
    pi->text = ln;
    pi->idx = strtol(f[0], NULL, 10);
    pi->p.op = f[1];
    pi->p.name = f[2];
    pi->p.help = f[3];
    pi->p.inplace = f[4][0] ? f[4] : NULL;
    pi->p.accumulates = f[5][0] ? f[5] : NULL;
    pi->p.flags = f[6][0] == '1' ? KBP_NONDETERMINISTIC : 0;
    pi->p.launch = no_launch;
    pi->p.prepare = f[8][0] == '1' ? has_prepare : NULL;
    pi->p.supports = f[9][0] == '1' ? has_supports : NULL;
    pi->writes = f[10][0] ? f[10] : NULL;
    int nt = 0; /* tunables: name=values=default;... */
    for (char *s = f[7]; *s && nt <= KBP_MAX_TUNABLES;) {
        char *end = strchr(s, ';'), *e1 = strchr(s, '=');
        if (end) *end = 0;
        char *e2 = e1 ? strrchr(e1 + 1, '=') : NULL;
        if (!e1 || !e2) return kb_errf(err, n, "%s: tunable '%s': want NAME: (values, default)", path, s), -1;
        if (nt == KBP_MAX_TUNABLES) { nt++; break; }
        *e1 = *e2 = 0;
        pi->tun[nt++] = (kbp_tunable){s, e1 + 1, e2 + 1, "a tunable of a Python implementation"};
        s = end ? end + 1 : s + strlen(s);
    }
    pi->p.tunables = nt ? pi->tun : NULL;
    pi->p.ntunables = nt; /* more than KBP_MAX_TUNABLES: check_table refuses, saying so */
    return 0;
}

int kb_pyimpl_load(const char *path, const kbp_table **t, char *err, size_t n)
{
    if (ntables == MAX_FILES) return kb_errf(err, n, "more than %d Python files", MAX_FILES), -1;
    if (kb_py_start(err, n)) return -1;
    PyObject *a[1] = {kb_py.Unicode_FromString(path)};
    static char buf[1 << 16];
    if (call_text("load", 1, a, buf, sizeof buf)) return kb_errf(err, n, "%s: %s", path, buf), -1;
    if (strncmp(buf, "OK\n", 3)) return kb_errf(err, n, "%s", strncmp(buf, "ERR\t", 4) ? buf : buf + 4), -1;
    char *all = strdup(buf + 3);
    if (!all) abort();
    const int first = nimpls;
    for (char *ln = all; ln && *ln;) {
        char *nl = strchr(ln, '\n');
        if (nl) *nl = 0;
        if (nimpls == MAX_PY) return nimpls = first, free(all), kb_errf(err, n, "more than %d Python implementations", MAX_PY), -1;
        if (parse_line(ln, &impls[nimpls], path, err, n)) return nimpls = first, free(all), -1;
        nimpls++;
        ln = nl ? nl + 1 : NULL;
    }
    kbp_table *tb = &tables[ntables];
    for (int i = first; i < nimpls; i++) {
        table_impls[ntables][i - first] = impls[i].p;
        table_idx[ntables][i - first] = impls[i].idx;
    }
    *tb = (kbp_table){KBP_ABI_VERSION, nimpls - first, table_impls[ntables]};
    blocks[ntables++] = all;
    *t = tb;
    return 0;
}

const char *kb_pyimpl_writes(int idx)
{
    for (int i = 0; i < nimpls; i++)
        if (impls[i].idx == idx) return impls[i].writes;
    return NULL;
}

int kb_pyimpl_supports(int idx, const char *case_text, char *why, size_t n)
{
    PyObject *a[2] = {kb_py.Long_FromLongLong(idx), kb_py.Unicode_FromString(case_text)};
    why[0] = 0;
    if (call_text("supports", 2, a, why, n)) return 1;
    return why[0] != 0;
}

int kb_pyimpl_prepare(int idx, const char *case_text, const char *tensor_text, void *stream, void **state, char *kernel,
                      size_t kn, char *why, size_t wn)
{
    *state = NULL;
    PyObject *a[4] = {kb_py.Long_FromLongLong(idx), kb_py.Unicode_FromString(case_text),
                      kb_py.Unicode_FromString(tensor_text), kb_py.Long_FromLongLong((long long)(uintptr_t)stream)};
    char buf[1024];
    if (call_text("prepare", 4, a, buf, sizeof buf)) return snprintf(why, wn, "%s", buf), KB_PY_FAILED;
    if (!strncmp(buf, "NA\t", 3)) return snprintf(why, wn, "%s", buf + 3), KBP_NA;
    if (strncmp(buf, "OK\t", 3)) return snprintf(why, wn, "%s", strncmp(buf, "ERR\t", 4) ? buf : buf + 4), KB_PY_FAILED;
    pyrun *r = malloc(sizeof *r);
    if (!r) abort();
    char *end = NULL;
    r->handle = strtol(buf + 3, &end, 10);
    if (end && *end == '\t') snprintf(kernel, kn, "%s", end + 1);
    *state = r;
    return 0;
}

int kb_pyimpl_launch(void *state, void *stream, int verifying, char *why, size_t n)
{
    const pyrun *r = state;
    PyObject *a[3] = {kb_py.Long_FromLongLong(r->handle), kb_py.Long_FromLongLong((long long)(uintptr_t)stream),
                      kb_py.Long_FromLongLong(verifying != 0)};
    why[0] = 0;
    if (call_text("launch", 3, a, why, n) || why[0]) return KB_PY_FAILED;
    return 0;
}

void kb_pyimpl_release(void *state)
{
    pyrun *r = state;
    if (!r) return;
    PyObject *a[1] = {kb_py.Long_FromLongLong(r->handle)};
    char buf[512];
    call_text("release", 1, a, buf, sizeof buf);
    if (buf[0]) fprintf(stderr, "kbench: %s\n", buf); /* the row is written: said beside it */
    free(r);
}

void kb_pyimpl_unload(void)
{
    for (int t = 0; t < ntables; t++) free(blocks[t]), blocks[t] = NULL;
    nimpls = ntables = 0; /* Python stays started (the shim's lists hold the old declarations: a few hundred bytes) */
}
