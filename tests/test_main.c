/* main.c: kb_main, the command line as a function. It returns its exit code
 * on every path (help, usage errors, dry runs, compare) instead of exiting,
 * and runs any number of times in one process (the fuzzer's way, in
 * tests/fuzz/fuzz_cmdline.c). No GPU is used: dry runs, help, compare. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../cli/core/errors.h"
#include "../cli/main.h"

#define BASE "tests/data/compare/base.json"
#define NEW "tests/data/compare/new.json"

/* kb_main on "kbench" and the words (NULL-terminated), each word its own heap
 * copy, freed after the call (as the fuzzer does: a pointer kept into them is
 * a use after free under ASan); stdout to /dev/null. */
static int run(const char *const *words)
{
    char *argv[32], *copy[32];
    int argc = 0;
    argv[argc++] = strdup("kbench");
    for (int i = 0; words[i]; i++) argv[argc++] = strdup(words[i]);
    argv[argc] = NULL;
    memcpy(copy, argv, sizeof argv); /* getopt_long permutes argv */
    fflush(stdout);
    int out = dup(STDOUT_FILENO), null = open("/dev/null", O_WRONLY);
    assert_true(out >= 0 && null >= 0);
    dup2(null, STDOUT_FILENO);
    int rc = kb_main(argc, argv);
    fflush(stdout);
    dup2(out, STDOUT_FILENO);
    close(out);
    close(null);
    for (int i = 0; i < argc; i++) free(copy[i]);
    return rc;
}

#define RUN(...) run((const char *const[]){__VA_ARGS__, NULL})

/* Help used to exit(0) from the flag parser: the test would have ended here. */
static void test_help_returns(void **state)
{
    (void)state;
    assert_int_equal(RUN("--help"), KB_EXIT_OK);
    assert_int_equal(RUN("rope", "--help"), KB_EXIT_OK);
    assert_int_equal(RUN("mlp", "--tokens", "16", "--help", "--no-such-flag"), KB_EXIT_OK); /* help when reached */
    assert_int_equal(RUN("layernorm", "--no-such-flag", "--help"), KB_EXIT_USAGE);
    assert_int_equal(RUN("help", "rmsnorm"), KB_EXIT_OK);
    assert_int_equal(RUN("help", "sweep"), KB_EXIT_OK);
    assert_int_equal(RUN("check", "--help"), KB_EXIT_OK);
    assert_int_equal(RUN("list", "rope", "--help"), KB_EXIT_OK);
    assert_int_equal(RUN("compare", "--help"), KB_EXIT_OK);
    assert_int_equal(RUN("device", "--help"), KB_EXIT_OK);
    assert_int_equal(RUN("--version"), KB_EXIT_OK);
}

/* The same answers however often and in whatever order it runs. */
static void test_many_calls(void **state)
{
    (void)state;
    for (int k = 0; k < 3; k++) {
        assert_int_equal(RUN("rope", "--seq", "16,32", "--pass", "fwd,bwd", "--dry-run"), KB_EXIT_OK);
        assert_int_equal(RUN("rope", "--seq", "0x10", "--dry-run"), KB_EXIT_USAGE);
        assert_int_equal(RUN("rope", "--b", "4", "--dry-run"), KB_EXIT_USAGE);
        assert_int_equal(RUN("sweep", "configs/ci.json", "--set", "rows=1024", "--dry-run"), KB_EXIT_OK);
        assert_int_equal(RUN("sweep", "--dry-run", "--quiet"), KB_EXIT_OK);
        assert_int_equal(RUN("check", "rope", "--dry-run"), KB_EXIT_OK);
        assert_int_equal(RUN("check", "rope", "nosuch", "--dry-run"), KB_EXIT_USAGE);
        assert_int_equal(RUN("compare", BASE, BASE), KB_EXIT_OK);
        assert_int_equal(RUN("compare", BASE, NEW, "--quiet"), KB_EXIT_REGRESSION);
        assert_int_equal(RUN("compare", BASE, NEW, "--impl", ","), KB_EXIT_USAGE);
        assert_int_equal(RUN("list"), KB_EXIT_OK);
        assert_int_equal(RUN("device", "extra"), KB_EXIT_USAGE);
        assert_int_equal(RUN("nosuch"), KB_EXIT_USAGE);
        assert_int_equal(run((const char *const[]){NULL}), KB_EXIT_USAGE);
    }
}

/* getopt's state: a parse that stops inside "-hx" (help at -h) leaves glibc's
 * getopt pointing at the x; compare's parse starts at optind = 1, which does
 * not reset that, and would read on from there (a word already freed) and
 * refuse an option -x. kb_main resets getopt in full on entry and exit. */
static void test_getopt_state_reset(void **state)
{
    (void)state;
    assert_int_equal(RUN("rope", "-hx"), KB_EXIT_OK);
    assert_int_equal(RUN("compare", BASE, BASE), KB_EXIT_OK);
    assert_int_equal(RUN("compare", "-qx", BASE, BASE), KB_EXIT_USAGE); /* stops at q, inside the word */
    assert_int_equal(RUN("compare", BASE, BASE), KB_EXIT_OK);
    assert_int_equal(RUN("rope", "-x", "-h"), KB_EXIT_USAGE);
    assert_int_equal(RUN("rope", "--dry-run"), KB_EXIT_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_help_returns),
        cmocka_unit_test(test_many_calls),
        cmocka_unit_test(test_getopt_state_reset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
