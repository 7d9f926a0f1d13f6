/* The host's cores shared by the CPU references of --devices workers (cores.c). */
#ifndef KB_FLEET_CORES_H
#define KB_FLEET_CORES_H

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

#endif
