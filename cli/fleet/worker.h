/* A --devices worker's side of its pipes to the parent (worker.c): the
 * hooks it hands kb_run_plan (harness/hooks.h) are these. */
#ifndef KB_FLEET_WORKER_H
#define KB_FLEET_WORKER_H

#include "../core/config.h"
#include "../harness/ladder.h"

typedef struct {
    int to, from; /* the worker's pipes: cases to it, requests from it */
    int alone;    /* its ladders no longer shared (an exchange failed) */
} kb_worker_io;

/* "done" to the parent when every row of its oldest unfinished case is
 * written (ctx: the kb_worker_io; the hooks' case_done) */
void kb_worker_done(void *ctx);
/* "next" to the parent, the case's index back (-1: none left; next_case) */
int kb_worker_next(void *ctx);
/* the GEMM ladders' shared search (kb_ladder_share.fn): the rung timed and
 * its rate to the parent, the next rung back (1), or the end (0: *gpus took
 * part); -1: not shared (the parent gone, a reply it cannot read), nor ever
 * again */
int kb_worker_ladder(void *ctx, const kb_rung_msg *done, kb_rung_msg *next, int *gpus);
/* A dry run's worker through the plan's GEMM ladders' search, shared as on
 * GPUs of one model, saying what it timed ("ladder bf16 gpu 0: 4 of 13
 * rungs, the search shared by 4 GPUs") */
void kb_worker_dry_ladders(const kb_plan *plan, int gpu, kb_worker_io *io);

#endif
