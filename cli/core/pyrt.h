/* The Python runtime, loaded at run time (pyrt.c): kbench links no Python
 * and runs where there is none; a Python implementation (a .py file) needs
 * the interpreter that has the user's packages: `python3` on PATH, or
 * --python PATH (a sweep file's "python" setting). That interpreter says
 * where its shared libpython is and what its sys.path holds (a venv's
 * site-packages); kbench loads that library (RTLD_GLOBAL: extension modules
 * such as torch find its symbols) and starts it once, its sys.path set to
 * the interpreter's. Only the few C API calls kbench makes are looked up.
 *
 * Everything Python does for kbench is in one module of Python source,
 * kept in pyrt.c (the shim): it loads a user's file, checks what it
 * declares, calls supports/prepare/launch, and turns every exception into
 * one line. */
#ifndef KB_CORE_PYRT_H
#define KB_CORE_PYRT_H

#include <stddef.h>
#include <stdint.h>

typedef struct _object PyObject; /* CPython's, opaque here */

/* The shim, cli/core/pyshim.py embedded (pyshim_src.c): everything Python
 * does for kbench (pyimpl.c's calls). */
extern const char kb_pyshim_src[];

/* The interpreter to use: NULL or "" for python3 on PATH. Before the first
 * kb_py_start; a later different one is refused by kb_py_start. */
void kb_py_set_interpreter(const char *path);
const char *kb_py_interpreter(void); /* the one set ("": python3 on PATH) */
/* Python started (once): 0, or -1 with one line in err saying what is
 * missing (no interpreter, no shared libpython, a symbol, the shim). */
int kb_py_start(char *err, size_t n);
int kb_py_started(void);

/* The C API calls kbench makes, looked up in libpython (kb_py_start). */
typedef struct {
    PyObject *(*Unicode_FromString)(const char *);
    const char *(*Unicode_AsUTF8)(PyObject *);
    PyObject *(*Long_FromLongLong)(long long);
    long long (*Long_AsLongLong)(PyObject *);
    PyObject *(*Tuple_New)(ptrdiff_t);
    int (*Tuple_SetItem)(PyObject *, ptrdiff_t, PyObject *); /* steals */
    PyObject *(*Tuple_GetItem)(PyObject *, ptrdiff_t);       /* borrowed */
    ptrdiff_t (*Tuple_Size)(PyObject *);
    PyObject *(*Dict_New)(void);
    int (*Dict_SetItemString)(PyObject *, const char *, PyObject *); /* no steal */
    PyObject *(*List_New)(ptrdiff_t);
    int (*List_SetItem)(PyObject *, ptrdiff_t, PyObject *); /* steals */
    PyObject *(*Capsule_New)(void *, const char *, void (*)(PyObject *));
    void *(*Capsule_GetPointer)(PyObject *, const char *);
    int (*Capsule_IsValid)(PyObject *, const char *);
    PyObject *(*Object_CallObject)(PyObject *, PyObject *);
    PyObject *(*Object_GetAttrString)(PyObject *, const char *);
    void (*DecRef)(PyObject *);
    void (*IncRef)(PyObject *);
    PyObject *(*Err_Occurred)(void);
    void (*Err_Clear)(void);
    void (*Err_Print)(void);
    PyObject *none; /* Py_None */
} kb_py_api;
extern kb_py_api kb_py;

/* The shim's function NAME (a new reference), or NULL. */
PyObject *kb_py_shim(const char *name);
/* A tuple of the n objects (each reference stolen; NULL entries: None). */
PyObject *kb_py_tuple(int n, PyObject *const *items);
/* A call's result as text into buf: a str, or None as "" (returns 0); -1
 * when it raised (its text into buf, one line) or returned something else. */
int kb_py_text(PyObject *r, char *buf, size_t n);

#endif
