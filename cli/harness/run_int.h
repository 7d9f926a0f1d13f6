/* What run.c (a plan: the device, the cases), impl.c (one implementation's
 * row of a case) and turns.c (a case's implementations timed in turns)
 * share: the run's and the case's state, and the steps of a row. For those
 * three files only. */
#ifndef KB_HARNESS_RUN_INT_H
#define KB_HARNESS_RUN_INT_H

#include "hooks.h"
#include "rows.h"
#include "timer.h"
#include "../core/config.h"
#include "../core/op.h"
#include "../core/settings.h"
#include "../report/device.h"
#include "../report/report.h"
#include "../report/row.h"

#include <limits.h>
#include <stdio.h>
#include <unistd.h>

/* A run's state, from the device opened to the report closed: what the
 * steps below share. */
typedef struct {
    kb_plan *plan;
    const kb_run_info *info;
    const kb_run_hooks *hooks; /* info->hooks: NULL alone */
    kb_opts *o;
    kb_device dev;
    kb_timer *timer;
    void *stream;
    kb_report *rep;
    char csv[PATH_MAX], json[PATH_MAX];
    double mark[3]; /* entry, the device and timer ready, the copy ceiling known */
    double t0;      /* the sweep's start, for the progress line */
    double progress_at; /* when the last progress line was written off a terminal (progress.h) */
    int exit_code, fatal;
    int lost; /* a result file could not be written: stop, keep what is there */
    char fatal_what[2000]; /* the implementation and case that lost the context */
    int nrows;
    tally fin;
    row_sink sink;
    inflight *head;  /* the cases whose rows wait for their references, oldest first */
    int ladders_due; /* the GEMM ladders, at the first case that compares with one */
    int start_due;   /* kbench.start_s, at the first case */
    long ref_seq, ref_done;
    size_t plan_need;   /* the largest case's device memory, its ceilings' beside it */
    size_t host_budget; /* an eighth of the host's memory, shared by the processes of the host */
} run_state;

/* One case's figures, shared by its implementations' rows. */
typedef struct {
    inflight *f;
    kb_case *c;
    double bytes, flops, copy, gemm, shape_tf;
    int setup_rc;
    char setup_err[512];
    double base_ms; /* the baseline's median, for speedups */
} case_state;

/* The progress line cleared (stderr, a terminal, not --quiet). */
static inline void progress_done(int quiet)
{
    if (!quiet && isatty(2)) fprintf(stderr, "\r\033[K");
}

/* ---- one implementation's row (impl.c) ---- */
/* A row's fields from its case, before its implementation runs. */
void row_start(kb_row *row, const case_state *K, const kb_impl *impl, const kb_opts *o);
/* Whether impl takes the case: 1 n/a (row->reason), 0 prepared (or *e says why not). */
int impl_prepare(run_state *R, const case_state *K, const kb_impl *impl, kb_row *row, kb_impl_run *run, int *e);
/* The NVTX range of impl's measurements of the case. */
void nvtx_label(const case_state *K, const kb_impl *impl, const kb_impl_run *run, char *nv, size_t n);
/* A prepared implementation's verify run, the watchdog armed (what); e: prepare's error. The CUDA error, 0. */
int impl_verify(run_state *R, case_state *K, pending *p, kb_impl_run *run, const char *what, int e);
/* What kb_time is told of impl's launches. */
kb_time_extra time_extra(const kb_opts *o, const kb_impl *impl, const kb_impl_run *run);
/* A timed row's samples, conditions, rates and notes (e: the timing's error). */
void row_timed(run_state *R, case_state *K, int ii, kb_row *row, const kb_time_extra *x, int e);
/* A plugin implementation's row from the helper process (isolate.h). */
void run_isolated(run_state *R, case_state *K, int ii, pending *p);
/* The implementation and case, for the watchdog's and a lost context's message. */
void impl_what(const case_state *K, const kb_impl *impl, const kb_impl_run *run, char *what, size_t n);
/* A measured row closed (its error, its run released). 1: the sweep was stopped in it (the row freed). */
int impl_close(run_state *R, case_state *K, pending *p, kb_impl_run *run, const char *what, int e);
/* Implementation ii's row, in sequence (--order sequence, kbench check). 1: stopped in it. */
int run_impl(run_state *R, case_state *K, int ii);

/* ---- a case's implementations in turns (turns.c) ---- */
/* --order turns: prepared, verified, timed in turns, closed in order. 1: stopped in it. */
int run_case_turns(run_state *R, case_state *K);

#endif
