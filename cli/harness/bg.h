/* bg.c: a task on a thread of its own while the caller goes on (a case's
 * CPU reference beside its timing). */
#ifndef KB_BG_H
#define KB_BG_H

#include <pthread.h>

#ifdef _OPENMP /* the fuzz builds have no OpenMP: one thread each */
#include <omp.h>
#else
static inline int omp_get_max_threads(void) { return 1; }
static inline void omp_set_num_threads(int n) { (void)n; }
#endif

/* fn(arg) on a thread of its own, with an OpenMP team of kb_bg_team(the
 * caller's) threads, while the caller goes on; kb_bg_join waits for it and
 * says how long the caller waited. Without a thread (pthread_create failed)
 * kb_bg_start runs fn at once and returns 1. */
typedef struct {
    pthread_t th;
    int started;
    void (*fn)(void *);
    void *arg;
    double run_s; /* how long fn ran, once joined */
    int done;     /* fn has returned (__atomic loads and stores) */
    int team;     /* its OpenMP threads: kb_bg_team(the caller's) */
} kb_bg;
int kb_bg_start(kb_bg *b, void (*fn)(void *), void *arg);
int kb_bg_done(const kb_bg *b); /* fn has returned: kb_bg_join will not wait */
double kb_bg_join(kb_bg *b);
int kb_bg_team(int max_threads); /* one core left to the caller: max - 1, at least 1 */

#endif
