/* A plugin implementation's calls (plugin_int.h): the case as the ABI
 * passes it (its parameters' text, its tensors), the declarations the
 * harness acts on (inplace, accumulates), the kernel column, and each call
 * to the library's function or, for a Python file, to Python (pyimpl.h). */
#include "errors.h"
#include "op.h"
#include "params.h"
#include "plugin.h"
#include "plugin_int.h"
#include "pyimpl.h"
#include "tensors.h"
#include "../../include/kb_devattr.h"
#include "../../include/kb_dtype.h"
#include "../../include/kbench_plugin.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    const pimpl *pi = kb_pimpl_of(impl);
    if (!c->op->plugin_tensors) {
        snprintf(why, n, "op %s hands no tensors to plugins", c->op->name);
        return 1;
    }
    if (!pi->p->supports) return 0; /* a Python file's too: set where it declares one */
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
int kb_plugin_each_name(const char *list, int pairs, int (*fn)(const char *a, const char *b, void *arg), void *arg)
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

static int one_written(const char *o, const char *unused, void *arg)
{
    (void)unused;
    presample_arg *a = arg;
    const int k = find_tensor(a->pc->out, a->pc->kc.noutputs, o);
    if (k >= 0) a->r->unwritten &= ~(1u << k);
    return 0;
}

/* The implementation's inplace, accumulates and (Python) writes, for this
 * case's tensors, into r (presample.h). */
static int declare_presample(const pimpl *pi, pcase *pc, kb_impl_run *r)
{
    presample_arg a = {pi, pc, r};
    if (pi->writes) { /* every output but those named */
        r->unwritten = pc->kc.noutputs >= 32 ? ~0u : (1u << pc->kc.noutputs) - 1;
        if (kb_plugin_each_name(pi->writes, 0, one_written, &a)) return -1;
    }
    return kb_plugin_each_name(pi->p->inplace, 1, one_inplace, &a) || kb_plugin_each_name(pi->p->accumulates, 0, one_accumulate, &a);
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

int kb_plugin_prepare(const kb_case *c, kb_state *st, const kb_devattr *d, kb_impl_run *r)
{
    (void)d;
    const pimpl *pi = kb_pimpl_of(r->impl);
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
    const size_t kl = strlen(r->kernel);
    if (pi->writes && kl + 1 < sizeof r->kernel) snprintf(r->kernel + kl, sizeof r->kernel - kl, " (writes %s)", pi->writes);
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

int kb_plugin_launch(const kb_case *c, kb_state *st, kb_impl_run *r, void *stream)
{
    (void)c, (void)st;
    const pimpl *pi = kb_pimpl_of(r->impl);
    pcase *pc = r->priv;
    if (pi->py >= 0) { /* an exception: its line, not a CUDA error's name */
        char why[KB_ERRLEN];
        int rc = kb_pyimpl_launch(pc->state, stream, r->verifying, why, sizeof why);
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

void kb_plugin_release(const kb_case *c, kb_state *st, kb_impl_run *r)
{
    (void)c, (void)st;
    pcase *pc = r->priv;
    if (!pc) return;
    const pimpl *pi = kb_pimpl_of(r->impl);
    if (pi->py >= 0) kb_pyimpl_release(pc->state);
    else if (pi->p->release) pi->p->release(&pc->kc, pc->state);
    free(pc);
    r->priv = NULL;
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


const char *kb_plugin_path(const kb_impl *impl) { return impl->plugin ? kb_pimpl_of(impl)->lib->path : NULL; }
