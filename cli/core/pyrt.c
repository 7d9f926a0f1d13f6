/* The Python runtime, loaded at run time (pyrt.h). */
#include "errors.h"
#include "pyrt.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

kb_py_api kb_py;

#ifdef __SANITIZE_ADDRESS__
/* make test-asan: the interpreter keeps what it allocates until the process
 * ends, by design; LeakSanitizer is told to leave libpython's alone */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:libpython\nleak:_ctypes\nleak:libffi\n"; }
const char *__lsan_default_options(void); /* and no table of them on stderr: a refusal stays one line */
const char *__lsan_default_options(void) { return "print_suppressions=0"; }
#endif
static char interp[1024];
static int started;   /* 1 started, -1 failed (err kept) */
static char start_err[1024];
static PyObject *shim; /* the shim module */


static char mismatch[1024]; /* an interpreter asked for after another started */

void kb_py_set_interpreter(const char *path)
{
    const char *want = path && path[0] ? path : "";
    if (!started) snprintf(interp, sizeof interp, "%s", want);
    else if (strcmp(want, interp) && !mismatch[0]) snprintf(mismatch, sizeof mismatch, "%s", want[0] ? want : "python3");
}

const char *kb_py_interpreter(void) { return interp; }

int kb_py_started(void) { return started == 1; }

/* The interpreter's answer to a few questions (its libpython, home, sys.path),
 * one per line; 0, or -1 with err. */
static int ask(const char *python, char *out, size_t n, char *err, size_t en)
{
    static const char q[] =
        "import os, sys, sysconfig as s\n"
        "v = s.get_config_var\n"
        "d = [v('LIBDIR') or '', os.path.join(v('LIBDIR') or '', v('MULTIARCH') or ''), sys.base_prefix + '/lib']\n"
        "names = [n for n in (v('INSTSONAME'), v('LDLIBRARY')) if n and '.so' in n]\n"
        "lib = next((os.path.join(a, b) for b in names for a in d if os.path.exists(os.path.join(a, b))), '')\n"
        "print(lib); print(sys.base_prefix); print('%d.%d' % sys.version_info[:2])\n"
        "print('\\n'.join(p for p in sys.path if p))\n";
    int p[2];
    if (pipe(p)) return kb_errf(err, en, "pipe: %s", strerror(errno)), -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return close(p[0]), close(p[1]), kb_errf(err, en, "fork: %s", strerror(errno)), -1;
    if (pid == 0) {
        close(p[0]);
        dup2(p[1], 1);
        char *argv[] = {(char *)python, "-c", (char *)q, NULL};
        execvp(python, argv);
        _exit(127);
    }
    close(p[1]);
    size_t got = 0;
    ssize_t k;
    while (got + 1 < n && (k = read(p[0], out + got, n - 1 - got)) != 0) {
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) break;
        got += (size_t)k;
    }
    out[got] = 0;
    close(p[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) == 127)
        return kb_errf(err, en, "no Python interpreter '%s' (a Python implementation needs one: --python PATH)", python), -1;
    if (WEXITSTATUS(st)) return kb_errf(err, en, "Python interpreter '%s' failed to say where its libpython is", python), -1;
    return 0;
}

/* each C API function kbench calls, from the library */
static int bind(void *dl, char *err, size_t n)
{
    struct { void **slot; const char *sym; } t[] = {
        {(void **)&kb_py.Unicode_FromString, "PyUnicode_FromString"}, {(void **)&kb_py.Unicode_AsUTF8, "PyUnicode_AsUTF8"},
        {(void **)&kb_py.Long_FromLongLong, "PyLong_FromLongLong"}, {(void **)&kb_py.Long_AsLongLong, "PyLong_AsLongLong"},
        {(void **)&kb_py.Tuple_New, "PyTuple_New"}, {(void **)&kb_py.Tuple_SetItem, "PyTuple_SetItem"},
        {(void **)&kb_py.Tuple_GetItem, "PyTuple_GetItem"}, {(void **)&kb_py.Tuple_Size, "PyTuple_Size"},
        {(void **)&kb_py.Dict_New, "PyDict_New"}, {(void **)&kb_py.Dict_SetItemString, "PyDict_SetItemString"},
        {(void **)&kb_py.List_New, "PyList_New"}, {(void **)&kb_py.List_SetItem, "PyList_SetItem"},
        {(void **)&kb_py.Capsule_New, "PyCapsule_New"}, {(void **)&kb_py.Capsule_GetPointer, "PyCapsule_GetPointer"},
        {(void **)&kb_py.Capsule_IsValid, "PyCapsule_IsValid"}, {(void **)&kb_py.Object_CallObject, "PyObject_CallObject"},
        {(void **)&kb_py.Object_GetAttrString, "PyObject_GetAttrString"}, {(void **)&kb_py.DecRef, "Py_DecRef"},
        {(void **)&kb_py.IncRef, "Py_IncRef"}, {(void **)&kb_py.Err_Occurred, "PyErr_Occurred"},
        {(void **)&kb_py.Err_Clear, "PyErr_Clear"}, {(void **)&kb_py.Err_Print, "PyErr_Print"},
        {(void **)&kb_py.none, "_Py_NoneStruct"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!(*t[i].slot = dlsym(dl, t[i].sym))) return kb_errf(err, n, "libpython lacks %s", t[i].sym), -1;
    return 0;
}

/* Python started from the library lib, its sys.path the interpreter's
 * (paths: one a line), the shim compiled and run as module kbench_shim. */
static int init(void *dl, const char *home, const char *paths, char *err, size_t n)
{
    void (*initialize)(int) = (void (*)(int))dlsym(dl, "Py_InitializeEx");
    int (*run)(const char *) = (int (*)(const char *))dlsym(dl, "PyRun_SimpleString");
    PyObject *(*compile)(const char *, const char *, int) = (PyObject * (*)(const char *, const char *, int)) dlsym(dl, "Py_CompileString");
    PyObject *(*exec)(const char *, PyObject *) = (PyObject * (*)(const char *, PyObject *)) dlsym(dl, "PyImport_ExecCodeModule");
    if (!initialize || !run || !compile || !exec)
        return kb_errf(err, n, "libpython lacks Py_InitializeEx, PyRun_SimpleString, Py_CompileString or PyImport_ExecCodeModule"), -1;
    if (!getenv("PYTHONHOME")) setenv("PYTHONHOME", home, 0); /* its standard library, wherever kbench is */
    initialize(0);                                           /* 0: kbench keeps its signal handlers */
    char *code = NULL; /* sys.path as the interpreter has it: a venv's site-packages too */
    if (asprintf(&code, "import sys\nsys.path[:] = [p for p in r'''%s'''.split('\\n') if p]\n", paths) < 0) abort();
    const int rc = run(code);
    free(code);
    PyObject *c = rc ? NULL : compile(kb_pyshim_src, "kbench_shim", 257 /* Py_file_input */);
    if (c) shim = exec("kbench_shim", c);
    if (c) kb_py.DecRef(c);
    if (!shim) {
        if (kb_py.Err_Occurred()) kb_py.Err_Print();
        return kb_errf(err, n, "the Python shim did not start (its error above)"), -1;
    }
    return 0;
}

int kb_py_start(char *err, size_t n)
{
    if (started == 1 && mismatch[0])
        return kb_errf(err, n, "Python '%s' was asked for after '%s' started (one interpreter a run: give --python once)",
                       mismatch, interp[0] ? interp : "python3"), -1;
    if (started == 1) return 0;
    if (started < 0) return kb_errf(err, n, "%s", start_err), -1;
    const char *python = interp[0] ? interp : "python3";
    char *out = malloc(1 << 16);
    if (!out) abort();
    int rc = ask(python, out, 1 << 16, start_err, sizeof start_err);
    char *lib = out, *home = NULL, *ver = NULL, *paths = NULL;
    if (!rc) {
        home = strchr(lib, '\n');
        if (home) *home++ = 0;
        ver = home ? strchr(home, '\n') : NULL;
        if (ver) *ver++ = 0;
        paths = ver ? strchr(ver, '\n') : NULL;
        if (paths) *paths++ = 0;
        if (!paths) rc = -1, kb_errf(start_err, sizeof start_err, "Python interpreter '%s' gave no answer kbench reads", python);
        else if (!lib[0])
            rc = -1, kb_errf(start_err, sizeof start_err,
                             "Python %s at '%s' has no shared libpython (kbench loads it at run time; a Python built "
                             "with --enable-shared, or the distribution's libpython3.X package)", ver, python);
    }
    void *dl = rc ? NULL : dlopen(lib, RTLD_NOW | RTLD_GLOBAL);
    if (!rc && !dl) rc = -1, kb_errf(start_err, sizeof start_err, "cannot load %s: %s", lib, dlerror());
    if (!rc) rc = bind(dl, start_err, sizeof start_err);
    if (!rc) rc = init(dl, home, paths, start_err, sizeof start_err);
    free(out);
    started = rc ? -1 : 1;
    if (rc) kb_errf(err, n, "%s", start_err);
    return rc;
}

PyObject *kb_py_shim(const char *name) { return shim ? kb_py.Object_GetAttrString(shim, name) : NULL; }

PyObject *kb_py_tuple(int n, PyObject *const *items)
{
    PyObject *t = kb_py.Tuple_New(n);
    for (int i = 0; i < n; i++) {
        PyObject *o = items[i];
        if (!o) kb_py.IncRef(o = kb_py.none);
        kb_py.Tuple_SetItem(t, i, o);
    }
    return t;
}

int kb_py_text(PyObject *r, char *buf, size_t n)
{
    if (n) buf[0] = 0;
    if (!r) { /* raised: the shim turns exceptions into text, so this is the shim's own */
        kb_py.Err_Print();
        snprintf(buf, n, "internal: the Python shim raised (above)");
        return -1;
    }
    if (r == kb_py.none) return 0;
    const char *s = kb_py.Unicode_AsUTF8(r);
    if (!s) {
        kb_py.Err_Clear();
        snprintf(buf, n, "internal: the Python shim returned no text");
        return -1;
    }
    snprintf(buf, n, "%s", s);
    return 0;
}
