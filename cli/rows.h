/* A case's rows (rows.c, for run.c): each implementation's verify run
 * (poisoned outputs, kept on the host), the rows pending until the case's
 * reference is done, then compared, counted and written in order. */
#ifndef KB_ROWS_H
#define KB_ROWS_H
#include "kbench.h"

typedef struct {
    const kb_impl *impl;
    const kb_case *c;
    kb_state *st;
    kb_impl_run *run;
} launch_ctx;
int launch_fn(void *ctx, void *stream); /* kb_time's launch: l->impl on its case */

/* a case's reference, run beside the timing (kb_bg) */
typedef struct {
    const kb_op *op;
    const kb_case *c;
    kb_state *st;
} ref_task;
void ref_main(void *arg); /* kb_bg_start's fn */

/* A row measured and waiting for the reference: its outputs on the host. */
typedef struct {
    kb_row row;
    const kb_impl *impl;
    void *h[KB_MAX_OUTPUTS]; /* verify_run's outputs */
    char nondet[256];        /* a second run differed (kbench check) */
    int e;                   /* the CUDA error of its setup, run or timing; 0 */
    int na, ran;             /* n/a; verify_run ran */
} pending;

typedef struct {
    int npass, nfail, nna, *exit_code;
} tally;
void free_all(void **h, int n);
void free_pending(pending *p);
/* Poisons the outputs, runs the implementation once and keeps its outputs in
 * h (repeat: a second run, whose differing bits go in nondet). */
int verify_run(const kb_impl *impl, const kb_case *c, kb_state *st, kb_impl_run *run, void *stream, int repeat,
               void **h, int *ran, char *nondet, size_t nlen);
/* A row done: compared with the reference (which is done), counted, written;
 * the case's phases (wall) on its first row. 1: the result files could not
 * be written. */
int finish_row(pending *p, kb_state *st, tally *t, const double *wall, int *first, kb_report *rep, int *nrows,
               int check_mode, const char *label);
#endif
