/* bg.c: a task on a thread of its own while the caller goes on (a case's
 * CPU reference beside its timing), and the host's cores shared by the
 * references of --devices workers. */
#ifndef KB_BG_H
#define KB_BG_H
#include "kbench.h"

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
/* The host's cores for the CPU references of --devices workers, in memory
 * the workers share (mapped before the fork): each owns a team of share
 * threads; the shares of the workers with no reference running are spare,
 * and a reference that starts takes them all besides its own (its worker's
 * GPU gets the rows' ahead of the others', whose references finished).
 * One whose share was lent runs on its share all the same: the cores are
 * oversubscribed until the borrower gives them back, twice at most. */
typedef struct kb_cores kb_cores;
kb_cores *kb_cores_new(int workers, int share); /* NULL: none (mmap failed) */
void kb_cores_free(kb_cores *p);
int kb_cores_take(kb_cores *p, int share); /* the team for a reference about to run */
void kb_cores_give(kb_cores *p, int team);  /* its team, once it has run */
int kb_cores_spare(const kb_cores *p);      /* for tests: the spare threads now */
/* A worker that dies while its reference runs would keep its team out of
 * the pool for the rest of the sweep: each worker notes what it holds in
 * its slot (kb_cores_join, once, after the fork), and the parent gives a
 * dead worker's back (kb_cores_reclaim: the threads given back, 0: none). */
void kb_cores_join(kb_cores *p, int slot);
int kb_cores_reclaim(kb_cores *p, int slot);

/* One process at a time (--devices: the workers open their GPUs in turn,
 * devices.c says why): a token in a pipe made before the fork. kb_gate_enter
 * waits for it, at most wait_s (a holder that died never gives it back: then
 * it goes on without); 1: taken, to be given back by kb_gate_leave. NULL: no
 * gate, nothing waited for. */
typedef struct kb_gate kb_gate;
kb_gate *kb_gate_new(double wait_s); /* NULL: none (no pipe) */
void kb_gate_free(kb_gate *g);
int kb_gate_enter(kb_gate *g);
void kb_gate_leave(kb_gate *g, int taken);

#endif
