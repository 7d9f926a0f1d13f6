/* A case's rows (rows.c, for run.c, impl.c, turns.c): each implementation's verify run
 * (poisoned outputs, kept on the host), the rows pending until the case's
 * reference is done, then compared, counted and written in case order. */
#ifndef KB_ROWS_H
#define KB_ROWS_H
#include "bg.h"
#include "hooks.h"
#include "../core/op.h"
#include "../core/settings.h"
#include "../report/report.h"
#include "../report/row.h"

typedef struct {
    const kb_impl *impl;
    const kb_case *c;
    kb_state *st;
    kb_impl_run *run;
} launch_ctx;
int launch_fn(void *ctx, void *stream); /* kb_time's launch: l->impl on its case */
/* The row of a launch that could not be captured under --timing graph
 * (kb_time_extra.fallback, why): its timing "events" and its note say so;
 * one line on stderr, the first time for each implementation. */
void row_graph_fallback(kb_row *row, const char *why);
/* The timing impl's rows get under o->timing (kb_timing_graph): "graph" or "events". */
const char *row_timing(const kb_opts *o, const kb_impl *impl);
/* An interpreted implementation's row under events: host_ms, the host's
 * mean time in one launch (kb_time_extra.host_ms), into launch_host_ms,
 * and the note "host-bound" when it is 80% of the row's median or more:
 * the samples may then hold the dispatch, and --timing graph is the measure. */
void row_host_note(kb_row *row, double host_ms);
int presample_fn(void *ctx, void *stream); /* kb_time's untimed step before each launch (presample.h) */

/* a case's reference, run beside the timing (kb_bg); references run one
 * after another, in case order: seq waits for *done_seq to reach seq - 1 */
typedef struct {
    const kb_op *op;
    const kb_case *c;
    kb_state *st;
    long seq, *done_seq;
    double queued_s; /* waiting for the reference before it */
} ref_task;
void ref_main(void *arg); /* the reference, after the one before it (kb_bg_start's fn) */

/* A row measured and waiting for the reference: its outputs on the host. */
typedef struct {
    kb_row row;
    const kb_impl *impl;
    void *h[KB_MAX_OUTPUTS]; /* verify_run's outputs */
    char nondet[256];        /* a second run differed (kbench check) */
    int e;                   /* the CUDA error of its setup, run or timing; 0 */
    int na, ran;             /* n/a; verify_run ran */
    unsigned unwritten;      /* outputs it does not write (kb_impl_run.unwritten): not compared */
} pending;

#define KB_MAX_TALLY 192 /* (op, implementation)s counted apart (kbench check's lines): 4 ops x 16 built-ins + 64 plugins' and more */
typedef struct {
    int npass, nfail, nna, *exit_code;
    struct {
        const char *impl; /* its name (the row's) */
        const kb_op *op;
        int pass, fail, na;
    } per[KB_MAX_TALLY]; /* each implementation's, in the order they came */
    int nper;
} tally;
void free_all(void **h, int n);
void free_pending(pending *p);
/* Poisons the outputs, runs the implementation once and keeps its outputs in
 * h (repeat: a second run, whose differing bits go in nondet). */
int verify_run(const kb_impl *impl, const kb_case *c, kb_state *st, kb_impl_run *run, void *stream, int repeat,
               void **h, int *ran, char *nondet, size_t nlen);

/* cases at most whose rows wait for their references while the GPU goes on */
#define KB_MAX_INFLIGHT 8

/* Cases whose rows wait for their reference. The references run one after
 * another on threads of their own while the GPU goes on to the next cases:
 * a case whose reference takes longer than its GPU work (the MLP's 64
 * sampled rows at 8192 x 28672: 3 s against 0.7 s on a worker's 15
 * threads) no longer holds the GPU. A waiting case keeps its state whole
 * (device buffers too) until its rows are written, in case order; at most
 * KB_MAX_INFLIGHT of them, while the device has room for the plan's largest
 * case beside them and they hold less than an eighth of the host's memory. */
typedef struct inflight {
    kb_case *c;
    kb_state st;
    ref_task rt;
    kb_bg bg;
    int bg_live;                          /* its reference's thread, not joined yet */
    pending *pend;                        /* a row per implementation selected */
    int npend, nput, first_row, complete; /* complete: every implementation's row is pending */
    int aborted; /* the sweep stopped in it or a row of it was not written: not said done */
    double wall[KB_WALL_N];               /* the case's phases, on its first row */
    char label[1024];
    struct inflight *next;
} inflight;

typedef struct { /* where finished rows go */
    kb_report *rep;
    tally *fin;
    int *nrows, *lost, check_mode;
    const kb_run_info *info;
} row_sink;
/* The oldest case: its pending rows written once its reference is done
 * (block: waits for it); once every row of it is written it is freed and
 * said done (a --devices worker's parent counts it). 1: freed. */
int drain_head(inflight **head, int block, row_sink *s);
/* A case written whole (its rows on disk, or none for it: --impl) is said
 * done to whatever drives the run (info->hooks->case_done: a --devices
 * worker's parent, which then counts it finished). */
void rows_case_done(row_sink *s);
/* whether one more case may wait for its reference beside the ones waiting
 * (host_budget: bytes of host memory for this process's waiting cases) */
int may_wait(const inflight *head, size_t plan_need, size_t host_budget);
#endif
