/* report.c (CSV, JSON) and the harness's statistics and comparison. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../cli/core/clock.h"
#include "../cli/core/errors.h"
#include "../cli/core/op.h"
#include "../cli/core/params.h"
#include "../cli/core/registry.h"
#include "../cli/harness/ladder.h"
#include "../cli/harness/stats.h"
#include "../cli/harness/verify.h"
#include "../cli/report/conditions.h"
#include "../cli/report/csv.h"
#include "../cli/report/device.h"
#include "../cli/report/json.h"
#include "../cli/report/report.h"
#include "../cli/report/row.h"
#include "../cli/report/table.h"
#include "../cli/selftest.h"
#include "../include/kb_dtype.h"
#include "../kernels/kernels.h"

/* ---- helpers ------------------------------------------------------------ */

/* Split one CSV line (RFC 4180 quoting) into fields; returns the count. */
static int csv_split(const char *line, char fields[][512], int max)
{
    int n = 0;
    const char *s = line;
    for (;;) {
        char *o = n < max ? fields[n] : NULL;
        size_t k = 0;
        if (*s == '"') {
            s++;
            for (;;) {
                if (!*s) fail_msg("unterminated quote in: %s", line);
                if (*s == '"' && s[1] == '"') { if (o && k < 511) o[k++] = '"'; s += 2; continue; }
                if (*s == '"') { s++; break; }
                if (o && k < 511) o[k++] = *s;
                s++;
            }
            if (*s && *s != ',' && *s != '\n') fail_msg("text after a closing quote in: %s", line);
        } else {
            while (*s && *s != ',' && *s != '\n') {
                if (*s == '"') fail_msg("a bare quote in: %s", line);
                if (o && k < 511) o[k++] = *s;
                s++;
            }
        }
        if (o) o[k] = 0;
        n++;
        if (*s != ',') break;
        s++;
    }
    return n;
}

static int col(char fields[][512], int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(fields[i], name)) return i;
    fail_msg("no column %s", name);
    return -1;
}

static kb_case *make_cases(int *n)
{
    kb_sweep s;
    kb_sweep_init(&s, kb_find_op("rope"));
    char err[KB_ERRLEN];
    assert_int_equal(kb_sweep_set(&s, "pass", "fwd,bwd", err, sizeof err), 0);
    assert_int_equal(kb_sweep_set(&s, "layout", "thd", err, sizeof err), 0);
    assert_int_equal(kb_sweep_set(&s, "seq", "16", err, sizeof err), 0);
    assert_int_equal(kb_sweep_set(&s, "seqlens", "3,4", err, sizeof err), 0);
    kb_case *cases = NULL;
    *n = 0;
    assert_int_equal(kb_sweep_expand(&s, &cases, n, err, sizeof err), 0);
    assert_int_equal(*n, 2);
    kb_sweep_free(&s);
    return cases;
}

/* a timed, verified row and an untimed failed one */
static void make_rows(const kb_case *cases, kb_row *r)
{
    memset(r, 0, 2 * sizeof *r);
    r[0].c = &cases[0];
    r[0].impl = "naive";
    double ms[] = {0.125, 0.25, 0.5};
    kb_stats_compute(ms, 3, &r[0].st);
    r[0].bytes = 1024;
    r[0].flops = 96;
    r[0].gbps = 4.0;
    r[0].pct_of_copy = 12.5;
    r[0].copy_gbps = 32;
    r[0].tflops = 1e-6;
    r[0].rel_err = 1e-7;
    r[0].max_abs_err = 2e-7;
    r[0].verified = 1;
    r[0].speedup = 1.0;
    r[0].pct_of_gemm = 37.5;
    r[0].gemm_tflops = 700;
    r[0].verified_rows = 64;
    snprintf(r[0].kernel, sizeof r[0].kernel, "naive thread/element");
    r[0].timing = "events";
    r[0].cond.n = 12;
    r[0].cond.sm_min_mhz = 1410;
    r[0].cond.sm_med_mhz = 1755;
    r[0].cond.mem_min_mhz = 2619;
    r[0].cond.mem_med_mhz = 2619;
    r[0].cond.power_med_w = 650;
    r[0].cond.power_max_w = 690.5;
    r[0].cond.temp_max_c = 71;
    r[0].cond.reasons = KB_REASON_SW_POWER_CAP | KB_REASON_GPU_IDLE;
    r[0].cond.throttled = 1;
    r[1].c = &cases[1];
    r[1].impl = "opt";
    r[1].bytes = 2048;
    r[1].verified = 0;
    r[1].rel_err = NAN;
    r[1].max_abs_err = INFINITY;
    snprintf(r[1].error, sizeof r[1].error, "dt: bad, \"very\" bad\nsecond line");
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *t = malloc((size_t)n + 1);
    size_t got = fread(t, 1, (size_t)n, f);
    t[got] = 0;
    fclose(f);
    return t;
}

static cJSON *read_json(const char *path)
{
    char *t = slurp(path);
    if (!t) fail_msg("cannot read %s", path);
    cJSON *j = cJSON_Parse(t);
    if (!j) fail_msg("%s is not valid JSON:\n%s", path, t);
    free(t);
    return j;
}

/* ---- CSV ---------------------------------------------------------------- */

static void test_csv(void **state)
{
    (void)state;
    int n;
    kb_case *cases = make_cases(&n);
    kb_row rows[2];
    make_rows(cases, rows);
    FILE *f = tmpfile();
    assert_non_null(f);
    kb_csv_header(f, kb_ops, kb_nops);
    kb_csv_row(f, &rows[0], kb_ops, kb_nops);
    kb_csv_row(f, &rows[1], kb_ops, kb_nops);
    rewind(f);
    char line[3][8192];
    for (int i = 0; i < 3; i++) assert_non_null(fgets(line[i], sizeof line[i], f));
    char extra[16];
    assert_null(fgets(extra, sizeof extra, f)); /* one line per row, the newline in the error flattened */
    fclose(f);

    static char h[128][512], v[128][512];
    int nh = csv_split(line[0], h, 128);
    /* fixed columns first, then every other parameter: each op's in table
     * order, ops in registry order, a name shared with an earlier op once */
    const char *first[] = {"op", "pass", "impl", "dtype", "layout"};
    for (int i = 0; i < 5; i++) assert_string_equal(h[i], first[i]);
    int k = 5;
    for (int o = 0; o < kb_nops; o++)
        for (int i = 0; i < kb_ops[o]->nparams; i++) {
            const char *nm = kb_ops[o]->params[i].name;
            if (!strcmp(nm, "pass") || !strcmp(nm, "dtype") || !strcmp(nm, "layout")) continue;
            int seen = 0;
            for (int j = 5; j < k; j++) seen |= !strcmp(h[j], nm);
            if (seen) continue;
            assert_string_equal(h[k], nm);
            k++;
        }
    const char *stats[] = {"median_ms", "p25_ms", "p75_ms", "min_ms", "max_ms", "mean_ms", "stddev_ms",
                           "noise_pct", "samples", "timing", "bytes", "gbps", "pct_of_copy"};
    for (int i = 0; i < 13; i++) assert_string_equal(h[k + i], stats[i]);
    int sp = col(h, nh, "speedup_vs_baseline");
    assert_true(sp > k + 9);
    for (const char *const *c = (const char *const[]){"copy_gbps", "flops", "tflops", "rel_err", "max_abs_err", "verified", NULL}; *c; c++)
        assert_true(col(h, nh, *c) > k + 9);
    /* the GEMM ceiling's columns follow tflops, then cuBLAS on the row's own
     * shapes and the note on shares above 100%; the verified row count follows verified */
    assert_int_equal(col(h, nh, "pct_of_gemm"), col(h, nh, "tflops") + 1);
    assert_int_equal(col(h, nh, "gemm_tflops"), col(h, nh, "tflops") + 2);
    assert_int_equal(col(h, nh, "cublas_shape_tflops"), col(h, nh, "tflops") + 3);
    assert_int_equal(col(h, nh, "pct_of_cublas_shape"), col(h, nh, "tflops") + 4);
    assert_int_equal(col(h, nh, "note"), col(h, nh, "tflops") + 5);
    assert_int_equal(col(h, nh, "rel_err"), col(h, nh, "tflops") + 6);
    /* the conditions follow what ran */
    const char *cond[] = {"sm_mhz_min", "sm_mhz_med", "mem_mhz_min", "mem_mhz_med", "power_w_med", "power_w_max",
                          "temp_c_max", "throttle_reasons", "throttled"};
    for (int i = 0; i < 9; i++) assert_int_equal(col(h, nh, cond[i]), col(h, nh, "kernel") + 1 + i);
    assert_int_equal(col(h, nh, "verified_rows"), col(h, nh, "verified") + 1);
    assert_int_equal(sp, col(h, nh, "verified") + 2);
    /* what ran, then the error and the n/a reason, then the case's place in
     * the sweep, last (scripts/plot.sh reads the parameters by position:
     * nothing new goes before the statistics) */
    assert_int_equal(col(h, nh, "kernel"), sp + 1);
    assert_int_equal(col(h, nh, "throttled"), nh - 4);
    assert_int_equal(col(h, nh, "error"), nh - 3);
    assert_int_equal(col(h, nh, "reason"), nh - 2);
    assert_int_equal(col(h, nh, "case"), nh - 1);
    for (int i = 0; i < nh; i++)
        for (int j = 0; j < i; j++) assert_string_not_equal(h[i], h[j]);

    /* row 0 */
    int nv = csv_split(line[1], v, 128);
    assert_int_equal(nv, nh);
    assert_string_equal(v[col(h, nh, "op")], "rope");
    assert_true(strtod(v[col(h, nh, "p25_ms")], NULL) == 0.1875); /* (0.125 + 0.25) / 2 */
    assert_true(strtod(v[col(h, nh, "p75_ms")], NULL) == 0.375);
    assert_string_equal(v[col(h, nh, "timing")], "events");
    assert_string_equal(v[col(h, nh, "note")], "");
    assert_string_equal(v[col(h, nh, "cublas_shape_tflops")], "");
    /* conditions read through NVML */
    assert_string_equal(v[col(h, nh, "sm_mhz_min")], "1410");
    assert_string_equal(v[col(h, nh, "sm_mhz_med")], "1755");
    assert_string_equal(v[col(h, nh, "mem_mhz_med")], "2619");
    assert_true(strtod(v[col(h, nh, "power_w_max")], NULL) == 690.5);
    assert_string_equal(v[col(h, nh, "temp_c_max")], "71");
    assert_string_equal(v[col(h, nh, "throttle_reasons")], "sw_power_cap");
    assert_string_equal(v[col(h, nh, "throttled")], "1");
    assert_string_equal(v[col(h, nh, "pass")], "fwd");
    assert_string_equal(v[col(h, nh, "impl")], "naive");
    assert_string_equal(v[col(h, nh, "dtype")], "bf16");
    assert_string_equal(v[col(h, nh, "layout")], "thd");
    assert_string_equal(v[col(h, nh, "seq")], "16");
    assert_string_equal(v[col(h, nh, "heads")], "8");
    assert_string_equal(v[col(h, nh, "style")], "neox");
    assert_string_equal(v[col(h, nh, "case")], "0"); /* its place in the sweep */
    assert_true(strtod(v[col(h, nh, "base")], NULL) == 10000);
    assert_string_equal(v[col(h, nh, "seqlens")], "3+4");
    assert_true(strtod(v[col(h, nh, "median_ms")], NULL) == 0.25);
    assert_true(strtod(v[col(h, nh, "min_ms")], NULL) == 0.125);
    assert_true(strtod(v[col(h, nh, "max_ms")], NULL) == 0.5);
    assert_int_equal(atoi(v[col(h, nh, "samples")]), 3);
    assert_true(strtod(v[col(h, nh, "bytes")], NULL) == 1024);
    assert_true(strtod(v[col(h, nh, "gbps")], NULL) == 4.0);
    assert_true(strtod(v[col(h, nh, "pct_of_copy")], NULL) == 12.5);
    assert_true(fabs(strtod(v[col(h, nh, "rel_err")], NULL) - 1e-7) < 1e-10);
    assert_string_equal(v[col(h, nh, "verified")], "pass");
    assert_true(strtod(v[col(h, nh, "pct_of_gemm")], NULL) == 37.5);
    assert_true(strtod(v[col(h, nh, "gemm_tflops")], NULL) == 700);
    assert_string_equal(v[col(h, nh, "verified_rows")], "64");
    assert_true(strtod(v[sp], NULL) == 1.0);
    assert_string_equal(v[col(h, nh, "error")], "");
    assert_string_equal(v[col(h, nh, "kernel")], "naive thread/element");
    assert_string_equal(v[col(h, nh, "reason")], "");

    /* row 1: untimed, failed, an error with a comma and quotes */
    nv = csv_split(line[2], v, 128);
    assert_int_equal(nv, nh);
    assert_string_equal(v[col(h, nh, "pass")], "bwd");
    assert_string_equal(v[col(h, nh, "impl")], "opt");
    assert_string_equal(v[col(h, nh, "median_ms")], "");
    assert_string_equal(v[col(h, nh, "samples")], "");
    assert_string_equal(v[col(h, nh, "gbps")], "");
    assert_string_equal(v[sp], "");
    assert_string_equal(v[col(h, nh, "verified")], "fail");
    assert_string_equal(v[col(h, nh, "pct_of_gemm")], ""); /* no ceiling, no rows: empty */
    assert_string_equal(v[col(h, nh, "gemm_tflops")], "");
    assert_string_equal(v[col(h, nh, "verified_rows")], "");
    assert_string_equal(v[col(h, nh, "error")], "dt: bad, \"very\" bad second line");
    assert_string_equal(v[col(h, nh, "kernel")], "");
    /* no NVML (cond.n == 0): the condition columns are empty, not zero */
    for (int i = 0; i < 9; i++) assert_string_equal(v[col(h, nh, cond[i])], "");
    assert_string_equal(v[col(h, nh, "timing")], "");
    kb_cases_free(cases, n);
}

static const char *jstr(const cJSON *o, const char *k);

/* An implementation that cannot take a case: verdict n/a, its reason, no
 * error, nothing timed; in the CSV, the JSON and the table. */
static void test_na_row(void **state)
{
    (void)state;
    int n;
    kb_case *cases = make_cases(&n);
    kb_row r;
    memset(&r, 0, sizeof r);
    r.c = &cases[0];
    r.impl = "bulk";
    r.bytes = 1024;
    r.verified = KB_V_NA;
    snprintf(r.reason, sizeof r.reason, "bulk copies need sm_90, this is sm_80");
    FILE *f = tmpfile();
    assert_non_null(f);
    kb_csv_header(f, kb_ops, kb_nops);
    kb_csv_row(f, &r, kb_ops, kb_nops);
    rewind(f);
    char line[2][8192];
    for (int i = 0; i < 2; i++) assert_non_null(fgets(line[i], sizeof line[i], f));
    fclose(f);
    static char h[128][512], v[128][512];
    int nh = csv_split(line[0], h, 128);
    assert_int_equal(csv_split(line[1], v, 128), nh);
    assert_string_equal(v[col(h, nh, "verified")], "n/a");
    assert_string_equal(v[col(h, nh, "reason")], "bulk copies need sm_90, this is sm_80");
    assert_string_equal(v[col(h, nh, "error")], "");
    assert_string_equal(v[col(h, nh, "median_ms")], "");

    char *buf = NULL;
    size_t len = 0;
    f = open_memstream(&buf, &len);
    kb_table_row(f, &r);
    fclose(f);
    assert_non_null(strstr(buf, "n/a"));
    assert_non_null(strstr(buf, "bulk copies need sm_90"));
    assert_null(strstr(buf, "FAIL"));
    free(buf);

    char path[] = "/tmp/kbench-test-na-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    char err[KB_ERRLEN];
    kb_report *rep = kb_report_open(NULL, path, kb_ops, kb_nops, NULL, 0, NULL, 1, err, sizeof err);
    assert_non_null(rep);
    kb_report_sweep(rep, "0123456789abcdef", 10, 2, 4, -1); /* shard 2 of 4 of a 10-case sweep */
    kb_report_order(rep, "sequence");
    kb_report_skip(rep, 7);
    /* a skipped case is on disk at once, before the run ends (a --devices
     * worker's, before it says the case done: test_rows) */
    cJSON *j = read_json(path);
    const cJSON *sk = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "kbench"), "skipped_cases");
    assert_true(cJSON_IsArray(sk) && cJSON_GetArraySize(sk) == 1 && cJSON_GetArrayItem(sk, 0)->valuedouble == 7);
    cJSON_Delete(j);
    kb_report_row(rep, &r);
    assert_int_equal(kb_report_close(rep, NULL, 0), 0);
    j = read_json(path);
    const cJSON *kb = cJSON_GetObjectItemCaseSensitive(j, "kbench");
    assert_string_equal(jstr(kb, "sweep_id"), "0123456789abcdef");
    assert_true(cJSON_GetObjectItemCaseSensitive(kb, "sweep_cases")->valuedouble == 10);
    assert_string_equal(jstr(kb, "shard"), "2/4");
    assert_string_equal(jstr(kb, "order"), "sequence");
    const cJSON *o = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "results"), 0);
    assert_true(cJSON_GetObjectItemCaseSensitive(o, "case")->valuedouble == r.c->index);
    assert_string_equal(jstr(o, "verified"), "n/a");
    assert_string_equal(jstr(o, "reason"), "bulk copies need sm_90, this is sm_80");
    assert_null(cJSON_GetObjectItemCaseSensitive(o, "error"));
    assert_null(cJSON_GetObjectItemCaseSensitive(o, "kernel"));
    cJSON_Delete(j);
    unlink(path);
    kb_cases_free(cases, n);
}

/* ---- JSON --------------------------------------------------------------- */

static int results_len(const cJSON *j)
{
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(j, "results");
    assert_true(cJSON_IsArray(r));
    return cJSON_GetArraySize(r);
}

static const char *jstr(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsString(v)) fail_msg("%s is not a string", k);
    return v->valuestring;
}

static void test_json_report(void **state)
{
    (void)state;
    int n;
    kb_case *cases = make_cases(&n);
    kb_row rows[2];
    make_rows(cases, rows);
    char dir[] = "/tmp/kbench-report-XXXXXX", csv[256], json[256], tmp[300], sub[256];
    assert_non_null(mkdtemp(dir));
    snprintf(sub, sizeof sub, "%s/sub", dir);
    snprintf(csv, sizeof csv, "%s/out.csv", dir);
    snprintf(json, sizeof json, "%s/sub/out.json", dir); /* a directory to create */
    snprintf(tmp, sizeof tmp, "%s.tmp", json);
    char *argv[] = {"kbench", "rope", "--seq", "16"};
    char err[KB_ERRLEN] = "";
    kb_report *r = kb_report_open(csv, json, kb_ops, kb_nops, NULL, 4, argv, 1, err, sizeof err);
    if (!r) fail_msg("kb_report_open: %s", err);

    cJSON *j = read_json(json); /* whole from the start */
    assert_int_equal(results_len(j), 0);
    cJSON_Delete(j);

    double kept[] = {0.25, 0.125, 0.5}; /* --save-samples: in the order measured */
    rows[0].samples = kept;
    snprintf(rows[0].note, sizeof rows[0].note, "l2");
    rows[0].cublas_shape_tflops = 650;
    rows[0].pct_of_cublas_shape = 101.5;
    rows[0].wall[KB_WALL_CEILINGS] = 0.5; /* the case's phases on its first row, verify and time on each */
    rows[0].wall[KB_WALL_REFERENCE] = 1.25;
    rows[0].wall[KB_WALL_TIME] = 0.123456789;
    const double parts[KB_START_NPARTS] = {0.5, 0.625, 0.25, 2.74845};
    kb_report_start(r, 4.12345, parts); /* the seconds before the first case, and where they went */
    kb_report_ladder_wait(r, 0.125);
    kb_report_ladder_wait(r, 0.25); /* replaced: the timer's searches so far, summed */
    kb_report_ladder_wait(r, 0);    /* nothing to say: kept */
    kb_report_row(r, &rows[0]);
    j = read_json(json); /* whole after the first row, before close */
    assert_int_equal(results_len(j), 1);
    assert_int_equal(access(tmp, F_OK), -1); /* renamed away */
    cJSON_Delete(j);

    rows[1].gpu_known = 1; /* an ended --devices worker's error row names its GPU */
    rows[1].gpu = 2;
    kb_report_row(r, &rows[1]);
    j = read_json(json);
    assert_int_equal(results_len(j), 2);
    cJSON_Delete(j);
    assert_int_equal(kb_report_close(r, NULL, 0), 0);

    j = read_json(json);
    const cJSON *kb = cJSON_GetObjectItemCaseSensitive(j, "kbench");
    assert_true(cJSON_IsObject(kb));
    assert_string_equal(jstr(kb, "version"), KB_VERSION);
    assert_string_equal(jstr(kb, "command_line"), "kbench rope --seq 16");
    assert_true(cJSON_GetObjectItemCaseSensitive(kb, "start_s")->valuedouble == 4.123);
    const cJSON *sp = cJSON_GetObjectItemCaseSensitive(kb, "start_parts_s");
    assert_int_equal(cJSON_GetArraySize(sp), KB_START_NPARTS);
    assert_true(cJSON_GetObjectItemCaseSensitive(sp, "device")->valuedouble == 0.5);
    assert_true(cJSON_GetObjectItemCaseSensitive(sp, "first_case")->valuedouble == 0.25);
    assert_true(cJSON_GetObjectItemCaseSensitive(sp, "ladders")->valuedouble == 2.748);
    assert_true(cJSON_GetObjectItemCaseSensitive(kb, "ladder_wait_s")->valuedouble == 0.25); /* of a --devices worker */
    assert_true(strlen(jstr(kb, "git_commit")) > 0);
    assert_true(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(j, "device")));
    assert_int_equal(results_len(j), 2);
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(j, "results");
    const cJSON *a = cJSON_GetArrayItem(res, 0), *b = cJSON_GetArrayItem(res, 1);
    assert_string_equal(jstr(a, "op"), "rope");
    assert_string_equal(jstr(a, "pass"), "fwd");
    assert_string_equal(jstr(a, "impl"), "naive");
    assert_string_equal(jstr(a, "kernel"), "naive thread/element");
    assert_null(cJSON_GetObjectItemCaseSensitive(b, "kernel")); /* never ran: nothing to say */
    assert_string_equal(jstr(a, "dtype"), "bf16");
    const cJSON *pa = cJSON_GetObjectItemCaseSensitive(a, "params");
    assert_true(cJSON_IsObject(pa));
    const cJSON *seq = cJSON_GetObjectItemCaseSensitive(pa, "seq");
    assert_true(cJSON_IsNumber(seq) && seq->valuedouble == 16);
    assert_string_equal(jstr(pa, "layout"), "thd");
    const cJSON *sl = cJSON_GetObjectItemCaseSensitive(pa, "seqlens");
    assert_true(cJSON_IsArray(sl) && cJSON_GetArraySize(sl) == 2);
    assert_true(cJSON_GetArrayItem(sl, 1)->valuedouble == 4);
    const cJSON *med = cJSON_GetObjectItemCaseSensitive(a, "median_ms");
    assert_true(cJSON_IsNumber(med) && med->valuedouble == 0.25);
    assert_true(cJSON_GetObjectItemCaseSensitive(a, "samples")->valuedouble == 3);
    assert_string_equal(jstr(a, "verified"), "pass");
    assert_null(cJSON_GetObjectItemCaseSensitive(a, "error"));
    assert_true(cJSON_GetObjectItemCaseSensitive(a, "pct_of_gemm")->valuedouble == 37.5);
    assert_true(cJSON_GetObjectItemCaseSensitive(a, "gemm_tflops")->valuedouble == 700);
    assert_true(cJSON_GetObjectItemCaseSensitive(a, "verified_rows")->valuedouble == 64);
    /* the samples, read back in order; the quartiles; the timing mode; the note */
    const cJSON *sm = cJSON_GetObjectItemCaseSensitive(a, "samples_ms");
    assert_true(cJSON_IsArray(sm) && cJSON_GetArraySize(sm) == 3);
    for (int i = 0; i < 3; i++) assert_true(cJSON_GetArrayItem(sm, i)->valuedouble == kept[i]);
    assert_true(cJSON_GetObjectItemCaseSensitive(a, "p25_ms")->valuedouble == 0.1875);
    assert_true(cJSON_GetObjectItemCaseSensitive(a, "p75_ms")->valuedouble == 0.375);
    assert_string_equal(jstr(a, "timing"), "events");
    assert_string_equal(jstr(a, "note"), "l2");
    assert_true(cJSON_GetObjectItemCaseSensitive(a, "cublas_shape_tflops")->valuedouble == 650);
    assert_true(cJSON_GetObjectItemCaseSensitive(a, "pct_of_cublas_shape")->valuedouble == 101.5);
    const cJSON *cd = cJSON_GetObjectItemCaseSensitive(a, "conditions");
    assert_true(cJSON_IsObject(cd));
    assert_true(cJSON_GetObjectItemCaseSensitive(cd, "sm_mhz_min")->valuedouble == 1410);
    assert_true(cJSON_GetObjectItemCaseSensitive(cd, "power_w_max")->valuedouble == 690.5);
    assert_string_equal(jstr(cd, "throttle_reasons"), "sw_power_cap");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cd, "throttled")));
    /* where the wall time went: the phases spent, 4 significant digits */
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(a, "wall_s");
    assert_true(cJSON_IsObject(w) && cJSON_GetArraySize(w) == 3);
    assert_true(cJSON_GetObjectItemCaseSensitive(w, "ceilings")->valuedouble == 0.5);
    assert_true(cJSON_GetObjectItemCaseSensitive(w, "reference")->valuedouble == 1.25);
    assert_true(cJSON_GetObjectItemCaseSensitive(w, "time")->valuedouble == 0.1235);
    assert_null(cJSON_GetObjectItemCaseSensitive(w, "setup"));
    /* the second row: no samples kept, no NVML, no phase timed: none of the keys */
    assert_null(cJSON_GetObjectItemCaseSensitive(b, "wall_s"));
    assert_null(cJSON_GetObjectItemCaseSensitive(b, "samples_ms"));
    assert_null(cJSON_GetObjectItemCaseSensitive(b, "conditions"));
    assert_null(cJSON_GetObjectItemCaseSensitive(b, "note"));

    assert_string_equal(jstr(b, "pass"), "bwd");
    assert_string_equal(jstr(b, "impl"), "opt");
    assert_string_equal(jstr(b, "verified"), "fail");
    assert_null(cJSON_GetObjectItemCaseSensitive(b, "median_ms")); /* not timed */
    assert_null(cJSON_GetObjectItemCaseSensitive(b, "pct_of_gemm"));
    assert_null(cJSON_GetObjectItemCaseSensitive(b, "verified_rows"));
    assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(b, "rel_err"))); /* NaN is null */
    assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(b, "max_abs_err")));
    assert_non_null(strstr(jstr(b, "error"), "\"very\" bad"));
    assert_null(cJSON_GetObjectItemCaseSensitive(a, "gpu")); /* a worker's own rows: kbench merge says */
    assert_true(cJSON_GetObjectItemCaseSensitive(b, "gpu")->valuedouble == 2);
    cJSON_Delete(j);
    assert_int_equal(access(tmp, F_OK), -1);

    /* the CSV beside it: a header and the two rows */
    char *t = slurp(csv);
    assert_non_null(t);
    int lines = 0;
    for (char *p = t; *p; p++) lines += *p == '\n';
    assert_int_equal(lines, 3);
    assert_true(strncmp(t, "op,pass,impl,dtype,layout,", 26) == 0);
    free(t);

    unlink(csv);
    unlink(json);
    rmdir(sub);
    rmdir(dir);
    kb_cases_free(cases, n);
}

static long file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) ? -1 : (long)sb.st_size;
}

/* A failed write (a full device, a file size limit) is reported at once,
 * with the file and the OS's reason; the rows before it stay readable, the
 * JSON file stays the last complete version and no temporary is left. */
static void test_report_write_errors(void **state)
{
    (void)state;
    char err[KB_ERRLEN] = "";
    /* at open: nothing fits on /dev/full (where the machine has one) */
    if (access("/dev/full", W_OK) == 0) {
        assert_null(kb_report_open("/dev/full", NULL, kb_ops, kb_nops, NULL, 0, NULL, 1, err, sizeof err));
        assert_non_null(strstr(err, "cannot write /dev/full: No space left on device"));
        err[0] = 0; /* a JSON path that is not a regular file is written at close (json.h) */
        kb_report *r = kb_report_open(NULL, "/dev/full", kb_ops, kb_nops, NULL, 0, NULL, 1, err, sizeof err);
        assert_non_null(r);
        assert_int_equal(kb_report_close(r, err, sizeof err), -1);
        assert_non_null(strstr(err, "cannot write /dev/full: No space left on device"));
    } else {
        print_message("no writable /dev/full here: its part is skipped\n");
    }

    /* mid-sweep: a file size limit just past what the first row wrote */
    int n;
    kb_case *cases = make_cases(&n);
    kb_row rows[2];
    make_rows(cases, rows);
    char dir[] = "/tmp/kbench-full-XXXXXX", csv[256], json[256], tmp[300];
    assert_non_null(mkdtemp(dir));
    snprintf(csv, sizeof csv, "%s/out.csv", dir);
    snprintf(json, sizeof json, "%s/out.json", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", json);
    struct rlimit old;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    void (*xfsz)(int) = signal(SIGXFSZ, SIG_IGN); /* EFBIG instead of the signal */
    for (int which = 0; which < 2; which++) { /* 0: the CSV fails first; 1: the JSON (no CSV) */
        kb_report *r = kb_report_open(which ? NULL : csv, json, kb_ops, kb_nops, NULL, 0, NULL, 1, err, sizeof err);
        if (!r) fail_msg("kb_report_open: %s", err);
        assert_int_equal(kb_report_row(r, &rows[0]), 0);
        assert_null(kb_report_error(r));
        long csv1 = which ? 0 : file_size(csv), json1 = file_size(json);
        struct rlimit lim = old;
        lim.rlim_cur = (rlim_t)((which ? json1 : csv1) + 8);
        assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
        int rc = kb_report_row(r, &rows[1]);
        assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
        assert_int_equal(rc, -1);
        const char *e = kb_report_error(r);
        assert_non_null(e);
        char want[400];
        snprintf(want, sizeof want, "cannot write %s: File too large", which ? json : csv);
        if (!strstr(e, want)) fail_msg("'%s' lacks '%s'", e, want);
        assert_int_equal(kb_report_row(r, &rows[0]), -1); /* nothing more after the first failure */
        char cerr[KB_ERRLEN] = "";
        assert_int_equal(kb_report_close(r, cerr, sizeof cerr), -1);
        assert_non_null(strstr(cerr, want));
        /* what was written before is whole: the JSON holds the first row (what
         * the failed append wrote undone), no temporary is left */
        assert_int_equal(access(tmp, F_OK), -1);
        cJSON *j = read_json(json);
        assert_int_equal(results_len(j), 1);
        cJSON_Delete(j);
        if (!which) {
            char *t = slurp(csv);
            char *nl1 = strchr(t, '\n'), *nl2 = nl1 ? strchr(nl1 + 1, '\n') : NULL;
            assert_non_null(nl2); /* the header and the first row, each whole */
            assert_non_null(strstr(nl1, "naive"));
            free(t);
        }
        unlink(csv);
        unlink(json);
    }
    signal(SIGXFSZ, xfsz);
    rmdir(dir);
    kb_cases_free(cases, n);
}

/* The JSON file (report/json.h): every row on disk at once, the file the
 * whole document after each; a row costs the same whatever came before it;
 * the head rewritten in its room, which doubles (the rows kept) when it
 * outgrows it; a run killed in a row's write leaves the rows before it
 * readable (kb_json_read); a path that is not a regular file is written
 * once, at close. */
static void test_json_append(void **state)
{
    (void)state;
    int n;
    kb_case *cases = make_cases(&n);
    kb_row rows[2];
    make_rows(cases, rows);
    char dir[] = "/tmp/kbench-append-XXXXXX", json[256], err[KB_ERRLEN] = "";
    assert_non_null(mkdtemp(dir));
    snprintf(json, sizeof json, "%s/out.json", dir);
    kb_report *r = kb_report_open(NULL, json, kb_ops, kb_nops, NULL, 0, NULL, 1, err, sizeof err);
    if (!r) fail_msg("kb_report_open: %s", err);
    for (int k = 1; k <= 3; k++) { /* each on disk at once */
        assert_int_equal(kb_report_row(r, &rows[k % 2]), 0);
        cJSON *j = read_json(json);
        assert_int_equal(results_len(j), k);
        cJSON_Delete(j);
    }
    /* 20000 rows more: the last thousand cost what the first did (a
     * rewrite a row made the last ones 20 times dearer) */
    double t[3] = {kb_now_s(), 0, 0};
    for (int k = 0; k < 20000; k++) {
        assert_int_equal(kb_report_row(r, &rows[k % 2]), 0);
        if (k == 999) t[1] = kb_now_s();
        if (k == 18999) t[2] = kb_now_s();
    }
    const double first = t[1] - t[0], last = kb_now_s() - t[2];
    if (last > 4 * first + 0.05) fail_msg("rows 19001-20000 took %.3f s, rows 1-1000 %.3f s", last, first);
    /* the head outgrows its room (a skipped case a few bytes each): it moves, the rows stay */
    const long before = file_size(json);
    for (int k = 0; k < 1500; k++) kb_report_skip(r, 100000 + k);
    assert_true(file_size(json) > before);
    cJSON *j = read_json(json);
    assert_int_equal(results_len(j), 20003);
    const cJSON *sk = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "kbench"), "skipped_cases");
    assert_int_equal(cJSON_GetArraySize(sk), 1500);
    cJSON_Delete(j);
    assert_int_equal(kb_report_row(r, &rows[0]), 0); /* and rows go on after it */
    assert_int_equal(kb_report_close(r, err, sizeof err), 0);
    j = read_json(json);
    assert_int_equal(results_len(j), 20004);
    cJSON_Delete(j);

    /* killed in a row's write: the rows before it */
    char *text = slurp(json);
    const size_t len = strlen(text);
    for (size_t cut = len - 5; cut > len - 400; cut -= 37) {
        char *c = strndup(text, cut);
        int was_cut = 0, line, col;
        const char *at;
        j = kb_json_read(c, &was_cut, &at, &line, &col);
        if (!j) fail_msg("a file cut at %zu of %zu bytes: not read", cut, len);
        assert_int_equal(was_cut, 1);
        const int got = results_len(j);
        assert_in_range(got, 20002, 20003); /* the last row cut, or its tail */
        cJSON_Delete(j);
        free(c);
    }
    /* a row's write cut after its first byte (",", over the tail's "\n"): every row before it */
    char *one = strdup(text);
    char *tail = strstr(one, "\n]}\n");
    assert_non_null(tail);
    tail[0] = ','; /* the rest of the old tail, "]}\n", is still there */
    {
        int was_cut = 0, line, col;
        const char *at;
        j = kb_json_read(one, &was_cut, &at, &line, &col);
        if (!j) fail_msg("a file cut one byte into a row's write: not read");
        assert_int_equal(was_cut, 1);
        assert_int_equal(results_len(j), 20004);
        cJSON_Delete(j);
    }
    free(one);
    int was_cut = 1, line, col;
    const char *at;
    j = kb_json_read(text, &was_cut, &at, &line, &col);
    assert_non_null(j);
    assert_int_equal(was_cut, 0);
    cJSON_Delete(j);
    assert_null(kb_json_read("{\"kbench\": {}, \"results\": [\n  {\"op\": \"rope\",}\n]}\n", &was_cut, &at, &line, &col));
    free(text);
    unlink(json);

    /* not a regular file: written once, at close */
    r = kb_report_open(NULL, "/dev/null", kb_ops, kb_nops, NULL, 0, NULL, 1, err, sizeof err);
    if (!r) fail_msg("kb_report_open /dev/null: %s", err);
    assert_int_equal(kb_report_row(r, &rows[0]), 0);
    assert_int_equal(kb_report_close(r, err, sizeof err), 0);
    rmdir(dir);
    kb_cases_free(cases, n);
}

static void test_report_open_errors(void **state)
{
    (void)state;
    char err[KB_ERRLEN] = "";
    char dir[] = "/tmp/kbench-report-XXXXXX", path[256], blocker[256];
    assert_non_null(mkdtemp(dir));
    /* a file where the output directory should be */
    snprintf(blocker, sizeof blocker, "%s/file", dir);
    FILE *f = fopen(blocker, "w");
    fclose(f);
    snprintf(path, sizeof path, "%s/file/out.csv", dir);
    kb_report *r = kb_report_open(path, NULL, kb_ops, kb_nops, NULL, 0, NULL, 1, err, sizeof err);
    assert_null(r);
    assert_true(strlen(err) > 0);
    /* the same for the JSON file: refused at open, not lost silently at every row */
    err[0] = 0;
    snprintf(path, sizeof path, "%s/file/out.json", dir);
    r = kb_report_open(NULL, path, kb_ops, kb_nops, NULL, 0, NULL, 1, err, sizeof err);
    if (r) {
        assert_int_equal(kb_report_close(r, NULL, 0), 0);
        unlink(blocker);
        rmdir(dir);
        fail_msg("kb_report_open accepted the unwritable JSON path %s", path);
    }
    assert_true(strlen(err) > 0);
    /* no outputs at all is fine (kbench check) */
    r = kb_report_open(NULL, NULL, kb_ops, kb_nops, NULL, 0, NULL, 1, err, sizeof err);
    assert_non_null(r);
    assert_int_equal(kb_report_close(r, NULL, 0), 0);
    unlink(blocker);
    rmdir(dir);
}

/* ---- statistics and comparison ------------------------------------------ */

/* When sampling may stop on a noisy row: the median's 95% interval */
static void test_median_known(void **state)
{
    (void)state;
    enum { N = 20000 };
    double *v = malloc(sizeof *v * N);
    kb_stats st;
    uint64_t z = 12345;
    /* a 4.4 us kernel in 32 ns steps, 6% noise and a tail: known at 1000 samples */
    for (int i = 0; i < N; i++) {
        z = z * 6364136223846793005ull + 1442695040888963407ull;
        double u = (double)(z >> 11) / 9007199254740992.0;
        double t = 0.0044 * (1 + 0.06 * (u - 0.5) * 3.4) + (i % 50 == 0 ? 0.004 : 0);
        v[i] = floor(t / 0.000032) * 0.000032;
    }
    kb_stats_compute(v, 1000, &st);
    assert_true(st.noise_pct > 5); /* noisy: --max-noise 1 would not stop it */
    assert_true(kb_median_known(&st));
    kb_stats_compute(v, KB_MEDIAN_CI_MIN - 1, &st); /* too few samples to judge */
    assert_false(kb_median_known(&st));
    /* 1 to 2 ms spread evenly: 200 samples leave the median +-5% open; 20000 pin it */
    for (int i = 0; i < N; i++) v[i] = 1 + (double)((i * 7919) % N) / N;
    kb_stats_compute(v, 200, &st);
    assert_false(kb_median_known(&st));
    assert_true((st.med_hi - st.med_lo) / 2 > 0.005 * st.median);
    kb_stats_compute(v, N, &st);
    assert_true(kb_median_known(&st));
    assert_true(st.med_lo < st.median && st.median < st.med_hi);
    /* a 2 us kernel between two 32 ns steps: +-16 ns is over 0.5% but under 0.1 us */
    for (int i = 0; i < 200; i++) v[i] = i % 2 ? 0.002 : 0.002032;
    kb_stats_compute(v, 200, &st);
    assert_true(st.med_hi - st.med_lo > 0.005 * 2 * st.median);
    assert_true(kb_median_known(&st));
    /* nothing timed */
    kb_stats_compute(NULL, 0, &st);
    assert_false(kb_median_known(&st));
    free(v);
}

/* The stopping rule (kb_enough_samples): each of its ways to stop, and not before. */
static void test_enough_samples(void **state)
{
    (void)state;
    enum { N = 400 };
    double v[N];
    kb_stats st;
    for (int i = 0; i < N; i++) v[i] = 0.1; /* 0.1 ms, no noise */
    kb_stats_compute(v, 20, &st);
    /* 20 quiet samples of 0.1 ms: 2 ms of kernel time, under min_time 0.3 s */
    assert_false(kb_enough_samples(v, 20, 2.0, 0.01, 0.3, 20, 1, 10, &st));
    /* min_time 0: 20 samples and quiet */
    assert_true(kb_enough_samples(v, 20, 2.0, 0.01, 0, 20, 1, 10, &st));
    /* one sample short of min_samples */
    kb_stats_compute(v, 19, &st);
    assert_false(kb_enough_samples(v, 19, 1.9, 0.01, 0, 20, 1, 10, &st));
    /* the timeout stops whatever the rest says */
    assert_true(kb_enough_samples(v, 19, 1.9, 10.0, 0, 20, 1, 10, &st));
    /* noisy (alternating 0.1 and 0.2 ms: 33% noise, too few samples for the
     * median's interval): not before twice both minimums; then, the later
     * half as noisy as the whole, it stops */
    for (int i = 0; i < N; i++) v[i] = i % 2 ? 0.2 : 0.1;
    kb_stats_compute(v, 40, &st);
    assert_true(st.noise_pct > 30);
    assert_false(kb_median_known(&st));
    assert_false(kb_enough_samples(v, 40, 6.0, 0.01, 0.005, 40, 1, 10, &st)); /* 6 ms: past min_time, not twice */
    assert_true(kb_enough_samples(v, 40, 6.0, 0.01, 0.003, 20, 1, 10, &st));  /* twice both: converged */
    /* noise that grows (the later half quieter than the whole by more than 10%) does not stop it */
    for (int i = 0; i < N; i++) v[i] = i < 20 ? (i % 2 ? 0.4 : 0.1) : (i % 2 ? 0.2 : 0.1);
    kb_stats_compute(v, 40, &st);
    assert_false(kb_enough_samples(v, 40, 8.0, 0.01, 0.001, 20, 1, 10, &st));
}

static void test_stats(void **state)
{
    (void)state;
    kb_stats st;
    double odd[] = {3, 1, 2};
    kb_stats_compute(odd, 3, &st);
    assert_int_equal(st.samples, 3);
    assert_true(st.median == 2 && st.min == 1 && st.max == 3 && st.mean == 2);
    assert_true(fabs(st.stddev - 1.0) < 1e-12); /* sample stddev: sqrt(2 / (3-1)) */
    assert_true(fabs(st.noise_pct - 50.0) < 1e-9);
    assert_true(odd[0] == 3 && odd[1] == 1 && odd[2] == 2); /* the input is not sorted in place */

    double even[] = {4, 1, 3, 2};
    kb_stats_compute(even, 4, &st);
    assert_true(st.median == 2.5 && st.mean == 2.5 && st.min == 1 && st.max == 4);
    assert_true(fabs(st.stddev - sqrt(5.0 / 3.0)) < 1e-12);
    assert_true(fabs(st.noise_pct - 100.0 * sqrt(5.0 / 3.0) / 2.5) < 1e-9);

    assert_true(st.p25 == 1.75 && st.p75 == 3.25); /* numpy.percentile([1,2,3,4], [25, 75]) */

    double many[101];
    for (int i = 0; i < 101; i++) many[i] = (i * 37) % 101; /* 0..100 shuffled */
    kb_stats_compute(many, 101, &st);
    assert_true(st.median == 50 && st.min == 0 && st.max == 100 && st.mean == 50);
    assert_true(st.p25 == 25 && st.p75 == 75);
    /* the median's 95% interval: ranks floor(50.5 - 9.85) = 40 and ceil(61.35) = 62 */
    assert_true(st.med_lo == 39 && st.med_hi == 61);
    double five[] = {10, 50, 20, 40, 30};
    kb_stats_compute(five, 5, &st);
    assert_true(st.p25 == 20 && st.p75 == 40 && st.median == 30);

    double one[] = {0.7};
    kb_stats_compute(one, 1, &st);
    assert_true(st.median == 0.7 && st.stddev == 0 && st.noise_pct == 0 && st.samples == 1);
    assert_true(st.p25 == 0.7 && st.p75 == 0.7);
    assert_true(st.med_lo == 0.7 && st.med_hi == 0.7); /* clamped to the samples */
    double same[] = {2, 2, 2, 2};
    kb_stats_compute(same, 4, &st);
    assert_true(st.stddev == 0 && st.noise_pct == 0);
    kb_stats_compute(NULL, 0, &st);
    assert_int_equal(st.samples, 0);
    assert_true(st.median == 0 && st.mean == 0);
}

/* A share above 100% says why: l2 when the row's bytes fit in L2 or under
 * --hot, ceiling? otherwise (and for any GEMM share above 100) */
static void test_row_note(void **state)
{
    (void)state;
    const size_t l2 = 50u << 20;
    assert_string_equal(kb_row_note(99.9, 0, 1e9, l2, 0), "");
    assert_string_equal(kb_row_note(100, 100, 1e9, l2, 0), ""); /* at, not above */
    assert_string_equal(kb_row_note(115, 0, 32e6, l2, 0), "l2");
    assert_string_equal(kb_row_note(115, 0, (double)l2, l2, 0), "l2");
    assert_string_equal(kb_row_note(115, 0, (double)l2 + 1, l2, 0), "ceiling?");
    assert_string_equal(kb_row_note(101, 0, 1e9, l2, 1), "l2"); /* --hot: the data stays in L2 */
    assert_string_equal(kb_row_note(0, 103, 1e9, l2, 0), "ceiling?");
    assert_string_equal(kb_row_note(0, 103, 1e6, l2, 1), "ceiling?"); /* L2 does not explain FLOPs */
    assert_string_equal(kb_row_note(101, 0, 1e6, 0, 0), "ceiling?"); /* L2 size unknown */
}

/* the ceiling is the best candidate, whichever position it holds; unmeasured
 * (0), failed (NaN) candidates are passed over */
static void test_best_rate(void **state)
{
    (void)state;
    double a[] = {2052, 2378, 2101, 0};
    assert_int_equal(kb_best_rate(a, 4), 1);
    double b[] = {1670, 1765, NAN, 1800};
    assert_int_equal(kb_best_rate(b, 4), 3);
    double c[] = {2400, 2378};
    assert_int_equal(kb_best_rate(c, 2), 0);
    double d[] = {0, NAN, -1};
    assert_int_equal(kb_best_rate(d, 3), -1);
    assert_int_equal(kb_best_rate(d, 0), -1);
}

/* selftest's rule: the deviation from the known truth, signed, within the limit */
static void test_selftest_judge(void **state)
{
    (void)state;
    double d;
    assert_true(kb_selftest_judge(10.09, 10.0, 1.0, &d));
    assert_true(fabs(d - 0.9) < 1e-9);
    assert_false(kb_selftest_judge(10.11, 10.0, 1.0, &d));
    assert_true(fabs(d - 1.1) < 1e-9);
    assert_false(kb_selftest_judge(9.85, 10.0, 1.0, &d)); /* too fast fails as well */
    assert_true(d < 0);
    assert_true(kb_selftest_judge(2900, 2950, 3.0, &d));
    assert_false(kb_selftest_judge(2800, 2950, 3.0, &d));
    assert_false(kb_selftest_judge(1, 0, 3.0, &d)); /* no truth: not a pass */
    assert_false(kb_selftest_judge(NAN, 1, 3.0, &d));
}

/* the flush check's rule: only a copy faster on the buffers the sample before
 * touched is a leak (H100, 2026-11-26: the evict-first flush 0.0115 against
 * 0.0140 ms, the normal-priority one 0.0131 against 0.0127) */
static void test_selftest_judge_flush(void **state)
{
    (void)state;
    double d;
    assert_false(kb_selftest_judge_flush(0.0115, 0.0140, 5.0, &d));
    assert_true(fabs(d + 17.857) < 1e-2);
    assert_true(kb_selftest_judge_flush(0.0131, 0.0127, 5.0, &d));
    assert_true(d > 3 && d < 3.2);
    assert_true(kb_selftest_judge_flush(0.0200, 0.0127, 5.0, &d)); /* slower is no leak */
    assert_true(kb_selftest_judge_flush(0.0121, 0.0127, 5.0, &d)); /* -4.7%: within the limit */
    assert_false(kb_selftest_judge_flush(0.0120, 0.0127, 5.0, &d)); /* -5.5% */
    assert_false(kb_selftest_judge_flush(0.0127, 0, 5.0, &d));      /* no ring: not a pass */
    assert_false(kb_selftest_judge_flush(NAN, 0.0127, 5.0, &d));
}

/* Where a failed output is worst: the first non-finite element, else the
 * largest error; its index through sampled rows; the index as text. */
static void test_worst(void **state)
{
    (void)state;
    double ref[6] = {1, 2, 3, 4, 5, 6}, got[6] = {1, 2.5, 3, 4, 5, 5.9};
    kb_buf b = {"y", KB_FP32, 6, NULL, NULL, ref};
    assert_int_equal(kb_worst(&b, got), 1);
    got[4] = NAN; /* unwritten: named before any larger error */
    got[5] = INFINITY;
    assert_int_equal(kb_worst(&b, got), 4);
    /* the MLP's sampled rows: rows 0, 7 and 9 of 10 of 2, packed */
    long rows[3] = {0, 7, 9};
    kb_buf s = {"y", KB_BF16, 20, NULL, NULL, ref, 0, 2, rows, 3};
    assert_int_equal(kb_buf_index(&s, 1), 1);
    assert_int_equal(kb_buf_index(&s, 3), 15); /* row 7, element 1 */
    assert_int_equal(kb_buf_index(&s, 4), 18);
    assert_int_equal(kb_buf_index(&b, 4), 4);
    char t[64];
    const int64_t shape[3] = {4, 5, 6};
    kb_index_text(0, 3, shape, t, sizeof t);
    assert_string_equal(t, "[0, 0, 0]");
    kb_index_text(2 * 30 + 3 * 6 + 5, 3, shape, t, sizeof t);
    assert_string_equal(t, "[2, 3, 5]");
    kb_index_text(120, 3, shape, t, sizeof t); /* past the shape: flat */
    assert_string_equal(t, "[120]");
    kb_index_text(17, 0, NULL, t, sizeof t);
    assert_string_equal(t, "[17]");
    kb_index_text(2 * 30 + 3 * 6 + 5, 3, shape, t, 6); /* truncated, still a string */
    assert_int_equal(strlen(t), 5);
}

static void test_compare(void **state)
{
    (void)state;
    double ref[4] = {1, -2, 3, 0.5}, got[4];
    kb_buf b = {"out", KB_FP32, 4, NULL, NULL, ref};
    kb_tol tol = {1e-3, 1e-3};
    double rel, mx;
    memcpy(got, ref, sizeof got);
    assert_int_equal(kb_compare(&b, got, tol, &rel, &mx), 1);
    assert_true(rel == 0 && mx == 0);

    got[2] = 3 + 1e-4; /* inside both tolerances */
    assert_int_equal(kb_compare(&b, got, tol, &rel, &mx), 1);
    double norm = sqrt(1 + 4 + 9 + 0.25);
    assert_true(fabs(rel - 1e-4 / norm) < 1e-12);
    assert_true(fabs(mx - 1e-4) < 1e-12);

    got[2] = 3 + 0.05; /* above both */
    assert_int_equal(kb_compare(&b, got, tol, &rel, &mx), 0);
    assert_true(fabs(rel - 0.05 / norm) < 1e-12);

    /* max_abs is relative to max(1, max|ref|): 0.02 is inside 1e-2 * 3 */
    got[2] = 3 + 0.02;
    assert_int_equal(kb_compare(&b, got, (kb_tol){1, 1e-2}, &rel, &mx), 1);
    assert_int_equal(kb_compare(&b, got, (kb_tol){1, 5e-3}, &rel, &mx), 0);
    /* the rel_l2 bound alone fails it */
    assert_int_equal(kb_compare(&b, got, (kb_tol){1e-3, 1}, &rel, &mx), 0);

    /* a poisoned (all-ones: a negative NaN) output left unwritten: both errors
     * a NaN without its sign, as the error text and the table print them */
    double poison;
    memset(&poison, 0xff, sizeof poison);
    got[2] = poison;
    assert_int_equal(kb_compare(&b, got, tol, &rel, &mx), 0);
    assert_true(isnan(rel) && !signbit(rel) && isnan(mx) && !signbit(mx));
    char txt[32];
    snprintf(txt, sizeof txt, "%.3e %.3e", rel, mx);
    assert_string_equal(txt, "nan nan");
    got[2] = 3;

    /* a result that cancels to ~0: relative to its terms' size (scale), not to itself */
    double zero[2] = {0, 1e-9}, near[2] = {2e-6, 1e-9};
    kb_buf zb = {"dx", KB_FP32, 2, NULL, NULL, zero};
    assert_int_equal(kb_compare(&zb, near, (kb_tol){1e-5, 1}, &rel, &mx), 0);
    zb.scale = 1.0;
    assert_int_equal(kb_compare(&zb, near, (kb_tol){1e-5, 1}, &rel, &mx), 1);
    assert_true(fabs(rel - 2e-6) < 1e-15);
    zb.scale = 0.1; /* an error of 2e-5 of the terms fails */
    assert_int_equal(kb_compare(&zb, near, (kb_tol){1e-5, 1}, &rel, &mx), 0);
    /* a scale below ||ref|| changes nothing */
    b.scale = 1e-3;
    got[2] = 3 + 1e-4;
    assert_int_equal(kb_compare(&b, got, tol, &rel, &mx), 1);
    assert_true(fabs(rel - 1e-4 / norm) < 1e-12);

    memcpy(got, ref, sizeof got);
    got[1] = NAN; /* an unwritten (poisoned) element */
    assert_int_equal(kb_compare(&b, got, (kb_tol){1e9, 1e9}, &rel, &mx), 0);
    got[1] = INFINITY;
    assert_int_equal(kb_compare(&b, got, (kb_tol){1e9, 1e9}, &rel, &mx), 0);
    got[1] = -2;
    got[3] = NAN;
    assert_int_equal(kb_compare(&b, got, (kb_tol){1e9, 1e9}, &rel, &mx), 0);
    assert_true(isnan(mx) || isinf(mx) || isnan(rel));

    /* an all-zero reference: the absolute error counts */
    double z[3] = {0, 0, 0}, g[3] = {0, 0, 1e-6};
    kb_buf bz = {"out", KB_FP32, 3, NULL, NULL, z};
    assert_int_equal(kb_compare(&bz, g, (kb_tol){1e-5, 1e-5}, &rel, &mx), 1);
    g[2] = 1e-3;
    assert_int_equal(kb_compare(&bz, g, (kb_tol){1e-5, 1e-5}, &rel, &mx), 0);
}


/* the GEMM ladder's second pass: the other layouts at the best size and its
 * measured neighbours */
static void test_gemm_rungs(void **state)
{
    (void)state;
    int idx[3] = {-1, -1, -1};
    const double mid[] = {600, 750, 740, 700, 690};
    assert_int_equal(kb_gemm_rungs(mid, 5, idx), 3);
    assert_int_equal(idx[0], 0);
    assert_int_equal(idx[1], 1);
    assert_int_equal(idx[2], 2);
    const double first[] = {760, 750, 740};
    assert_int_equal(kb_gemm_rungs(first, 3, idx), 2);
    assert_int_equal(idx[0], 0);
    assert_int_equal(idx[1], 1);
    const double last[] = {600, 700, 0, 0}; /* the larger sizes did not fit */
    assert_int_equal(kb_gemm_rungs(last, 4, idx), 2);
    assert_int_equal(idx[0], 0);
    assert_int_equal(idx[1], 1);
    const double gap[] = {NAN, 500, 0, 700, 650};
    assert_int_equal(kb_gemm_rungs(gap, 5, idx), 2); /* the unmeasured neighbour is skipped */
    assert_int_equal(idx[0], 3);
    assert_int_equal(idx[1], 4);
    const double none[] = {0, 0};
    assert_int_equal(kb_gemm_rungs(none, 2, idx), 0);
    assert_int_equal(kb_gemm_rungs(none, 0, idx), 0);
}

/* the device object carries the GEMM ceilings that were measured, by key */
static void test_json_device_gemm(void **state)
{
    (void)state;
    char dir[] = "/tmp/kbench-report-XXXXXX", json[256];
    assert_non_null(mkdtemp(dir));
    snprintf(json, sizeof json, "%s/dev.json", dir);
    kb_device d;
    memset(&d, 0, sizeof d);
    d.ok = 1;
    snprintf(d.name, sizeof d.name, "Test GPU");
    d.copy_gbps = 3000;
    char err[KB_ERRLEN] = "";
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            d.gemm_tflops[KB_GEMM_BF16] = 774.5;
            d.gemm_n[KB_GEMM_BF16] = 8192;
            d.gemm_layout[KB_GEMM_BF16] = KB_GEMM_NN;
            d.gemm_tflops[KB_GEMM_TF32] = 400;
            d.gemm_n[KB_GEMM_TF32] = 4096;
        }
        kb_report *r = kb_report_open(NULL, json, kb_ops, kb_nops, &d, 0, NULL, 1, err, sizeof err);
        if (!r) fail_msg("kb_report_open: %s", err);
        assert_int_equal(kb_report_close(r, NULL, 0), 0);
        cJSON *j = read_json(json);
        const cJSON *dev = cJSON_GetObjectItemCaseSensitive(j, "device");
        assert_true(cJSON_IsObject(dev));
        assert_string_equal(jstr(dev, "name"), "Test GPU");
        const cJSON *g = cJSON_GetObjectItemCaseSensitive(dev, "gemm_tflops");
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(dev, "gemm_size");
        const cJSON *l = cJSON_GetObjectItemCaseSensitive(dev, "gemm_layout");
        if (pass == 0) {
            assert_null(g); /* none measured: no object */
            assert_null(n);
            assert_null(l);
        } else {
            assert_true(cJSON_IsObject(l));
            assert_int_equal(cJSON_GetArraySize(l), 2);
            assert_string_equal(jstr(l, "bf16"), "NN");
            assert_string_equal(jstr(l, "tf32"), "TN");
            assert_true(cJSON_IsObject(g) && cJSON_IsObject(n));
            assert_int_equal(cJSON_GetArraySize(g), 2);
            assert_true(cJSON_GetObjectItemCaseSensitive(g, "bf16")->valuedouble == 774.5);
            assert_true(cJSON_GetObjectItemCaseSensitive(g, "tf32")->valuedouble == 400);
            assert_null(cJSON_GetObjectItemCaseSensitive(g, "fp32"));
            assert_true(cJSON_GetObjectItemCaseSensitive(n, "bf16")->valuedouble == 8192);
            assert_true(cJSON_GetObjectItemCaseSensitive(n, "tf32")->valuedouble == 4096);
        }
        cJSON_Delete(j);
    }
    assert_string_equal(kb_gemm_layout_name(KB_GEMM_TN), "TN");
    assert_string_equal(kb_gemm_layout_name(KB_GEMM_NN), "NN");
    assert_string_equal(kb_gemm_layout_name(KB_GEMM_NT), "NT");
    assert_string_equal(kb_gemm_layout_name(KB_GEMM_NLAYOUTS), "?");
    assert_string_equal(kb_gemm_key_name(KB_GEMM_FP32), "fp32");
    assert_string_equal(kb_gemm_key_name(KB_GEMM_FP16), "fp16");
    assert_string_equal(kb_gemm_key_name(KB_GEMM_BF16), "bf16");
    assert_string_equal(kb_gemm_key_name(KB_GEMM_TF32), "tf32");
    assert_string_equal(kb_gemm_key_name(KB_GEMM_NONE), "none");
    /* measured after the report was opened (a run's ladders, at its first
     * case): added, and replaced rather than repeated when given again;
     * gemm_ladder_gpus says how many GPUs searched each ladder */
    memset(d.gemm_tflops, 0, sizeof d.gemm_tflops);
    kb_report *r = kb_report_open(NULL, json, kb_ops, kb_nops, &d, 0, NULL, 1, err, sizeof err);
    if (!r) fail_msg("kb_report_open: %s", err);
    cJSON *j = read_json(json);
    assert_null(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "device"), "gemm_tflops"));
    cJSON_Delete(j);
    d.gemm_tflops[KB_GEMM_FP16] = 700;
    d.gemm_n[KB_GEMM_FP16] = 3072;
    d.gemm_shared[KB_GEMM_FP16] = 4;
    kb_report_gemm(r, &d);
    j = read_json(json); /* written at once */
    assert_true(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "device"), "gemm_tflops"), "fp16")->valuedouble == 700);
    cJSON_Delete(j);
    d.gemm_tflops[KB_GEMM_FP16] = 710;
    d.gemm_tflops[KB_GEMM_BF16] = 720;
    d.gemm_shared[KB_GEMM_BF16] = 0; /* alone */
    kb_report_gemm(r, &d);
    assert_int_equal(kb_report_close(r, NULL, 0), 0);
    j = read_json(json);
    const cJSON *dev = cJSON_GetObjectItemCaseSensitive(j, "device");
    int ng = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, dev) ng += !strcmp(it->string, "gemm_tflops");
    assert_int_equal(ng, 1);
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(dev, "gemm_tflops"), *sh = cJSON_GetObjectItemCaseSensitive(dev, "gemm_ladder_gpus");
    assert_int_equal(cJSON_GetArraySize(g), 2);
    assert_true(cJSON_GetObjectItemCaseSensitive(g, "fp16")->valuedouble == 710);
    assert_true(cJSON_GetObjectItemCaseSensitive(g, "bf16")->valuedouble == 720);
    assert_true(cJSON_GetObjectItemCaseSensitive(sh, "fp16")->valuedouble == 4);
    assert_true(cJSON_GetObjectItemCaseSensitive(sh, "bf16")->valuedouble == 1);
    assert_string_equal(jstr(cJSON_GetObjectItemCaseSensitive(dev, "gemm_layout"), "fp16"), "TN");
    cJSON_Delete(j);
    unlink(json);
    rmdir(dir);
}

/* An output made of rows, with the reference for a sample of them: only those
 * rows are gathered and compared. */
static void test_compare_rows(void **state)
{
    (void)state;
    /* 5 rows of 3 fp32 values: row r holds 10r + k */
    float out[15];
    for (int r = 0; r < 5; r++)
        for (int k = 0; k < 3; k++) out[r * 3 + k] = (float)(10 * r + k);
    long rows[2] = {1, 4};
    double ref[6] = {10, 11, 12, 40, 41, 42};
    kb_buf b = {"y", KB_FP32, 15, NULL, NULL, ref};
    b.row_len = 3;
    assert_int_equal(kb_buf_checked(&b), 15);
    assert_int_equal(kb_buf_checked_rows(&b), 5); /* every row */
    b.rows = rows;
    b.nrows = 2;
    assert_int_equal(kb_buf_checked(&b), 6);
    assert_int_equal(kb_buf_checked_rows(&b), 2);
    double got[6];
    kb_buf_gather(&b, out, got);
    for (int i = 0; i < 6; i++) assert_true(got[i] == ref[i]);
    double rel, mx;
    kb_tol tol = {1e-6, 1e-6};
    assert_int_equal(kb_compare(&b, got, tol, &rel, &mx), 1);
    /* a wrong value in a row that is not sampled goes unseen ... */
    out[0] = NAN;
    out[2 * 3 + 1] = 999;
    kb_buf_gather(&b, out, got);
    assert_int_equal(kb_compare(&b, got, tol, &rel, &mx), 1);
    assert_true(rel == 0 && mx == 0);
    /* ... and one in a sampled row is found, in either */
    out[4 * 3 + 2] = 42.5f;
    kb_buf_gather(&b, out, got);
    assert_int_equal(kb_compare(&b, got, tol, &rel, &mx), 0);
    assert_true(fabs(mx - 0.5) < 1e-12);
    out[4 * 3 + 2] = 42;
    out[1 * 3 + 0] = NAN; /* an unwritten element of a sampled row */
    kb_buf_gather(&b, out, got);
    assert_int_equal(kb_compare(&b, got, (kb_tol){1e9, 1e9}, &rel, &mx), 0);
    /* without rows: every element, the NaN in row 0 included */
    kb_buf all = {"y", KB_FP32, 15, NULL, NULL, NULL};
    assert_int_equal(kb_buf_checked_rows(&all), 0); /* not row-structured */
    double full_ref[15], full_got[15];
    out[1 * 3 + 0] = 10;
    for (int i = 0; i < 15; i++) full_ref[i] = out[i];
    all.ref = full_ref;
    kb_buf_gather(&all, out, full_got);
    assert_int_equal(kb_compare(&all, full_got, (kb_tol){1e9, 1e9}, &rel, &mx), 0);
    /* 16-bit outputs convert exactly */
    uint16_t hb[6];
    double hr[2] = {0, 0}, hg[2];
    for (int i = 0; i < 6; i++) kb_store(hb, (size_t)i, 0.25 * i, KB_BF16);
    long one[1] = {2};
    kb_buf h = {"y", KB_BF16, 6, NULL, NULL, hr};
    h.row_len = 2;
    h.rows = one;
    h.nrows = 1;
    kb_buf_gather(&h, hb, hg);
    assert_true(hg[0] == 1.0 && hg[1] == 1.25);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_csv),
        cmocka_unit_test(test_na_row),
        cmocka_unit_test(test_json_report),
        cmocka_unit_test(test_report_open_errors),
        cmocka_unit_test(test_report_write_errors),
        cmocka_unit_test(test_json_append),
        cmocka_unit_test(test_stats),
        cmocka_unit_test(test_row_note),
        cmocka_unit_test(test_best_rate),
        cmocka_unit_test(test_selftest_judge),
        cmocka_unit_test(test_selftest_judge_flush),
        cmocka_unit_test(test_compare),
        cmocka_unit_test(test_worst),
        cmocka_unit_test(test_compare_rows),
        cmocka_unit_test(test_json_device_gemm),
        cmocka_unit_test(test_gemm_rungs),
        cmocka_unit_test(test_median_known),
        cmocka_unit_test(test_enough_samples),
    };
    return cmocka_run_group_tests_name("report", tests, NULL, NULL);
}
