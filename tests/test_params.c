/* params.c and settings.c: axis parsing, sweeps, rope's validation, harness
 * settings, and the spelling suggestions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "../cli/core/errors.h"
#include "../cli/core/op.h"
#include "../cli/core/params.h"
#include "../cli/core/registry.h"
#include "../cli/core/settings.h"
#include "../include/kb_dtype.h"

static const kb_op *rope(void)
{
    const kb_op *op = kb_find_op("rope");
    assert_non_null(op);
    return op;
}

static const kb_param *param(const char *name)
{
    int i = kb_param_index(rope(), name);
    assert_true(i >= 0);
    return &rope()->params[i];
}

/* Parse text for parameter name; expect n values (or -1). */
static kb_val *axis(const char *name, const char *text, int want_n)
{
    char err[KB_ERRLEN] = "";
    kb_val *v = (kb_val *)0x1;
    int n = kb_parse_axis(param(name), text, &v, err, sizeof err);
    if (n != want_n) fail_msg("%s '%s': got %d values (want %d): %s", name, text, n, want_n, err);
    return v;
}

static void expect_nums(const char *name, const char *text, const double *want, int n)
{
    kb_val *v = axis(name, text, n);
    for (int i = 0; i < n; i++)
        if (v[i].num != want[i]) fail_msg("%s '%s'[%d] = %g, want %g", name, text, i, v[i].num, want[i]);
    free(v);
}

/* -1, *vals NULL, and a message naming the parameter and containing `has` */
static void expect_bad(const char *name, const char *text, const char *has)
{
    char err[KB_ERRLEN] = "";
    kb_val *v = (kb_val *)0x1;
    int n = kb_parse_axis(param(name), text, &v, err, sizeof err);
    if (n != -1) fail_msg("%s '%s' was accepted (%d values)", name, text, n);
    assert_null(v);
    if (strncmp(err, name, strlen(name)) != 0) fail_msg("%s '%s': message does not start with the name: %s", name, text, err);
    if (has && !strstr(err, has)) fail_msg("%s '%s': message lacks '%s': %s", name, text, has, err);
}

/* ---- axes --------------------------------------------------------------- */

static void test_find_op(void **state)
{
    (void)state;
    assert_non_null(kb_find_op("rope"));
    assert_string_equal(kb_find_op("rope")->name, "rope");
    assert_null(kb_find_op("rop"));
    assert_null(kb_find_op(""));
    assert_true(kb_nops >= 1);
    assert_int_equal(kb_param_index(rope(), "seq"), 4);
    assert_int_equal(kb_param_index(rope(), "pass"), 0);
    assert_int_equal(kb_param_index(rope(), "nope"), -1);
}

static void test_axis_lists_and_ranges(void **state)
{
    (void)state;
    expect_nums("seq", "512,1024", (double[]){512, 1024}, 2);
    expect_nums("seq", "512:8192:x2", (double[]){512, 1024, 2048, 4096, 8192}, 5);
    expect_nums("batch", "1:4:1", (double[]){1, 2, 3, 4}, 4);
    expect_nums("batch", "1:4", (double[]){1, 2, 3, 4}, 4);
    expect_nums("batch", "1:10:3", (double[]){1, 4, 7, 10}, 4);
    expect_nums("batch", "1:9:3", (double[]){1, 4, 7}, 3);
    expect_nums("seq", "512:8191:x2", (double[]){512, 1024, 2048, 4096}, 4);
    expect_nums("seq", "7:7", (double[]){7}, 1);
    expect_nums("seq", "4k", (double[]){4096}, 1);
    expect_nums("seq", "2k,4K,100", (double[]){2048, 4096, 100}, 3);
    expect_nums("seq", "1k:4k:x2", (double[]){1024, 2048, 4096}, 3);
    expect_nums("seq", "16,1:3,64", (double[]){16, 1, 2, 3, 64}, 5);
    expect_nums("dim", "8192", (double[]){8192}, 1);  /* the upper bound itself */
    expect_nums("rotary_dim", "0", (double[]){0}, 1); /* the lower bound itself */
    expect_nums("base", "10000,500000.5", (double[]){10000, 500000.5}, 2);
    expect_nums("base", "1e3:1e5:x10", (double[]){1000, 10000, 100000}, 3);
}

static void test_axis_enums(void **state)
{
    (void)state;
    expect_nums("pass", "fwd", (double[]){0}, 1);
    expect_nums("pass", "bwd,fwd", (double[]){1, 0}, 2);
    expect_nums("pass", "all", (double[]){0, 1}, 2);
    expect_nums("dtype", "all", (double[]){0, 1, 2}, 3);
    expect_nums("dtype", "bf16,fp32", (double[]){2, 0}, 2);
    expect_nums("layout", "all", (double[]){0, 1, 2}, 3);
    expect_nums("style", "gptj", (double[]){1}, 1);
    const kb_param *p = param("dtype");
    char buf[16];
    assert_int_equal(kb_choice_count(p), 3);
    assert_string_equal(kb_choice(p, 0, buf, sizeof buf), "fp32");
    assert_string_equal(kb_choice(p, 2, buf, sizeof buf), "bf16");
    assert_int_equal(kb_choice_count(param("seq")), 0);
}

static void test_axis_bad(void **state)
{
    (void)state;
    expect_bad("seq", "abc", "abc");
    expect_bad("seq", "12x", "12x");
    expect_bad("seq", "1.5", "integer");
    expect_bad("seq", "0", "out of bounds");
    expect_bad("seq", "2000000", "out of bounds");
    expect_bad("seq", "-5", "out of bounds");
    expect_bad("seq", "512,abc", "abc");
    expect_bad("seq", "1:2097152:x2", "out of bounds");   /* a range that leaves the bounds */
    expect_bad("dim", "8193", "out of bounds");
    expect_bad("base", "1", "out of bounds");
    expect_bad("base", "4k", NULL);                        /* k is for integers */
    expect_bad("base", "nan", NULL);
    expect_bad("base", "inf", NULL);
    expect_bad("seq", "1e999", NULL);
    expect_bad("pass", "fwdd", "fwdd");
    expect_bad("pass", "fwd,sideways", "sideways");
    expect_bad("pass", "FWD", NULL);
    expect_bad("dtype", "fp64", "fp32,fp16,bf16");
    expect_bad("seq", "8192:512:x2", "bad range");         /* end < start */
    expect_bad("seq", "1:4:x1", "bad range");              /* a factor that never grows */
    expect_bad("seq", "1:4:x0.5", "bad range");
    expect_bad("seq", "1:4:0", "bad range");
    expect_bad("seq", "1:4:-1", "bad range");
    expect_bad("seq", "1:4:x", NULL);
    expect_bad("seq", "1::2", NULL);
    expect_bad("seq", ":4", NULL);
    expect_bad("seq", "512,,1024", "empty");
    expect_bad("seq", "512,", "empty");
    expect_bad("seq", ",512", "empty");
    expect_bad("seq", "", "empty");
    expect_bad("pass", "", "empty");
    expect_bad("seq", "1:1000000:1", "too many");
    /* a value twice makes the same cases twice: refused, with the value */
    expect_bad("seq", "16,32,16", "the value 16 comes twice");
    expect_bad("seq", "1:4:0.5", "comes twice");
    expect_bad("pass", "fwd,fwd", "the value fwd comes twice");
    expect_bad("seqlens", "5,7/5,7", "the value 5+7 comes twice");
    /* the first value that repeats an earlier one is named, as it comes */
    expect_bad("seq", "16,32,32,16", "the value 32 comes twice");
    expect_bad("seqlens", "3/5,7/9/5,7/3", "the value 5+7 comes twice");
    expect_bad("seqlens", "5,7/5/5,7,1/5", "the value 5 comes twice"); /* lists of other lengths differ */
    /* 200001 values: found by sorting, at once (pairwise took 8 s; minutes under ASan) */
    expect_bad("seq", "1:100000,100001:200000,5", "the value 5 comes twice");
    expect_bad("seqlens", "5/7/", "an empty value");
    expect_bad("seqlens", "5//7", "an empty value");
}

/* values of an int-list axis: their lists, then the array (n at most the count) */
static void free_vals(kb_val *v, int n) { kb_vals_free(v, n); }

static void test_axis_intlist(void **state)
{
    (void)state;
    kb_val *v = axis("seqlens", "3,4/5", 2);
    assert_int_equal(v[0].nlist, 2);
    assert_int_equal(v[0].list[0], 3);
    assert_int_equal(v[0].list[1], 4);
    assert_int_equal(v[1].nlist, 1);
    assert_int_equal(v[1].list[0], 5);
    free_vals(v, 2);
    v = axis("seqlens", "none", 1);
    assert_int_equal(v[0].nlist, 0);
    free_vals(v, 1);
    v = axis("seqlens", "", 1);
    assert_int_equal(v[0].nlist, 0);
    free_vals(v, 1);
    v = axis("seqlens", "1k,7/none", 2);
    assert_int_equal(v[0].list[0], 1024);
    assert_int_equal(v[1].nlist, 0);
    free_vals(v, 2);
    expect_bad("seqlens", "3,x", "x");
    expect_bad("seqlens", "3,,4", NULL);
    expect_bad("seqlens", "2.5", "integer");
}

/* seqlens elements have bounds [1, 2^20] like any parameter: a zero or a
 * negative length must be refused when parsed, not reach the kernels. */
static void test_axis_intlist_bounds(void **state)
{
    (void)state;
    const kb_param *p = param("seqlens");
    assert_true(p->min >= 1);
    int bad[] = {0, 5};
    kb_val x = {.list = bad, .nlist = 2};
    char err[KB_ERRLEN];
    assert_int_equal(kb_check_value(p, &x, err, sizeof err), -1); /* the checker knows */
    assert_non_null(strstr(err, "seqlens"));
    expect_bad("seqlens", "0,5", "out of bounds");
    expect_bad("seqlens", "-3,5", "out of bounds");
    expect_bad("seqlens", "7/2000000", "out of bounds");
}

static void test_check_and_format(void **state)
{
    (void)state;
    char err[KB_ERRLEN], buf[64];
    kb_val v = {.num = 0};
    assert_int_equal(kb_check_value(param("seq"), &v, err, sizeof err), -1);
    assert_non_null(strstr(err, "seq"));
    v.num = 1;
    assert_int_equal(kb_check_value(param("seq"), &v, err, sizeof err), 0);
    v.num = NAN;
    assert_int_equal(kb_check_value(param("base"), &v, err, sizeof err), -1);
    v.num = 3;
    assert_int_equal(kb_check_value(param("pass"), &v, err, sizeof err), -1);
    v.num = 512;
    kb_format_value(param("seq"), &v, buf, sizeof buf);
    assert_string_equal(buf, "512");
    v.num = 12.5;
    kb_format_value(param("base"), &v, buf, sizeof buf);
    assert_string_equal(buf, "12.5");
    v.num = 2;
    kb_format_value(param("dtype"), &v, buf, sizeof buf);
    assert_string_equal(buf, "bf16");
    int l[] = {3, 40, 7};
    kb_val lv = {.list = l, .nlist = 3};
    kb_format_value(param("seqlens"), &lv, buf, sizeof buf);
    assert_string_equal(buf, "3+40+7");
    /* too long for the buffer: the values that fit, then "...", visible at every size */
    static const char *const want[] = {"3...", "3+...", "3+40+7", "3+40+7"}; /* n = 5, 6, 7, 8 */
    for (size_t n = 5; n <= 8; n++) {
        char small[8];
        kb_format_value(param("seqlens"), &lv, small, n);
        assert_string_equal(small, want[n - 5]);
    }
    int big[] = {100, 200, 300, 400, 500};
    kb_val bv = {.list = big, .nlist = 5};
    char b16[16];
    kb_format_value(param("seqlens"), &bv, b16, sizeof b16);
    assert_string_equal(b16, "100+200+300+...");
}

/* ---- sweeps ------------------------------------------------------------- */

static void test_sweep_defaults(void **state)
{
    (void)state;
    kb_sweep s;
    kb_sweep_init(&s, rope());
    assert_int_equal(kb_sweep_count(&s), 1);
    kb_case *cases = NULL;
    int n = 0;
    char err[KB_ERRLEN];
    assert_int_equal(kb_sweep_expand(&s, &cases, &n, err, sizeof err), 0);
    assert_int_equal(n, 1);
    const kb_case *c = &cases[0];
    assert_ptr_equal(c->op, rope());
    /* the defaults of the table, read through the accessors */
    for (int i = 0; i < rope()->nparams; i++) {
        const kb_param *p = &rope()->params[i];
        char buf[256];
        kb_format_value(p, &c->v[i], buf, sizeof buf);
        if (p->type == KB_P_FLOAT) assert_true(c->v[i].num == strtod(p->def, NULL));
        else assert_string_equal(buf, p->def);
    }
    assert_string_equal(kb_case_enum(c, "pass"), "fwd");
    assert_string_equal(kb_case_enum(c, "dtype"), "bf16");
    assert_null(kb_case_enum(c, "seq"));
    assert_null(kb_case_enum(c, "nope"));
    assert_int_equal(kb_case_dtype(c), KB_BF16);
    assert_int_equal(kb_case_int(c, "seq"), 2048);
    assert_true(kb_case_float(c, "base") == 10000.0);
    assert_null(kb_case_val(c, "nope"));
    assert_int_equal(kb_case_int(c, "nope"), 0);
    char label[512];
    kb_case_label(c, label, sizeof label);
    assert_non_null(strstr(label, "pass=fwd"));
    assert_non_null(strstr(label, " seq=2048 "));
    assert_null(strstr(label, "seqlens")); /* an empty list is left out */
    kb_cases_free(cases, n);
    kb_sweep_free(&s);
}

static void test_sweep_set_unknown(void **state)
{
    (void)state;
    kb_sweep s;
    kb_sweep_init(&s, rope());
    char err[KB_ERRLEN] = "";
    assert_int_equal(kb_sweep_set(&s, "sq", "5", err, sizeof err), -1);
    assert_non_null(strstr(err, "'sq'"));
    assert_non_null(strstr(err, "did you mean 'seq'"));
    assert_int_equal(kb_sweep_set(&s, "rotary-dim", "4", err, sizeof err), -1);
    assert_non_null(strstr(err, "did you mean 'rotary_dim'"));
    assert_int_equal(kb_sweep_set(&s, "qwertyuiop", "5", err, sizeof err), -1);
    assert_non_null(strstr(err, "'qwertyuiop'"));
    assert_null(strstr(err, "did you mean"));
    /* a bad value leaves the axis as it was */
    assert_int_equal(kb_sweep_set(&s, "seq", "16,32", err, sizeof err), 0);
    assert_int_equal(kb_sweep_set(&s, "seq", "16,zz", err, sizeof err), -1);
    assert_non_null(strstr(err, "seq"));
    assert_int_equal(kb_sweep_count(&s), 2);
    kb_sweep_free(&s);
}

static void test_sweep_expand_order(void **state)
{
    (void)state;
    kb_sweep s;
    kb_sweep_init(&s, rope());
    char err[KB_ERRLEN];
    assert_int_equal(kb_sweep_set(&s, "seq", "16,32,64", err, sizeof err), 0);
    assert_int_equal(kb_sweep_set(&s, "pass", "fwd,bwd", err, sizeof err), 0);
    assert_int_equal(kb_sweep_set(&s, "dtype", "fp32,bf16", err, sizeof err), 0);
    assert_int_equal(kb_sweep_set(&s, "batch", "1", err, sizeof err), 0);
    assert_int_equal(kb_sweep_count(&s), 12);
    kb_case *cases = NULL;
    int n = 0;
    assert_int_equal(kb_sweep_expand(&s, &cases, &n, err, sizeof err), 0);
    assert_int_equal(n, 12);
    /* table order pass, dtype, ..., seq: the last one varies fastest */
    const char *pass[] = {"fwd", "bwd"}, *dt[] = {"fp32", "bf16"};
    const long seq[] = {16, 32, 64};
    for (int k = 0; k < 12; k++) {
        const kb_case *c = &cases[k];
        assert_int_equal(c->index, k);
        assert_string_equal(kb_case_enum(c, "pass"), pass[k / 6]);
        assert_string_equal(kb_case_enum(c, "dtype"), dt[(k / 3) % 2]);
        assert_int_equal(kb_case_int(c, "seq"), seq[k % 3]);
        assert_int_equal(kb_case_int(c, "batch"), 1);
    }
    assert_int_equal(kb_case_dtype(&cases[0]), KB_FP32);
    assert_int_equal(kb_case_dtype(&cases[3]), KB_BF16);
    /* a second expansion appends, numbering on */
    assert_int_equal(kb_sweep_expand(&s, &cases, &n, err, sizeof err), 0);
    assert_int_equal(n, 24);
    assert_int_equal(cases[12].index, 12);
    assert_int_equal(kb_case_int(&cases[13], "seq"), 32);
    kb_cases_free(cases, n);
    kb_sweep_free(&s);
}

/* rope's validate, through the expansion: -1 and the reason */
static void expect_invalid(const char *const *sets, const char *has)
{
    kb_sweep s;
    kb_sweep_init(&s, rope());
    char err[KB_ERRLEN] = "";
    for (const char *const *p = sets; *p; p += 2)
        if (kb_sweep_set(&s, p[0], p[1], err, sizeof err)) fail_msg("set %s=%s: %s", p[0], p[1], err);
    kb_case *cases = NULL;
    int n = 0;
    int rc = kb_sweep_expand(&s, &cases, &n, err, sizeof err);
    kb_cases_free(cases, n);
    if (has == NULL) {
        if (rc != 0) fail_msg("valid sweep refused: %s", err);
        kb_sweep_free(&s);
        return;
    }
    if (rc != -1) fail_msg("invalid sweep accepted (want '%s')", has);
    if (!strstr(err, has)) fail_msg("message lacks '%s': %s", has, err);
    assert_true(strncmp(err, "rope ", 5) == 0); /* names the op and the case */
    kb_sweep_free(&s);
}

/* Axes whose product overflows a long: the count saturates and the expansion
 * refuses, naming the limit (it once printed "0 cases" and went on). */
static void test_escape_controls(void **state)
{
    (void)state;
    char out[64], err[32];
    assert_int_equal(kb_escape_controls("a\nb\tc\x1b[0m\x7f", out, sizeof out), strlen("a\\nb\\tc\\x1b[0m\\x7f"));
    assert_string_equal(out, "a\\nb\\tc\\x1b[0m\\x7f");
    kb_escape_controls("abcdef\n", out, 8); /* cut whole: never half an escape */
    assert_string_equal(out, "abcdef");
    kb_errf(err, sizeof err, "got '%s'", "16\n17");
    assert_string_equal(err, "got '16\\n17'");
}

static void test_sweep_too_many(void **state)
{
    (void)state;
    kb_sweep s;
    kb_sweep_init(&s, rope());
    char err[KB_ERRLEN] = "";
    assert_int_equal(kb_sweep_set(&s, "seq", "1:65536:x2", err, sizeof err), 0);
    assert_int_equal(kb_sweep_set(&s, "batch", "1:65536:x2", err, sizeof err), 0);
    assert_int_equal(kb_sweep_set(&s, "heads", "1:65536:x2", err, sizeof err), 0);
    assert_int_equal(kb_sweep_count(&s), 17L * 17 * 17); /* under the limit: exact */
    for (int i = 0; i < 4; i++) /* 17^3 * 4^4 * ... past 2^63 without the saturation */
        assert_int_equal(kb_sweep_set(&s, (const char *[]){"dim", "rotary_dim", "base", "seqlens"}[i],
                                      (const char *[]){"2:8192:x2", "0,2,4,6,8,10,12,14,16,18,20,22,24,26,28,30",
                                                       "2:65537:x2", "1/2/3/4/5/6/7/8/9/10/11/12/13/14/15/16"}[i],
                                      err, sizeof err),
                         0);
    assert_int_equal(kb_sweep_count(&s), KB_MAX_CASES + 1);
    kb_case *cases = NULL;
    int n = 0;
    assert_int_equal(kb_sweep_expand(&s, &cases, &n, err, sizeof err), -1);
    assert_non_null(strstr(err, "at most 1000000"));
    assert_non_null(strstr(err, "e+")); /* the true count, not a wrapped one */
    assert_int_equal(n, 0);
    kb_cases_free(cases, n);
    kb_sweep_free(&s);
}

/* The cases of an int-list axis share its list (a copy a case took 20 GB for a
 * million cases of a 5000-long seqlens); the sweep can go first, the list
 * stays until the last case lets go (ASan would see a use after free). */
static void test_sweep_cases_share_lists(void **state)
{
    (void)state;
    kb_sweep s;
    kb_sweep_init(&s, rope());
    char err[KB_ERRLEN] = "";
    assert_int_equal(kb_sweep_set(&s, "layout", "thd", err, sizeof err), 0);
    assert_int_equal(kb_sweep_set(&s, "heads", "1:50:1", err, sizeof err), 0);
    assert_int_equal(kb_sweep_set(&s, "seqlens", "3,1,2/7", err, sizeof err), 0);
    kb_case *cases = NULL;
    int n = 0;
    assert_int_equal(kb_sweep_expand(&s, &cases, &n, err, sizeof err), 0);
    assert_int_equal(n, 100);
    kb_sweep_free(&s);
    const kb_val *a = kb_case_val(&cases[0], "seqlens"), *b = kb_case_val(&cases[2], "seqlens");
    assert_ptr_equal(a->list, b->list); /* heads=1 and heads=2 of 3,1,2: one list */
    assert_int_equal(a->list[2], 2);
    assert_int_equal(kb_list_sum(a), 6);
    assert_int_equal(kb_list_max(a), 3);
    assert_int_equal(kb_list_sum(kb_case_val(&cases[1], "seqlens")), 7);
    kb_case_free_lists(&cases[0]); /* one case lets go: the others keep it */
    assert_int_equal(b->list[0], 3);
    for (int i = 1; i < n; i++) kb_case_free_lists(&cases[i]);
    free(cases);
}

/* A plan too large to hold is refused before a case is made, with its size. */
static void test_sweep_too_large_to_hold(void **state)
{
    (void)state;
    const char *why = NULL;
    double max = kb_plan_bytes_max(&why);
    assert_non_null(why);
    assert_true(max > 0);
    assert_true(kb_plan_bytes(1000) == 1000.0 * (double)(sizeof(kb_case) + KB_CASE_WORK_BYTES));
    struct rlimit old, low;
    assert_int_equal(getrlimit(RLIMIT_DATA, &old), 0);
    low = old;
    low.rlim_cur = (rlim_t)kb_plan_bytes(20000); /* half of it holds 10000 cases */
    if (old.rlim_max != RLIM_INFINITY && old.rlim_max < low.rlim_cur) skip();
    kb_sweep s;
    kb_sweep_init(&s, rope());
    char err[KB_ERRLEN] = "";
    assert_int_equal(kb_sweep_set(&s, "heads", "1:200:1", err, sizeof err), 0);
    assert_int_equal(kb_sweep_set(&s, "dim", "2:200:2", err, sizeof err), 0); /* 20000 cases */
    kb_case *cases = NULL;
    int n = 0;
    assert_int_equal(setrlimit(RLIMIT_DATA, &low), 0);
    int rc = kb_sweep_expand(&s, &cases, &n, err, sizeof err);
    assert_int_equal(setrlimit(RLIMIT_DATA, &old), 0);
    assert_int_equal(rc, -1);
    assert_int_equal(n, 0);
    assert_null(cases); /* refused before it was built */
    assert_non_null(strstr(err, "20000 cases need about"));
    assert_non_null(strstr(err, "ulimit -d"));
    assert_int_equal(kb_sweep_expand(&s, &cases, &n, err, sizeof err), 0); /* the limit back: held */
    assert_int_equal(n, 20000);
    kb_cases_free(cases, n);
    kb_sweep_free(&s);
}

static void test_rope_validate(void **state)
{
    (void)state;
    expect_invalid((const char *[]){"dim", "8", "rotary_dim", "16", NULL}, "rotary_dim 16 is larger than dim 8");
    expect_invalid((const char *[]){"dim", "8", "rotary_dim", "3", NULL}, "rotary_dim 3 must be even");
    expect_invalid((const char *[]){"dim", "7", NULL}, "must be even");
    expect_invalid((const char *[]){"seqlens", "3,4", NULL}, "seqlens applies to layout thd only");
    expect_invalid((const char *[]){"layout", "bshd", "seqlens", "3", NULL}, "thd only");
    expect_invalid((const char *[]){"layout", "thd", "seq", "16", "seqlens", "3,17", NULL}, "seqlens[1] = 17 exceeds seq 16");
    /* and what is fine */
    expect_invalid((const char *[]){"dim", "8", "rotary_dim", "8", NULL}, NULL);
    expect_invalid((const char *[]){"dim", "7", "rotary_dim", "6", NULL}, NULL);
    expect_invalid((const char *[]){"layout", "thd", "seq", "16", "seqlens", "3,16", NULL}, NULL);
    expect_invalid((const char *[]){"layout", "thd", "seqlens", "none", NULL}, NULL);
    /* the first bad case of a sweep stops it */
    expect_invalid((const char *[]){"dim", "8", "rotary_dim", "2,4,10", NULL}, "rotary_dim 10");
}

/* ---- settings ----------------------------------------------------------- */

static void test_opts_defaults(void **state)
{
    (void)state;
    kb_opts o;
    memset(&o, 0x5a, sizeof o);
    kb_opts_default(&o);
    assert_string_equal(o.impl, "");
    assert_string_equal(o.csv, "");
    assert_string_equal(o.out_dir, "results");
    assert_true(o.seed == 1);
    assert_int_equal(o.hot, 0);
    assert_int_equal(o.quiet, 0);
    assert_int_equal(o.min_samples, 20);
    assert_true(o.min_time == 0.3);
    assert_true(o.timeout == 10);
    assert_int_equal(o.warmup, 3);
    /* every setting's default is accepted by its own parser */
    char err[KB_ERRLEN];
    for (int i = 0; i < kb_nsettings; i++)
        assert_int_equal(kb_opts_set(&o, kb_settings[i].name, kb_settings[i].def, err, sizeof err), 0);
}

static void expect_set_bad(kb_opts *o, const char *name, const char *text, const char *has)
{
    kb_opts before;
    memcpy(&before, o, sizeof before);
    char err[KB_ERRLEN] = "";
    if (kb_opts_set(o, name, text, err, sizeof err) != -1) fail_msg("%s = '%s' accepted", name, text);
    if (!strstr(err, name)) fail_msg("%s = '%s': message does not name it: %s", name, text, err);
    if (has && !strstr(err, has)) fail_msg("%s = '%s': message lacks '%s': %s", name, text, has, err);
    assert_memory_equal(&before, o, sizeof before); /* untouched */
}

static void test_opts_set(void **state)
{
    (void)state;
    kb_opts o;
    kb_opts_default(&o);
    char err[KB_ERRLEN];
    /* strings */
    assert_int_equal(kb_opts_set(&o, "impl", "naive,opt", err, sizeof err), 0);
    assert_string_equal(o.impl, "naive,opt");
    /* found by fuzz_cmdline: an unknown name was echoed raw by the dry run */
    expect_set_bad(&o, "impl", "naive,opt\x02", "a control character in 'naive,opt\\x02'");
    assert_string_equal(o.impl, "naive,opt");
    assert_int_equal(kb_opts_set(&o, "out_dir", "a/b", err, sizeof err), 0);
    assert_string_equal(o.out_dir, "a/b");
    expect_set_bad(&o, "out_dir", "", "an empty path"); /* it meant / */
    expect_set_bad(&o, "timing", "events,graph", "takes one value"); /* it said: value too long */
    expect_set_bad(&o, "timing", "Graph", "did you mean graph?");
    char longs[sizeof o.csv + 8]; /* a path's room: PATH_MAX */
    assert_int_equal(sizeof o.csv, PATH_MAX);
    memset(longs, 'x', sizeof longs);
    longs[sizeof o.csv] = 0; /* one more than csv holds with its terminator */
    expect_set_bad(&o, "csv", longs, "too long");
    longs[sizeof o.csv - 1] = 0;
    assert_int_equal(kb_opts_set(&o, "csv", longs, err, sizeof err), 0);
    assert_int_equal(strlen(o.csv), sizeof o.csv - 1);
    /* booleans */
    assert_int_equal(kb_opts_set(&o, "hot", "true", err, sizeof err), 0);
    assert_int_equal(o.hot, 1);
    assert_int_equal(kb_opts_set(&o, "hot", "0", err, sizeof err), 0);
    assert_int_equal(o.hot, 0);
    assert_int_equal(kb_opts_set(&o, "quiet", "1", err, sizeof err), 0);
    assert_int_equal(o.quiet, 1);
    assert_int_equal(kb_opts_set(&o, "quiet", "false", err, sizeof err), 0);
    assert_int_equal(o.quiet, 0);
    expect_set_bad(&o, "hot", "yes", "true or false");
    expect_set_bad(&o, "no_verify", "2", NULL);
    /* unsigned 64 */
    assert_int_equal(kb_opts_set(&o, "seed", "42", err, sizeof err), 0);
    assert_true(o.seed == 42);
    assert_int_equal(kb_opts_set(&o, "seed", "18446744073709551615", err, sizeof err), 0);
    assert_true(o.seed == UINT64_MAX);
    assert_int_equal(kb_opts_set(&o, "seed", "010", err, sizeof err), 0);
    assert_true(o.seed == 10); /* decimal, not octal 8 */
    assert_int_equal(kb_opts_set(&o, "seed", "09", err, sizeof err), 0);
    assert_true(o.seed == 9);
    expect_set_bad(&o, "seed", "0x10", "decimal");
    expect_set_bad(&o, "seed", "18446744073709551616", "2^64-1");
    expect_set_bad(&o, "min_time", "1e-400", "out of the range of a double");
    expect_set_bad(&o, "min_time", "0x1p-3", "decimal");
    expect_set_bad(&o, "seed", "-1", "non-negative");
    expect_set_bad(&o, "seed", "abc", NULL);
    expect_set_bad(&o, "seed", "12abc", NULL);
    expect_set_bad(&o, "seed", "", NULL);
    expect_set_bad(&o, "seed", "18446744073709551616", NULL);
    /* ints */
    assert_int_equal(kb_opts_set(&o, "min_samples", "5", err, sizeof err), 0);
    assert_int_equal(o.min_samples, 5);
    assert_int_equal(kb_opts_set(&o, "warmup", "0", err, sizeof err), 0);
    assert_int_equal(o.warmup, 0);
    expect_set_bad(&o, "min_samples", "0", "out of bounds");
    expect_set_bad(&o, "min_samples", "2.5", "integer");
    expect_set_bad(&o, "warmup", "1001", "out of bounds");
    expect_set_bad(&o, "warmup", "x", NULL);
    /* floats */
    assert_int_equal(kb_opts_set(&o, "min_time", "0.5", err, sizeof err), 0);
    assert_true(o.min_time == 0.5);
    assert_int_equal(kb_opts_set(&o, "max_noise", "2.5", err, sizeof err), 0);
    assert_true(o.max_noise == 2.5);
    expect_set_bad(&o, "min_time", "-1", "out of bounds");
    expect_set_bad(&o, "timeout", "0", "out of bounds");
    expect_set_bad(&o, "timeout", "inf", NULL);
    expect_set_bad(&o, "timeout", "nan", NULL);
    expect_set_bad(&o, "max_noise", "1%", NULL);
    /* unknown names */
    expect_set_bad(&o, "min_sample", "5", "did you mean 'min_samples'");
    expect_set_bad(&o, "sed", "5", "did you mean 'seed'");
    char e2[KB_ERRLEN];
    assert_int_equal(kb_opts_set(&o, "frobnicate", "5", e2, sizeof e2), -1);
    assert_non_null(strstr(e2, "unknown setting 'frobnicate'"));
    assert_null(strstr(e2, "did you mean"));
}

/* a negative seed is refused as "-1"; it must be refused with blanks before
 * it too (strtoull skips them and negates) */
static void test_opts_seed_negative_with_space(void **state)
{
    (void)state;
    kb_opts o;
    kb_opts_default(&o);
    expect_set_bad(&o, "seed", " -1", NULL);
}

/* ---- spelling ----------------------------------------------------------- */

static void test_levenshtein_nearest(void **state)
{
    (void)state;
    assert_int_equal(kb_levenshtein("kitten", "sitting"), 3);
    assert_int_equal(kb_levenshtein("flaw", "lawn"), 2);
    assert_int_equal(kb_levenshtein("", "abc"), 3);
    assert_int_equal(kb_levenshtein("abc", ""), 3);
    assert_int_equal(kb_levenshtein("seq", "seq"), 0);
    assert_int_equal(kb_levenshtein("SEQ", "seq"), 0); /* case does not count */
    assert_int_equal(kb_levenshtein("sq", "seq"), 1);
    assert_int_equal(kb_levenshtein("ab", "ba"), 2);

    const char *names[] = {"pass", "dtype", "layout", "style", "seq", "batch", "heads", "dim", "rotary_dim", "base"};
    assert_string_equal(kb_nearest("sq", names, 10), "seq");
    assert_string_equal(kb_nearest("dimm", names, 10), "dim");
    assert_string_equal(kb_nearest("head", names, 10), "heads");
    assert_string_equal(kb_nearest("rotary-dim", names, 10), "rotary_dim");
    assert_string_equal(kb_nearest("rotarydim", names, 10), "rotary_dim");
    assert_string_equal(kb_nearest("Layuot", names, 10), "layout");
    assert_null(kb_nearest("xyzzy", names, 10));
    assert_null(kb_nearest("zz", names, 10)); /* short words: one edit at most */
    assert_null(kb_nearest("sq", names, 0));
    const char *one[] = {"abcd"};
    assert_null(kb_nearest("ab", one, 1));
    assert_string_equal(kb_nearest("abc", one, 1), "abcd");
}

/* kb_format_list: the whole list, however long (a plugin's seqlens value),
 * and snprintf's contract when the buffer is short */
static void test_format_list(void **state)
{
    (void)state;
    int vals[300];
    for (int i = 0; i < 300; i++) vals[i] = 1000 + i;
    kb_val v = {0, vals, 300};
    size_t need = kb_format_list(&v, ',', NULL, 0);
    assert_int_equal(need, 300 * 4 + 299); /* 300 four-digit values, 299 commas */
    char *buf = malloc(need + 1);
    assert_int_equal(kb_format_list(&v, ',', buf, need + 1), need);
    assert_int_equal(strlen(buf), need);
    assert_int_equal(strncmp(buf, "1000,1001,1002,", 15), 0);
    assert_string_equal(buf + need - 9, "1298,1299");
    assert_null(strchr(buf, '+'));
    free(buf);
    char small[12];
    assert_int_equal(kb_format_list(&v, '+', small, sizeof small), need);
    assert_string_equal(small, "1000+1001"); /* whole values only */
    kb_val one = {0, vals, 1}, none = {0, NULL, 0};
    assert_int_equal(kb_format_list(&one, ',', small, sizeof small), 4);
    assert_string_equal(small, "1000");
    assert_int_equal(kb_format_list(&none, ',', small, sizeof small), 0);
    assert_string_equal(small, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_find_op),
        cmocka_unit_test(test_format_list),
        cmocka_unit_test(test_axis_lists_and_ranges),
        cmocka_unit_test(test_axis_enums),
        cmocka_unit_test(test_axis_bad),
        cmocka_unit_test(test_axis_intlist),
        cmocka_unit_test(test_axis_intlist_bounds),
        cmocka_unit_test(test_check_and_format),
        cmocka_unit_test(test_sweep_defaults),
        cmocka_unit_test(test_sweep_set_unknown),
        cmocka_unit_test(test_sweep_expand_order),
        cmocka_unit_test(test_escape_controls),
        cmocka_unit_test(test_sweep_too_many),
        cmocka_unit_test(test_sweep_cases_share_lists),
        cmocka_unit_test(test_sweep_too_large_to_hold),
        cmocka_unit_test(test_rope_validate),
        cmocka_unit_test(test_opts_defaults),
        cmocka_unit_test(test_opts_set),
        cmocka_unit_test(test_opts_seed_negative_with_space),
        cmocka_unit_test(test_levenshtein_nearest),
    };
    return cmocka_run_group_tests_name("params", tests, NULL, NULL);
}
