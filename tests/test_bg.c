/* bg.c: a task on its own thread while the caller goes on (the CPU
 * reference beside the GPU's timing): it runs once, kb_bg_join waits for it,
 * its OpenMP teams leave one core to the caller. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <omp.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../cli/core/clock.h"
#include "../cli/harness/bg.h"

typedef struct {
    atomic_int runs, done;
    int team;         /* omp_get_max_threads() inside the task */
    int team_in_par;  /* the size of a parallel region inside it */
    atomic_int go;    /* the caller lets the task finish */
} task;

static void work(void *arg)
{
    task *t = arg;
    atomic_fetch_add(&t->runs, 1);
    t->team = omp_get_max_threads();
#pragma omp parallel
    {
#pragma omp single
        t->team_in_par = omp_get_num_threads();
    }
    while (!atomic_load(&t->go)) { /* held until the caller has checked it is still running */
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    struct timespec ts = {0, 20000000}; /* 20 ms of "reference" after the release */
    nanosleep(&ts, NULL);
    atomic_store(&t->done, 1);
}

static void test_runs_beside_and_joins(void **state)
{
    (void)state;
    task t = {0};
    kb_bg b;
    const int main_team = omp_get_max_threads();
    assert_int_equal(kb_bg_start(&b, work, &t), 0);
    /* the caller goes on while the task runs */
    assert_int_equal(atomic_load(&t.done), 0);
    assert_int_equal(kb_bg_done(&b), 0);
    atomic_store(&t.go, 1);
    const double waited = kb_bg_join(&b);
    assert_int_equal(atomic_load(&t.done), 1); /* joined: finished */
    assert_int_equal(atomic_load(&t.runs), 1);
    assert_int_equal(kb_bg_done(&b), 1);
    assert_true(b.run_s >= 0.02);
    assert_true(waited > 0 && waited <= b.run_s + 1.0);
    assert_int_equal(t.team, kb_bg_team(main_team));
    assert_int_equal(t.team_in_par, kb_bg_team(main_team));
    assert_int_equal(omp_get_max_threads(), main_team); /* the caller's own teams untouched */
    assert_true(kb_bg_join(&b) == 0);                   /* a second join: nothing to wait for */
}

/* the caller's team, not the process's default: a --devices worker sets
 * its share of the cores in its own thread */
static void test_callers_team(void **state)
{
    (void)state;
    const int was = omp_get_max_threads();
    omp_set_num_threads(3);
    task t = {0};
    atomic_store(&t.go, 1);
    kb_bg b;
    assert_int_equal(kb_bg_start(&b, work, &t), 0);
    kb_bg_join(&b);
    omp_set_num_threads(was);
    assert_int_equal(t.team, 2);
    assert_int_equal(t.team_in_par, 2);
}

static void test_team(void **state)
{
    (void)state;
    assert_int_equal(kb_bg_team(32), 31);
    assert_int_equal(kb_bg_team(2), 1);
    assert_int_equal(kb_bg_team(1), 1);
    assert_int_equal(kb_bg_team(0), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runs_beside_and_joins),
        cmocka_unit_test(test_callers_team),
        cmocka_unit_test(test_team),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
