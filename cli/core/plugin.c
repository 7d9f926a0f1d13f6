/* External implementations: shared libraries that export kbench_plugin()
 * (include/kbench_plugin.h). Each of their implementations becomes one more
 * kb_impl of its op, after kbench's own: verified, timed and reported like
 * them. Everything here is host code; loading touches no GPU. */
#include "elfcheck.h"
#include "errors.h"
#include "op.h"
#include "params.h"
#include "plugin.h"
#include "plugin_int.h"
#include "pyimpl.h"
#include "registry.h"
#include "settings.h"
#include "tensors.h"
#include "../../include/kb_devattr.h"
#include "../../include/kbench_plugin.h"

#include <ctype.h>
#include <stdio.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>


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
    char names[2 * KB_MAX_OUTPUTS + 1][128]; /* each_name's tokens are 127 characters at most */
    int n;
} seen_outputs;

static int one_seen(const char *a, const char *b, void *arg)
{
    (void)b;
    seen_outputs *s = arg;
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->names[i], a)) return 1;
    if (s->n == KB_COUNT(s->names)) return 2;
    snprintf(s->names[s->n++], sizeof s->names[0], "%s", a);
    return 0;
}

/* inplace's and accumulates' names are the op's outputs (and inputs), each
 * output named once in the two together */
static int check_declared(const char *path, const kbp_impl *p, const kb_op *op, char *err, size_t n)
{
    decl_arg d = {path, p, op, "inplace", err, n};
    if (kb_plugin_each_name(p->inplace, 1, one_declared, &d)) return -1;
    d.what = "accumulates";
    if (kb_plugin_each_name(p->accumulates, 0, one_declared, &d)) return -1;
    const int py = kb_pyimpl_index(p); /* a Python implementation's writes: outputs too */
    d.what = "writes";
    if (py >= 0 && kb_plugin_each_name(kb_pyimpl_writes(py), 0, one_declared, &d)) return -1;
    seen_outputs s = {.n = 0};
    int r = kb_plugin_each_name(p->inplace, 1, one_seen, &s);
    if (!r) r = kb_plugin_each_name(p->accumulates, 0, one_seen, &s);
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
        pi->impl.prepare = kb_plugin_prepare;
        pi->impl.launch = kb_plugin_launch;
        pi->impl.release = kb_plugin_release;
        pi->impl.nondeterministic = (p->flags & KBP_NONDETERMINISTIC) != 0;
        pi->impl.plugin = pi;
        pi->py = kb_pyimpl_index(p);
        pi->impl.interpreted = pi->py >= 0;
        pi->writes = pi->py >= 0 ? kb_pyimpl_writes(pi->py) : NULL;
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

