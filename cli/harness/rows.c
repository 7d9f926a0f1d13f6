/* A case's rows (rows.h): verify runs, rows pending until the case's
 * reference is done, then compared, counted and written in case order. */
#include "bg.h"
#include "device.h"
#include "hooks.h"
#include "lifecycle.h"
#include "presample.h"
#include "rows.h"
#include "timer.h"
#include "verify.h"
#include "watch.h"
#include "../core/clock.h"
#include "../core/errors.h"
#include "../core/op.h"
#include "../core/params.h"
#include "../report/report.h"
#include "../report/row.h"
#include "../../include/kb_dtype.h"

#include <stdio.h>
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int launch_fn(void *ctx, void *stream)
{
    launch_ctx *l = ctx;
    int rc = l->impl->launch(l->c, l->st, l->run, stream);
    if (rc && !kb_last_error[0])
        snprintf(kb_last_error, sizeof kb_last_error, "%s launch: %s", l->impl->name, cudaGetErrorString((cudaError_t)rc));
    return rc;
}

const char *row_timing(const kb_opts *o, const kb_impl *impl)
{
    return kb_timing_graph(o->timing, impl->interpreted) ? "graph" : "events";
}

void row_graph_fallback(kb_row *row, const char *why)
{
    static const char *said[64];
    static int nsaid;
    int k = 0;
    while (k < nsaid && strcmp(said[k], row->impl)) k++;
    if (k == nsaid) {
        if (nsaid < 64) said[nsaid++] = row->impl;
        fprintf(stderr, "kbench: %s cannot be captured in a CUDA graph (%s): its rows are timed with events\n", row->impl,
                why);
    }
    row->timing = "events";
    if (!row->note[0]) snprintf(row->note, sizeof row->note, "no graph");
}

void row_host_note(kb_row *row, double host_ms)
{
    row->launch_host_ms = host_ms;
    if (row->st.median > 0 && host_ms >= 0.8 * row->st.median && !row->note[0])
        snprintf(row->note, sizeof row->note, "host-bound");
}

int presample_fn(void *ctx, void *stream)
{
    launch_ctx *l = ctx;
    return kb_presample(l->st, l->run, stream);
}

/* Poison the outputs and the intermediates, and run once. */
static int poisoned_run(const kb_impl *impl, const kb_case *c, kb_state *st, kb_impl_run *run, void *stream)
{
    for (int i = 0; i < st->nout; i++)
        KB_CK(cudaMemsetAsync(st->out[i].dev, 0xff, st->out[i].n * kb_dtype_size(st->out[i].dtype), (cudaStream_t)stream));
    for (int i = 0; i < KB_MAX_SCRATCH; i++)
        if (st->scratch[i].dev) KB_CK(cudaMemsetAsync(st->scratch[i].dev, 0xff, st->scratch[i].bytes, (cudaStream_t)stream));
    int rc = kb_presample(st, run, stream); /* in-place inputs restored, accumulating outputs zeroed */
    if (rc) return rc;
    launch_ctx l = {impl, c, st, run};
    run->verifying = 1;
    rc = launch_fn(&l, stream);
    run->verifying = 0;
    if (rc) return rc;
    if ((rc = kb_presample_collect(st, run, stream))) return rc;
    KB_CK(cudaStreamSynchronize((cudaStream_t)stream));
    KB_CK(cudaGetLastError());
    kb_watch_kick();
    return 0;
}

void free_all(void **h, int n)
{
    for (int i = 0; i < n; i++) free(h[i]);
}

/* Poison and run once, and keep every output on the host (h, then *kept);
 * with `repeat`
 * (kbench check) run again and require the same bits, unless the
 * implementation declares itself nondeterministic: a difference is noted in
 * nondet, for verify_compare. Needs no reference: the comparison can wait
 * for it (verify_compare). */
int verify_run(const kb_impl *impl, const kb_case *c, kb_state *st, kb_impl_run *run, void *stream, int repeat,
               void **h, int *kept, char *nondet, size_t nn)
{
    int rc = poisoned_run(impl, c, st, run, stream);
    if (rc) return rc;
    for (int i = 0; i < st->nout; i++) {
        kb_buf *b = &st->out[i];
        size_t es = kb_dtype_size(b->dtype);
        h[i] = malloc(b->n * es + 1);
        KB_CK(cudaMemcpy(h[i], b->dev, b->n * es, cudaMemcpyDeviceToHost));
    }
    *kept = 1; /* compared whatever the second run does */
    if (repeat && !impl->nondeterministic) {
        rc = poisoned_run(impl, c, st, run, stream);
        for (int i = 0; i < st->nout && !rc; i++) {
            kb_buf *b = &st->out[i];
            size_t es = kb_dtype_size(b->dtype), diff = 0;
            unsigned char *again = malloc(b->n * es + 1);
            rc = cudaMemcpy(again, b->dev, b->n * es, cudaMemcpyDeviceToHost);
            if (rc) { free(again); break; }
            for (size_t k = 0; k < b->n; k++) diff += memcmp(again + k * es, (unsigned char *)h[i] + k * es, es) != 0;
            free(again);
            if (diff && !nondet[0])
                snprintf(nondet, nn, "%s: a second run differs in %zu of %zu elements (not deterministic)", b->name, diff,
                         b->n);
        }
        KB_CK(rc);
    }
    return 0;
}

/* Compare every output kept by verify_run with the reference (its own
 * tolerance), then any difference between two runs (nondet). */
static void verify_compare(const kb_case *c, kb_state *st, void *const *h, const char *nondet, unsigned unwritten,
                           kb_row *row)
{
    row->verified = 1;
    row->rel_err = row->max_abs_err = 0;
    row->verified_rows = 0;
    for (int i = 0; i < st->nout; i++) {
        kb_buf *b = &st->out[i];
        if (unwritten >> i & 1) continue; /* declared not written (kb_impl_run.unwritten) */
        /* the compared elements: every one, or the rows the reference computed */
        double *got = malloc(kb_buf_checked(b) * sizeof *got + 1);
        kb_buf_gather(b, h[i], got);
        long vr = kb_buf_checked_rows(b); /* the least-covered output's rows */
        if (vr > 0 && (row->verified_rows == 0 || vr < row->verified_rows)) row->verified_rows = vr;
        kb_tol tol = c->op->tolerance(c, i);
        double rel, mx;
        int ok = kb_compare(b, got, tol, &rel, &mx);
        if (!ok) {
            row->verified = 0;
            if (!row->error[0]) {
                char worst[160];
                kb_worst_text(c, st, i, got, worst, sizeof worst);
                snprintf(row->error, sizeof row->error, "%s: rel_err %.3e (tol %.1e), max_abs_err %.3e (tol %.1e)%s", b->name,
                         rel, tol.rel_l2, mx, tol.max_abs, worst);
            }
        }
        if (!(rel <= row->rel_err)) row->rel_err = rel;
        if (!(mx <= row->max_abs_err)) row->max_abs_err = mx;
        free(got);
    }
    if (nondet[0]) {
        row->verified = 0;
        if (!row->error[0]) snprintf(row->error, sizeof row->error, "%s", nondet);
    }
}

/* kbench check's line for a row that failed */
static void fail_line(const kb_op *op, const kb_case *c, const kb_impl *impl, const char *label, const char *error)
{
    const char *pass = kb_case_enum(c, "pass");
    fprintf(stdout, "FAIL %s/%s/%s %s: %s\n", op->name, pass ? pass : "-", impl->name, label, error);
    fflush(stdout);
}

/* 1 when the row could not be written (the sweep stops), else counts it */
static int put_row(kb_report *rep, const kb_row *row, int *nrows)
{
    if (kb_report_row(rep, row)) return 1;
    (*nrows)++;
    return 0;
}


void ref_main(void *arg)
{
    ref_task *t = arg;
    const double q = kb_now_s();
    while (__atomic_load_n(t->done_seq, __ATOMIC_ACQUIRE) < t->seq - 1) {
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
    t->queued_s = kb_now_s() - q;
    t->op->reference(t->c, t->st);
    __atomic_store_n(t->done_seq, t->seq, __ATOMIC_RELEASE);
}



void free_pending(pending *p)
{
    free(p->row.samples);
    free_all(p->h, KB_MAX_OUTPUTS);
}

/* A row done: compared with the reference (which is done), counted (a crash
 * once, as failed, whatever the comparison said), written. The case's
 * phases go on its first row. 1: the result files could not be written. */
static int finish_row(pending *p, kb_state *st, tally *t, const double *wall, int *first, kb_report *rep, int *nrows,
                      int check_mode, const char *label)
{
    kb_row *row = &p->row;
    if (*first) {
        for (int i = 0; i < KB_WALL_N; i++) row->wall[i] += wall[i];
        *first = 0;
    }
    if (p->ran) {
        const double tw = kb_now_s();
        verify_compare(row->c, st, p->h, p->nondet, p->unwritten, row);
        row->wall[KB_WALL_VERIFY] += kb_now_s() - tw;
    }
    int k = 0; /* the implementation's own count */
    while (k < t->nper && (t->per[k].op != row->c->op || strcmp(t->per[k].impl, row->impl))) k++;
    if (k == t->nper && k < KB_MAX_TALLY) t->per[t->nper++].impl = row->impl, t->per[k].op = row->c->op;
    int na = 0, fail = 0, pass = 0;
    if (p->na) {
        na = 1;
    } else if (p->e) {
        fail = 1;
    } else if (row->verified == 1) {
        pass = 1;
    } else if (row->verified == 0) {
        fail = 1;
        if (*t->exit_code == KB_EXIT_OK) *t->exit_code = KB_EXIT_VERIFY;
    }
    t->nna += na, t->nfail += fail, t->npass += pass;
    if (k < KB_MAX_TALLY) t->per[k].na += na, t->per[k].fail += fail, t->per[k].pass += pass;
    int lost = put_row(rep, row, nrows);
    if (check_mode && !p->na && (row->verified == 0 || p->e)) fail_line(row->c->op, row->c, p->impl, label, row->error);
    free_pending(p);
    return lost;
}

static void inflight_free(inflight *f)
{
    kb_case_free(f->c, &f->st);
    free(f->pend);
    free(f);
}

/* The oldest case: its pending rows written once its reference is done
 * (block: waits for it); once every row of it is written it is freed and
 * said done (a --devices worker's parent counts it). 1: freed. */
int drain_head(inflight **head, int block, row_sink *s)
{
    inflight *f = *head;
    if (!f) return 0;
    if (f->bg_live) {
        if (!block && !kb_bg_done(&f->bg)) return 0;
        f->wall[KB_WALL_WAIT] += kb_bg_join(&f->bg);
        f->wall[KB_WALL_REFERENCE] = f->bg.run_s - f->rt.queued_s;
        f->bg_live = 0;
    }
    for (; f->nput < f->npend; f->nput++)
        if (!*s->lost)
            *s->lost = finish_row(&f->pend[f->nput], &f->st, s->fin, f->wall, &f->first_row, s->rep, s->nrows,
                                  s->check_mode, f->label);
        else free_pending(&f->pend[f->nput]);
    if (!f->complete) return 0;
    *head = f->next;
    const int whole = !f->aborted && !*s->lost; /* else the parent keeps it: a dead worker's error rows */
    inflight_free(f);
    if (whole) rows_case_done(s); /* "done" once its rows are in the JSON part, which the parent merges */
    return 1;
}

void rows_case_done(row_sink *s)
{
    const kb_run_hooks *h = s->info->hooks;
    if (h && h->case_done && !*s->lost) h->case_done(h->ctx); /* its rows are on disk (kb_report_row) */
}

/* whether one more case may wait for its reference beside the n waiting */
int may_wait(const inflight *head, size_t plan_need, size_t host_budget)
{
    int n = 0;
    size_t host = 0;
    for (const inflight *f = head; f; f = f->next, n++) {
        for (int k = 0; k < f->st.nin; k++) host += f->st.in[k].n * kb_dtype_size(f->st.in[k].dtype);
        for (int k = 0; k < f->st.nout; k++) /* the rows' outputs kept for the comparison, the reference's */
            host += f->st.out[k].n * ((size_t)f->npend * kb_dtype_size(f->st.out[k].dtype) + sizeof(double));
    }
    size_t free_b = 0, total_b = 0;
    return n <= KB_MAX_INFLIGHT && host <= host_budget && !kb_device_free_mem(&free_b, &total_b) &&
           free_b > plan_need + ((size_t)256 << 20);
}
