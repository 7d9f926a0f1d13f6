/* config.c: JSON sweep files to plans, their errors, and per-case seeds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../cli/core/config.h"
#include "../cli/core/errors.h"
#include "../cli/core/op.h"
#include "../cli/core/params.h"
#include "../cli/core/settings.h"
#include "../include/kb_dtype.h"

static void plan_init(kb_plan *p)
{
    memset(p, 0, sizeof *p);
    kb_opts_default(&p->opts);
}

static kb_plan parse_ok(const char *text)
{
    kb_plan p;
    plan_init(&p);
    char err[KB_ERRLEN] = "";
    if (kb_config_parse(text, "t.json", &p, err, sizeof err) != 0) fail_msg("refused: %s\n%s", err, text);
    return p;
}

/* -1 with a message that starts with the file name and contains each of has[] */
static void parse_bad(const char *text, const char *const *has)
{
    kb_plan p;
    plan_init(&p);
    char err[KB_ERRLEN] = "";
    if (kb_config_parse(text, "t.json", &p, err, sizeof err) != -1) fail_msg("accepted:\n%s", text);
    if (strncmp(err, "t.json:", 7) != 0) fail_msg("message does not start with the name: %s", err);
    for (; *has; has++)
        if (!strstr(err, *has)) fail_msg("message lacks '%s': %s", *has, err);
    kb_cases_free(p.cases, p.ncases);
}
#define BAD(text, ...) parse_bad(text, (const char *const[]){__VA_ARGS__, NULL})

/* --set: an axis replaced in every sweep whose op has the parameter, others untouched */
static void test_set_axes(void **state)
{
    (void)state;
    const char *text = "{\"sweeps\": ["
                       "{\"op\": \"layernorm\", \"dtype\": \"fp16\", \"rows\": 4096, \"cols\": [512, 1024]},"
                       "{\"op\": \"rope\", \"dtype\": \"bf16\", \"seq\": 16, \"batch\": 1}]}";
    kb_plan p;
    plan_init(&p);
    char err[KB_ERRLEN] = "";
    p.nset = 2;
    p.set_name[0] = "dtype";
    p.set_val[0] = "fp32,fp16,bf16";
    p.set_name[1] = "rows";
    p.set_val[1] = "7";
    if (kb_config_parse(text, "t.json", &p, err, sizeof err)) fail_msg("refused: %s", err);
    assert_int_equal(p.ncases, 3 * 2 + 3); /* layernorm: 3 dtypes x 2 cols; rope: 3 dtypes */
    int dt[3] = {0}, rows7 = 0;
    for (int i = 0; i < p.ncases; i++) {
        const kb_case *c = &p.cases[i];
        const char *d = kb_case_enum(c, "dtype");
        dt[!strcmp(d, "fp32") ? 0 : !strcmp(d, "fp16") ? 1 : 2]++;
        if (!strcmp(c->op->name, "layernorm")) rows7 += kb_case_val(c, "rows")->num == 7;
        else assert_null(kb_case_val(c, "rows")); /* rope has no rows: untouched */
    }
    assert_int_equal(dt[0], 3);
    assert_int_equal(dt[1], 3);
    assert_int_equal(dt[2], 3);
    assert_int_equal(rows7, 6);
    kb_cases_free(p.cases, p.ncases);

    /* a parameter no sweep's op has, and a value the parameter refuses */
    plan_init(&p);
    p.nset = 1;
    p.set_name[0] = "heads";
    p.set_val[0] = "4";
    const char *ln = "{\"sweeps\": [{\"op\": \"layernorm\", \"rows\": 8, \"cols\": 8}]}";
    assert_int_equal(kb_config_parse(ln, "t.json", &p, err, sizeof err), -1);
    assert_non_null(strstr(err, "--set heads"));
    assert_non_null(strstr(err, "t.json"));
    kb_cases_free(p.cases, p.ncases);
    plan_init(&p);
    p.nset = 1;
    p.set_name[0] = "cols";
    p.set_val[0] = "0";
    assert_int_equal(kb_config_parse(ln, "t.json", &p, err, sizeof err), -1);
    assert_non_null(strstr(err, "--set cols=0"));
    kb_cases_free(p.cases, p.ncases);
}

static void test_valid_file(void **state)
{
    (void)state;
    const char *text =
        "{\"description\": \"a test\",\n"
        " \"settings\": {\"min_time\": 0.5, \"seed\": 7, \"hot\": true, \"out_dir\": \"r/x\", \"impl\": \"opt\",\n"
        "              \"min_samples\": 3},\n"
        " \"sweeps\": [\n"
        "   {\"op\": \"rope\", \"pass\": [\"fwd\", \"bwd\"], \"seq\": [16, 32, 64], \"dtype\": \"fp32\", \"batch\": 2},\n"
        "   {\"op\": \"rope\", \"description\": \"packed\", \"layout\": \"thd\", \"seq\": \"512:2048:x2\",\n"
        "    \"seqlens\": [[1, 2], [3]], \"dim\": 64, \"base\": 500000.5}\n"
        " ]}\n";
    kb_plan p = parse_ok(text);
    assert_int_equal(p.ncases, 2 * 3 + 3 * 2);
    /* settings from the file, the rest at their defaults */
    assert_true(p.opts.min_time == 0.5);
    assert_true(p.opts.seed == 7);
    assert_int_equal(p.opts.hot, 1);
    assert_string_equal(p.opts.out_dir, "r/x");
    assert_string_equal(p.opts.impl, "opt");
    assert_int_equal(p.opts.min_samples, 3);
    assert_int_equal(p.opts.warmup, 3);
    assert_true(p.opts.timeout == 10);
    assert_int_equal(p.opts.quiet, 0);
    /* sweep 0: pass x seq, seq fastest; scalars are one-value axes */
    const long seqs[] = {16, 32, 64};
    for (int k = 0; k < 6; k++) {
        const kb_case *c = &p.cases[k];
        assert_string_equal(c->op->name, "rope");
        assert_string_equal(kb_case_enum(c, "pass"), k < 3 ? "fwd" : "bwd");
        assert_int_equal(kb_case_int(c, "seq"), seqs[k % 3]);
        assert_int_equal(kb_case_dtype(c), KB_FP32);
        assert_int_equal(kb_case_int(c, "batch"), 2);
        assert_string_equal(kb_case_enum(c, "layout"), "sbhd");
        assert_int_equal(kb_case_int(c, "dim"), 256); /* default */
        assert_int_equal(kb_case_val(c, "seqlens")->nlist, 0);
    }
    /* sweep 1: the string range, and seqlens as an axis of two lists */
    const long seqs1[] = {512, 512, 1024, 1024, 2048, 2048};
    for (int k = 6; k < 12; k++) {
        const kb_case *c = &p.cases[k];
        assert_int_equal(kb_case_int(c, "seq"), seqs1[k - 6]);
        assert_string_equal(kb_case_enum(c, "layout"), "thd");
        assert_string_equal(kb_case_enum(c, "pass"), "fwd");
        assert_int_equal(kb_case_dtype(c), KB_BF16);
        assert_int_equal(kb_case_int(c, "dim"), 64);
        assert_true(kb_case_float(c, "base") == 500000.5);
        const kb_val *sl = kb_case_val(c, "seqlens");
        if ((k - 6) % 2 == 0) {
            assert_int_equal(sl->nlist, 2);
            assert_int_equal(sl->list[0], 1);
            assert_int_equal(sl->list[1], 2);
        } else {
            assert_int_equal(sl->nlist, 1);
            assert_int_equal(sl->list[0], 3);
        }
    }
    kb_cases_free(p.cases, p.ncases);
}

static void test_seqlens_forms(void **state)
{
    (void)state;
    /* an array of numbers is one value */
    kb_plan p = parse_ok("{\"sweeps\": [{\"op\": \"rope\", \"layout\": \"thd\", \"seq\": 8, \"seqlens\": [1, 2, 3]}]}");
    assert_int_equal(p.ncases, 1);
    const kb_val *sl = kb_case_val(&p.cases[0], "seqlens");
    assert_int_equal(sl->nlist, 3);
    assert_int_equal(sl->list[0], 1);
    assert_int_equal(sl->list[2], 3);
    kb_cases_free(p.cases, p.ncases);
    /* an array of arrays is an axis */
    p = parse_ok("{\"sweeps\": [{\"op\": \"rope\", \"layout\": \"thd\", \"seq\": 8, \"seqlens\": [[1, 2], [3]]}]}");
    assert_int_equal(p.ncases, 2);
    assert_int_equal(kb_case_val(&p.cases[0], "seqlens")->nlist, 2);
    assert_int_equal(kb_case_val(&p.cases[1], "seqlens")->nlist, 1);
    assert_int_equal(kb_case_val(&p.cases[1], "seqlens")->list[0], 3);
    kb_cases_free(p.cases, p.ncases);
    /* a string reads like the flag */
    p = parse_ok("{\"sweeps\": [{\"op\": \"rope\", \"layout\": \"thd\", \"seq\": 8, \"seqlens\": \"4,5/6/none\"}]}");
    assert_int_equal(p.ncases, 3);
    assert_int_equal(kb_case_val(&p.cases[2], "seqlens")->nlist, 0);
    kb_cases_free(p.cases, p.ncases);
    BAD("{\"sweeps\": [{\"op\": \"rope\", \"layout\": \"thd\", \"seqlens\": [1, \"x\"]}]}", "seqlens");
    BAD("{\"sweeps\": [{\"op\": \"rope\", \"layout\": \"thd\", \"seqlens\": [[1], 2]}]}", "seqlens");
    BAD("{\"sweeps\": [{\"op\": \"rope\", \"layout\": \"thd\", \"seq\": 8, \"seqlens\": [9]}]}", "exceeds seq 8");
}

static void test_axes_forms(void **state)
{
    (void)state;
    kb_plan p = parse_ok("{\"sweeps\": [{\"op\": \"rope\", \"dtype\": \"all\", \"seq\": \"1:3\", \"heads\": 1e1}]}");
    assert_int_equal(p.ncases, 9);
    assert_int_equal(kb_case_int(&p.cases[0], "heads"), 10);
    assert_int_equal(kb_case_dtype(&p.cases[3]), KB_FP16);
    assert_int_equal(kb_case_int(&p.cases[8], "seq"), 3);
    kb_cases_free(p.cases, p.ncases);
    p = parse_ok("{\"sweeps\": [{\"op\": \"rope\", \"seq\": [\"4k\", 16, \"1:2\"]}]}");
    assert_int_equal(p.ncases, 4);
    assert_int_equal(kb_case_int(&p.cases[0], "seq"), 4096);
    assert_int_equal(kb_case_int(&p.cases[3], "seq"), 2);
    kb_cases_free(p.cases, p.ncases);
    BAD("{\"sweeps\": [{\"op\": \"rope\", \"seq\": []}]}", "sweeps[0]", "seq", "empty");
    BAD("{\"sweeps\": [{\"op\": \"rope\", \"seq\": 16.5}]}", "seq", "integer");
    BAD("{\"sweeps\": [{\"op\": \"rope\", \"seq\": 0}]}", "seq = 0 is out of bounds");
    BAD("{\"sweeps\": [{\"op\": \"rope\", \"seq\": {\"a\": 1}}]}", "seq", "an object");
    BAD("{\"sweeps\": [{\"op\": \"rope\", \"seq\": null}]}", "seq");
    BAD("{\"sweeps\": [{\"op\": \"rope\", \"pass\": [[\"fwd\"]]}]}", "pass", "an array");
    BAD("{\"sweeps\": [{\"op\": \"rope\", \"pass\": \"sideways\"}]}", "sideways");
    BAD("{\"sweeps\": [{\"op\": \"rope\", \"dim\": 8, \"rotary_dim\": 3}]}", "sweeps[0]", "must be even");
}

/* The column of the first character of `tok` on its line. */
static int col_of(const char *text, const char *tok)
{
    const char *at = strstr(text, tok);
    const char *ls = at;
    while (ls > text && ls[-1] != '\n') ls--;
    return (int)(at - ls) + 1;
}

static void test_syntax_error_position(void **state)
{
    (void)state;
    char err[KB_ERRLEN], want[64];
    kb_plan p;
    /* a missing comma: the parser stops at 1024, line 3 */
    const char *t1 = "{\n"
                     "  \"sweeps\": [\n"
                     "    {\"op\": \"rope\", \"seq\": [512 1024]}\n"
                     "  ]\n"
                     "}\n";
    plan_init(&p);
    assert_int_equal(kb_config_parse(t1, "bad.json", &p, err, sizeof err), -1);
    snprintf(want, sizeof want, "bad.json:3:%d: ", col_of(t1, "1024"));
    if (strncmp(err, want, strlen(want)) != 0) fail_msg("want '%s...', got: %s", want, err);
    assert_non_null(strstr(err, "JSON syntax error"));
    /* a missing comma between members: the parser stops at the next key */
    const char *t2 = "{\"sweeps\": [\n"
                     "  {\"op\": \"rope\",\n"
                     "   \"seq\": 16 \"batch\": 2}\n"
                     "]}\n";
    plan_init(&p);
    assert_int_equal(kb_config_parse(t2, "bad.json", &p, err, sizeof err), -1);
    snprintf(want, sizeof want, "bad.json:3:%d: ", col_of(t2, "\"batch\""));
    if (strncmp(err, want, strlen(want)) != 0) fail_msg("want '%s...', got: %s", want, err);
    /* trailing garbage after the object, line 3 column 1 */
    const char *t3 = "{\"sweeps\": [{\"op\": \"rope\"}]}\n\nxyz\n";
    plan_init(&p);
    assert_int_equal(kb_config_parse(t3, "bad.json", &p, err, sizeof err), -1);
    if (strncmp(err, "bad.json:3:1: ", 14) != 0) fail_msg("want 'bad.json:3:1: ...', got: %s", err);
    /* empty text, or only white space: said as such (it was "syntax error near ''") */
    plan_init(&p);
    assert_int_equal(kb_config_parse("", "e.json", &p, err, sizeof err), -1);
    assert_string_equal(err, "e.json: empty file, not a sweep (see: kbench sweep --help)");
    assert_int_equal(kb_config_parse(" \n\t\n", "e.json", &p, err, sizeof err), -1);
    assert_non_null(strstr(err, "empty file"));
    assert_int_equal(p.ncases, 0);
    /* cut short: the end of the file, where it was reached */
    assert_int_equal(kb_config_parse("{\"sweeps\": [\n{\"op\": ", "t.json", &p, err, sizeof err), -1);
    assert_string_equal(err, "t.json:2:8: JSON syntax error: unexpected end of file");
}

static void test_structure_errors(void **state)
{
    (void)state;
    BAD("{\"sweep\": [{\"op\": \"rope\"}]}", "unknown key 'sweep'", "did you mean 'sweeps'");
    BAD("{\"setings\": {}, \"sweeps\": [{\"op\": \"rope\"}]}", "unknown key 'setings'", "did you mean 'settings'");
    BAD("{\"frobnicate\": 1, \"sweeps\": [{\"op\": \"rope\"}]}", "unknown key 'frobnicate'", "expected settings, sweeps");
    BAD("[1, 2]", "top level");
    BAD("{}", "\"sweeps\"");
    BAD("{\"sweeps\": []}", "\"sweeps\" must be a non-empty array");
    BAD("{\"sweeps\": {\"op\": \"rope\"}}", "\"sweeps\"");
    BAD("{\"sweeps\": [1]}", "sweeps[0]", "must be an object");
    BAD("{\"sweeps\": [{\"op\": \"rope\"}, \"rope\"]}", "sweeps[1]", "must be an object");
    BAD("{\"sweeps\": [{\"seq\": 16}]}", "sweeps[0]", "missing \"op\"");
    BAD("{\"sweeps\": [{\"op\": 3}]}", "\"op\" must be a string naming an op (rope, ", "got a number");
    BAD("{\"sweeps\": [{\"op\": \"ropes\"}]}", "sweeps[0]", "unknown op 'ropes'", "did you mean 'rope'");
    BAD("{\"sweeps\": [{\"op\": \"matmul\"}]}", "unknown op 'matmul'");
    BAD("{\"sweeps\": [{\"op\": \"rope\"}, {\"op\": \"rope\", \"sq\": 16}]}", "sweeps[1]", "no parameter 'sq'",
        "did you mean 'seq'");
    BAD("{\"sweeps\": [{\"op\": \"rope\", \"flux_capacitor\": 16}]}", "no parameter 'flux_capacitor'");
    /* a key twice in one object: refused with the key and both lines (cJSON
     * kept both; the first "op", the last "seq" and the first "sweeps" won) */
    BAD("{\"sweeps\": [{\"op\": \"rope\",\n \"op\": \"layernorm\"}]}", "t.json:2:", "duplicate key 'op'", "line 1");
    BAD("{\"sweeps\": [{\"op\": \"rope\", \"seq\": 4, \"seq\": 8}]}", "duplicate key 'seq'");
    BAD("{\"sweeps\": [{\"op\": \"rope\"}],\n\n \"sweeps\": []}", "t.json:3:", "duplicate key 'sweeps'");
    BAD("{\"settings\": {\"seed\": 1, \"seed\": 2}, \"sweeps\": [{\"op\": \"rope\"}]}", "duplicate key 'seed'");
    /* a NUL in a string would cut it ("16\u0000garbage" was read as 16); an escaped backslash before u0000 is fine */
    BAD("{\"sweeps\": [{\"op\": \"rope\",\n \"seq\": \"16\\u0000garbage\"}]}", "t.json:2:", "NUL character");
    BAD("{\"sweeps\": [{\"op\": \"rope\", \"seq\": \"16\\U0000\"}]}", "JSON syntax error"); /* \U is no escape */
    kb_plan q = parse_ok("{\"description\": \"a \\\\u0000 b\", \"sweeps\": [{\"op\": \"rope\"}]}");
    kb_cases_free(q.cases, q.ncases);
    /* the same key in different objects, and as a value or inside a string, is fine */
    kb_plan p = parse_ok("{\"description\": \"op \\\"op\\\" seq\", \"sweeps\": [{\"op\": \"rope\", \"seq\": [1, 2]},"
                         " {\"op\": \"rope\", \"layout\": \"thd\", \"seqlens\": [[1], [2]]}]}");
    assert_int_equal(p.ncases, 4);
    kb_cases_free(p.cases, p.ncases);
}

static void test_settings_errors(void **state)
{
    (void)state;
    BAD("{\"settings\": {\"min_samples\": 0}, \"sweeps\": [{\"op\": \"rope\"}]}", "settings", "min_samples", "out of bounds");
    BAD("{\"settings\": {\"hot\": \"maybe\"}, \"sweeps\": [{\"op\": \"rope\"}]}", "settings", "hot");
    BAD("{\"settings\": {\"min_tme\": 1}, \"sweeps\": [{\"op\": \"rope\"}]}", "min_tme", "did you mean 'min_time'");
    BAD("{\"settings\": {\"seed\": [1]}, \"sweeps\": [{\"op\": \"rope\"}]}", "settings.seed", "an array");
    BAD("{\"settings\": {\"seed\": -1}, \"sweeps\": [{\"op\": \"rope\"}]}", "seed");
    BAD("{\"settings\": [1], \"sweeps\": [{\"op\": \"rope\"}]}", "\"settings\" must be an object");
    kb_plan p = parse_ok("{\"settings\": {\"quiet\": 1, \"no_verify\": false, \"seed\": 123456789012},"
                         " \"sweeps\": [{\"op\": \"rope\"}]}");
    assert_int_equal(p.opts.quiet, 1);
    assert_int_equal(p.opts.no_verify, 0);
    assert_true(p.opts.seed == 123456789012ull);
    kb_cases_free(p.cases, p.ncases);
}

/* Values are never cut short: a string past its buffer is refused, naming the limit. */
static void test_long_values(void **state)
{
    (void)state;
    size_t n = 70000;
    char *t = malloc(n + 200), *v = malloc(n + 1);
    memset(v, 'a', 1100);
    v[1100] = 0;
    snprintf(t, n + 200, "{\"settings\": {\"csv\": \"%s\"}, \"sweeps\": [{\"op\": \"rope\"}]}", v);
    BAD(t, "settings.csv: longer than 1023 characters");
    /* a 66 KiB seqlens string: it once lost its tail (the last element read as 102) */
    size_t o = 0;
    while (o < 67000) o += (size_t)snprintf(v + o, n + 1 - o, "%s1024", o ? "," : "");
    snprintf(t, n + 200, "{\"sweeps\": [{\"op\": \"rope\", \"layout\": \"thd\", \"seqlens\": \"%s\"}]}", v);
    BAD(t, "seqlens: a value longer than 65535 characters");
    free(t);
    free(v);
}

static void test_plan_seed(void **state)
{
    (void)state;
    const char *text = "{\"sweeps\": [{\"op\": \"rope\", \"seq\": [1, 2, 3, 4, 5], \"batch\": [1, 2]}, "
                       "{\"op\": \"rope\", \"seq\": 7}]}";
    kb_plan a = parse_ok(text), b = parse_ok(text), c = parse_ok(text);
    assert_int_equal(a.ncases, 11);
    a.opts.seed = b.opts.seed = 1;
    c.opts.seed = 2;
    for (int i = 0; i < a.ncases; i++) a.cases[i].index = b.cases[i].index = -5;
    kb_plan_seed(&a);
    kb_plan_seed(&b);
    kb_plan_seed(&c);
    for (int i = 0; i < a.ncases; i++) {
        assert_int_equal(a.cases[i].index, i);
        assert_true(a.cases[i].seed == b.cases[i].seed); /* the same run seed: the same inputs */
        assert_true(a.cases[i].seed != c.cases[i].seed); /* another run seed: others */
        for (int j = 0; j < i; j++) assert_true(a.cases[i].seed != a.cases[j].seed);
        for (int j = 0; j < a.ncases; j++) assert_true(a.cases[i].seed != c.cases[j].seed);
    }
    /* a case's seed is its own, not its place's: the same cases in another
     * order, or one of them alone, draw the same inputs */
    kb_plan d = parse_ok("{\"sweeps\": [{\"op\": \"rope\", \"seq\": 7}, "
                         "{\"op\": \"rope\", \"seq\": [5, 4, 3, 2, 1], \"batch\": [2, 1]}]}");
    kb_plan e = parse_ok("{\"sweeps\": [{\"op\": \"rope\", \"seq\": 3, \"batch\": 2}]}");
    d.opts.seed = e.opts.seed = 1;
    kb_plan_seed(&d);
    kb_plan_seed(&e);
    assert_int_equal(d.ncases, 11);
    int matched = 0;
    for (int i = 0; i < a.ncases; i++)
        for (int j = 0; j < d.ncases; j++) {
            char la[512], ld[512];
            kb_case_label(&a.cases[i], la, sizeof la);
            kb_case_label(&d.cases[j], ld, sizeof ld);
            if (!strcmp(la, ld)) matched++, assert_true(a.cases[i].seed == d.cases[j].seed);
        }
    assert_int_equal(matched, 11);
    char le[512];
    kb_case_label(&e.cases[0], le, sizeof le);
    assert_non_null(strstr(le, "seq=3 batch=2"));
    int alone = 0;
    for (int i = 0; i < a.ncases; i++) {
        char la[512];
        kb_case_label(&a.cases[i], la, sizeof la);
        if (!strcmp(la, le)) alone++, assert_true(a.cases[i].seed == e.cases[0].seed);
    }
    assert_int_equal(alone, 1); /* the case alone met its place in the sweep */
    assert_int_equal(e.cases[0].index, 0);
    kb_cases_free(a.cases, a.ncases);
    kb_cases_free(b.cases, b.ncases);
    kb_cases_free(c.cases, c.ncases);
    kb_cases_free(d.cases, d.ncases);
    kb_cases_free(e.cases, e.ncases);
}

static void test_load_file(void **state)
{
    (void)state;
    char dir[] = "/tmp/kbench-test-XXXXXX", path[256];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/s.json", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\"sweeps\": [{\"op\": \"rope\", \"pass\": \"all\"}]}\n", f);
    fclose(f);
    kb_plan p;
    plan_init(&p);
    char err[KB_ERRLEN];
    assert_int_equal(kb_config_load(path, &p, err, sizeof err), 0);
    assert_int_equal(p.ncases, 2);
    kb_cases_free(p.cases, p.ncases);
    /* errors name the file given */
    f = fopen(path, "w");
    fputs("{\"sweeps\": [\n  {\"op\": \"rope\",}\n]}\n", f);
    fclose(f);
    plan_init(&p);
    assert_int_equal(kb_config_load(path, &p, err, sizeof err), -1);
    char want[300];
    snprintf(want, sizeof want, "%s:2:", path);
    if (strncmp(err, want, strlen(want)) != 0) fail_msg("want '%s...', got: %s", want, err);
    unlink(path);
    assert_int_equal(kb_config_load(path, &p, err, sizeof err), -1);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, "No such file"));
    rmdir(dir);
}

static void test_default_config(void **state)
{
    (void)state;
    kb_plan p = parse_ok(kb_default_config);
    assert_true(p.ncases > 0);
    kb_cases_free(p.cases, p.ncases);
    /* the embedded text is configs/default.json (when run from the repository) */
    FILE *f = fopen("configs/default.json", "rb");
    if (!f) skip();
    char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    assert_string_equal(kb_default_config, buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_file),
        cmocka_unit_test(test_seqlens_forms),
        cmocka_unit_test(test_axes_forms),
        cmocka_unit_test(test_syntax_error_position),
        cmocka_unit_test(test_structure_errors),
        cmocka_unit_test(test_settings_errors),
        cmocka_unit_test(test_long_values),
        cmocka_unit_test(test_plan_seed),
        cmocka_unit_test(test_load_file),
        cmocka_unit_test(test_set_axes),
        cmocka_unit_test(test_default_config),
    };
    return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
