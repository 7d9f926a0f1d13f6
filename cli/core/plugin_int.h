/* What plugin.c (loading), plugin_case.c (the calls) and plugin_names.c
 * (--impl's names) share: a loaded library and each implementation of it. */
#ifndef KB_CORE_PLUGIN_INT_H
#define KB_CORE_PLUGIN_INT_H

#include "op.h"
#include "../../include/kbench_plugin.h"
#include <stddef.h>

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
    const char *writes; /* a Python implementation's writes ("y,mean"); NULL: every output */
} pimpl;

static inline const pimpl *kb_pimpl_of(const kb_impl *impl) { return (const pimpl *)impl->plugin; }

/* plugin_case.c: an implementation's calls as kb_impl's (a library's, or a
 * Python file's through pyimpl.h) */
int kb_plugin_prepare(const kb_case *c, kb_state *st, const kb_devattr *d, kb_impl_run *r);
int kb_plugin_launch(const kb_case *c, kb_state *st, kb_impl_run *r, void *stream);
void kb_plugin_release(const kb_case *c, kb_state *st, kb_impl_run *r);
/* Each "A=B" (pairs) or "A" of a comma list: fn(A, B or NULL, arg); the first
 * non-zero it returns, else 0 (inplace and accumulates, at load and prepare). */
int kb_plugin_each_name(const char *list, int pairs, int (*fn)(const char *a, const char *b, void *arg), void *arg);

#endif
