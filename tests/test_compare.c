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

#include "../cli/compare.h"
#include "../cli/core/errors.h"

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
    /* a key twice in one object: refused, as in a sweep file (not read by its first) */
    parse_fails("{\"kbench\": {}, \"results\": [{\"op\": \"x\", \"impl\": \"a\", \"params\": {}, \"op\": \"y\"}]}",
                "duplicate key 'op'", "in results[0]");
    parse_fails("{\"kbench\": {}, \"results\": [{\"op\": \"x\", \"impl\": \"a\", \"params\": {\"n\": [{\"a\": 1, \"a\": 2}]}}]}",
                "duplicate key 'a'", "in results[0].params.n[0]");
    parse_fails("{\"kbench\": {}, \"kbench\": {}, \"results\": []}", "duplicate key 'kbench'", "the top level");
    { /* many keys: sorted, not compared pairwise */
        char big[4096] = "{\"kbench\": {}, \"results\": [{\"op\": \"x\", \"impl\": \"a\", \"params\": {";
        for (int i = 0; i < 100; i++) snprintf(big + strlen(big), sizeof big - strlen(big), "\"k%d\": 1, ", i);
        strcat(big, "\"k57\": 2}}]}");
        parse_fails(big, "duplicate key 'k57'", "in results[0].params");
    }
    kb_cmp_file two; /* one key in two rows: two objects */
    parse_ok("{\"kbench\": {}, \"results\": [{\"op\": \"x\", \"impl\": \"a\", \"params\": {\"k\": 1}},"
             " {\"op\": \"x\", \"impl\": \"a\", \"params\": {\"k\": 1}}]}",
             &two);
    assert_int_equal(two.nrows, 2);
    kb_cmp_free(&two);
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
    assert_non_null(strstr(buf, "compare: 4 cases, 1 faster, 1 slower, 1 same, 1 only in base, 1 only in new, 1 FAILED; "
                                "by rule: 3 threshold, 0 mann-whitney\n"));
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
    assert_non_null(strstr(buf, ", 1 ran another kernel; by rule: 2 threshold, 0 mann-whitney\n"));
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
                              "new_noise_pct,speedup,threshold_pct,verdict,rule,p_value,note,base_run,new_run\n");
#define RUNS ",\"kbench 0.1.0 (abc1234), H100, 2026-11-22T17:27:30Z\",\"kbench 0.2.0 (abc1234), H200, 2026-11-22T17:27:30Z\"\n"
    assert_non_null(fgets(line, sizeof line, f)); /* naive: only in base */
    assert_string_equal(line, "rope,naive,fwd,bf16,thd,16,10000,5+7,1.000000,,0.500,,,,only in base,,," RUNS);
    assert_non_null(fgets(line, sizeof line, f)); /* opt: 20% slower */
    assert_string_equal(line, "rope,opt,fwd,bf16,thd,16,10000,5+7,0.500000,0.600000,0.500,0.500,0.8333,5.000,slower,threshold,," RUNS);
    assert_non_null(fgets(line, sizeof line, f));
    assert_string_equal(line, "rope,opt,fwd,bf16,thd,32,10000,5+7,,0.500000,,0.500,,,only in new,,," RUNS);
#undef RUNS
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

/* ---- the Mann-Whitney rule ------------------------------------------------ */

static void assert_close(double got, double want, double rel)
{
    if (!(fabs(got - want) <= rel * fabs(want))) fail_msg("got %.17g, want %.17g (relative %g)", got, want, rel);
}

/* Reference p-values: scipy 1.17.1, scipy.stats.mannwhitneyu(a, b,
 * method="asymptotic", use_continuity=True, alternative="two-sided"), which is
 * the normal approximation with the tie and continuity corrections. */
static void test_mann_whitney_p(void **state)
{
    (void)state;
    /* scipy's own documentation example (males vs females): U = 17, p = 0.11134688653314041 */
    const double m[] = {19, 22, 16, 29, 24}, w[] = {20, 11, 17, 12};
    assert_close(kb_mann_whitney_p(m, 5, w, 4), 0.11134688653314041, 1e-9);
    assert_close(kb_mann_whitney_p(w, 4, m, 5), 0.11134688653314041, 1e-9); /* two-sided: symmetric */
    /* by hand: 1..5 vs 6..10: U = 0, mu = 12.5, var = 5*5/12 * 11 = 22.9167, z = (12.5 - 0.5) / 4.7871 =
     * 2.5067, p = 2 * (1 - Phi(2.5067)) = 0.012186; scipy: 0.012185780355344813 */
    const double lo[] = {1, 2, 3, 4, 5}, hi[] = {6, 7, 8, 9, 10};
    assert_close(kb_mann_whitney_p(lo, 5, hi, 5), 0.012185780355344813, 1e-9);
    /* ties across the groups (the tie correction): U = 14, scipy: 0.03714012623439529 */
    const double ta[] = {1, 2, 2, 3, 4, 5, 5, 6}, tb[] = {3, 4, 4, 5, 6, 7, 7, 8, 9};
    assert_close(kb_mann_whitney_p(ta, 8, tb, 9), 0.03714012623439529, 1e-9);
    /* two values only: U = 4, scipy: 0.24706152509165802 */
    const double ua[] = {1, 1, 1, 2}, ub[] = {2, 2, 2, 1};
    assert_close(kb_mann_whitney_p(ua, 4, ub, 4), 0.24706152509165802, 1e-9);
    /* completely separated, 50 each (1..50 vs 51..100): scipy 7.066071930388932e-18 */
    double a[50], b[50];
    for (int i = 0; i < 50; i++) {
        a[i] = 1 + i;
        b[i] = 51 + i;
    }
    double p = kb_mann_whitney_p(a, 50, b, 50);
    assert_true(p < 1e-10);
    assert_close(p, 7.066071930388932e-18, 1e-6);
    /* the order of the samples does not matter: reversed, and interleaved with the other set's order */
    for (int i = 0; i < 25; i++) {
        double t = a[i];
        a[i] = a[49 - i];
        a[49 - i] = t;
    }
    assert_close(kb_mann_whitney_p(b, 50, a, 50), 7.066071930388932e-18, 1e-6);
    /* identical samples: no evidence (U = mu, p clipped to 1) */
    const double same3[] = {1.1, 2.2, 3.3};
    assert_close(kb_mann_whitney_p(same3, 3, same3, 3), 1, 1e-12);
    assert_close(kb_mann_whitney_p(a, 50, a, 50), 1, 1e-12);
    /* every value equal: the variance is 0, p is 1 (scipy: 1.0) */
    double ones[12];
    for (int i = 0; i < 12; i++) ones[i] = 1.0;
    assert_close(kb_mann_whitney_p(ones, 12, ones, 12), 1, 0);
    /* nothing to test */
    assert_true(isnan(kb_mann_whitney_p(a, 0, b, 50)));
    assert_true(isnan(kb_mann_whitney_p(a, 50, NULL, 0)));
    const double bad[] = {1, NAN, 3};
    assert_true(isnan(kb_mann_whitney_p(bad, 3, lo, 5)));
}

/* A deterministic generator (splitmix64) and normal noise by Box-Muller. */
typedef struct {
    uint64_t s;
    int have;
    double spare;
} rng;

static double rng_uniform(rng *r) /* (0, 1) */
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return ((double)(z >> 11) + 0.5) / 9007199254740992.0;
}

static double rng_normal(rng *r)
{
    if (r->have) {
        r->have = 0;
        return r->spare;
    }
    double u = rng_uniform(r), v = rng_uniform(r), rad = sqrt(-2 * log(u));
    r->spare = rad * sin(2 * M_PI * v);
    r->have = 1;
    return rad * cos(2 * M_PI * v);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A timed row of n samples mean * (1 + noise * N(0, 1)), its median_ms the
 * samples' median and its noise_pct their stddev/mean, as kbench writes them. */
static kb_cmp_row sample_row(rng *g, int n, double mean, double noise)
{
    kb_cmp_row r = mkrow(mean, NAN, 1);
    r.samples_ms = malloc(sizeof *r.samples_ms * (size_t)n);
    r.nsamples = n;
    double sum = 0, sq = 0;
    for (int i = 0; i < n; i++) {
        r.samples_ms[i] = mean * (1 + noise * rng_normal(g));
        sum += r.samples_ms[i];
    }
    double mu = sum / n;
    for (int i = 0; i < n; i++) sq += (r.samples_ms[i] - mu) * (r.samples_ms[i] - mu);
    double *sorted = malloc(sizeof *sorted * (size_t)n);
    memcpy(sorted, r.samples_ms, sizeof *sorted * (size_t)n);
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_double);
    r.median_ms = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    r.noise_pct = sqrt(sq / (n - 1)) / mu * 100;
    free(sorted);
    return r;
}

/* the verdict of base against cur at threshold 5%, minimum effect min_effect */
static kb_cmp_verdict decide(const kb_cmp_row *b, const kb_cmp_row *n, double min_effect, kb_cmp_pair *p)
{
    memset(p, 0, sizeof *p);
    kb_cmp_verdict v = kb_cmp_decide(b, n, 5, min_effect, p);
    assert_int_equal(v, p->verdict);
    return v;
}

static void test_decide_synthetic(void **state)
{
    (void)state;
    kb_cmp_pair p;
    /* twenty seeds each, so that one lucky draw cannot pass a test */
    for (uint64_t seed = 1; seed <= 20; seed++) {
        rng g = {seed * 7919, 0, 0};
        /* the same distribution (mean 1.0, 1% noise), 50 each: same */
        kb_cmp_row b = sample_row(&g, 50, 1.0, 0.01), n = sample_row(&g, 50, 1.0, 0.01);
        if (decide(&b, &n, 1, &p) != KB_CMP_SAME) fail_msg("seed %d: same distribution: %s, p=%g", (int)seed,
                                                             kb_cmp_verdict_name(p.verdict), p.p_value);
        assert_int_equal(p.rule, KB_CMP_RULE_MANN_WHITNEY);
        assert_true(p.p_value > 0 && p.p_value <= 1);
        free(n.samples_ms);
        /* 3% slower, 1% noise, 50 each: slower by the test; the threshold (5%, noise
         * ~2% added) would have called it same */
        n = sample_row(&g, 50, 1.03, 0.01);
        if (decide(&b, &n, 1, &p) != KB_CMP_SLOWER) fail_msg("seed %d: 3%% slower: %s, p=%g", (int)seed,
                                                               kb_cmp_verdict_name(p.verdict), p.p_value);
        assert_int_equal(p.rule, KB_CMP_RULE_MANN_WHITNEY);
        assert_true(p.p_value < 1e-6);
        assert_true(p.speedup < 1);
        assert_true(p.bound_pct == 1); /* the change that counts: the minimum effect */
        double sp, bound;
        assert_int_equal(kb_cmp_judge(&b, &n, 5, &sp, &bound), KB_CMP_SAME);
        /* the reverse: faster */
        if (decide(&n, &b, 1, &p) != KB_CMP_FASTER) fail_msg("seed %d: 3%% faster: %s, p=%g", (int)seed,
                                                               kb_cmp_verdict_name(p.verdict), p.p_value);
        assert_int_equal(p.rule, KB_CMP_RULE_MANN_WHITNEY);
        /* a minimum effect above the shift: same */
        assert_int_equal(decide(&b, &n, 5, &p), KB_CMP_SAME);
        free(b.samples_ms);
        free(n.samples_ms);

        /* 0.5% slower with 0.05% noise: significant, but under the 1% minimum effect: same */
        b = sample_row(&g, 50, 1.0, 0.0005);
        n = sample_row(&g, 50, 1.005, 0.0005);
        if (decide(&b, &n, 1, &p) != KB_CMP_SAME) fail_msg("seed %d: 0.5%% slower: %s", (int)seed,
                                                             kb_cmp_verdict_name(p.verdict));
        assert_int_equal(p.rule, KB_CMP_RULE_MANN_WHITNEY);
        assert_true(p.p_value < KB_CMP_ALPHA); /* the test saw it: the minimum effect decided */
        assert_int_equal(decide(&b, &n, 0.25, &p), KB_CMP_SLOWER); /* --min-effect 0.25 calls it */
        assert_int_equal(decide(&n, &b, 0.25, &p), KB_CMP_FASTER);
        free(b.samples_ms);
        free(n.samples_ms);
    }
}

/* At the default minimum effect (5%): an 8% change of rows whose noise adds up
 * to more than the threshold is called by the test, where the threshold rule
 * calls it same; a 3% change is same however significant. */
static void test_decide_default_effect(void **state)
{
    (void)state;
    kb_cmp_pair p;
    for (uint64_t seed = 1; seed <= 20; seed++) {
        rng g = {seed * 104729, 0, 0};
        kb_cmp_row b = sample_row(&g, 400, 0.100, 0.05), n = sample_row(&g, 400, 0.108, 0.05);
        double sp, bound;
        assert_int_equal(kb_cmp_judge(&b, &n, 5, &sp, &bound), KB_CMP_SAME); /* noise ~10% added */
        assert_true(bound > 8);
        if (decide(&b, &n, KB_CMP_MIN_EFFECT_PCT, &p) != KB_CMP_SLOWER)
            fail_msg("seed %d: 8%% slower, 5%% noise: %s, p=%g", (int)seed, kb_cmp_verdict_name(p.verdict), p.p_value);
        assert_int_equal(p.rule, KB_CMP_RULE_MANN_WHITNEY);
        free(n.samples_ms);
        n = sample_row(&g, 200, 0.103, 0.01);
        free(b.samples_ms);
        b = sample_row(&g, 200, 0.100, 0.01);
        assert_int_equal(decide(&b, &n, KB_CMP_MIN_EFFECT_PCT, &p), KB_CMP_SAME);
        assert_true(p.p_value < KB_CMP_ALPHA);
        free(b.samples_ms);
        free(n.samples_ms);
    }
}

/* Medians less than KB_CMP_MIN_DELTA_MS (0.5 us) apart are same under both
 * rules, however significant: the event timer's resolution. */
static void test_decide_resolution(void **state)
{
    (void)state;
    kb_cmp_pair p;
    rng g = {99, 0, 0};
    /* a 10 us kernel 3% slower (0.3 us), 0.5% noise, 200 samples each: the
     * test sees it, the change is over the minimum effect, under the resolution */
    kb_cmp_row b = sample_row(&g, 200, 0.010, 0.005), n = sample_row(&g, 200, 0.0103, 0.005);
    assert_int_equal(decide(&b, &n, 1, &p), KB_CMP_SAME);
    assert_int_equal(p.rule, KB_CMP_RULE_MANN_WHITNEY);
    assert_true(p.p_value < KB_CMP_ALPHA);
    assert_true(n.median_ms > b.median_ms * 1.01);
    assert_int_equal(p.under_resolution, 1);
    assert_int_equal(decide(&n, &b, 1, &p), KB_CMP_SAME); /* nor faster */
    assert_int_equal(p.under_resolution, 1);
    free(n.samples_ms);
    /* 10% slower (1 us): called */
    n = sample_row(&g, 200, 0.011, 0.005);
    assert_int_equal(decide(&b, &n, 1, &p), KB_CMP_SLOWER);
    assert_int_equal(p.under_resolution, 0);
    free(n.samples_ms);
    free(b.samples_ms);
    /* the threshold rule: 4.0 -> 4.4 us (10%, over 5%) is same, 4.0 -> 4.6 us slower */
    b = mkrow(0.0040, NAN, 1);
    n = mkrow(0.0044, NAN, 1);
    assert_int_equal(decide(&b, &n, 1, &p), KB_CMP_SAME);
    assert_int_equal(p.rule, KB_CMP_RULE_THRESHOLD);
    assert_int_equal(p.under_resolution, 1);
    n.median_ms = 0.0046;
    assert_int_equal(decide(&b, &n, 1, &p), KB_CMP_SLOWER);
    assert_int_equal(p.under_resolution, 0);
    assert_int_equal(decide(&n, &b, 1, &p), KB_CMP_FASTER);
    /* a failed row is FAILED whatever the medians */
    n.median_ms = 0.0040;
    n.ok = 0;
    assert_int_equal(decide(&b, &n, 1, &p), KB_CMP_FAILED);
    assert_int_equal(p.under_resolution, 0);
}

static void test_decide_fallback(void **state)
{
    (void)state;
    kb_cmp_pair p;
    rng g = {42, 0, 0};
    /* no samples: the threshold rule, as kb_cmp_judge */
    kb_cmp_row b = mkrow(1.0, NAN, 1), n = mkrow(1.06, NAN, 1);
    assert_int_equal(decide(&b, &n, 1, &p), KB_CMP_SLOWER);
    assert_int_equal(p.rule, KB_CMP_RULE_THRESHOLD);
    assert_string_equal(kb_cmp_rule_name(p.rule), "threshold");
    assert_true(isnan(p.p_value) && p.bound_pct == 5);
    n.median_ms = 1.03; /* 3% is under the threshold */
    assert_int_equal(decide(&b, &n, 1, &p), KB_CMP_SAME);
    assert_int_equal(p.rule, KB_CMP_RULE_THRESHOLD);

    /* samples in one row only: the threshold rule; the 3% shift is same there */
    kb_cmp_row sb = sample_row(&g, 50, 1.0, 0.01), sn = sample_row(&g, 50, 1.03, 0.01);
    kb_cmp_row plain = mkrow(sn.median_ms, sn.noise_pct, 1);
    assert_int_equal(decide(&sb, &plain, 1, &p), KB_CMP_SAME);
    assert_int_equal(p.rule, KB_CMP_RULE_THRESHOLD);
    assert_int_equal(decide(&plain, &sb, 1, &p), KB_CMP_SAME);
    assert_int_equal(p.rule, KB_CMP_RULE_THRESHOLD);
    /* both with samples: the test */
    assert_int_equal(decide(&sb, &sn, 1, &p), KB_CMP_SLOWER);
    assert_int_equal(p.rule, KB_CMP_RULE_MANN_WHITNEY);
    assert_string_equal(kb_cmp_rule_name(p.rule), "mann-whitney");
    /* fewer than KB_CMP_MIN_SAMPLES in one: the threshold */
    sn.nsamples = KB_CMP_MIN_SAMPLES - 1;
    assert_int_equal(decide(&sb, &sn, 1, &p), KB_CMP_SAME);
    assert_int_equal(p.rule, KB_CMP_RULE_THRESHOLD);
    sn.nsamples = KB_CMP_MIN_SAMPLES;
    decide(&sb, &sn, 1, &p);
    assert_int_equal(p.rule, KB_CMP_RULE_MANN_WHITNEY);
    sn.nsamples = 50;

    /* a change over the minimum effect that the test cannot tell from the scatter: same.
     * 1.0, 1.1, ..., 1.9 against the same + 0.05: medians 1.45 and 1.50 (3.4%), p = 0.73 (scipy: 0.7337) */
    kb_cmp_row wb = mkrow(1.45, NAN, 1), wn = mkrow(1.50, NAN, 1);
    double wa[10], wc[10];
    for (int i = 0; i < 10; i++) {
        wa[i] = 1 + 0.1 * i;
        wc[i] = wa[i] + 0.05;
    }
    wb.samples_ms = wa;
    wn.samples_ms = wc;
    wb.nsamples = wn.nsamples = 10;
    assert_int_equal(decide(&wb, &wn, 1, &p), KB_CMP_SAME);
    assert_int_equal(p.rule, KB_CMP_RULE_MANN_WHITNEY);
    assert_true(p.p_value > 0.5);
    assert_int_equal(decide(&wn, &wb, 1, &p), KB_CMP_SAME);

    /* failures come from no rule, samples or not */
    kb_cmp_row failed = sn;
    failed.ok = 0;
    assert_int_equal(decide(&sb, &failed, 1, &p), KB_CMP_FAILED);
    assert_int_equal(p.rule, KB_CMP_RULE_NONE);
    assert_string_equal(kb_cmp_rule_name(p.rule), "-");
    kb_cmp_row untimed = sn;
    untimed.median_ms = NAN;
    assert_int_equal(decide(&sb, &untimed, 1, &p), KB_CMP_NA);
    assert_int_equal(p.rule, KB_CMP_RULE_NONE);
    assert_true(isnan(p.p_value));
    free(sb.samples_ms);
    free(sn.samples_ms);
}

static const char *data_path(const char *name)
{
    static char path[1024];
    const char *f = __FILE__, *slash = strrchr(f, '/');
    snprintf(path, sizeof path, "%.*sdata/compare/%s", slash ? (int)(slash - f + 1) : 0, f, name);
    return path;
}

/* tests/data/compare/samples-{base,new}.json: 50 samples per row where kept
 * (seeded normal noise). rope fwd naive: the same distribution (1% noise);
 * rope fwd opt: 3% slower (1% noise; p 5.0e-17 by scipy); layernorm: 0.5%
 * slower with 0.05% noise (completely separated, p 7.1e-18, under the minimum
 * effect); mlp cublas: no samples; mlp fused: samples in base only, 11% faster. */
static void test_samples_files(void **state)
{
    (void)state;
    kb_cmp_file b, n;
    char err[KB_ERRLEN] = "";
    if (kb_cmp_load(data_path("samples-base.json"), &b, err, sizeof err)) fail_msg("%s", err);
    if (kb_cmp_load(data_path("samples-new.json"), &n, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(b.nrows, 5);
    assert_int_equal(b.rows[0].nsamples, 50);
    assert_int_equal(b.rows[3].nsamples, 0);
    assert_null(b.rows[3].samples_ms);
    assert_int_equal(b.rows[4].nsamples, 50);
    assert_int_equal(n.rows[4].nsamples, 0);
    assert_true(n.rows[0].samples_ms[0] == 0.1971096); /* the file's first sample, as written */
    assert_true(b.rows[0].p25_ms < b.rows[0].median_ms && b.rows[0].median_ms < b.rows[0].p75_ms);
    assert_true(isnan(b.rows[3].p25_ms) && isnan(b.rows[3].p75_ms));

    kb_cmp_result r;
    assert_int_equal(kb_cmp_match_effect(&b, &n, "", 5, 1, &r, err, sizeof err), 0);
    assert_int_equal(r.cases, 5);
    const kb_cmp_verdict want[] = {KB_CMP_SAME, KB_CMP_SLOWER, KB_CMP_SAME, KB_CMP_SAME, KB_CMP_FASTER};
    const kb_cmp_rule rule[] = {KB_CMP_RULE_MANN_WHITNEY, KB_CMP_RULE_MANN_WHITNEY, KB_CMP_RULE_MANN_WHITNEY,
                                KB_CMP_RULE_THRESHOLD, KB_CMP_RULE_THRESHOLD};
    for (int i = 0; i < 5; i++) {
        if (r.pairs[i].verdict != want[i] || r.pairs[i].rule != rule[i])
            fail_msg("row %d: %s by %s, want %s by %s", i, kb_cmp_verdict_name(r.pairs[i].verdict),
                     kb_cmp_rule_name(r.pairs[i].rule), kb_cmp_verdict_name(want[i]), kb_cmp_rule_name(rule[i]));
    }
    /* scipy on the same samples: 0.36465152425376834, 5.015461347570666e-17, 7.066071930388932e-18 */
    assert_close(r.pairs[0].p_value, 0.36465152425376834, 1e-9);
    assert_close(r.pairs[1].p_value, 5.015461347570666e-17, 1e-6);
    assert_close(r.pairs[2].p_value, 7.066071930388932e-18, 1e-6);
    assert_int_equal(r.by_threshold, 2);
    assert_int_equal(r.by_mann_whitney, 3);
    assert_int_equal(kb_cmp_regressions(&r), 1);

    /* the table: each line names its rule; the summary counts them */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    kb_cmp_print(f, &b, &n, &r, 5, 0);
    fclose(f);
    assert_non_null(strstr(buf, "slower   mann-whitney  p=5e-17\n"));
    assert_non_null(strstr(buf, "same     mann-whitney  p=7.1e-18, change under 1%\n"));
    assert_non_null(strstr(buf, "same     threshold\n")); /* mlp cublas: no samples, no note */
    assert_non_null(strstr(buf, "faster   threshold     samples: base 50, new 0 (the test needs 10 each)\n"));
    assert_non_null(strstr(buf, "Mann-Whitney U test at p < 0.001"));
    assert_non_null(strstr(buf, "compare: 5 cases, 1 faster, 1 slower, 3 same, 0 only in base, 0 only in new; "
                                "by rule: 2 threshold, 3 mann-whitney\n"));
    free(buf);

    /* the CSV: rule and p_value before note */
    char dir[] = "/tmp/kbench-compare-XXXXXX", path[256];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/cmp.csv", dir);
    assert_int_equal(kb_cmp_write_csv(path, &r, 5, err, sizeof err), 0);
    FILE *cf = fopen(path, "r");
    char line[4096];
    assert_non_null(fgets(line, sizeof line, cf));
    assert_non_null(strstr(line, ",speedup,threshold_pct,verdict,rule,p_value,note,base_run,new_run\n"));
    assert_non_null(fgets(line, sizeof line, cf)); /* rope fwd naive */
    assert_non_null(strstr(line, ",1.000,same,mann-whitney,0.3647,p=0.36,"));
    assert_non_null(fgets(line, sizeof line, cf)); /* rope fwd opt */
    assert_non_null(strstr(line, ",1.000,slower,mann-whitney,5.015e-17,p=5e-17,"));
    assert_non_null(fgets(line, sizeof line, cf));
    assert_non_null(fgets(line, sizeof line, cf)); /* mlp cublas: no p-value */
    assert_non_null(strstr(line, ",5.000,same,threshold,,,"));
    fclose(cf);
    unlink(path);
    rmdir(dir);
    kb_cmp_result_free(&r);

    /* --min-effect 5: the 3% slowdown is not called */
    assert_int_equal(kb_cmp_match_effect(&b, &n, "", 5, 5, &r, err, sizeof err), 0);
    assert_int_equal(r.pairs[1].verdict, KB_CMP_SAME);
    assert_int_equal(kb_cmp_regressions(&r), 0);
    kb_cmp_result_free(&r);
    /* a file against itself: same throughout, p = 1 where tested */
    assert_int_equal(kb_cmp_match(&n, &n, "", 5, &r, err, sizeof err), 0);
    assert_int_equal(r.same, 5);
    assert_int_equal(r.by_mann_whitney, 3);
    assert_true(r.pairs[0].p_value == 1);
    kb_cmp_result_free(&r);
    kb_cmp_free(&b);
    kb_cmp_free(&n);
}

/* a results[] row with the given samples_ms value */
static char *samples_file(const char *samples)
{
    size_t n = strlen(samples) + 256;
    char *rows = malloc(n);
    snprintf(rows, n, "{\"op\": \"x\", \"impl\": \"a\", \"params\": {}, \"median_ms\": 1, \"samples_ms\": %s}", samples);
    char *text = result_json("H100", "0.1.0", rows);
    free(rows);
    return text;
}

static void test_samples_errors(void **state)
{
    (void)state;
    const struct {
        const char *samples, *want;
    } bad[] = {
        {"\"1, 2\"", "\"samples_ms\" is not an array"},
        {"{\"a\": 1}", "\"samples_ms\" is not an array"},
        {"[1, \"2\"]", "\"samples_ms\"[1] is not a positive number"},
        {"[1, 2, 0]", "\"samples_ms\"[2] is not a positive number"},
        {"[-0.5]", "\"samples_ms\"[0] is not a positive number"},
        {"[1, null]", "\"samples_ms\"[1]"},
        {"[1, [2]]", "\"samples_ms\"[1]"},
        {"[1, 1e999]", "\"samples_ms\"[1]"}, /* infinite */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char *text = samples_file(bad[i].samples);
        parse_fails(text, "results[0]", bad[i].want);
        free(text);
    }
    /* the cap: KB_CMP_MAX_SAMPLES + 1 entries */
    size_t cnt = KB_CMP_MAX_SAMPLES + 1, n = 2 * cnt + 3;
    char *big = malloc(n);
    big[0] = '[';
    for (size_t i = 0; i < cnt; i++) {
        big[1 + 2 * i] = '1';
        big[2 + 2 * i] = i + 1 < cnt ? ',' : ']';
    }
    big[2 * cnt + 1] = 0;
    char *text = samples_file(big);
    parse_fails(text, "results[0]", "holds 1000001 samples, at most 1000000");
    free(text);
    big[2 * cnt - 2] = ']'; /* the last entry cut: KB_CMP_MAX_SAMPLES, accepted */
    big[2 * cnt - 1] = 0;
    text = samples_file(big);
    kb_cmp_file f;
    parse_ok(text, &f);
    assert_int_equal(f.rows[0].nsamples, KB_CMP_MAX_SAMPLES);
    kb_cmp_free(&f);
    free(text);
    free(big);
    /* null and [] are no samples; p25_ms/p75_ms must be numbers where present */
    text = samples_file("null");
    parse_ok(text, &f);
    assert_int_equal(f.rows[0].nsamples, 0);
    assert_null(f.rows[0].samples_ms);
    kb_cmp_free(&f);
    free(text);
    text = samples_file("[]");
    parse_ok(text, &f);
    assert_int_equal(f.rows[0].nsamples, 0);
    kb_cmp_free(&f);
    free(text);
    parse_fails("{\"kbench\": {}, \"results\": [{\"op\": \"x\", \"impl\": \"a\", \"params\": {}, \"p25_ms\": \"1\"}]}",
                "results[0]", "p25_ms");
    /* an error in a later row frees the samples of the rows before (LeakSanitizer watches) */
    char *rows = join(2, strdup("{\"op\": \"x\", \"impl\": \"a\", \"params\": {}, \"samples_ms\": [1, 2, 3]}"),
                      strdup("{\"op\": \"x\", \"impl\": \"b\", \"params\": {}, \"samples_ms\": [1, 0]}"));
    text = result_json("H100", "0.1.0", rows);
    parse_fails(text, "results[1]", "\"samples_ms\"[1]");
    free(text);
    free(rows);

    /* through the real reader: the message names the file and the row */
    char dir[] = "/tmp/kbench-compare-XXXXXX", path[256], err[KB_ERRLEN] = "";
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/bad-samples.json", dir);
    FILE *fp = fopen(path, "w");
    text = samples_file("[0.5, 0.5, \"fast\"]");
    fputs(text, fp);
    free(text);
    fclose(fp);
    assert_int_equal(kb_cmp_load(path, &f, err, sizeof err), -1);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, "results[0]: \"samples_ms\"[2] is not a positive number"));
    unlink(path);
    rmdir(dir);
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
        cmocka_unit_test(test_mann_whitney_p),
        cmocka_unit_test(test_decide_synthetic),
        cmocka_unit_test(test_decide_default_effect),
        cmocka_unit_test(test_decide_fallback),
        cmocka_unit_test(test_decide_resolution),
        cmocka_unit_test(test_samples_files),
        cmocka_unit_test(test_samples_errors),
    };
    return cmocka_run_group_tests_name("compare", tests, NULL, NULL);
}
