/* Python implementations without a GPU (core/pyimpl.c, pyrt.c, pyshim.py):
 * tests/python/host_stub.py loaded through the plugin loader, asked
 * supports() (an exception is an n/a reason), prepared and launched over
 * host memory handed over by DLPack (device -1: kDLCPU), its writes seen in
 * kbench's buffers (zero-copy), its exceptions one line with file:line.
 * Skipped where python3 has no shared libpython. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin_path.h"
#include "../cli/core/errors.h"
#include "../cli/core/op.h"
#include "../cli/core/params.h"
#include "../cli/core/plugin.h"
#include "../cli/core/pyrt.h"
#include "../cli/core/registry.h"

static kb_case *one_case(const char *const *kv)
{
    kb_sweep s;
    kb_sweep_init(&s, kb_find_op("layernorm"));
    char err[512];
    for (int i = 0; kv[i]; i += 2)
        if (kb_sweep_set(&s, kv[i], kv[i + 1], err, sizeof err)) fail_msg("%s=%s: %s", kv[i], kv[i + 1], err);
    kb_case *cases = NULL;
    int n = 0;
    if (kb_sweep_expand(&s, &cases, &n, err, sizeof err) || n != 1) fail_msg("%s", err);
    kb_sweep_free(&s);
    return cases;
}

static const kb_impl *layernorm_impl(const char *name)
{
    const kb_op *op = kb_find_op("layernorm");
    for (int k = 0; k < kb_op_nimpls(op); k++)
        if (!strcmp(kb_op_impl(op, k)->name, name)) return kb_op_impl(op, k);
    fail_msg("no implementation %s", name);
    return NULL;
}

static const kb_impl *loaded_as(const char *name)
{
    char err[512];
    if (kb_py_start(err, sizeof err)) {
        print_message("skipped: %s\n", err);
        skip();
    }
    if (kb_plugin_load("py", "tests/python/host_stub.py", err, sizeof err)) fail_msg("%s", err);
    return layernorm_impl(name);
}

static const kb_impl *loaded(void) { return loaded_as("py.double"); }

/* a forward case's state over host memory: x = 0.5 i, outputs poisoned */
static void host_state(kb_state *st, long rows, long cols, float **x, float **y)
{
    memset(st, 0, sizeof *st);
    *x = malloc((size_t)(rows * cols) * sizeof(float));
    *y = malloc((size_t)(rows * cols) * sizeof(float));
    for (long i = 0; i < rows * cols; i++) (*x)[i] = 0.5f * (float)i, (*y)[i] = -1;
    st->nin = 1;
    st->in[0] = (kb_buf){"x", KB_FP32, (size_t)(rows * cols), *x};
    st->nout = 3;
    st->out[0] = (kb_buf){"y", KB_FP32, (size_t)(rows * cols), *y};
    st->out[1] = (kb_buf){"mean", KB_FP32, (size_t)rows, calloc((size_t)rows, 4)};
    st->out[2] = (kb_buf){"rstd", KB_FP32, (size_t)rows, calloc((size_t)rows, 4)};
}

static void test_python_host(void **unused)
{
    (void)unused;
    const kb_impl *im = loaded();
    static const char *const ok[] = {"pass", "fwd", "dtype", "fp32", "rows", "3", "cols", "5", "affine", "none", NULL};
    kb_case *c = one_case(ok);
    char why[256];
    assert_int_equal(kb_impl_supports(im, c, NULL, why, sizeof why), 0);
    kb_state st;
    float *x, *y;
    host_state(&st, 3, 5, &x, &y);
    kb_impl_run r = {.impl = im, .device = -1};
    assert_int_equal(im->prepare(c, &st, NULL, &r), 0);
    assert_non_null(strstr(r.kernel, "double cols=5")); /* what prepare named */
    assert_int_equal(im->launch(c, &st, &r, NULL), 0);
    for (int i = 0; i < 15; i++) assert_true(y[i] == 2 * x[i]); /* written through DLPack into kbench's memory */
    assert_true(((float *)st.out[2].dev)[2] == 1.0f);
    im->release(c, &st, &r);
    kb_cases_free(c, 1);
    for (int i = 1; i < 3; i++) free(st.out[i].dev);

    /* an exception in launch: an error with the file and line, not a crash */
    static const char *const seven[] = {"pass", "fwd", "dtype", "fp32", "rows", "2", "cols", "7", "affine", "none", NULL};
    c = one_case(seven);
    float *x2, *y2;
    kb_state s2;
    host_state(&s2, 2, 7, &x2, &y2);
    kb_impl_run r2 = {.impl = im, .device = -1};
    assert_int_equal(im->prepare(c, &s2, NULL, &r2), 0);
    kb_last_error[0] = 0;
    assert_int_not_equal(im->launch(c, &s2, &r2, NULL), 0);
    assert_non_null(strstr(kb_last_error, "RuntimeError: seven columns"));
    assert_non_null(strstr(kb_last_error, "host_stub.py:"));
    im->release(c, &s2, &r2);
    kb_cases_free(c, 1);
    free(x), free(y), free(x2), free(y2);
    for (int i = 1; i < 3; i++) free(s2.out[i].dev);

    /* supports: a reason, and an exception is one too */
    static const char *const bf[] = {"dtype", "bf16", NULL};
    c = one_case(bf);
    assert_int_not_equal(kb_impl_supports(im, c, NULL, why, sizeof why), 0);
    assert_string_equal(why, "fp32 forward only");
    kb_cases_free(c, 1);
    static const char *const thirteen[] = {"pass", "fwd", "dtype", "fp32", "rows", "13", NULL};
    c = one_case(thirteen);
    assert_int_not_equal(kb_impl_supports(im, c, NULL, why, sizeof why), 0);
    assert_non_null(strstr(why, "supports() raised:"));
    assert_non_null(strstr(why, "ValueError: thirteen rows"));
    kb_cases_free(c, 1);
    kb_plugins_unload();
}

/* writes="y": the statistics are not the implementation's (not verified,
 * not counted: kb_impl_run.unwritten); a launch's returned outputs are
 * taken after a verifying launch only, and must name the case's tensors */
static void test_python_writes_and_returns(void **unused)
{
    (void)unused;
    const kb_impl *im = loaded_as("py.y_only");
    assert_true(im->interpreted); /* --timing auto: graph; events rows get its host time */
    for (int rows = 3; rows <= 5; rows++) {
        char r_s[8];
        snprintf(r_s, sizeof r_s, "%d", rows);
        const char *kv[] = {"pass", "fwd", "dtype", "fp32", "rows", r_s, "cols", "5", "affine", "none", NULL};
        kb_case *c = one_case(kv);
        kb_state st;
        float *x, *y;
        host_state(&st, rows, 5, &x, &y);
        kb_impl_run r = {.impl = im, .device = -1};
        assert_int_equal(im->prepare(c, &st, NULL, &r), 0);
        assert_int_equal(r.unwritten, 6u); /* mean and rstd (outputs 1 and 2) */
        assert_non_null(strstr(r.kernel, "(writes y)"));
        kb_last_error[0] = 0;
        assert_int_equal(im->launch(c, &st, &r, NULL), rows == 5 ? 1 : 0); /* timed: a returned dict dropped */
        if (rows == 5) assert_non_null(strstr(kb_last_error, "want None, or a dict of outputs"));
        r.verifying = 1;
        kb_last_error[0] = 0;
        const int rc = im->launch(c, &st, &r, NULL);
        if (rows == 3) assert_int_equal(rc, 0); /* None: nothing to take */
        else assert_int_not_equal(rc, 0);
        if (rows == 4) assert_non_null(strstr(kb_last_error, "launch returned 'sum', which is no tensor of this case"));
        for (int i = 0; i < rows * 5; i++) assert_true(y[i] == 2 * x[i]);
        im->release(c, &st, &r);
        kb_cases_free(c, 1);
        free(x), free(y);
        for (int i = 1; i < 3; i++) free(st.out[i].dev);
    }
    kb_plugins_unload();
}

/* A C library loaded after a .py file is not Python's: its Python index was
 * once read before it was set (0, the first Python implementation's), and it
 * took that one's graph timing and writes. */
static void test_python_beside_c(void **unused)
{
    (void)unused;
    char lib[1024], err[512];
    if (!test_plugin("noop.so", lib, sizeof lib)) skip();
    assert_true(loaded_as("py.y_only")->interpreted);
    if (kb_plugin_load("c", lib, err, sizeof err)) fail_msg("%s", err);
    assert_false(layernorm_impl("c")->interpreted);
    kb_plugins_unload();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_python_host),
        cmocka_unit_test(test_python_writes_and_returns),
        cmocka_unit_test(test_python_beside_c),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
