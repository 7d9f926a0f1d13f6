/* The implementation table's rules, without a GPU: which implementations can
 * take a case (kb_impl_supports: their own supports() and the tunables rule),
 * and rope's plan (kernels/rope/plan.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin_path.h"
#include "../cli/core/op.h"
#include "../cli/core/params.h"
#include "../cli/core/plugin.h"
#include "../cli/core/registry.h"
#include "../cli/harness/presample.h"
#include "../include/kb_devattr.h"
#include "../kernels/kernels.h"
#include "../kernels/rope/plan.h"

/* ---- a made-up op: tunables "vec" and "stages", three implementations ---- */
static const kb_param params[] = {
    {"cols", KB_P_INT, "64", 1, 1 << 20, NULL, "columns"},
    {"vec", KB_P_ENUM, "auto", 0, 0, "auto,1,2,4", "vectors a lane", 1},
    {"stages", KB_P_ENUM, "auto", 0, 0, "auto,0,3", "rows staged ahead", 1},
};

static int wide_only(const kb_case *c, const kb_devattr *d, char *why, size_t n)
{
    if (d->cc_major < 9) { snprintf(why, n, "needs sm_90, this is sm_%d%d", d->cc_major, d->cc_minor); return 1; }
    if ((long)c->v[0].num % 8) { snprintf(why, n, "cols %ld not a multiple of 8", (long)c->v[0].num); return 1; }
    return 0;
}

static const kb_impl impls[] = {
    {.name = "naive"},
    {.name = "rows", .tunables = "vec,stages"},
    {.name = "wide", .tunables = "vec", .supports = wide_only},
};
static kb_op fake = {.name = "fake", .params = params, .nparams = 3, .impls = impls, .nimpls = KB_COUNT(impls)};

static kb_case mkcase(long cols, int vec, int stages)
{
    kb_case c;
    memset(&c, 0, sizeof c);
    c.op = &fake;
    c.v[0].num = (double)cols;
    c.v[1].num = vec;
    c.v[2].num = stages;
    return c;
}

static void test_supports(void **state)
{
    (void)state;
    const kb_devattr *h100 = kb_devattr_preset("h100"), *a100 = kb_devattr_preset("a100");
    assert_non_null(h100);
    assert_non_null(a100);
    assert_null(kb_devattr_preset("nope"));
    char why[256];
    kb_case c = mkcase(64, 0, 0); /* every tunable auto: each takes it, if its supports() does */
    assert_int_equal(kb_impl_supports(&impls[0], &c, h100, why, sizeof why), 0);
    assert_int_equal(kb_impl_supports(&impls[1], &c, h100, why, sizeof why), 0);
    assert_int_equal(kb_impl_supports(&impls[2], &c, h100, why, sizeof why), 0);
    assert_int_not_equal(kb_impl_supports(&impls[2], &c, a100, why, sizeof why), 0);
    assert_string_equal(why, "needs sm_90, this is sm_80");

    c = mkcase(64, 2, 0); /* vec=2: naive takes no vec */
    assert_int_not_equal(kb_impl_supports(&impls[0], &c, h100, why, sizeof why), 0);
    assert_non_null(strstr(why, "naive takes no vec"));
    assert_non_null(strstr(why, "vec=2"));
    assert_int_equal(kb_impl_supports(&impls[1], &c, h100, why, sizeof why), 0);
    assert_int_equal(kb_impl_supports(&impls[2], &c, h100, why, sizeof why), 0);

    c = mkcase(64, 0, 2); /* stages=3 (index 2): wide takes no stages */
    assert_int_equal(kb_impl_supports(&impls[1], &c, h100, why, sizeof why), 0);
    assert_int_not_equal(kb_impl_supports(&impls[2], &c, h100, why, sizeof why), 0);
    assert_non_null(strstr(why, "wide takes no stages (stages=3"));

    c = mkcase(60, 1, 0); /* its own supports() still decides: cols 60 */
    assert_int_not_equal(kb_impl_supports(&impls[2], &c, h100, why, sizeof why), 0);
    assert_string_equal(why, "cols 60 not a multiple of 8");
    assert_null(strchr(why, '\n'));
}

/* ---- rope's plan ----------------------------------------------------------- */
static kb_rope_args rope(int dtype, int layout, int seq, int batch, int heads, int dim, int rot)
{
    kb_rope_args a;
    memset(&a, 0, sizeof a);
    a.in = (const void *)(uintptr_t)0x10000;
    a.out = (void *)(uintptr_t)0x20000;
    a.dtype = dtype;
    a.layout = layout;
    a.seq = seq;
    a.batch = batch;
    a.heads = heads;
    a.dim = dim;
    a.rot = rot;
    a.tokens = (long)seq * batch;
    return a;
}

static void test_rope_plan(void **state)
{
    (void)state;
    kb_rope_plan p;
    char d[128];
    /* the widest vector that keeps every access aligned */
    kb_rope_args a = rope(2, KB_ROPE_SBHD, 2048, 16, 8, 256, 256);
    assert_int_equal(kb_rope_plan_make(&a, &p), 0);
    assert_int_equal(p.v, 8);
    assert_int_equal(p.async, 1);
    assert_int_equal(p.groups, 2048);
    assert_int_equal(p.rpg, 128);
    /* a unit is a vector from each half: 128 / 8 = 16 a row, 128 rows x 16 =
     * 2048 a group, 256 threads x 4 units = 1024 a block: 2 blocks a group */
    assert_int_equal(p.chunks, 2);
    assert_int_equal(p.gpb, 1);
    assert_int_equal(p.blocks, 2048 * 2);
    kb_rope_plan_describe(&p, d, sizeof d);
    assert_string_equal(d, "opt v=8 cp.async blocks/group=2");
    a = rope(0, KB_ROPE_SBHD, 16, 1, 1, 256, 256); /* fp32: 4 a vector */
    assert_int_equal(kb_rope_plan_make(&a, &p), 0);
    assert_int_equal(p.v, 4);
    a = rope(2, KB_ROPE_SBHD, 9, 2, 2, 7, 6); /* dim 7: scalars, no cp.async of 2 bytes */
    assert_int_equal(kb_rope_plan_make(&a, &p), 0);
    assert_int_equal(p.v, 1);
    assert_int_equal(p.async, 0);
    a = rope(2, KB_ROPE_SBHD, 19, 2, 3, 64, 34); /* rot 34: 34 % 4 == 2, so v 1 */
    assert_int_equal(kb_rope_plan_make(&a, &p), 0);
    assert_int_equal(p.v, 1);
    a = rope(1, KB_ROPE_SBHD, 19, 2, 3, 64, 16); /* rot 16: v 8 */
    assert_int_equal(kb_rope_plan_make(&a, &p), 0);
    assert_int_equal(p.v, 8);
    a.in = (const void *)(uintptr_t)0x10004; /* misaligned input: v 2 */
    assert_int_equal(kb_rope_plan_make(&a, &p), 0);
    assert_int_equal(p.v, 2);
    /* bshd 8 heads x 128: a unit is two vectors (one from each half), 8 a
     * row, 64 a group: small groups, 1024 / 64 = 16 a block, within the table */
    a = rope(2, KB_ROPE_BSHD, 4096, 2, 8, 128, 128);
    assert_int_equal(kb_rope_plan_make(&a, &p), 0);
    assert_int_equal(p.chunks, 1);
    assert_int_equal(p.gpb, 16);
    assert_true(p.gpb * 64 <= KB_ROPE_TABLE);
    assert_int_equal(p.blocks, (8192 + p.gpb - 1) / p.gpb);
    assert_int_equal(p.smem, (size_t)(p.gpb * 64 + 1) / 2 * 2 * 8 + 2 * 4 * 256 * 16);
    kb_rope_plan_describe(&p, d, sizeof d);
    assert_string_equal(d, "opt v=8 cp.async groups/block=16");
    a = rope(2, KB_ROPE_BSHD, 1, 1, 1, 8, 2); /* rot 2: 4096 / 1 table entries cap */
    assert_int_equal(kb_rope_plan_make(&a, &p), 0);
    assert_true(p.gpb >= 1 && p.gpb <= KB_ROPE_THREADS);
    a = rope(2, KB_ROPE_SBHD, 4, 1, 1, 8, 9); /* rot odd, or past dim: refused */
    assert_int_equal(kb_rope_plan_make(&a, &p), -1);
    a = rope(2, KB_ROPE_SBHD, 4, 1, 1, 8, 10);
    assert_int_equal(kb_rope_plan_make(&a, &p), -1);
}

/* ---- ABI 2's declarations, through a host-only path -------------------- */
static kb_case *one_case(const char *opname, const char *const *kv)
{
    const kb_op *op = kb_find_op(opname);
    kb_sweep s;
    kb_sweep_init(&s, op);
    char err[512];
    for (int i = 0; kv[i]; i += 2)
        if (kb_sweep_set(&s, kv[i], kv[i + 1], err, sizeof err)) fail_msg("%s=%s: %s", kv[i], kv[i + 1], err);
    kb_case *cases = NULL;
    int n = 0;
    if (kb_sweep_expand(&s, &cases, &n, err, sizeof err) || n != 1) fail_msg("%s: %s", opname, err);
    kb_sweep_free(&s);
    return cases;
}

static const kb_impl *impl_named(const kb_op *op, const char *name)
{
    for (int k = 0; k < kb_op_nimpls(op); k++)
        if (!strcmp(kb_op_impl(op, k)->name, name)) return kb_op_impl(op, k);
    fail_msg("no implementation %s of %s", name, op->name);
    return NULL;
}

/* tests/plugins/inplace.c prepared on a state of fake device pointers (its
 * prepare is NULL, its launch never runs): the harness is told to restore t
 * under rope's out, and to zero layernorm's dx, dgamma and dbeta, whose
 * reads the byte model adds */
static void test_plugin_declarations(void **unused)
{
    (void)unused;
    char path[1024], err[512];
    if (!test_plugin("inplace.so", path, sizeof path)) skip();
    assert_int_equal(kb_plugin_load("d", path, err, sizeof err), 0);

    static const char *const ln[] = {"pass", "bwd", "dtype", "bf16", "rows", "3", "cols", "5", NULL};
    kb_case *c = one_case("layernorm", ln);
    kb_state st = {.nin = 5, .nout = 3};
    static const char *const in_names[] = {"x", "gamma", "dy", "mean", "rstd"};
    const size_t in_n[] = {15, 5, 15, 3, 3};
    const kb_dtype in_t[] = {KB_BF16, KB_BF16, KB_BF16, KB_FP32, KB_FP32};
    for (int i = 0; i < 5; i++) st.in[i] = (kb_buf){in_names[i], in_t[i], in_n[i], (void *)(uintptr_t)(0x10000u * (i + 1))};
    st.out[0] = (kb_buf){"dx", KB_BF16, 15, (void *)(uintptr_t)0x100000};
    st.out[1] = (kb_buf){"dgamma", KB_FP32, 5, (void *)(uintptr_t)0x200000};
    st.out[2] = (kb_buf){"dbeta", KB_FP32, 5, (void *)(uintptr_t)0x300000};
    const kb_impl *im = impl_named(c->op, "d");
    kb_impl_run r = {.impl = im};
    assert_int_equal(im->prepare(c, &st, NULL, &r), 0);
    assert_int_equal(r.accumulate, 7u);
    assert_int_equal(r.ninplace, 0);
    assert_true(kb_presample_any(&r));
    assert_true(kb_presample_read_bytes(&st, &r) == 15 * 2 + 5 * 4 + 5 * 4);
    im->release(c, &st, &r);
    kb_cases_free(c, 1);

    static const char *const ro[] = {"pass", "fwd", "dtype", "fp16", "seq", "3", "batch", "1", "heads", "2", "dim", "8", NULL};
    c = one_case("rope", ro);
    kb_state rs = {.nin = 2, .nout = 1};
    rs.in[0] = (kb_buf){"t", KB_FP16, 48, (void *)(uintptr_t)0x10000};
    rs.in[1] = (kb_buf){"angles", KB_FP32, 12, (void *)(uintptr_t)0x20000};
    rs.out[0] = (kb_buf){"out", KB_FP16, 48, (void *)(uintptr_t)0x30000};
    im = impl_named(c->op, "d");
    kb_impl_run q = {.impl = im};
    assert_int_equal(im->prepare(c, &rs, NULL, &q), 0);
    assert_int_equal(q.ninplace, 1);
    assert_int_equal(q.inplace[0].out, 0);
    assert_ptr_equal(q.inplace[0].in, rs.in[0].dev);
    assert_int_equal(q.inplace[0].bytes, 48 * 2);
    assert_int_equal(q.accumulate, 0u);
    assert_true(kb_presample_read_bytes(&rs, &q) == 0);
    im->release(c, &rs, &q);
    kb_cases_free(c, 1);

    /* a built-in declares nothing: the harness does nothing before its launches */
    kb_impl_run none = {0};
    assert_false(kb_presample_any(&none));
    kb_plugins_unload();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_supports),
        cmocka_unit_test(test_rope_plan),
        cmocka_unit_test(test_plugin_declarations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
