/* compare.c: reading result files, matching rows, verdicts, the summary and CSV. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kbench.h"

/* ---- helpers ------------------------------------------------------------ */

/* A result file as kbench writes it, with the given rows (JSON objects, comma separated). */
static char *result_json(const char *device, const char *version, const char *rows)
{
    const char *fmt = "{\"kbench\": {\"version\": \"%s\", \"git_commit\": \"abc1234\", \"command_line\": \"kbench\","
                      " \"started\": \"2026-11-22T17:27:30Z\"},\n"
                      " \"device\": {\"name\": \"%s\", \"sm_count\": 132},\n"
                      " \"results\": [%s]}\n";
    size_t n = strlen(fmt) + strlen(device) + strlen(version) + strlen(rows) + 1;
    char *s = malloc(n);
    snprintf(s, n, fmt, version, device, rows);
    return s;
}

/* One rope row: seq and impl vary, median/noise as given (negative: left out). */
static char *rope_row(int seq, const char *impl, double median, double noise, const char *verified, const char *error)
{
    char *s = malloc(2048);
    int o = snprintf(s, 2048,
                     "{\"op\": \"rope\", \"pass\": \"fwd\", \"impl\": \"%s\", \"dtype\": \"bf16\", \"params\": "
                     "{\"pass\": \"fwd\", \"dtype\": \"bf16\", \"layout\": \"thd\", \"seq\": %d, \"base\": 10000, "
                     "\"seqlens\": [5, 7]}",
                     impl, seq);
    if (median >= 0) o += snprintf(s + o, 2048 - (size_t)o, ", \"median_ms\": %.17g", median);
    if (noise >= 0) o += snprintf(s + o, 2048 - (size_t)o, ", \"stddev_ms\": 0.001, \"noise_pct\": %.17g", noise);
    o += snprintf(s + o, 2048 - (size_t)o, ", \"samples\": %d, \"verified\": \"%s\"", median >= 0 ? 100 : 0, verified);
    if (error) o += snprintf(s + o, 2048 - (size_t)o, ", \"error\": \"%s\"", error);
    snprintf(s + o, 2048 - (size_t)o, "}");
    return s;
}

/* rows joined by commas; frees them */
static char *join(int n, ...)
{
    va_list ap;
    size_t len = 1;
    char *out = calloc(1, 1);
    va_start(ap, n);
    for (int i = 0; i < n; i++) {
        char *r = va_arg(ap, char *);
        len += strlen(r) + 2;
        out = realloc(out, len);
        if (i) strcat(out, ", ");
        strcat(out, r);
        free(r);
    }
    va_end(ap);
    return out;
}

static void parse_ok(const char *text, kb_cmp_file *f)
{
    char err[KB_ERRLEN] = "";
    if (kb_cmp_parse(text, "t.json", f, err, sizeof err)) fail_msg("kb_cmp_parse: %s", err);
}

/* f parsed from a result file of this device and version holding rows (freed) */
static void parse_rows(const char *device, const char *version, char *rows, kb_cmp_file *f)
{
    char *text = result_json(device, version, rows);
    parse_ok(text, f);
    free(text);
    free(rows);
}

/* kb_cmp_parse must fail with a message containing each of the strings */
static void parse_fails(const char *text, const char *want1, const char *want2)
{
    kb_cmp_file f;
    char err[KB_ERRLEN] = "";
    int rc = kb_cmp_parse(text, "t.json", &f, err, sizeof err);
    if (rc == 0) {
        kb_cmp_free(&f);
        fail_msg("accepted: %s", text);
    }
    if (!strstr(err, "t.json")) fail_msg("message does not name the file: %s", err);
    if (want1 && !strstr(err, want1)) fail_msg("message lacks '%s': %s", want1, err);
    if (want2 && !strstr(err, want2)) fail_msg("message lacks '%s': %s", want2, err);
    if (strchr(err, '\n')) fail_msg("message is not one line: %s", err);
}

static kb_cmp_row mkrow(double median, double noise, int ok)
{
    kb_cmp_row r;
    memset(&r, 0, sizeof r);
    r.op = "rope";
    r.impl = "opt";
    r.median_ms = median;
    r.noise_pct = noise;
    r.ok = ok;
    r.verified = ok ? "pass" : "fail";
    r.error = "";
    return r;
}

/* ---- reading ------------------------------------------------------------ */

static void test_parse_rows(void **state)
{
    (void)state;
    char *rows = join(3, rope_row(16, "naive", 0.25, 1.5, "pass", NULL), rope_row(16, "opt", -1, -1, "fail", "y: bad"),
                      rope_row(32, "opt", 0.125, -1, "skipped", NULL));
    char *text = result_json("NVIDIA H100 80GB HBM3", "0.1.0", rows);
    kb_cmp_file f;
    parse_ok(text, &f);
    assert_int_equal(f.nrows, 3);
    assert_string_equal(f.device, "NVIDIA H100 80GB HBM3");
    assert_string_equal(f.version, "0.1.0");
    assert_string_equal(f.git, "abc1234");
    assert_string_equal(f.rows[0].op, "rope");
    assert_string_equal(f.rows[0].impl, "naive");
    assert_true(f.rows[0].median_ms == 0.25 && f.rows[0].noise_pct == 1.5 && f.rows[0].ok);
    /* the sweep tables' label: file order, lists joined by + */
    assert_string_equal(f.rows[0].label, "pass=fwd dtype=bf16 layout=thd seq=16 base=10000 seqlens=5+7");
    assert_true(isnan(f.rows[1].median_ms) && isnan(f.rows[1].noise_pct));
    assert_false(f.rows[1].ok); /* failed, with an error */
    assert_string_equal(f.rows[1].error, "y: bad");
    assert_true(f.rows[2].ok); /* skipped verification is not a failure */
    assert_true(isnan(f.rows[2].noise_pct));
    assert_int_equal(f.rows[2].index, 2);
    /* keys: the same case and impl are equal, another impl or seq differs */
    assert_string_not_equal(f.rows[0].key, f.rows[1].key);
    assert_string_not_equal(f.rows[1].key, f.rows[2].key);
    kb_cmp_free(&f);
    free(text);
    free(rows);

    /* parameter order does not matter; values do, and so does their JSON type */
    const char *a = "{\"kbench\": {}, \"results\": [{\"op\": \"mlp\", \"impl\": \"fused\", \"params\": "
                    "{\"dtype\": \"bf16\", \"tokens\": 16, \"eps\": 1e-5}}]}";
    const char *b = "{\"kbench\": {}, \"results\": [{\"op\": \"mlp\", \"impl\": \"fused\", \"params\": "
                    "{\"eps\": 0.00001, \"tokens\": 16.0, \"dtype\": \"bf16\"}}]}";
    const char *c = "{\"kbench\": {}, \"results\": [{\"op\": \"mlp\", \"impl\": \"fused\", \"params\": "
                    "{\"eps\": 0.00001, \"tokens\": \"16\", \"dtype\": \"bf16\"}}]}";
    kb_cmp_file fa, fb, fc;
    parse_ok(a, &fa);
    parse_ok(b, &fb);
    parse_ok(c, &fc);
    assert_string_equal(fa.rows[0].key, fb.rows[0].key);
    assert_string_not_equal(fa.rows[0].key, fc.rows[0].key);
    assert_string_equal(fa.rows[0].label, "dtype=bf16 tokens=16 eps=1e-05");
    assert_string_equal(fa.device, ""); /* absent: empty, not an error */
    assert_true(isnan(fa.rows[0].median_ms) && fa.rows[0].ok);
    kb_cmp_free(&fa);
    kb_cmp_free(&fb);
    kb_cmp_free(&fc);
}

static void test_parse_errors(void **state)
{
    (void)state;
    parse_fails("", "not JSON", "empty");
    parse_fails("  \n ", "not JSON", "empty");
    parse_fails("{\"kbench\": {},\n \"results\": [1,]}", "not JSON", "line 2");
    parse_fails("{\"kbench\": {}, \"results\": []} trailing", "not JSON", NULL);
    parse_fails("[1, 2]", "not a kbench result file", "not an object");
    /* an implementation name with a newline would split compare's table rows */
    char *bad = result_json("H100", "0.1.0", "{\"op\": \"rope\", \"impl\": \"op\\nt\", \"params\": {}}");
    parse_fails(bad, "not a kbench result file", "control characters");
    free(bad);
    /* a parameter value with one is spelled out in the case's label */
    kb_cmp_file lf;
    char *ok = result_json("H100", "0.1.0", "{\"op\": \"rope\", \"impl\": \"opt\", \"params\": {\"layout\": \"a\\nb\"}}");
    parse_ok(ok, &lf);
    free(ok);
    assert_string_equal(lf.rows[0].label, "layout=a\\nb");
    kb_cmp_free(&lf);
    parse_fails("{\"sweeps\": []}", "not a kbench result file", "\"kbench\"");
    parse_fails("{\"device\": \"H100\", \"rows\": []}", "not a kbench result file", "\"kbench\""); /* bench-peers */
    parse_fails("{\"kbench\": {}}", "not a kbench result file", "\"results\"");
    parse_fails("{\"kbench\": {}, \"results\": {}}", "not a kbench result file", "\"results\"");
    parse_fails("{\"kbench\": {}, \"results\": [7]}", "results[0]", "not an object");
    parse_fails("{\"kbench\": {}, \"results\": [{\"impl\": \"a\", \"params\": {}}]}", "results[0]", "\"op\"");
    parse_fails("{\"kbench\": {}, \"results\": [{\"op\": \"\", \"impl\": \"a\", \"params\": {}}]}", "results[0]", "\"op\"");
    parse_fails("{\"kbench\": {}, \"results\": [{\"op\": \"x\", \"impl\": 3, \"params\": {}}]}", "results[0]", "\"impl\"");
    parse_fails("{\"kbench\": {}, \"results\": [{\"op\": \"x\", \"impl\": \"a\", \"params\": {}},"
                " {\"op\": \"x\", \"impl\": \"a\", \"params\": [1]}]}",
                "results[1]", "\"params\"");
    parse_fails("{\"kbench\": {}, \"results\": [{\"op\": \"x\", \"impl\": \"a\", \"params\": {}, \"median_ms\": \"1\"}]}",
                "results[0]", "median_ms");
    parse_fails("{\"kbench\": {}, \"results\": [{\"op\": \"x\", \"impl\": \"a\", \"params\": {}, \"noise_pct\": true}]}",
                "results[0]", "noise_pct");
    parse_fails("{\"kbench\": {}, \"results\": [{\"op\": \"x\", \"impl\": \"a\", \"params\": {}, \"verified\": 1}]}",
                "results[0]", "verified");
    /* null medians (NaN in kbench's JSON) are "not timed", not an error */
    kb_cmp_file f;
    parse_ok("{\"kbench\": {}, \"results\": [{\"op\": \"x\", \"impl\": \"a\", \"params\": {\"n\": [[1], {\"a\": 2}]},"
             " \"median_ms\": null, \"error\": null}]}",
             &f);
    assert_true(isnan(f.rows[0].median_ms) && f.rows[0].ok);
    assert_string_equal(f.rows[0].label, "n=[[1],{\"a\":2}]");
    kb_cmp_free(&f);
    /* an empty results array is a valid file */
    parse_ok("{\"kbench\": {\"version\": \"0.1.0\"}, \"device\": {}, \"results\": []}", &f);
    assert_int_equal(f.nrows, 0);
    kb_cmp_free(&f);
}

static void test_load_errors(void **state)
{
    (void)state;
    char dir[] = "/tmp/kbench-compare-XXXXXX", path[256], err[KB_ERRLEN];
    assert_non_null(mkdtemp(dir));
    kb_cmp_file f;
    snprintf(path, sizeof path, "%s/none.json", dir);
    assert_int_equal(kb_cmp_load(path, &f, err, sizeof err), -1);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, "not found"));

    assert_int_equal(kb_cmp_load(dir, &f, err, sizeof err), -1);
    assert_non_null(strstr(err, "is a directory"));

    snprintf(path, sizeof path, "%s/empty.json", dir);
    FILE *fp = fopen(path, "w");
    fclose(fp);
    assert_int_equal(kb_cmp_load(path, &f, err, sizeof err), -1);
    assert_non_null(strstr(err, "not JSON"));

    fp = fopen(path, "wb");
    fwrite("{\"kbench\": {}, \"results\": []}\0xx", 1, 33, fp);
    fclose(fp);
    assert_int_equal(kb_cmp_load(path, &f, err, sizeof err), -1);
    assert_non_null(strstr(err, "NUL byte"));

    fp = fopen(path, "w");
    fputs("{\"kbench\": {}, \"results\": [{\"op\": \"x\", \"impl\": \"a\", \"params\": {}, \"median_ms\": 2}]}\n", fp);
    fclose(fp);
    assert_int_equal(kb_cmp_load(path, &f, err, sizeof err), 0);
    assert_int_equal(f.nrows, 1);
    assert_true(f.rows[0].median_ms == 2);
    assert_string_equal(f.name, path);
    kb_cmp_free(&f);
    unlink(path);
    rmdir(dir);
}

/* ---- verdicts ----------------------------------------------------------- */

static void test_judge(void **state)
{
    (void)state;
    double sp, bound;
    kb_cmp_row b = mkrow(1.0, NAN, 1), n = mkrow(1.0, NAN, 1);
    assert_int_equal(kb_cmp_judge(&b, &n, 5, &sp, &bound), KB_CMP_SAME);
    assert_true(sp == 1 && bound == 5);
    n.median_ms = 1.04; /* 4% slower: within 5 */
    assert_int_equal(kb_cmp_judge(&b, &n, 5, &sp, &bound), KB_CMP_SAME);
    n.median_ms = 1.06; /* 6% slower */
    assert_int_equal(kb_cmp_judge(&b, &n, 5, &sp, &bound), KB_CMP_SLOWER);
    assert_true(fabs(sp - 1 / 1.06) < 1e-12);
    assert_int_equal(kb_cmp_judge(&b, &n, 10, &sp, &bound), KB_CMP_SAME); /* --threshold 10 */
    assert_int_equal(kb_cmp_judge(&b, &n, 0, &sp, &bound), KB_CMP_SLOWER);
    n.median_ms = 0.90; /* 1.11x */
    assert_int_equal(kb_cmp_judge(&b, &n, 5, &sp, &bound), KB_CMP_FASTER);
    n.median_ms = 0.96; /* 1.04x */
    assert_int_equal(kb_cmp_judge(&b, &n, 5, &sp, &bound), KB_CMP_SAME);
    n.median_ms = 1.0;
    assert_int_equal(kb_cmp_judge(&b, &n, 0, &sp, &bound), KB_CMP_SAME); /* equal is same even at 0 */

    /* noise: the two rows' noise added, where larger than the threshold */
    b = mkrow(1.0, 3, 1);
    n = mkrow(1.08, 4, 1); /* 8% slower, noise 3 + 4 = 7 */
    assert_int_equal(kb_cmp_judge(&b, &n, 5, &sp, &bound), KB_CMP_SLOWER);
    assert_true(bound == 7);
    n.noise_pct = 6; /* 3 + 6 = 9 > 8 */
    assert_int_equal(kb_cmp_judge(&b, &n, 5, &sp, &bound), KB_CMP_SAME);
    assert_true(bound == 9);
    n.median_ms = 1 / 1.08; /* faster by as much: also inside the noise */
    assert_int_equal(kb_cmp_judge(&b, &n, 5, &sp, &bound), KB_CMP_SAME);
    n = mkrow(1.08, 1, 1); /* 3 + 1 < 5: the threshold counts */
    assert_int_equal(kb_cmp_judge(&b, &n, 5, &sp, &bound), KB_CMP_SLOWER);
    assert_true(bound == 5);
    n = mkrow(1.08, NAN, 1); /* one row without noise: the threshold alone */
    b.noise_pct = 50;
    assert_int_equal(kb_cmp_judge(&b, &n, 5, &sp, &bound), KB_CMP_SLOWER);
    assert_true(bound == 5);

    /* failures */
    b = mkrow(1.0, NAN, 1);
    n = mkrow(NAN, NAN, 0);
    assert_int_equal(kb_cmp_judge(&b, &n, 5, &sp, &bound), KB_CMP_FAILED);
    assert_true(isnan(sp));
    n = mkrow(0.5, NAN, 0); /* failed but timed: still FAILED, never "faster" */
    assert_int_equal(kb_cmp_judge(&b, &n, 5, &sp, &bound), KB_CMP_FAILED);
    b = mkrow(NAN, NAN, 0);
    n = mkrow(NAN, NAN, 0);
    assert_int_equal(kb_cmp_judge(&b, &n, 5, &sp, &bound), KB_CMP_NA); /* failed in both */
    n = mkrow(1.0, NAN, 1);
    assert_int_equal(kb_cmp_judge(&b, &n, 5, &sp, &bound), KB_CMP_NA); /* fixed: nothing to time against */
    b = mkrow(2.0, NAN, 0);
    assert_int_equal(kb_cmp_judge(&b, &n, 5, &sp, &bound), KB_CMP_FASTER); /* fixed, and both timed */
    b = mkrow(1.0, NAN, 1);
    n = mkrow(NAN, NAN, 1); /* not timed (kbench check's rows) */
    assert_int_equal(kb_cmp_judge(&b, &n, 5, &sp, &bound), KB_CMP_NA);
    n = mkrow(0, NAN, 1); /* a zero median cannot be divided by */
    assert_int_equal(kb_cmp_judge(&b, &n, 5, &sp, &bound), KB_CMP_NA);
    assert_true(isnan(sp));

    assert_string_equal(kb_cmp_verdict_name(KB_CMP_FASTER), "faster");
    assert_string_equal(kb_cmp_verdict_name(KB_CMP_SLOWER), "slower");
    assert_string_equal(kb_cmp_verdict_name(KB_CMP_SAME), "same");
    assert_string_equal(kb_cmp_verdict_name(KB_CMP_FAILED), "FAILED");
}

/* ---- matching ----------------------------------------------------------- */

static void test_match(void **state)
{
    (void)state;
    /* base: seq 16 naive/opt, seq 32 naive/opt, seq 64 opt (only in base)
     * new:  seq 32 opt 20% slower, seq 16 naive 2x faster, seq 16 opt failed,
     *       seq 32 naive same, seq 128 opt (only in new) -- in another order */
    char *brows = join(5, rope_row(16, "naive", 1.0, 0.5, "pass", NULL), rope_row(16, "opt", 0.5, 0.5, "pass", NULL),
                       rope_row(32, "naive", 2.0, 0.5, "pass", NULL), rope_row(32, "opt", 1.0, 0.5, "pass", NULL),
                       rope_row(64, "opt", 1.0, 0.5, "pass", NULL));
    char *nrows = join(5, rope_row(32, "opt", 1.2, 0.5, "pass", NULL), rope_row(128, "opt", 1.0, 0.5, "pass", NULL),
                       rope_row(16, "naive", 0.5, 0.5, "pass", NULL), rope_row(16, "opt", -1, -1, "fail", "y: bad"),
                       rope_row(32, "naive", 2.02, 0.5, "pass", NULL));
    kb_cmp_file b, n;
    parse_rows("H100", "0.1.0", brows, &b);
    parse_rows("H100", "0.1.0", nrows, &n);
    kb_cmp_result r;
    char err[KB_ERRLEN] = "";
    assert_int_equal(kb_cmp_match(&b, &n, "", 5, &r, err, sizeof err), 0);
    assert_int_equal(r.npairs, 6);
    assert_int_equal(r.cases, 4);
    assert_int_equal(r.faster, 1);
    assert_int_equal(r.slower, 1);
    assert_int_equal(r.same, 1);
    assert_int_equal(r.failed, 1);
    assert_int_equal(r.na, 0);
    assert_int_equal(r.only_base, 1);
    assert_int_equal(r.only_new, 1);
    assert_int_equal(kb_cmp_regressions(&r), 2);
    /* in base order, the pairs point at the right rows */
    assert_ptr_equal(r.pairs[0].base, &b.rows[0]);
    assert_ptr_equal(r.pairs[0].cur, &n.rows[2]);
    assert_int_equal(r.pairs[0].verdict, KB_CMP_FASTER);
    assert_true(r.pairs[0].speedup == 2);
    assert_ptr_equal(r.pairs[1].cur, &n.rows[3]);
    assert_int_equal(r.pairs[1].verdict, KB_CMP_FAILED);
    assert_int_equal(r.pairs[2].verdict, KB_CMP_SAME);
    assert_ptr_equal(r.pairs[3].cur, &n.rows[0]);
    assert_int_equal(r.pairs[3].verdict, KB_CMP_SLOWER);
    assert_int_equal(r.pairs[4].verdict, KB_CMP_ONLY_BASE);
    assert_null(r.pairs[4].cur);
    assert_int_equal(r.pairs[5].verdict, KB_CMP_ONLY_NEW);
    assert_null(r.pairs[5].base);
    assert_ptr_equal(r.pairs[5].cur, &n.rows[1]);

    /* the summary line, and --quiet prints only the regressions */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    kb_cmp_print(f, &b, &n, &r, 5, 0);
    fclose(f);
    assert_non_null(strstr(buf, "compare: 4 cases, 1 faster, 1 slower, 1 same, 1 only in base, 1 only in new, 1 FAILED\n"));
    assert_non_null(strstr(buf, "only in base (1):"));
    assert_non_null(strstr(buf, "only in new (1):"));
    assert_non_null(strstr(buf, "seq=64"));
    assert_non_null(strstr(buf, "y: bad")); /* the new row's error */
    assert_non_null(strstr(buf, "2.00x"));
    free(buf);
    buf = NULL;
    f = open_memstream(&buf, &len);
    kb_cmp_print(f, &b, &n, &r, 5, 1);
    fclose(f);
    assert_null(strstr(buf, "faster  ")); /* no line for the faster case */
    assert_null(strstr(buf, "only in base ("));
    assert_non_null(strstr(buf, "slower"));
    assert_non_null(strstr(buf, "FAILED"));
    assert_non_null(strstr(buf, "compare: 4 cases,"));
    free(buf);
    kb_cmp_result_free(&r);

    /* a bigger threshold: the 20% slowdown stays, --threshold 25 hides it */
    assert_int_equal(kb_cmp_match(&b, &n, "", 25, &r, err, sizeof err), 0);
    assert_int_equal(r.slower, 0);
    assert_int_equal(r.same, 2);
    assert_int_equal(r.faster, 1);
    kb_cmp_result_free(&r);

    /* --impl naive: only naive rows, in both files */
    assert_int_equal(kb_cmp_match(&b, &n, "naive", 5, &r, err, sizeof err), 0);
    assert_int_equal(r.cases, 2);
    assert_int_equal(r.only_base + r.only_new, 0);
    assert_int_equal(kb_cmp_regressions(&r), 0);
    kb_cmp_result_free(&r);
    assert_int_equal(kb_cmp_match(&b, &n, "opt,naive", 5, &r, err, sizeof err), 0);
    assert_int_equal(r.cases, 4);
    kb_cmp_result_free(&r);
    /* an empty name is an error, not "every implementation" (it once hid a regression) */
    const char *empties[] = {",", "opt,", ",naive", "opt,,naive"};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(kb_cmp_match(&b, &n, empties[i], 5, &r, err, sizeof err), -1);
        assert_non_null(strstr(err, "an empty name"));
    }
    /* a name in neither file is an error that lists what there is */
    assert_int_equal(kb_cmp_match(&b, &n, "naive,fused", 5, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "'fused'"));
    assert_non_null(strstr(err, "naive, opt)"));

    /* a file compared with itself: all same */
    assert_int_equal(kb_cmp_match(&b, &b, "", 5, &r, err, sizeof err), 0);
    assert_int_equal(r.cases, 5);
    assert_int_equal(r.same, 5);
    assert_int_equal(kb_cmp_regressions(&r), 0);
    kb_cmp_result_free(&r);

    kb_cmp_free(&b);
    kb_cmp_free(&n);
}

/* Rows whose kernels differ still match as the same case, and say so; a
 * tunable at "auto" matches a file written before the tunable existed. */
static void test_match_kernel(void **state)
{
    (void)state;
    const char *fmt = "{\"op\": \"layernorm\", \"pass\": \"fwd\", \"impl\": \"opt\", \"dtype\": \"bf16\", "
                      "\"params\": {\"pass\": \"fwd\", \"dtype\": \"bf16\", \"cols\": %d%s}, \"median_ms\": 1.0, "
                      "\"noise_pct\": 0.1, \"samples\": 50, \"verified\": \"pass\"%s}";
    char r1[512], r2[512], r3[512], r4[512];
    /* base: no kernel, no tunable (an older kbench); new: both */
    snprintf(r1, sizeof r1, fmt, 1024, "", "");
    snprintf(r2, sizeof r2, fmt, 2048, "", ", \"kernel\": \"warp_row v=4 w=1\"");
    snprintf(r3, sizeof r3, fmt, 1024, ", \"vec\": \"auto\"", ", \"kernel\": \"warp_row v=2 w=1\"");
    snprintf(r4, sizeof r4, fmt, 2048, ", \"vec\": \"auto\"", ", \"kernel\": \"warp_row v=8 w=1\"");
    char *brows = malloc(1100), *nrows = malloc(1100);
    snprintf(brows, 1100, "%s, %s", r1, r2);
    snprintf(nrows, 1100, "%s, %s", r3, r4);
    kb_cmp_file b, n;
    parse_rows("H100", "0.1.0", brows, &b);
    parse_rows("H100", "0.1.0", nrows, &n);
    assert_string_equal(b.rows[0].kernel, "");
    assert_string_equal(n.rows[1].kernel, "warp_row v=8 w=1");
    kb_cmp_result r;
    char err[KB_ERRLEN] = "";
    assert_int_equal(kb_cmp_match(&b, &n, "", 5, &r, err, sizeof err), 0);
    assert_int_equal(r.cases, 2); /* vec=auto left the key */
    assert_int_equal(r.same, 2);
    assert_int_equal(r.kernel_differs, 1); /* cols 1024: base did not say; 2048: v=4 -> v=8 */
    assert_int_equal(r.pairs[0].kernel_differs, 0);
    assert_int_equal(r.pairs[1].kernel_differs, 1);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    kb_cmp_print(f, &b, &n, &r, 5, 0);
    fclose(f);
    assert_non_null(strstr(buf, "kernel warp_row v=4 w=1 -> warp_row v=8 w=1"));
    assert_non_null(strstr(buf, ", 1 ran another kernel\n"));
    free(buf);
    kb_cmp_result_free(&r);
    kb_cmp_free(&n);

    /* a tunable fixed to a value is part of the case: no match with auto */
    snprintf(r3, sizeof r3, fmt, 1024, ", \"vec\": \"2\"", "");
    nrows = malloc(600);
    snprintf(nrows, 600, "%s", r3);
    parse_rows("H100", "0.1.0", nrows, &n);
    assert_int_equal(kb_cmp_match(&b, &n, "", 5, &r, err, sizeof err), 0);
    assert_int_equal(r.cases, 0);
    assert_int_equal(r.only_new, 1);
    kb_cmp_result_free(&r);
    kb_cmp_free(&n);
    kb_cmp_free(&b);
}

/* a case that appears twice pairs up in order of appearance; a third is only in base */
static void test_match_duplicates(void **state)
{
    (void)state;
    char *brows = join(3, rope_row(16, "opt", 1.0, -1, "pass", NULL), rope_row(16, "opt", 2.0, -1, "pass", NULL),
                       rope_row(16, "opt", 3.0, -1, "pass", NULL));
    char *nrows = join(2, rope_row(16, "opt", 1.0, -1, "pass", NULL), rope_row(16, "opt", 2.0, -1, "pass", NULL));
    kb_cmp_file b, n;
    parse_rows("H100", "0.1.0", brows, &b);
    parse_rows("H100", "0.1.0", nrows, &n);
    kb_cmp_result r;
    char err[KB_ERRLEN];
    assert_int_equal(kb_cmp_match(&b, &n, "", 5, &r, err, sizeof err), 0);
    assert_int_equal(r.cases, 2);
    assert_int_equal(r.same, 2);
    assert_int_equal(r.only_base, 1);
    assert_ptr_equal(r.pairs[0].cur, &n.rows[0]);
    assert_ptr_equal(r.pairs[1].cur, &n.rows[1]);
    assert_int_equal(r.pairs[2].verdict, KB_CMP_ONLY_BASE);
    kb_cmp_result_free(&r);
    /* no rows at all */
    kb_cmp_file e;
    parse_ok("{\"kbench\": {}, \"results\": []}", &e);
    assert_int_equal(kb_cmp_match(&e, &n, "", 5, &r, err, sizeof err), 0);
    assert_int_equal(r.cases, 0);
    assert_int_equal(r.only_new, 2);
    kb_cmp_result_free(&r);
    kb_cmp_free(&e);
    kb_cmp_free(&b);
    kb_cmp_free(&n);
}

/* ---- CSV ---------------------------------------------------------------- */

static void test_csv(void **state)
{
    (void)state;
    char *brows = join(2, rope_row(16, "naive", 1.0, 0.5, "pass", NULL), rope_row(16, "opt", 0.5, 0.5, "pass", NULL));
    char *nrows = join(2, rope_row(16, "opt", 0.6, 0.5, "pass", NULL), rope_row(32, "opt", 0.5, 0.5, "pass", NULL));
    kb_cmp_file b, n;
    parse_rows("H100", "0.1.0", brows, &b);
    parse_rows("H200", "0.2.0", nrows, &n);
    kb_cmp_result r;
    char err[KB_ERRLEN];
    assert_int_equal(kb_cmp_match(&b, &n, "", 5, &r, err, sizeof err), 0);
    char dir[] = "/tmp/kbench-compare-XXXXXX", path[256];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/cmp.csv", dir);
    assert_int_equal(kb_cmp_write_csv(path, &r, 5, err, sizeof err), 0);
    FILE *f = fopen(path, "r");
    char line[4096];
    assert_non_null(fgets(line, sizeof line, f));
    assert_string_equal(line, "op,impl,pass,dtype,layout,seq,base,seqlens,base_median_ms,new_median_ms,base_noise_pct,"
                              "new_noise_pct,speedup,threshold_pct,verdict,note\n");
    assert_non_null(fgets(line, sizeof line, f)); /* naive: only in base */
    assert_string_equal(line, "rope,naive,fwd,bf16,thd,16,10000,5+7,1.000000,,0.500,,,,only in base,\n");
    assert_non_null(fgets(line, sizeof line, f)); /* opt: 20% slower */
    assert_string_equal(line, "rope,opt,fwd,bf16,thd,16,10000,5+7,0.500000,0.600000,0.500,0.500,0.8333,5.000,slower,\n");
    assert_non_null(fgets(line, sizeof line, f));
    assert_string_equal(line, "rope,opt,fwd,bf16,thd,32,10000,5+7,,0.500000,,0.500,,,only in new,\n");
    assert_null(fgets(line, sizeof line, f));
    fclose(f);
    unlink(path);
    /* unwritable: an error naming the file */
    snprintf(path, sizeof path, "%s/no/such/dir/cmp.csv", dir);
    assert_int_equal(kb_cmp_write_csv(path, &r, 5, err, sizeof err), -1);
    assert_non_null(strstr(err, path));
    rmdir(dir);
    kb_cmp_result_free(&r);
    kb_cmp_free(&b);
    kb_cmp_free(&n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_rows),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_load_errors),
        cmocka_unit_test(test_judge),
        cmocka_unit_test(test_match),
        cmocka_unit_test(test_match_duplicates),
        cmocka_unit_test(test_match_kernel),
        cmocka_unit_test(test_csv),
    };
    return cmocka_run_group_tests_name("compare", tests, NULL, NULL);
}
