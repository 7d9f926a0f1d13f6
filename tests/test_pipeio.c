/* harness/pipeio.c: whole reads and writes over a pipe, as the helper
 * process's messages use them (isolate.h): a message cut in pieces is read
 * whole, the writer gone is an end, and a reader past its deadline gives up
 * saying so. No GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../cli/core/clock.h"
#include "../cli/harness/pipeio.h"

static void test_whole_message(void **unused)
{
    (void)unused;
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t w = fork();
    assert_true(w >= 0);
    if (w == 0) { /* 1 MiB in pieces of 1000 bytes, slower than the reader */
        static char big[1 << 20];
        for (size_t i = 0; i < sizeof big; i++) big[i] = (char)(i * 7);
        close(p[0]);
        for (size_t o = 0; o < sizeof big; o += 1000)
            if (kb_write_all(p[1], big + o, o + 1000 <= sizeof big ? 1000 : sizeof big - o)) _exit(1);
        _exit(0);
    }
    close(p[1]);
    static char got[1 << 20];
    int late = 0;
    assert_int_equal(kb_read_all(p[0], got, sizeof got, kb_now_s() + 30, &late), 0);
    assert_int_equal(late, 0);
    for (size_t i = 0; i < sizeof got; i++)
        if (got[i] != (char)(i * 7)) fail_msg("byte %zu differs", i);
    char more;
    assert_int_equal(kb_read_all(p[0], &more, 1, 0, NULL), -1); /* the writer gone: the end */
    int st = 0;
    assert_int_equal(waitpid(w, &st, 0), w);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    close(p[0]);
}

static void test_deadline(void **unused)
{
    (void)unused;
    int p[2];
    assert_int_equal(pipe(p), 0);
    assert_int_equal(kb_write_all(p[1], "abc", 3), 0);
    char buf[8];
    int late = 0;
    const double t0 = kb_now_s();
    assert_int_equal(kb_read_all(p[0], buf, 8, t0 + 0.2, &late), -1); /* 3 of 8 bytes, then nothing: late */
    assert_int_equal(late, 1);
    assert_true(kb_now_s() - t0 >= 0.19 && kb_now_s() - t0 < 5);
    close(p[0]);
    signal(SIGPIPE, SIG_IGN);
    assert_int_equal(kb_write_all(p[1], "x", 1), -1); /* the reader gone */
    close(p[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_whole_message),
        cmocka_unit_test(test_deadline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
