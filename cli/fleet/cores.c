/* The host's cores, shared by the CPU references of the --devices workers
 * through memory mapped before the fork (cores.h). */
#include "cores.h"
#include "count.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
static int cores_slot = -1; /* this process's worker (kb_cores_join); -1: none, nothing held is noted */

struct kb_cores {
    int spare; /* __atomic: the shares of the workers with no reference running (negative: lent out) */
    int held[KB_MAX_DEVICES]; /* __atomic: each worker's team while its reference runs, else 0 */
};


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
