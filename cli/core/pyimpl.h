/* Python implementations (pyimpl.c): a .py file named where a plugin
 * library would be (--impl NAME=my_rope.py, --plugin, a sweep file's
 * "plugins") declares implementations in a list KBENCH (docs/python.md).
 * Loaded, they are a table of the plugin ABI (kbench_plugin.h) that
 * plugin.c registers like a library's: the same naming, tunables, in-place
 * and accumulating outputs, isolation, rows. Their calls go to Python
 * through the shim (pyrt.h). */
#ifndef KB_CORE_PYIMPL_H
#define KB_CORE_PYIMPL_H

#include "../../include/kbench_plugin.h"
#include <stddef.h>

/* whether path names a Python file (ends in .py) */
int kb_pyimpl_is_python(const char *path);
/* The file loaded (Python started first): its table, or -1 with one line
 * in err (no Python, a syntax error at FILE:LINE, an import that failed, a
 * declaration without launch, ...). No GPU. */
int kb_pyimpl_load(const char *path, const kbp_table **t, char *err, size_t n);
/* the tables forgotten (kb_plugins_unload) */
void kb_pyimpl_unload(void);
/* p's index among the loaded Python implementations, or -1 (a C plugin's) */
int kb_pyimpl_index(const kbp_impl *p);

/* The calls, as the ABI's, for implementation idx; case_text and
 * tensor_text as pyshim.py reads them (plugin.c writes them). */
int kb_pyimpl_supports(int idx, const char *case_text, char *why, size_t n);
int kb_pyimpl_prepare(int idx, const char *case_text, const char *tensor_text, void *stream, void **state, char *kernel,
                      size_t kn, char *why, size_t wn);
/* 0, or KB_PY_FAILED with the exception's line in why. verifying: the
 * outputs the launch returns are copied into kbench's (docs/python.md) */
int kb_pyimpl_launch(void *state, void *stream, int verifying, char *why, size_t n);
/* implementation idx's declared outputs ("y,mean"), or NULL: all of them */
const char *kb_pyimpl_writes(int idx);
void kb_pyimpl_release(void *state);
#define KB_PY_FAILED 1 /* cudaErrorInvalidValue: not sticky; an exception in Python, its line said */

#endif
