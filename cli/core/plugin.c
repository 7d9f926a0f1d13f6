/* External implementations: shared libraries that export kbench_plugin()
 * (include/kbench_plugin.h). Each of their implementations becomes one more
 * kb_impl of its op, after kbench's own: verified, timed and reported like
 * them. Everything here is host code; loading touches no GPU. */
#include "elfcheck.h"
#include "errors.h"
#include "op.h"
#include "params.h"
#include "plugin.h"
#include "pyimpl.h"
#include "pyrt.h"
#include "registry.h"
#include "settings.h"
#include "tensors.h"
#include "../../include/kb_devattr.h"
#include "../../include/kb_dtype.h"
#include "../../include/kbench_plugin.h"

#include <ctype.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define KB_INVALID_VALUE 1 /* cudaErrorInvalidValue */
#define MAX_LIBS 16
#define MAX_PIMPLS 64

typedef struct {
    char alias[64], path[1024];
    void *dl;
} plib;

typedef struct {
    kb_impl impl; /* what the harness sees; impl.plugin points at this */
    const kb_op *op;
    const kbp_impl *p;
    const plib *lib;
    char name[96], help[320];
    char tunables[KBP_MAX_TUNABLES * 33]; /* impl.tunables: its own, a comma list */
    int py; /* a Python implementation's index (pyimpl.h), -1: a library's */
} pimpl;

/* the plugins' tunables as parameters of their ops: their choices and help */
static struct {
    char choices[256], help[320];
} tun_text[MAX_PIMPLS * KBP_MAX_TUNABLES];
static int ntun_text;

static plib libs[MAX_LIBS];
static char py_handle; /* a Python file's "handle": nothing to dlclose (pyimpl.h) */

static void close_lib(void *dl)
{
    if (dl && dl != &py_handle) dlclose(dl);
}
static int nlibs;
static pimpl pimpls[MAX_PIMPLS];
static int npimpls;

int kb_op_nimpls(const kb_op *op)
{
    int n = op->nimpls;
    for (int i = 0; i < npimpls; i++) n += pimpls[i].op == op;
    return n;
}

const kb_impl *kb_op_impl(const kb_op *op, int k)
{
    if (k < op->nimpls) return &op->impls[k];
    k -= op->nimpls;
    for (int i = 0; i < npimpls; i++)
        if (pimpls[i].op == op && k-- == 0) return &pimpls[i].impl;
    return NULL;
}

int kb_plugin_name_ok(const char *s)
{
    if (!*s || strlen(s) >= 64) return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-' && *s != '.') return 0;
    return 1;
}

/* an implementation of op named name already (kbench's own or a plugin's)? */
static const kb_impl *find_impl(const kb_op *op, const char *name)
{
    for (int k = 0; k < kb_op_nimpls(op); k++)
        if (!strcmp(kb_op_impl(op, k)->name, name)) return kb_op_impl(op, k);
    return NULL;
}

/* ---- the case as the ABI passes it --------------------------------------- */
typedef struct {
    kbp_case kc;
    const char *names[KB_MAX_PARAMS];
    const char *values[KB_MAX_PARAMS]; /* into the text after the struct */
    kbp_tensor in[KB_MAX_PLUGIN_INPUTS], out[KB_MAX_OUTPUTS];
    void *state;
} pcase;

/* The case as a plugin sees it, its values' text in the same allocation (an
 * int list whole, "5,50,17" as flags take it, however long: the table's
 * kb_format_value shortens long lists); free() releases it. */
static pcase *new_case(const kb_case *c)
{
    const kb_op *op = c->op;
    const int np = op->nparams < KB_MAX_PARAMS ? op->nparams : KB_MAX_PARAMS;
    size_t len[KB_MAX_PARAMS], total = 0;
    for (int i = 0; i < np; i++)
        total += len[i] = op->params[i].type == KB_P_INTLIST ? kb_format_list(&c->v[i], ',', NULL, 0) + 1 : 256;
    pcase *pc = calloc(1, sizeof *pc + total);
    if (!pc) abort();
    char *t = (char *)(pc + 1);
    pc->kc.op = op->name;
    pc->kc.dtype = (kbp_dtype)kb_case_dtype(c);
    for (int i = 0; i < np; i++) {
        if (op->params[i].type == KB_P_INTLIST) kb_format_list(&c->v[i], ',', t, len[i]);
        else kb_format_value(&op->params[i], &c->v[i], t, len[i]);
        pc->names[i] = op->params[i].name;
        pc->values[i] = t;
        t += len[i];
    }
    pc->kc.nparams = np;
    pc->kc.names = pc->names;
    pc->kc.values = pc->values;
    return pc;
}

static const pimpl *of(const kb_impl *impl) { return (const pimpl *)impl->plugin; }

/* The case for a Python implementation (pyshim.py's _case): a line per
 * parameter, NAME TAB KIND TAB VALUE, KIND i, f, e (a choice) or l (an int
 * list, comma-separated); malloc'd. */
static char *py_case_text(const kb_case *c, const pcase *pc)
{
    size_t len = 1;
    for (int i = 0; i < pc->kc.nparams; i++) len += strlen(pc->names[i]) + strlen(pc->values[i]) + 5;
    char *t = malloc(len), *o = t;
    if (!t) abort();
    for (int i = 0; i < pc->kc.nparams; i++) {
        const kb_ptype ty = c->op->params[i].type;
        const char kind = ty == KB_P_INT ? 'i' : ty == KB_P_FLOAT ? 'f' : ty == KB_P_INTLIST ? 'l' : 'e';
        o += sprintf(o, "%s\t%c\t%s\n", pc->names[i], kind, pc->values[i]);
    }
    *o = 0;
    return t;
}

/* The tensors for a Python implementation (pyshim.py's _tensors): a line
 * each, NAME PTR DTYPE NDIM SHAPE... STRIDES... DEVICE_TYPE DEVICE_ID
 * (DLPack's: 2 CUDA, 1 CPU where the case's device is -1: host memory, tests) */
static char *py_tensor_text(const pcase *pc)
{
    static const char *const dt[] = {"fp32", "fp16", "bf16", "int32"};
    const int n = pc->kc.ninputs + pc->kc.noutputs;
    char *t = malloc((size_t)n * 400 + 1), *o = t;
    if (!t) abort();
    *o = 0;
    for (int k = 0; k < n; k++) {
        const kbp_tensor *x = k < pc->kc.ninputs ? &pc->in[k] : &pc->out[k - pc->kc.ninputs];
        o += sprintf(o, "%s\t%llu\t%s\t%d", x->name, (unsigned long long)(uintptr_t)x->data, dt[x->dtype & 3], x->ndim);
        for (int d = 0; d < x->ndim; d++) o += sprintf(o, "\t%lld", (long long)x->shape[d]);
        for (int d = 0; d < x->ndim; d++) o += sprintf(o, "\t%lld", (long long)x->stride[d]);
        o += sprintf(o, "\t%d\t%d\n", pc->kc.device < 0 ? 1 : 2, pc->kc.device < 0 ? 0 : pc->kc.device);
    }
    return t;
}

/* The plugin's own tunables left at auto: the plugin sees their defaults. */
static void tunable_defaults(const pimpl *pi, const kb_case *c, pcase *pc)
{
    for (int i = 0; i < pi->p->ntunables; i++) {
        const int k = kb_param_index(c->op, pi->p->tunables[i].name);
        if (k >= 0 && k < pc->kc.nparams && c->v[k].num == 0) pc->values[k] = pi->p->tunables[i].def;
    }
}

int kb_plugin_supports(const kb_impl *impl, const kb_case *c, char *why, size_t n)
{
    const pimpl *pi = of(impl);
    if (!c->op->plugin_tensors) {
        snprintf(why, n, "op %s hands no tensors to plugins", c->op->name);
        return 1;
    }
    if (!pi->p->supports && pi->py < 0) return 0;
    pcase *pc = new_case(c);
    tunable_defaults(pi, c, pc);
    pc->kc.device = -1;
    why[0] = 0;
    int r;
    if (pi->py >= 0) {
        char *ct = py_case_text(c, pc);
        r = kb_pyimpl_supports(pi->py, ct, why, n);
        free(ct);
    } else r = pi->p->supports(&pc->kc, why, n);
    free(pc);
    if (r && !why[0]) snprintf(why, n, "%s cannot take this case (its supports() says so)", impl->name);
    return r;
}

/* Each "A=B" (pairs) or "A" of a comma list: fn(A, B or NULL, arg); the first
 * non-zero it returns, else 0. */
static int each_name(const char *list, int pairs, int (*fn)(const char *a, const char *b, void *arg), void *arg)
{
    for (const char *s = list ? list : ""; *s;) {
        size_t l = strcspn(s, ",");
        char tok[128];
        snprintf(tok, sizeof tok, "%.*s", (int)(l < sizeof tok - 1 ? l : sizeof tok - 1), s);
        char *eq = pairs ? strchr(tok, '=') : NULL;
        if (eq) *eq++ = 0;
        int r = fn(tok, eq, arg);
        if (r) return r;
        s += l + (s[l] == ',');
    }
    return 0;
}

static int find_tensor(const kbp_tensor *t, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(t[i].name, name)) return i;
    return -1;
}

typedef struct {
    const pimpl *pi;
    pcase *pc;
    kb_impl_run *r;
} presample_arg;

/* "OUT=IN": OUT is handed IN's buffer; the harness restores IN before each launch */
static int one_inplace(const char *o, const char *i, void *arg)
{
    presample_arg *a = arg;
    pcase *pc = a->pc;
    const int k = find_tensor(pc->out, pc->kc.noutputs, o), j = i ? find_tensor(pc->in, pc->kc.ninputs, i) : -1;
    if (k < 0 || j < 0) return 0; /* not in this case (load checked the names) */
    if (a->r->ninplace == KB_MAX_OUTPUTS) return 0; /* load refused more than this */
    kbp_tensor *out = &pc->out[k];
    const kbp_tensor *in = &pc->in[j];
    if (out->dtype != in->dtype || kbp_numel(out) != kbp_numel(in) || out->ndim != in->ndim ||
        memcmp(out->shape, in->shape, sizeof out->shape)) {
        kb_errf(kb_last_error, sizeof kb_last_error, "plugin %s (%.200s): inplace %s=%s, but they differ in dtype or shape",
                a->r->impl->name, a->pi->lib->path, o, i);
        return -1;
    }
    kb_impl_run *r = a->r;
    r->inplace[r->ninplace].out = k;
    r->inplace[r->ninplace].in = in->data;
    r->inplace[r->ninplace].bytes = (size_t)kbp_numel(in) * (in->is_int32 ? 4 : kb_dtype_size((kb_dtype)in->dtype));
    r->ninplace++;
    out->data = in->data;
    return 0;
}

static int one_accumulate(const char *o, const char *unused, void *arg)
{
    (void)unused;
    presample_arg *a = arg;
    const int k = find_tensor(a->pc->out, a->pc->kc.noutputs, o);
    if (k >= 0) a->r->accumulate |= 1u << k;
    return 0;
}

/* The implementation's inplace and accumulates, for this case's tensors, into r (presample.h). */
static int declare_presample(const pimpl *pi, pcase *pc, kb_impl_run *r)
{
    presample_arg a = {pi, pc, r};
    return each_name(pi->p->inplace, 1, one_inplace, &a) || each_name(pi->p->accumulates, 0, one_accumulate, &a);
}

/* The row's kernel column: FILE:NAME, the plugin tunables' values that ran,
 * then what prepare named. */
static void kernel_column(const pimpl *pi, const pcase *pc, const char *kernel, char *out, size_t n)
{
    const char *base = strrchr(pi->lib->path, '/');
    base = base ? base + 1 : pi->lib->path;
    int w = snprintf(out, n, "%.60s:%.40s", base, pi->p->name);
    for (int i = 0; i < pi->p->ntunables && w > 0 && (size_t)w < n; i++) {
        const char *v = kbp_param(&pc->kc, pi->p->tunables[i].name);
        w += snprintf(out + w, n - (size_t)w, " %s=%s", pi->p->tunables[i].name, v ? v : "?");
    }
    if (kernel[0] && w > 0 && (size_t)w < n) snprintf(out + w, n - (size_t)w, " %.50s", kernel);
}

static int plugin_prepare(const kb_case *c, kb_state *st, const kb_devattr *d, kb_impl_run *r)
{
    (void)d;
    const pimpl *pi = of(r->impl);
    pcase *pc = new_case(c);
    tunable_defaults(pi, c, pc);
    r->priv = pc;
    int nin = 0, nout = 0;
    kb_last_error[0] = 0;
    if (c->op->plugin_tensors(c, st, pc->in, &nin, pc->out, &nout)) {
        if (!kb_last_error[0]) snprintf(kb_last_error, sizeof kb_last_error, "%s: no tensors for this case", c->op->name);
        return (int)KB_INVALID_VALUE;
    }
    pc->kc.inputs = pc->in;
    pc->kc.ninputs = nin;
    pc->kc.outputs = pc->out;
    pc->kc.noutputs = nout;
    pc->kc.device = r->device;
    if (declare_presample(pi, pc, r)) return (int)KB_INVALID_VALUE;
    char kernel[KB_KERNEL_LEN] = "", why[KB_KERNEL_LEN] = "";
    int rc = 0;
    if (pi->py >= 0) {
        char *ct = py_case_text(c, pc), *tt = py_tensor_text(pc);
        rc = kb_pyimpl_prepare(pi->py, ct, tt, r->stream, &pc->state, kernel, sizeof kernel, why, sizeof why);
        free(ct), free(tt);
    } else if (pi->p->prepare)
        rc = pi->p->prepare(&pc->kc, &pc->state, r->stream, kernel, sizeof kernel, why, sizeof why);
    kernel_column(pi, pc, kernel, r->kernel, sizeof r->kernel);
    if (rc == KBP_NA) { /* the row is n/a: what only prepare could learn */
        snprintf(r->why, sizeof r->why, "%s", why[0] ? why : "its prepare() says it cannot take this case");
        return KB_NA;
    }
    if (rc) {
        kb_errf(kb_last_error, sizeof kb_last_error, "plugin %s (%.200s) prepare: %.150s", r->impl->name, pi->lib->path,
                why[0] ? why : "failed");
        return rc > 0 ? rc : (int)KB_INVALID_VALUE;
    }
    return 0;
}

static int plugin_launch(const kb_case *c, kb_state *st, kb_impl_run *r, void *stream)
{
    (void)c, (void)st;
    const pimpl *pi = of(r->impl);
    pcase *pc = r->priv;
    if (pi->py >= 0) { /* an exception: its line, not a CUDA error's name */
        char why[KB_ERRLEN];
        int rc = kb_pyimpl_launch(pc->state, stream, why, sizeof why);
        if (rc) kb_errf(kb_last_error, sizeof kb_last_error, "plugin %s (%s) %s", r->impl->name, pi->lib->path, why);
        return rc;
    }
    int rc = pi->p->launch(&pc->kc, pc->state, stream);
    if (rc) {
        char what[400];
        snprintf(what, sizeof what, "plugin %s (%.300s) launch", r->impl->name, pi->lib->path);
        kb_cuda_fail(rc > 0 ? rc : KB_INVALID_VALUE, what, __FILE__, __LINE__);
        return rc > 0 ? rc : KB_INVALID_VALUE;
    }
    return 0;
}

static void plugin_release(const kb_case *c, kb_state *st, kb_impl_run *r)
{
    (void)c, (void)st;
    pcase *pc = r->priv;
    if (!pc) return;
    const pimpl *pi = of(r->impl);
    if (pi->py >= 0) kb_pyimpl_release(pc->state);
    else if (pi->p->release) pi->p->release(&pc->kc, pc->state);
    free(pc);
    r->priv = NULL;
}

const char *kb_plugin_path(const kb_impl *impl) { return impl->plugin ? of(impl)->lib->path : NULL; }

int kb_impl_named(const char *filter, const kb_impl *impl)
{
    if (!filter || !filter[0] || kb_list_has(filter, impl->name)) return 1;
    const pimpl *p = impl->plugin ? of(impl) : NULL;
    return p && p->lib->alias[0] && kb_list_has(filter, p->lib->alias);
}

/* ---- loading -------------------------------------------------------------- */
static int builtin_clash(const char *path, const char *name, const kb_op *op, char *err, size_t n)
{
    kb_errf(err, n, "%s: '%s' is a built-in implementation of %s: name the plugin otherwise (NAME=%s)", path, name,
            op->name, path);
    return -1;
}

/* whether op has a tensor of that name in that direction, in some case */
static int op_has_tensor(const kb_op *op, const char *name, int output)
{
    for (int i = 0; i < op->ntensors; i++)
        if (op->tensors[i].output == output && !strcmp(op->tensors[i].name, name)) return 1;
    return 0;
}

typedef struct {
    const char *path;
    const kbp_impl *p;
    const kb_op *op;
    const char *what;
    char *err;
    size_t n;
} decl_arg;

static int one_declared(const char *a, const char *b, void *arg)
{
    decl_arg *d = arg;
    const int pair = !strcmp(d->what, "inplace");
    if (pair && !b)
        return kb_errf(d->err, d->n, "%s: implementation '%s': inplace '%s': want OUT=IN, an output and the input it "
                                     "is written over", d->path, d->p->name, a), -1;
    if (!op_has_tensor(d->op, a, 1))
        return kb_errf(d->err, d->n, "%s: implementation '%s': %s names '%s', not an output of %s (kbench list %s)",
                       d->path, d->p->name, d->what, a, d->op->name, d->op->name), -1;
    if (pair && !op_has_tensor(d->op, b, 0))
        return kb_errf(d->err, d->n, "%s: implementation '%s': inplace names '%s', not an input of %s (kbench list %s)",
                       d->path, d->p->name, b, d->op->name, d->op->name), -1;
    return 0;
}

typedef struct {
    const char *names[2 * KB_MAX_OUTPUTS + 1];
    int n;
} seen_outputs;

static int one_seen(const char *a, const char *b, void *arg)
{
    (void)b;
    seen_outputs *s = arg;
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->names[i], a)) return 1;
    if (s->n == KB_COUNT(s->names)) return 2;
    s->names[s->n] = strdup(a);
    if (!s->names[s->n]) abort();
    s->n++;
    return 0;
}

/* inplace's and accumulates' names are the op's outputs (and inputs), each
 * output named once in the two together */
static int check_declared(const char *path, const kbp_impl *p, const kb_op *op, char *err, size_t n)
{
    decl_arg d = {path, p, op, "inplace", err, n};
    if (each_name(p->inplace, 1, one_declared, &d)) return -1;
    d.what = "accumulates";
    if (each_name(p->accumulates, 0, one_declared, &d)) return -1;
    seen_outputs s = {.n = 0};
    int r = each_name(p->inplace, 1, one_seen, &s);
    if (!r) r = each_name(p->accumulates, 0, one_seen, &s);
    for (int i = 0; i < s.n; i++) free((void *)s.names[i]);
    if (r == 1)
        return kb_errf(err, n, "%s: implementation '%s': an output named twice in inplace and accumulates", path,
                       p->name), -1;
    if (r == 2 || s.n > KB_MAX_OUTPUTS)
        return kb_errf(err, n, "%s: implementation '%s': more than %d outputs in inplace and accumulates", path,
                       p->name, KB_MAX_OUTPUTS), -1;
    return 0;
}

/* Each tunable: a parameter name the op lacks, values that are names, a
 * default among them. */
static int check_tunables(const char *path, const kbp_impl *p, const kb_op *op, char *err, size_t n)
{
    if (p->ntunables < 0 || p->ntunables > KBP_MAX_TUNABLES || (p->ntunables && !p->tunables))
        return kb_errf(err, n, "%s: implementation '%s': %d tunables (0 to %d, in tunables)", path, p->name, p->ntunables,
                       KBP_MAX_TUNABLES), -1;
    for (int i = 0; i < p->ntunables; i++) {
        const kbp_tunable *t = &p->tunables[i];
        const char *nm = t->name ? t->name : "(null)";
        int ok = t->name && t->name[0] && strlen(t->name) < 32 && islower((unsigned char)t->name[0]);
        for (const char *q = t->name; ok && *q; q++) ok = islower((unsigned char)*q) || isdigit((unsigned char)*q) || *q == '_';
        if (!ok) return kb_errf(err, n, "%s: implementation '%s': tunable '%s': a name of a-z, 0-9, '_' (a flag and a JSON key)", path, p->name, nm), -1;
        for (int k = 0; k < kb_op_base_nparams(op); k++)
            if (!strcmp(op->params[k].name, t->name))
                return kb_errf(err, n, "%s: implementation '%s': tunable '%s' is a parameter of %s already", path, p->name, nm, op->name), -1;
        ok = t->values && t->values[0] && strlen(t->values) < 200 && t->values[strlen(t->values) - 1] != ',' &&
             !strstr(t->values, ",,") && t->values[0] != ',';
        for (const char *q = t->values; ok && *q; q++)
            ok = isalnum((unsigned char)*q) || *q == ',' || *q == '_' || *q == '-' || *q == '.';
        if (!ok || kb_list_has(t->values, "auto"))
            return kb_errf(err, n, "%s: implementation '%s': tunable '%s': values '%s': a comma list of names or numbers, "
                                   "not auto", path, p->name, nm, t->values ? t->values : "(null)"), -1;
        if (!t->def || !kb_list_has(t->values, t->def))
            return kb_errf(err, n, "%s: implementation '%s': tunable '%s': default '%s' is not among its values (%s)", path,
                           p->name, nm, t->def ? t->def : "(null)", t->values), -1;
    }
    return 0;
}

/* Checks a library's table against kbench without registering anything:
 * 0, or -1 with one line in err. */
static int check_table(const char *path, const kbp_table *t, int builtin_names, char *err, size_t n)
{
    if (!t) return kb_errf(err, n, "%s: kbench_plugin() returned NULL", path), -1;
    if (t->abi == 1 && KBP_ABI_VERSION == 2)
        return kb_errf(err, n, "%s: plugin ABI version 1; this kbench takes version 2: give prepare the stream, "
                               "prepare(c, &state, stream, kernel, n, why, wn), and rebuild it against this kbench's "
                               "include/kbench_plugin.h (nothing else changes for it)",
                       path),
               -1;
    if (t->abi != KBP_ABI_VERSION)
        return kb_errf(err, n, "%s: plugin ABI version %d; this kbench takes version %d (rebuild it against this "
                               "kbench's include/kbench_plugin.h)",
                       path, t->abi, KBP_ABI_VERSION),
               -1;
    if (t->nimpls <= 0 || !t->impls) return kb_errf(err, n, "%s: the table lists no implementation", path), -1;
    if (t->nimpls > MAX_PIMPLS) return kb_errf(err, n, "%s: %d implementations; at most %d", path, t->nimpls, MAX_PIMPLS), -1;
    for (int i = 0; i < t->nimpls; i++) {
        const kbp_impl *p = &t->impls[i];
        const char *nm = p->name ? p->name : "(null)";
        if (!p->name || !kb_plugin_name_ok(p->name))
            return kb_errf(err, n, "%s: implementation %d: bad name '%s' (letters, digits, '_', '-', '.')", path, i, nm), -1;
        const kb_op *op = p->op ? kb_find_op(p->op) : NULL;
        if (!op) {
            char ops[256] = "";
            for (int k = 0; k < kb_nops; k++)
                snprintf(ops + strlen(ops), sizeof ops - strlen(ops), "%s%s", k ? ", " : "", kb_ops[k]->name);
            return kb_errf(err, n, "%s: implementation '%s': unknown op '%s' (kbench has: %s)", path, nm,
                           p->op ? p->op : "(null)", ops),
                   -1;
        }
        if (!p->launch) return kb_errf(err, n, "%s: implementation '%s' (%s) has no launch", path, nm, p->op), -1;
        if (check_declared(path, p, op, err, n) || check_tunables(path, p, op, err, n)) return -1;
        for (int j = 0; j < i; j++)
            if (!strcmp(t->impls[j].name, p->name) && !strcmp(t->impls[j].op, p->op))
                return kb_errf(err, n, "%s: two implementations of %s named '%s'", path, p->op, nm), -1;
        for (int k = 0; builtin_names && k < op->nimpls; k++) /* loading checks the names it gives (find_impl) */
            if (!strcmp(op->impls[k].name, p->name)) return builtin_clash(path, p->name, op, err, n);
    }
    return 0;
}

/* dlopen + entry point + check_table; the handle (tab: its table) or NULL with err */
static void *open_lib(const char *path, int builtin_names, const kbp_table **tab, char *err, size_t n)
{
    struct stat sb;
    if (stat(path, &sb) != 0) return kb_errf(err, n, "%s: no such file", path), NULL;
    if (!S_ISREG(sb.st_mode)) return kb_errf(err, n, "%s: not a file", path), NULL;
    if (kb_pyimpl_is_python(path)) /* a Python file: its KBENCH list as a table */
        return kb_pyimpl_load(path, tab, err, n) || check_table(path, *tab, builtin_names, err, n) ? NULL : &py_handle;
    /* dlopen trusts the file: one cut short would end kbench with SIGBUS */
    char why[256];
    if (kb_elf_check(path, why, sizeof why))
        return kb_errf(err, n, "%s: cannot load it as a shared library: %s", path, why), NULL;
    /* dlopen of a bare name searches the library path: make it a path (whole) */
    char *p = NULL;
    if (asprintf(&p, "%s%s", strchr(path, '/') ? "" : "./", path) < 0) abort();
    void *dl = dlopen(p, RTLD_NOW | RTLD_LOCAL);
    free(p);
    if (!dl) {
        const char *e = dlerror();
        return kb_errf(err, n, "%s: cannot load it as a shared library: %s", path, e ? e : "?"), NULL;
    }
    void *sym = dlsym(dl, KBP_ENTRY);
    if (!sym) {
        close_lib(dl);
        return kb_errf(err, n, "%s: no entry point %s() (see include/kbench_plugin.h)", path, KBP_ENTRY), NULL;
    }
    if (!kb_elf_addr_is_code(sym)) { /* int kbench_plugin = 5: called, it would end kbench with SIGSEGV */
        close_lib(dl);
        return kb_errf(err, n, "%s: %s is not a function (a data symbol; want const kbp_table *%s(void): see "
                               "include/kbench_plugin.h)",
                       path, KBP_ENTRY, KBP_ENTRY),
               NULL;
    }
    kbp_entry_fn fn;
    memcpy(&fn, &sym, sizeof fn);
    *tab = fn();
    if (check_table(path, *tab, builtin_names, err, n)) {
        close_lib(dl);
        return NULL;
    }
    return dl;
}

/* One tunable of pimpls[i] as a parameter of its op (shared with another
 * plugin's of the same name and values). 0 or -1 with err. */
static int add_tunable(const char *path, pimpl *pi, const kbp_tunable *t, char *err, size_t n)
{
    const kb_op *op = kb_find_op(pi->p->op);
    const int k = kb_param_index(op, t->name);
    if (k >= 0) {
        const char *had = op->params[k].choices ? op->params[k].choices + 5 : ""; /* past "auto," */
        if (strcmp(had, t->values))
            return kb_errf(err, n, "%s: implementation '%s': tunable '%s' of %s has values %s; a plugin loaded before "
                                   "declares it with %s", path, pi->p->name, t->name, op->name, t->values, had), -1;
        return 0;
    }
    if (ntun_text == KB_COUNT(tun_text)) return kb_errf(err, n, "more than %d plugin tunables", KB_COUNT(tun_text)), -1;
    char help[320];
    snprintf(help, sizeof help, "%s's tunable (plugin %s): %s; auto: %s", pi->name, path, t->help ? t->help : "", t->def);
    kb_escape_controls(help, tun_text[ntun_text].help, sizeof tun_text[ntun_text].help);
    snprintf(tun_text[ntun_text].choices, sizeof tun_text[ntun_text].choices, "auto,%s", t->values);
    const kb_param p = {t->name, KB_P_ENUM, "auto", 0, 0, tun_text[ntun_text].choices, tun_text[ntun_text].help, .tunable = 1};
    if (!kb_op_add_param(op, &p, err, n)) return -1;
    ntun_text++;
    return 0;
}

/* The library's tunables (its implementations from pimpls[first]) become
 * parameters of their ops; every implementation then points at its op's
 * descriptor as it now is. 0, or -1 with err and the ops as they were. */
static int add_tunables(const char *path, int first, char *err, size_t n)
{
    int had[16], had_text = ntun_text;
    for (int o = 0; o < kb_nops && o < 16; o++) had[o] = kb_ops[o]->nparams;
    for (int i = first; i < npimpls; i++) {
        pimpl *pi = &pimpls[i];
        for (int k = 0; k < pi->p->ntunables; k++) {
            if (add_tunable(path, pi, &pi->p->tunables[k], err, n)) {
                for (int o = 0; o < kb_nops && o < 16; o++) kb_op_truncate(kb_ops[o], had[o]);
                ntun_text = had_text;
                for (int j = 0; j < first; j++) pimpls[j].op = kb_find_op(pimpls[j].op->name); /* an op widened here */
                return -1;
            }
            size_t l = strlen(pi->tunables);
            snprintf(pi->tunables + l, sizeof pi->tunables - l, "%s%s", l ? "," : "", pi->p->tunables[k].name);
        }
        pi->impl.tunables = pi->tunables[0] ? pi->tunables : NULL;
    }
    for (int i = 0; i < npimpls; i++) pimpls[i].op = kb_find_op(pimpls[i].op->name);
    return 0;
}

int kb_plugin_load(const char *alias, const char *path, char *err, size_t n)
{
    if (alias && !kb_plugin_name_ok(alias))
        return kb_errf(err, n, "plugin name '%s': letters, digits, '_', '-', '.' only", alias), -1;
    for (int i = 0; i < nlibs; i++) /* the same again (flags and the sweep file): once */
        if (!strcmp(libs[i].path, path) && !strcmp(libs[i].alias, alias ? alias : "")) return 0;
    if (nlibs == MAX_LIBS) return kb_errf(err, n, "more than %d plugins", MAX_LIBS), -1;
    const kbp_table *t = NULL;
    void *dl = open_lib(path, 0, &t, err, n);
    if (!dl) return -1;
    plib *L = &libs[nlibs];
    snprintf(L->alias, sizeof L->alias, "%s", alias ? alias : "");
    snprintf(L->path, sizeof L->path, "%s", path);
    L->dl = dl;
    int first = npimpls;
    for (int i = 0; i < t->nimpls; i++) {
        const kbp_impl *p = &t->impls[i];
        const kb_op *op = kb_find_op(p->op);
        int per_op = 0; /* implementations of this op in the library */
        for (int j = 0; j < t->nimpls; j++) per_op += !strcmp(t->impls[j].op, p->op);
        char name[96];
        if (!alias) snprintf(name, sizeof name, "%s", p->name);
        else if (per_op == 1) snprintf(name, sizeof name, "%s", alias);
        else snprintf(name, sizeof name, "%s.%s", alias, p->name);
        const kb_impl *clash = find_impl(op, name);
        if (clash || npimpls == MAX_PIMPLS) {
            npimpls = first; /* nothing of this library stays */
            close_lib(dl);
            if (clash && !clash->plugin) return builtin_clash(path, name, op, err, n);
            if (clash)
                return kb_errf(err, n, "%s: %s already has an implementation '%s' from %s", path, op->name, name,
                               kb_plugin_path(clash)),
                       -1;
            return kb_errf(err, n, "more than %d plugin implementations", MAX_PIMPLS), -1;
        }
        pimpl *pi = &pimpls[npimpls++];
        memset(pi, 0, sizeof *pi);
        pi->op = op;
        pi->p = p;
        pi->lib = L;
        snprintf(pi->name, sizeof pi->name, "%s", name);
        char help[320];
        snprintf(help, sizeof help, "%s (plugin %s)", p->help ? p->help : "", path);
        kb_escape_controls(help, pi->help, sizeof pi->help);
        pi->impl.name = pi->name;
        pi->impl.help = pi->help;
        pi->impl.prepare = plugin_prepare;
        pi->impl.launch = plugin_launch;
        pi->impl.release = plugin_release;
        pi->impl.nondeterministic = (p->flags & KBP_NONDETERMINISTIC) != 0;
        pi->impl.plugin = pi;
        pi->py = kb_pyimpl_index(p);
    }
    for (int o = 0; alias && o < kb_nops; o++) /* --impl NAME selects all of the library's: no built-in may be NAME */
        for (int k = 0; k < kb_ops[o]->nimpls; k++)
            if (!strcmp(kb_ops[o]->impls[k].name, alias)) {
                npimpls = first;
                close_lib(dl);
                return builtin_clash(path, alias, kb_ops[o], err, n);
            }
    if (add_tunables(path, first, err, n)) {
        npimpls = first;
        close_lib(dl);
        return -1;
    }
    nlibs++;
    return 0;
}

int kb_plugin_load_spec(const char *spec, char *err, size_t n)
{
    const char *eq = strchr(spec, '=');
    if (!eq) return kb_plugin_load(NULL, spec, err, n);
    char alias[64];
    if ((size_t)(eq - spec) >= sizeof alias)
        return kb_errf(err, n, "plugin name '%.*s...': at most 63 characters", 20, spec), -1;
    snprintf(alias, sizeof alias, "%.*s", (int)(eq - spec), spec);
    if (!eq[1]) return kb_errf(err, n, "plugin '%s=': no library path", alias), -1;
    return kb_plugin_load(alias, eq + 1, err, n);
}

int kb_plugin_load_list(const char *list, char *err, size_t n)
{
    for (const char *s = list; *s;) {
        size_t l = strcspn(s, ",");
        char spec[1100];
        snprintf(spec, sizeof spec, "%.*s", (int)(l < sizeof spec - 1 ? l : sizeof spec - 1), s);
        if (!spec[0]) return kb_errf(err, n, "plugins: an empty entry in '%s' (NAME=PATH,...)", list), -1;
        if (kb_plugin_load_spec(spec, err, n)) return -1;
        s += l + (s[l] == ',');
    }
    return 0;
}

/* --impl's PATH alone (a token with a '/' or ending in .so) is NAME=PATH,
 * NAME its file's stem: ./build/libmine.so -> mine */
void kb_plugin_file_alias(const char *path, char *alias, size_t n)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    if (!strncmp(b, "lib", 3) && b[3] && b[3] != '.') b += 3;
    size_t k = strcspn(b, ".");
    if (k >= n) k = 0; /* too long for a name: none (the caller asks for NAME=PATH) */
    snprintf(alias, n, "%.*s", (int)k, b);
}

static int path_alias(const char *tok, char *alias, size_t n)
{
    const size_t l = strlen(tok);
    if (!strchr(tok, '/') && !(l > 3 && (!strcmp(tok + l - 3, ".so") || !strcmp(tok + l - 3, ".py")))) return 0;
    kb_plugin_file_alias(tok, alias, n);
    return 1;
}

/* One --impl token: a library loaded (NAME=PATH, or PATH alone) becomes its
 * NAME, which selects every implementation of it (kb_impl_named); a name
 * stays. 0 or -1 with err. */
static int take_token(const char *tok, char *out, size_t size, char *err, size_t n)
{
    char alias[64], spec[1200];
    const char *eq = strchr(tok, '=');
    if (!eq && path_alias(tok, alias, sizeof alias)) {
        if (!alias[0] || !kb_plugin_name_ok(alias))
            return kb_errf(err, n, "--impl %s: name it, NAME=%s (its file's name is not one: letters, digits, '_', '-', '.')",
                           tok, tok), -1;
        snprintf(spec, sizeof spec, "%s=%s", alias, tok);
        tok = spec;
        eq = strchr(tok, '=');
    }
    if (!eq) return snprintf(out, size, "%s", tok) >= (int)size ? -1 : 0;
    if (kb_plugin_load_spec(tok, err, n)) return -1;
    return snprintf(out, size, "%.*s", (int)(eq - tok), tok) >= (int)size ? -1 : 0;
}

int kb_plugin_take_impls(char *impl, size_t size, char *err, size_t n)
{
    if (n) err[0] = 0;
    char out[sizeof((kb_opts *)0)->impl] = "";
    size_t o = 0;
    for (const char *s = impl; *s;) {
        size_t l = strcspn(s, ",");
        char tok[1100], names[sizeof out];
        snprintf(tok, sizeof tok, "%.*s", (int)(l < sizeof tok - 1 ? l : sizeof tok - 1), s);
        if (take_token(tok, names, sizeof names, err, n)) {
            if (!err[0]) kb_errf(err, n, "--impl: longer than %zu characters", sizeof out - 1);
            return -1;
        }
        int w = snprintf(out + o, sizeof out - o, "%s%s", o ? "," : "", names);
        if (w < 0 || (size_t)w >= sizeof out - o) return kb_errf(err, n, "--impl: longer than %zu characters", sizeof out - 1), -1;
        o += (size_t)w;
        s += l + (s[l] == ',');
    }
    if (o >= size) return kb_errf(err, n, "--impl: longer than %zu characters", size - 1), -1;
    memcpy(impl, out, o + 1);
    return 0;
}

int kb_plugins_spec(char *buf, size_t n)
{
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < nlibs; i++) {
        int w = snprintf(buf + o, n - o, "%s%s%s%s", i ? "," : "", libs[i].alias, libs[i].alias[0] ? "=" : "", libs[i].path);
        if (w < 0 || (size_t)w >= n - o) return -1;
        o += (size_t)w;
    }
    return 0;
}

void kb_plugins_unload(void)
{
    kb_ops_reset();
    kb_pyimpl_unload();
    for (int i = 0; i < nlibs; i++) close_lib(libs[i].dl);
    nlibs = npimpls = ntun_text = 0;
}

int kb_plugin_info(const char *path, FILE *f, char *err, size_t n)
{
    const kbp_table *t = NULL;
    void *dl = open_lib(path, 1, &t, err, n);
    if (!dl) return -1;
    fprintf(f, "%s: kbench plugin ABI %d, %d implementation%s\n", path, t->abi, t->nimpls, t->nimpls == 1 ? "" : "s");
    for (int i = 0; i < t->nimpls; i++) {
        const kbp_impl *p = &t->impls[i];
        char help[320];
        kb_escape_controls(p->help ? p->help : "", help, sizeof help);
        fprintf(f, "  %-10s %-16s %s%s%s%s\n", p->op, p->name, help, p->prepare ? "" : " [no prepare]",
                p->supports ? "" : " [takes every case]", p->flags & KBP_NONDETERMINISTIC ? " [nondeterministic]" : "");
        char a[200], b[200];
        kb_escape_controls(p->inplace ? p->inplace : "", a, sizeof a);
        kb_escape_controls(p->accumulates ? p->accumulates : "", b, sizeof b);
        if (a[0]) fprintf(f, "  %-10s %-16s   in place: %s (the input restored before each launch)\n", "", "", a);
        if (b[0]) fprintf(f, "  %-10s %-16s   accumulates into: %s (zeroed before each launch, read counted)\n", "", "", b);
        for (int k = 0; k < p->ntunables; k++) {
            kb_escape_controls(p->tunables[k].help ? p->tunables[k].help : "", help, sizeof help);
            char flag[40];
            snprintf(flag, sizeof flag, "%s", p->tunables[k].name);
            for (char *q = flag; *q; q++) *q = *q == '_' ? '-' : *q;
            fprintf(f, "  %-10s %-16s   tunable %s: --%s %s (auto: %s): %s\n", "", "", p->tunables[k].name, flag,
                    p->tunables[k].values, p->tunables[k].def, help);
        }
    }
    const char *seen[MAX_PIMPLS];
    int ns = 0;
    for (int i = 0; i < t->nimpls; i++) {
        int dup = 0;
        for (int k = 0; k < ns; k++) dup |= !strcmp(seen[k], t->impls[i].op);
        if (dup) continue;
        seen[ns++] = t->impls[i].op;
        fprintf(f, "\nthe tensors of %s:\n", t->impls[i].op);
        kb_op_print_tensors(f, kb_find_op(t->impls[i].op));
    }
    close_lib(dl);
    return 0;
}

int kb_impl_supports(const kb_impl *impl, const kb_case *c, const kb_devattr *d, char *why, size_t n)
{
    why[0] = 0;
    for (int i = 0; i < c->op->nparams; i++) {
        const kb_param *p = &c->op->params[i];
        if (!p->tunable || c->v[i].num == 0) continue; /* auto */
        if (!kb_list_has(impl->tunables, p->name)) {
            char v[64];
            kb_format_value(p, &c->v[i], v, sizeof v);
            snprintf(why, n, "%s takes no %s (%s=%s; auto for it)", impl->name, p->name, p->name, v);
            return 1;
        }
    }
    if (impl->plugin ? kb_plugin_supports(impl, c, why, n) : impl->supports && impl->supports(c, d, why, n)) {
        if (!why[0]) snprintf(why, n, "%s cannot take this case", impl->name);
        return 1;
    }
    return 0;
}
