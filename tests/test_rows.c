/* rows.c: the cases whose rows wait for their references while the GPU goes
 * on. The references run one after another in case order whatever order
 * their threads start in; the oldest case's rows are written only once its
 * reference is done (a non-blocking drain never waits), in case order; a
 * case is said done once, after its rows, and not when it was cut short; a
 * case whose implementations are still running keeps its record. A
 * --devices worker says a case done right after its rows, which are in the
 * JSON on disk by then (each row is appended as it is written). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <cjson/cJSON.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "have_gpu.h"
#include "../cli/core/clock.h"
#include "../cli/core/config.h"
#include "../cli/core/errors.h"
#include "../cli/core/hostmem.h"
#include "../cli/core/op.h"
#include "../cli/core/params.h"
#include "../cli/core/settings.h"
#include "../cli/harness/bg.h"
#include "../cli/harness/hooks.h"
#include "../cli/harness/rows.h"
#include "../cli/report/report.h"
#include "../cli/report/row.h"
#include "../include/kb_dtype.h"

static kb_op fake;      /* a real op's table, its reference replaced */
static atomic_int seen; /* references entered so far */
static int order[16];   /* the case index of each reference, in the order they ran */
static double start_s[16], end_s[16];

static void sleep_ms(int ms)
{
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

static void slow_ref(const kb_case *c, kb_state *st)
{
    (void)st;
    const int k = atomic_fetch_add(&seen, 1);
    order[k] = c->index;
    start_s[k] = kb_now_s();
    sleep_ms(c->index == 0 ? 150 : 10); /* the first case's reference is the long one */
    end_s[k] = kb_now_s();
}

static kb_case *load_cases(kb_plan *p, int n)
{
    memset(p, 0, sizeof *p);
    kb_opts_default(&p->opts);
    char err[KB_ERRLEN] = "";
    if (kb_config_load("configs/ci.json", p, err, sizeof err)) fail_msg("configs/ci.json: %s", err);
    kb_plan_seed(p);
    assert_true(p->ncases >= n);
    fake = *p->cases[0].op;
    fake.reference = slow_ref;
    fake.teardown = NULL;
    for (int i = 0; i < n; i++) {
        p->cases[i].op = &fake;
        p->cases[i].index = i;
    }
    atomic_store(&seen, 0);
    return p->cases;
}

/* a record of case c with two n/a rows, its reference started */
static inflight *record(kb_case *c, long seq, long *done_seq)
{
    inflight *f = calloc(1, sizeof *f);
    f->c = c;
    f->first_row = 1;
    f->pend = calloc(3, sizeof *f->pend);
    for (int i = 0; i < 2; i++) {
        kb_row *r = &f->pend[i].row;
        r->c = c;
        r->impl = i ? "opt" : "naive";
        r->verified = KB_V_NA;
        f->pend[i].na = 1;
    }
    f->npend = 2;
    f->complete = 1;
    f->rt = (ref_task){&fake, c, &f->st, seq, done_seq, 0};
    assert_int_equal(kb_bg_start(&f->bg, ref_main, &f->rt), 0);
    f->bg_live = 1;
    return f;
}

static void test_ref_order(void **state)
{
    (void)state;
    kb_plan p;
    kb_case *cs = load_cases(&p, 4);
    long done = 0;
    inflight *f[4];
    for (int i = 3; i >= 0; i--) f[i] = record(&cs[i], i + 1, &done); /* started last first */
    for (int i = 0; i < 4; i++) {
        kb_bg_join(&f[i]->bg);
        assert_true(f[i]->rt.queued_s >= 0);
    }
    assert_int_equal(atomic_load(&seen), 4);
    assert_int_equal(done, 4);
    for (int k = 0; k < 4; k++) {
        if (order[k] != k) fail_msg("reference %d ran %dth", order[k], k);
        if (k && start_s[k] < end_s[k - 1]) fail_msg("reference %d began before %d ended", k, k - 1);
    }
    assert_true(f[1]->rt.queued_s > 0.1); /* behind the first one's 150 ms */
    for (int i = 0; i < 4; i++) {
        free(f[i]->pend);
        free(f[i]);
    }
    kb_cases_free(p.cases, p.ncases);
}

static void count_done(void *ctx) { (*(int *)ctx)++; }
static int next_none(void *ctx) { (void)ctx; return -1; }

/* a report of the fake op into dir (made here)/file */
static kb_report *worker_report(char *dir, const char *file, char *json, size_t n)
{
    static const kb_op *ops[] = {&fake};
    assert_non_null(mkdtemp(dir));
    snprintf(json, n, "%s/%s", dir, file);
    char err[KB_ERRLEN] = "";
    kb_report *rep = kb_report_open(NULL, json, ops, 1, NULL, 0, NULL, 1, err, sizeof err);
    if (!rep) fail_msg("kb_report_open: %s", err);
    return rep;
}

static void test_drain(void **state)
{
    (void)state;
    kb_plan p;
    kb_case *cs = load_cases(&p, 3);
    char dir[] = "/tmp/kbench-rows-XXXXXX", json[300], err[KB_ERRLEN] = "";
    kb_report *rep = worker_report(dir, "out.json", json, sizeof json);
    int exit_code = 0, nrows = 0, lost = 0, dones = 0;
    tally fin = {0, 0, 0, &exit_code};
    const kb_run_hooks hooks = {.ctx = &dones, .next_case = next_none, .case_done = count_done, .worker = -1, .workers = 1};
    kb_run_info info = {.name = "t", .hooks = &hooks};
    row_sink sink = {rep, &fin, &nrows, &lost, 0, &info};
    long done = 0;
    inflight *head = record(&cs[0], 1, &done);
    head->next = record(&cs[1], 2, &done);
    head->next->next = record(&cs[2], 3, &done);
    head->next->next->complete = 0; /* its implementations still running */

    assert_int_equal(drain_head(&head, 0, &sink), 0); /* the first reference takes 150 ms: nothing waits */
    assert_int_equal(nrows, 0);
    assert_int_equal(dones, 0);
    while (head && drain_head(&head, 1, &sink)) {}
    assert_non_null(head); /* the incomplete one stays, its rows so far written */
    assert_int_equal(head->c->index, 2);
    assert_int_equal(nrows, 6);
    assert_int_equal(dones, 2); /* each said done once, as its rows were written */
    head->pend[2] = head->pend[1]; /* one more implementation ran */
    head->pend[2].row.impl = "bulk";
    head->npend = 3;
    head->complete = 1;
    head->aborted = 1; /* the sweep stopped in it: its rows written, not said done */
    assert_int_equal(drain_head(&head, 1, &sink), 1);
    assert_null(head);
    assert_int_equal(nrows, 7);
    assert_int_equal(dones, 2);
    assert_int_equal(fin.nna, 7);
    int counted = 0; /* each implementation's own count (kbench check's lines) adds up to the whole */
    for (int k = 0; k < fin.nper; k++) {
        assert_non_null(fin.per[k].impl);
        assert_ptr_equal(fin.per[k].op, &fake);
        counted += fin.per[k].pass + fin.per[k].fail + fin.per[k].na;
    }
    assert_true(fin.nper >= 1);
    assert_int_equal(counted, fin.npass + fin.nfail + fin.nna);
    assert_int_equal(kb_report_close(rep, err, sizeof err), 0);

    FILE *fp = fopen(json, "r"); /* the rows in case order */
    char *text = calloc(1, 1 << 20);
    fread(text, 1, (1 << 20) - 1, fp);
    fclose(fp);
    cJSON *j = cJSON_Parse(text);
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(j, "results");
    assert_int_equal(cJSON_GetArraySize(res), 7);
    const int want[] = {0, 0, 1, 1, 2, 2, 2};
    for (int i = 0; i < 7; i++) {
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(res, i), "case");
        if (!cJSON_IsNumber(c) || c->valueint != want[i]) fail_msg("row %d: case %d, want %d", i, c ? c->valueint : -1, want[i]);
    }
    cJSON_Delete(j);
    free(text);
    unlink(json);
    rmdir(dir);
    kb_cases_free(p.cases, p.ncases);
}

/* a file's whole text (NULL without the file) */
static char *read_all(const char *path)
{
    FILE *fp = fopen(path, "r");
    if (!fp) return NULL;
    fseek(fp, 0, SEEK_END);
    const long n = ftell(fp);
    rewind(fp);
    char *text = calloc(1, (size_t)n + 1);
    assert_int_equal(fread(text, 1, (size_t)n, fp), (size_t)n);
    fclose(fp);
    return text;
}

/* the JSON file's rows: their case indices, space-separated ("" without the file) */
static void json_cases(const char *path, char *out, size_t n)
{
    out[0] = 0;
    char *text = read_all(path);
    if (!text) return;
    cJSON *j = cJSON_Parse(text);
    const cJSON *r;
    size_t len = 0;
    cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(j, "results"))
    {
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(r, "case");
        len += (size_t)snprintf(out + len, n - len, "%s%d", len ? " " : "", cJSON_IsNumber(c) ? c->valueint : -1);
        assert_true(len < n);
    }
    cJSON_Delete(j);
    free(text);
}

/* what a worker's parent sees when it is told a case is done: the part's
 * rows then on disk */
typedef struct {
    const char *json;
    int dones;
    char seen[4][1 << 16];
} watcher;
static void seen_done(void *ctx)
{
    watcher *w = ctx;
    if (w->dones < 4) json_cases(w->json, w->seen[w->dones], sizeof w->seen[0]);
    w->dones++;
}

/* a worker (case_done): each case said done at once after its rows, which
 * are in the part's JSON on disk by then, however many rows came before
 * (10000 here); a case skipped (--impl) is said done with its mark on disk */
static void test_done_on_disk(void **state)
{
    (void)state;
    kb_plan p;
    kb_case *cs = load_cases(&p, 3);
    char dir[] = "/tmp/kbench-rows-XXXXXX", json[300], err[KB_ERRLEN] = "";
    kb_report *rep = worker_report(dir, "out.gpu0.json", json, sizeof json);
    int exit_code = 0, nrows = 0, lost = 0;
    static watcher w;
    memset(&w, 0, sizeof w);
    w.json = json;
    tally fin = {0, 0, 0, &exit_code};
    const kb_run_hooks hooks = {.ctx = &w, .next_case = next_none, .case_done = seen_done, .worker = 0, .workers = 2};
    kb_run_info info = {.name = "t", .hooks = &hooks};
    row_sink sink = {rep, &fin, &nrows, &lost, 0, &info};
    kb_row filler = {.c = &cs[0], .impl = "naive", .verified = KB_V_NA};
    for (int k = 0; k < 10000; k++) assert_int_equal(kb_report_row(rep, &filler), 0);
    long done = 0;
    inflight *head = record(&cs[1], 1, &done);
    head->next = record(&cs[2], 2, &done);
    while (head && drain_head(&head, 1, &sink)) {}
    assert_int_equal(nrows, 4);
    assert_int_equal(w.dones, 2);
    const char *tail1 = " 0 1 1", *tail2 = " 0 1 1 2 2";
    if (strlen(w.seen[0]) < strlen(tail1) || strcmp(w.seen[0] + strlen(w.seen[0]) - strlen(tail1), tail1))
        fail_msg("case 1 said done before its rows were on disk");
    if (strlen(w.seen[1]) < strlen(tail2) || strcmp(w.seen[1] + strlen(w.seen[1]) - strlen(tail2), tail2))
        fail_msg("case 2 said done before its rows were on disk");

    kb_report_skip(rep, 7);
    rows_case_done(&sink);
    assert_int_equal(w.dones, 3);
    char *text = read_all(json);
    assert_non_null(text);
    assert_non_null(strstr(text, "\"skipped_cases\""));
    free(text);
    assert_int_equal(kb_report_close(rep, err, sizeof err), 0);
    unlink(json);
    rmdir(dir);
    kb_cases_free(p.cases, p.ncases);
}

/* no more than KB_MAX_INFLIGHT wait, and none without a device to ask */
static void test_may_wait(void **state)
{
    (void)state;
    inflight f[KB_MAX_INFLIGHT + 1];
    memset(f, 0, sizeof f);
    for (int i = 0; i < KB_MAX_INFLIGHT; i++) f[i].next = &f[i + 1];
    const size_t big = (size_t)1 << 40;
    assert_int_equal(may_wait(&f[0], 0, big), 0); /* KB_MAX_INFLIGHT + 1 */
    f[KB_MAX_INFLIGHT - 1].next = NULL;
    kb_buf in = {"x", KB_FP32, 1000, NULL, NULL, NULL};
    f[0].st.nin = 1;
    f[0].st.in[0] = in;
    assert_int_equal(may_wait(&f[0], 0, 100), 0); /* 4000 bytes of inputs over a budget of 100 */
    assert_int_equal(may_wait(&f[0], 0, big), have_gpu());
    if (have_gpu()) assert_int_equal(may_wait(&f[0], big, big), 0); /* no room for a 1 TiB case beside them */
}

/* kb_host_recycle: a large block freed and taken again comes back with its
 * pages still resident (mincore), the same memory, where glibc would
 * otherwise unmap it and map new memory (into which device-to-host copies
 * are slow: hostmem.c). */
static double resident_share(const char *p, size_t n)
{
    const size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    const uintptr_t s = (uintptr_t)p & ~(uintptr_t)(pg - 1);
    const size_t len = n + ((uintptr_t)p - s), np = (len + pg - 1) / pg;
    unsigned char *vec = malloc(np);
    assert_non_null(vec);
    assert_int_equal(mincore((void *)s, len, vec), 0);
    size_t in = 0;
    for (size_t i = 0; i < np; i++) in += vec[i] & 1;
    free(vec);
    return (double)in / (double)np;
}

static void test_host_recycle(void **state)
{
    (void)state;
#if defined(__SANITIZE_ADDRESS__)
    skip(); /* ASan's allocator keeps blocks its own way */
#endif
    const size_t n = (size_t)96 << 20; /* over glibc's largest threshold for mapping a block on its own (32 MiB) */
    kb_host_recycle();
    char *a = malloc(n);
    assert_non_null(a);
    memset(a, 1, n);
    assert_true(resident_share(a, n) > 0.9); /* touched (and the memset kept) */
    free(a);
    char *b = malloc(n);
    assert_non_null(b);
    assert_true(resident_share(b, n) > 0.9);
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ref_order),
        cmocka_unit_test(test_drain),
        cmocka_unit_test(test_done_on_disk),
        cmocka_unit_test(test_may_wait),
        cmocka_unit_test(test_host_recycle),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
