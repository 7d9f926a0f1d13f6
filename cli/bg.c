/* A task on a thread of its own while the caller goes on (bg.h,
 * kb_bg_*): the CPU reference of a case runs beside the verify runs and the
 * timing of its implementations. Its OpenMP team is the caller's, one core
 * short: the caller's thread launches and times the kernels. */
#include "bg.h"
#include "shard.h" /* KB_MAX_DEVICES */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

double kb_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

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

struct kb_cores {
    int spare; /* __atomic: the shares of the workers with no reference running (negative: lent out) */
    int held[KB_MAX_DEVICES]; /* __atomic: each worker's team while its reference runs, else 0 */
};

static int cores_slot = -1; /* this process's worker (kb_cores_join); -1: none, nothing held is noted */

kb_cores *kb_cores_new(int workers, int share)
{
    kb_cores *p = mmap(NULL, sizeof *p, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    p->spare = workers * share;
    return p;
}

void kb_cores_free(kb_cores *p)
{
    if (p) munmap(p, sizeof *p);
}

void kb_cores_join(kb_cores *p, int slot) { cores_slot = p && slot >= 0 && slot < KB_MAX_DEVICES ? slot : -1; }

int kb_cores_take(kb_cores *p, int share)
{
    if (!p) return share;
    int s = __atomic_sub_fetch(&p->spare, share, __ATOMIC_ACQ_REL); /* its own share, lent or not */
    int team = share;
    while (s > 0) /* the rest of the spare, all of it */
        if (__atomic_compare_exchange_n(&p->spare, &s, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            team += s;
            break;
        }
    if (cores_slot >= 0) __atomic_store_n(&p->held[cores_slot], team, __ATOMIC_RELEASE);
    return team;
}

void kb_cores_give(kb_cores *p, int team)
{
    if (!p) return;
    /* no longer held, then given: a worker that dies between the two loses
     * its team to the pool (as before kb_cores_reclaim), never counts it twice */
    if (cores_slot >= 0) __atomic_store_n(&p->held[cores_slot], 0, __ATOMIC_RELEASE);
    __atomic_add_fetch(&p->spare, team, __ATOMIC_ACQ_REL);
}

int kb_cores_reclaim(kb_cores *p, int slot)
{
    if (!p || slot < 0 || slot >= KB_MAX_DEVICES) return 0;
    const int team = __atomic_exchange_n(&p->held[slot], 0, __ATOMIC_ACQ_REL);
    if (team) __atomic_add_fetch(&p->spare, team, __ATOMIC_ACQ_REL);
    return team;
}

int kb_cores_spare(const kb_cores *p) { return p ? __atomic_load_n(&p->spare, __ATOMIC_ACQUIRE) : 0; }

struct kb_gate {
    int rd, wr;    /* the pipe that holds the token (rd non-blocking: every waiter polls, one reads it) */
    double wait_s; /* the longest wait for it */
};

kb_gate *kb_gate_new(double wait_s)
{
    kb_gate *g = calloc(1, sizeof *g);
    int fd[2];
    if (!g || pipe(fd)) {
        free(g);
        return NULL;
    }
    g->rd = fd[0];
    g->wr = fd[1];
    g->wait_s = wait_s;
    if (fcntl(g->rd, F_SETFL, O_NONBLOCK) || write(g->wr, "t", 1) != 1) {
        kb_gate_free(g);
        return NULL;
    }
    return g;
}

void kb_gate_free(kb_gate *g)
{
    if (!g) return;
    close(g->rd);
    close(g->wr);
    free(g);
}

int kb_gate_enter(kb_gate *g)
{
    if (!g) return 0;
    const double end = kb_now_s() + g->wait_s;
    for (;;) {
        char t;
        const ssize_t r = read(g->rd, &t, 1);
        if (r == 1) return 1;
        if (r < 0 && errno != EAGAIN && errno != EINTR) return 0; /* no pipe to wait on */
        const double left = end - kb_now_s();
        if (left <= 0) return 0;
        struct pollfd p = {g->rd, POLLIN, 0};
        poll(&p, 1, (int)(left * 1000) + 1);
    }
}

void kb_gate_leave(kb_gate *g, int taken)
{
    if (g && taken && write(g->wr, "t", 1) != 1) {} /* a full pipe cannot be: one token */
}
