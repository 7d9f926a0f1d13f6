/* A task on a thread of its own while the caller goes on (bg.h,
 * kb_bg_*): the CPU reference of a case runs beside the verify runs and the
 * timing of its implementations. Its OpenMP team is the caller's, one core
 * short: the caller's thread launches and times the kernels. */
#include "bg.h"
#include "../core/clock.h"

#include <stdlib.h>

int kb_bg_team(int max_threads) { return max_threads > 1 ? max_threads - 1 : 1; }

static void *bg_main(void *arg)
{
    kb_bg *b = arg;
    omp_set_num_threads(b->team); /* this thread's teams only */
    const double t = kb_now_s();
    b->fn(b->arg);
    b->run_s = kb_now_s() - t;
    __atomic_store_n(&b->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

int kb_bg_start(kb_bg *b, void (*fn)(void *), void *arg)
{
    b->fn = fn;
    b->arg = arg;
    b->run_s = 0;
    b->done = 0;
    /* the caller's team (a --devices worker's share of the cores): a new
     * thread would start from the process's default */
    b->team = kb_bg_team(omp_get_max_threads());
    b->started = pthread_create(&b->th, NULL, bg_main, b) == 0;
    if (b->started) return 0;
    const double t = kb_now_s(); /* no thread: run it here and now */
    fn(arg);
    b->run_s = kb_now_s() - t;
    b->done = 1;
    return 1;
}

int kb_bg_done(const kb_bg *b) { return __atomic_load_n(&b->done, __ATOMIC_ACQUIRE); }

double kb_bg_join(kb_bg *b)
{
    if (!b->started) return 0;
    const double t = kb_now_s();
    pthread_join(b->th, NULL);
    b->started = 0;
    return kb_now_s() - t;
}

