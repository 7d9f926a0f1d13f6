/* The timer: CUDA events per sample, an L2 flush before each (unless --hot),
 * batches of samples between host checks, the stopping rule of kb_opts. */
#ifndef KB_HARNESS_H
#define KB_HARNESS_H
#include "kbench.h"
#include <signal.h>

/* SIGINT or SIGTERM during a run (run.c): 0, or the signal. The timer stops
 * sampling at the next batch, and the run writes no row for the case under way. */
extern volatile sig_atomic_t kb_stop_signal;
/* Catch them (kb_stop_signal set; a second one ends the process at once,
 * SA_RESETHAND), and put back what was there (run.c). */
void kb_catch_stop(struct sigaction old[2]);
void kb_uncatch_stop(const struct sigaction old[2]);
/* A launch or a batch finished: the run's watchdog (run.c) is not to fire. */
void kb_watch_kick(void);

typedef struct kb_timer kb_timer;
/* One sample's work, launched on stream; 0 or a CUDA error (kb_last_error set). */
typedef int (*kb_sample_fn)(void *ctx, void *stream);

int kb_timer_create(kb_timer **t, const kb_device *d);
void kb_timer_destroy(kb_timer *t);
void *kb_timer_stream(kb_timer *t);
size_t kb_timer_scratch_bytes(const kb_timer *t);
/* Warm up, then sample (o->timing "graph": replayed from a CUDA graph) until min_samples and min_time are met and the noise
 * (stddev/mean) is under max_noise, or, past twice min_time, the noise has
 * converged above it (the later half of the samples as noisy as the whole,
 * within 10%), or timeout; the whole inside an NVTX range `label`. */
/* What kb_time gives besides the statistics (x may be NULL): the samples, in
 * the order measured, when keep is set (malloc'd; the caller frees), and the
 * conditions NVML saw while they ran (one poll per batch). */
typedef struct {
    int keep;
    double *samples;
    kb_cond cond;
} kb_time_extra;
int kb_time(kb_timer *t, kb_sample_fn fn, void *ctx, const kb_opts *o, const char *label, kb_stats *st,
            kb_time_extra *x);
/* The copy ceiling (GB/s, bytes read + written) at a row's bytes read and
 * written: the best of cudaMemcpy and kbench's copy kernels, L2 flushed,
 * median; cached. cand: the candidate that gave it (-1: none measured). */
#define KB_COPY_MAX_CAND 64 /* copy-ceiling candidates at most */
int kb_copy_gbps(kb_timer *t, double rbytes, double wbytes, const kb_opts *o, double *gbps, int *cand);
/* Each candidate's rate (GB/s; 0: not measured) at these bytes: rates[0]
 * cudaMemcpy, rates[1 + v] copy kernel v; kb_copy_ncandidates() of them;
 * all: every variant, else the ceiling's candidates only. */
int kb_copy_rates(kb_timer *t, double rbytes, double wbytes, const kb_opts *o, double *rates, int all);
/* whether candidate cand is one of the ceiling's (all: kbench device measures every one) */
int kb_copy_in_ceiling(int cand);
int kb_copy_ncandidates(void);
/* the device bytes a copy ceiling of rbytes read and wbytes written allocates */
size_t kb_copy_bufs_bytes(double rbytes, double wbytes);
/* Candidate cand's rate timed by the host clock around iters back-to-back
 * launches (no events, no flush): for selftest's cross-check. */
int kb_copy_wall_gbps(kb_timer *t, int cand, double rbytes, double wbytes, int iters, double *gbps);
/* kbench selftest (selftest.c): 0 all passed, KB_EXIT_VERIFY one failed, KB_EXIT_CUDA */
int kb_selftest(const kb_opts *o);
/* |measured - expected| within limit_pct of expected; dev_pct the signed deviation */
int kb_selftest_judge(double measured, double expected, double limit_pct, double *dev_pct);
const char *kb_copy_candidate_name(int i); /* "cudaMemcpy", then the kernels' names */
/* Dense GEMM ceiling for key k: the best square cuBLAS GEMM over a ladder of
 * sizes and operand layouts (median each), cached; 0 TFLOP/s when none fits in
 * the free memory. size, layout: n and kb_gemm_layout of the best n^3 GEMM;
 * shared: the GPUs whose workers searched its ladder together (1: alone). */
int kb_gemm_tflops(kb_timer *t, kb_gemm_key k, const kb_opts *o, double *tflops, int *size, int *layout, int *shared);
/* the ceilings of keys[0..nk) measured in one search (the rest as above); 0
 * or the CUDA error. kb_gemm_wait_s: the seconds the workers' queue kept
 * the timer's searches waiting, all of them (0 alone). */
int kb_gemm_ceilings(kb_timer *t, const kb_gemm_key *keys, int nk, const kb_opts *o);
double kb_gemm_wait_s(const kb_timer *t);
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
/* The parent's queue for one group of workers (nw: the parent's worker
 * indices 0..nw-1): _done records worker w's report of the rung it holds (0,
 * -1: not that rung); _next gives w its next rung: 1, 0 none yet (ask again
 * once another's rate is in), -1 the search is over for w; _leave puts back
 * the rung of a worker gone; _gpus: the workers that timed a rung. */
typedef struct kb_ladder_queue kb_ladder_queue;
kb_ladder_queue *kb_ladder_queue_new(const kb_gemm_key *keys, int nk, int nw);
void kb_ladder_queue_free(kb_ladder_queue *q);
int kb_ladder_queue_done(kb_ladder_queue *q, int w, const kb_rung_msg *m);
int kb_ladder_queue_next(kb_ladder_queue *q, int w, kb_rung_msg *next);
void kb_ladder_queue_leave(kb_ladder_queue *q, int w);
int kb_ladder_queue_gpus(const kb_ladder_queue *q);
/* The messages: a worker's "rung K I L R" (K -1: its first ask), the
 * parent's "K I L" (the next rung) or "end M". A worker whose exchange
 * failed says "alone" and leaves its group. Lengths, -1: no room; parses:
 * 0, -1 malformed (the reply's: 1 a rung, 0 end, -1). */
int kb_rung_format(char *buf, size_t len, const kb_rung_msg *m);
int kb_rung_parse(const char *line, kb_rung_msg *m);
int kb_rung_reply_format(char *buf, size_t len, int r, const kb_rung_msg *next, int gpus);
int kb_rung_reply_parse(const char *line, kb_rung_msg *next, int *gpus);
/* the timer's ladders shared from now on (NULL: alone) */
void kb_timer_share_ladder(kb_timer *t, const kb_ladder_share *sh);
/* cuBLAS alone on n GEMMs (M x N x K, row-major, of key k's type) in sequence,
 * L2 flushed before each sequence, median: their FLOPs over the time; cached;
 * 0 when they do not fit beside the case. */
int kb_gemm_shapes_tflops(kb_timer *t, kb_gemm_key k, const int (*mnk)[3], int n, const kb_opts *o, double *tflops);
size_t kb_gemm_shapes_bytes(kb_gemm_key k, const int (*mnk)[3], int n); /* the device bytes that allocates */
size_t kb_gemm_ladder_bytes(kb_gemm_key k); /* the device bytes key k's ladder allocates at most (its largest rung) */
/* ceilings.c: a case's copy ceiling at its bytes and cuBLAS on its own GEMMs
 * (0 each where unknown); 1 when the GPU context is lost */
int kb_case_ceilings(kb_timer *t, const kb_case *c, const kb_opts *o, double *copy, double *shape_tf);
/* the device bytes those allocate while measured (the case's beside them) */
size_t kb_case_ceilings_bytes(const kb_case *c);
/* the GEMM ceiling a case compares with (KB_GEMM_NONE: none), and the
 * distinct ones of a plan's cases, in the order they first appear: how many */
kb_gemm_key kb_case_gemm_key(const kb_case *c);
int kb_plan_gemm_keys(const kb_plan *plan, kb_gemm_key keys[KB_NGEMM]);
#endif
