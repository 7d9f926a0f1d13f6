/* progress.c: the sweep's place as its cases begin. On a terminal every
 * case rewrites one line; in a log (no terminal) a line of its own at most
 * every KB_PROGRESS_LOG_S seconds, so a run cut short says how far it got
 * (a check killed by a timeout wrote no count before). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cli/harness/progress.h"

/* a terminal: every case; its clock never moves */
static void test_due_on_a_terminal(void **state)
{
    (void)state;
    double last = 100.0;
    assert_int_equal(kb_progress_due(1, 100.0, &last), 1);
    assert_int_equal(kb_progress_due(1, 100.5, &last), 1);
    assert_true(last == 100.0);
}

/* a log: the first line KB_PROGRESS_LOG_S after the start, the next as long after it, none between */
static void test_due_in_a_log(void **state)
{
    (void)state;
    const double t0 = 1000.0, p = KB_PROGRESS_LOG_S;
    double last = t0;
    assert_int_equal(kb_progress_due(0, t0, &last), 0);
    assert_int_equal(kb_progress_due(0, t0 + p - 0.01, &last), 0);
    assert_true(last == t0);
    assert_int_equal(kb_progress_due(0, t0 + p + 2.0, &last), 1);
    assert_true(last == t0 + p + 2.0);
    assert_int_equal(kb_progress_due(0, t0 + 2 * p + 1.0, &last), 0); /* counted from the last line, not the start */
    assert_int_equal(kb_progress_due(0, t0 + 2 * p + 2.0, &last), 1);
}

static char *printed(int tty, int i, int n, double elapsed, const char *op, const char *label)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    kb_progress_print(f, tty, i, n, elapsed, op, label);
    fclose(f);
    return buf;
}

static void test_lines(void **state)
{
    (void)state;
    char *log = printed(0, 119, 400, 362.4, "layernorm", "pass=bwd dtype=bf16 rows=4096 cols=1024");
    assert_string_equal(log, "kbench: case 120 of 400, 362 s in: layernorm pass=bwd dtype=bf16 rows=4096 cols=1024\n");
    free(log);
    char *term = printed(1, 0, 3, 0.2, "rope", "pass=fwd");
    assert_string_equal(term, "\r\033[K[1/3 0s] rope pass=fwd"); /* rewritten in place: no newline */
    free(term);
    char label[400]; /* a label is cut at 150 characters on either */
    memset(label, 'x', sizeof label - 1);
    label[sizeof label - 1] = 0;
    char *cut = printed(0, 0, 1, 0, "mlp", label);
    assert_int_equal(strlen(cut), strlen("kbench: case 1 of 1, 0 s in: mlp ") + 150 + 1);
    free(cut);
}

/* --devices off a terminal: the cases done of all */
static void test_fleet_line(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    kb_progress_print_done(f, 93, 187, 61.6);
    fclose(f);
    assert_string_equal(buf, "kbench: 93 of 187 cases done, 62 s in\n");
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_due_on_a_terminal),
        cmocka_unit_test(test_due_in_a_log),
        cmocka_unit_test(test_lines),
        cmocka_unit_test(test_fleet_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
