/* External implementations: plugin libraries loaded into the ops' lists
 * (plugin.c; the ABI is include/kbench_plugin.h). */
#ifndef KB_CORE_PLUGIN_H
#define KB_CORE_PLUGIN_H

#include "op.h"
#include "../../include/kb_devattr.h"
#include <stdio.h>

/* An op's implementations: its own, then those of the loaded plugins. */
int kb_op_nimpls(const kb_op *op);
const kb_impl *kb_op_impl(const kb_op *op, int k);
/* Load a plugin library (alias NULL: its implementations keep their names;
 * else an implementation is named alias, or alias.NAME where the library has
 * several of its op). Refused, with one line in err and nothing loaded: not a
 * shared library, no entry point, another ABI version, an unknown op, no
 * launch, a bad or clashing name. No GPU. 0 or -1. */
int kb_plugin_load(const char *alias, const char *path, char *err, size_t n);
int kb_plugin_load_spec(const char *spec, char *err, size_t n);  /* "NAME=PATH" or "PATH" */
int kb_plugin_name_ok(const char *name); /* letters, digits, '_', '-', '.'; under 64 */
int kb_plugin_load_list(const char *list, char *err, size_t n);  /* comma list of specs */
/* --impl's NAME=PATH entries: load each, leave NAME in the list. 0 or -1. */
int kb_plugin_take_impls(char *impl, size_t size, char *err, size_t n);
int kb_plugin_supports(const kb_impl *impl, const kb_case *c, char *why, size_t n);
const char *kb_plugin_path(const kb_impl *impl); /* NULL: kbench's own */
/* Whether --impl's filter (a comma list; "" or NULL: every one) names impl:
 * by its own name, or, for a library loaded as NAME=PATH (or PATH alone,
 * NAME its file's stem), by NAME: every implementation the library has
 * (NAME, or NAME.its_name where it has several of an op). */
int kb_impl_named(const char *filter, const kb_impl *impl);
/* the NAME a library goes by when --impl names its PATH alone: its file's
 * stem (./build/libmine.so -> mine) */
void kb_plugin_file_alias(const char *path, char *alias, size_t n);
void kb_plugins_unload(void);
/* The loaded libraries as --plugin takes them, in load order ("NAME=PATH" or
 * "PATH", comma-separated): loaded again in that order elsewhere (a helper
 * process), they give the same names and parameters. 0, or -1 if too long. */
int kb_plugins_spec(char *buf, size_t n);
/* kbench plugin info: the checks of kb_plugin_load, then the table and the
 * tensors of its ops. 0, or -1 with err. */
int kb_plugin_info(const char *path, FILE *f, char *err, size_t n);

/* 0 when impl can run case c on device d (its supports, and the tunables c
 * fixes are all its own); else non-zero with the reason in why. */
int kb_impl_supports(const kb_impl *impl, const kb_case *c, const kb_devattr *d, char *why, size_t n);

#endif
