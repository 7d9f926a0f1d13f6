/* The GEMM ceiling's ladder and its search, with no GPU in it (ladder.c). */
#include "../core/op.h"
#ifndef KB_HARNESS_LADDER_H
#define KB_HARNESS_LADDER_H

#include <stddef.h>

/* ladder.c: the search behind it, with no GPU. rung times an n^3 GEMM of
 * key's type in a layout into *tflops: 0, KB_RUNG_NO_ROOM (it does not fit:
 * nor do larger sizes in TN), or an error, which ends the search.
 * kb_ladder_search searches the ladders of keys[0..nk) into res[0..nk):
 * alone (share NULL), or with the workers of one GPU model (--devices)
 * through the parent's queue of rungs (share->fn: this worker's last rung
 * and its rate sent, its next back: 1, or 0: the group's search is over
 * and *gpus GPUs took part; -1: not shared, the rest is timed here). Each
 * result is the best rate timed here. */
#define KB_GEMM_LADDER 7
/* after every size in one layout (rates, 0 where a size did not fit), the
 * sizes the other layouts are tried at: the best and its measured
 * neighbours, into idx (3 at most); how many */
int kb_gemm_rungs(const double *rates, int n, int *idx);
#define KB_RUNG_NO_ROOM 2 /* cudaErrorMemoryAllocation */
extern const int kb_gemm_ladder_sizes[KB_GEMM_LADDER];
typedef int (*kb_rung_fn)(void *ctx, int key, int n, int layout, double *tflops);
typedef struct {
    int key, i, layout; /* key -1: no rung; i: the size's index in kb_gemm_ladder_sizes */
    double rate;        /* its TFLOP/s, -1: it did not fit, KB_RUNG_NOT_MINE: a key this worker does not search */
} kb_rung_msg;
#define KB_RUNG_NOT_MINE (-2.0)
/* fn(ctx, NULL, NULL, NULL): this worker leaves the search (a rung failed) */
typedef struct kb_ladder_share {
    int (*fn)(void *ctx, const kb_rung_msg *done, kb_rung_msg *next, int *gpus);
    void *ctx;
} kb_ladder_share;
typedef struct {
    double tflops;   /* the best rate timed here, 0: none fitted */
    int n, layout;   /* where */
    int rungs;       /* rungs timed here */
    int shared;      /* GPUs that searched together, 1: alone */
    double wait_s;   /* seconds this worker waited for the parent's queue (the whole search's) */
} kb_ladder_result;

int kb_ladder_search(const kb_gemm_key *keys, int nk, kb_rung_fn rung, void *ctx, const kb_ladder_share *share,
                     kb_ladder_result *res);

#endif
