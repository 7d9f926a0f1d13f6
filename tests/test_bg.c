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
#include "../cli/fleet/cores.h"
#include "../cli/fleet/gate.h"
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

/* kb_cores: the spare shares of the --devices workers' references, in
 * memory the forked workers share */
static void test_cores(void **state)
{
    (void)state;
    kb_cores *p = kb_cores_new(4, 15);
    assert_non_null(p);
    assert_int_equal(kb_cores_spare(p), 60);
    const int a = kb_cores_take(p, 15); /* alone: every share */
    assert_int_equal(a, 60);
    assert_int_equal(kb_cores_spare(p), 0);
    const int b = kb_cores_take(p, 15); /* its own share, lent out: it runs on it all the same */
    assert_int_equal(b, 15);
    assert_int_equal(kb_cores_spare(p), -15);
    kb_cores_give(p, a);
    assert_int_equal(kb_cores_spare(p), 45);
    const int c = kb_cores_take(p, 15); /* the two idle shares besides its own */
    assert_int_equal(c, 45);
    kb_cores_give(p, b);
    kb_cores_give(p, c);
    assert_int_equal(kb_cores_spare(p), 60); /* all given back */
    /* across processes: a forked worker's take is seen here */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) _exit(kb_cores_take(p, 15) == 60 ? 0 : 1);
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_int_equal(kb_cores_spare(p), 0);
    /* many threads taking and giving at once: nothing lost */
    kb_cores_give(p, 60);
#pragma omp parallel for num_threads(8)
    for (int i = 0; i < 8000; i++) kb_cores_give(p, kb_cores_take(p, 15));
    assert_int_equal(kb_cores_spare(p), 60);
    kb_cores_free(p);
    assert_int_equal(kb_cores_take(NULL, 7), 7); /* no pool: its own share */
    kb_cores_give(NULL, 7);
}

/* A worker that dies while its reference holds the pool's cores: the parent
 * gives them back (kb_cores_reclaim), once; one that gave them back itself,
 * or never joined, leaves nothing to reclaim. */
static void test_cores_reclaim(void **state)
{
    (void)state;
    kb_cores *p = kb_cores_new(4, 15);
    assert_non_null(p);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        kb_cores_join(p, 2);
        _exit(kb_cores_take(p, 15) == 60 ? 0 : 1); /* dies holding every core */
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_int_equal(kb_cores_spare(p), 0); /* lost, until reclaimed */
    assert_int_equal(kb_cores_reclaim(p, 1), 0); /* another slot: nothing held */
    assert_int_equal(kb_cores_reclaim(p, 2), 60);
    assert_int_equal(kb_cores_spare(p), 60);
    assert_int_equal(kb_cores_reclaim(p, 2), 0); /* once */
    assert_int_equal(kb_cores_spare(p), 60);
    /* held while another worker's reference ran: only its own share lent */
    const int mine = kb_cores_take(p, 15); /* this process, no slot: not noted */
    assert_int_equal(mine, 60);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        kb_cores_join(p, 3);
        _exit(kb_cores_take(p, 15) == 15 ? 0 : 1); /* its own share, lent out: dies with it */
    }
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_int_equal(kb_cores_spare(p), -15);
    assert_int_equal(kb_cores_reclaim(p, 0), 0); /* the parent's take noted nowhere */
    assert_int_equal(kb_cores_reclaim(p, 3), 15);
    kb_cores_give(p, mine);
    assert_int_equal(kb_cores_spare(p), 60); /* whole again */
    /* a worker that gave its team back: nothing to reclaim */
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        kb_cores_join(p, 1);
        kb_cores_give(p, kb_cores_take(p, 15));
        _exit(0);
    }
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_int_equal(kb_cores_reclaim(p, 1), 0);
    assert_int_equal(kb_cores_spare(p), 60);
    assert_int_equal(kb_cores_reclaim(NULL, 1), 0); /* no pool */
    assert_int_equal(kb_cores_reclaim(p, -1), 0);   /* no such slot */
    assert_int_equal(kb_cores_reclaim(p, 1 << 20), 0);
    kb_cores_free(p);
}

/* The gate: processes forked after it take turns (never two inside at
 * once, each gets its turn), and one that dies holding the token holds the
 * others up only for the gate's wait. */
static void test_gate(void **state)
{
    (void)state;
    kb_gate *g = kb_gate_new(10);
    assert_non_null(g);
    int *sh = mmap(NULL, 3 * sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(sh != MAP_FAILED);
    sh[0] = sh[1] = sh[2] = 0; /* inside now, the most inside at once, turns taken */
    enum { N = 6 };
    pid_t pid[N];
    for (int i = 0; i < N; i++) {
        pid[i] = fork();
        assert_true(pid[i] >= 0);
        if (pid[i] == 0) {
            const int t = kb_gate_enter(g);
            const int in = __atomic_add_fetch(&sh[0], 1, __ATOMIC_SEQ_CST);
            int m = __atomic_load_n(&sh[1], __ATOMIC_SEQ_CST);
            while (in > m && !__atomic_compare_exchange_n(&sh[1], &m, in, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {}
            __atomic_add_fetch(&sh[2], t, __ATOMIC_SEQ_CST);
            usleep(20000);
            __atomic_sub_fetch(&sh[0], 1, __ATOMIC_SEQ_CST);
            kb_gate_leave(g, t);
            _exit(0);
        }
    }
    for (int i = 0; i < N; i++) {
        int st = 0;
        assert_int_equal(waitpid(pid[i], &st, 0), pid[i]);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    assert_int_equal(sh[1], 1); /* one at a time */
    assert_int_equal(sh[2], N); /* every one had its turn, none ran out of wait */
    /* a holder that dies: the next waits out the gate's wait, then goes on */
    kb_gate_free(g);
    g = kb_gate_new(0.3);
    assert_non_null(g);
    pid_t dies = fork();
    assert_true(dies >= 0);
    if (dies == 0) _exit(kb_gate_enter(g) ? 0 : 1); /* never given back */
    int st = 0;
    assert_int_equal(waitpid(dies, &st, 0), dies);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    const double t0 = kb_now_s();
    assert_int_equal(kb_gate_enter(g), 0);
    const double waited = kb_now_s() - t0;
    assert_true(waited >= 0.29 && waited < 2);
    kb_gate_leave(g, 0); /* not taken: nothing given back */
    /* its turn given back, the next takes it at once */
    kb_gate_free(g);
    g = kb_gate_new(5);
    assert_int_equal(kb_gate_enter(g), 1);
    kb_gate_leave(g, 1);
    const double t1 = kb_now_s();
    assert_int_equal(kb_gate_enter(g), 1);
    assert_true(kb_now_s() - t1 < 0.5);
    kb_gate_leave(g, 1);
    kb_gate_free(g);
    assert_int_equal(kb_gate_enter(NULL), 0); /* no gate: nothing waited for */
    kb_gate_leave(NULL, 1);
    munmap(sh, 3 * sizeof *sh);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runs_beside_and_joins),
        cmocka_unit_test(test_callers_team),
        cmocka_unit_test(test_team),
        cmocka_unit_test(test_cores),
        cmocka_unit_test(test_cores_reclaim),
        cmocka_unit_test(test_gate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
