/* A case's implementations timed in turns (--order turns, run_int.h): all
 * prepared before any launches, verified one by one, timed a batch each in
 * rounds, backward and forward in turn (kb_time_turns), closed in order (docs/timing.md). */
#include "isolate.h"
#include "lifecycle.h"
#include "presample.h"
#include "rows.h"
#include "run_int.h"
#include "stats.h"
#include "timer.h"
#include "watch.h"
#include "../core/clock.h"
#include "../core/errors.h"
#include "../core/op.h"
#include "../core/params.h"
#include "../core/plugin.h"
#include "../core/settings.h"
#include "../report/row.h"

#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --order turns: one implementation of the case, in turns with the others. */
typedef struct {
    int ii;       /* its index in the op */
    pending *p;   /* its row */
    kb_impl_run run;
    int state;    /* TURN_* */
    int e;        /* prepare's, verify's or timing's error */
    char err[KB_ERRLEN], what[1400];
    launch_ctx l;
    kb_time_extra x;
} turn_slot;
enum { TURN_NA, TURN_ISOLATED, TURN_PREPARED };

/* Phase 1: each named implementation's row started and, in kbench's
 * process, prepared: all of them before any launches, so that each one's
 * copy of an input it writes in place is taken from the input as set up.
 * The slots, in implementation order; their count. */
static int turns_prepare(run_state *R, case_state *K, turn_slot *ts)
{
    const kb_op *op = K->c->op;
    inflight *f = K->f;
    int n = 0;
    for (int ii = 0; ii < kb_op_nimpls(op) && !kb_stop_signal; ii++) {
        const kb_impl *impl = kb_op_impl(op, ii);
        if (!kb_impl_named(R->o->impl, impl)) continue;
        turn_slot *t = &ts[n];
        t->ii = ii;
        t->p = &f->pend[f->npend + n++];
        memset(t->p, 0, sizeof *t->p);
        t->p->impl = impl;
        row_start(&t->p->row, K, impl, R->o);
        if (kb_isolated(R->o, impl)) t->state = TURN_ISOLATED;
        else if (impl_prepare(R, K, impl, &t->p->row, &t->run, &t->e)) {
            t->p->row.verified = KB_V_NA;
            t->p->na = 1;
            t->state = TURN_NA;
        } else {
            t->state = TURN_PREPARED;
            impl_what(K, impl, &t->run, t->what, sizeof t->what);
            if (t->e) snprintf(t->err, sizeof t->err, "%s", kb_last_error);
        }
    }
    return n;
}

/* Phase 3: the verified implementations timed in turns (kb_time_turns), a
 * batch each in ABBA rounds; each row's samples and rates. */
static void turns_time(run_state *R, case_state *K, turn_slot *ts, int n)
{
    kb_turn *u = calloc((size_t)n + 1, sizeof *u);
    char(*nv)[1200] = calloc((size_t)n + 1, sizeof *nv);
    int m = 0, *at = calloc((size_t)n + 1, sizeof *at);
    if (!u || !nv || !at) abort();
    for (int k = 0; k < n; k++) {
        turn_slot *t = &ts[k];
        if (t->state != TURN_PREPARED || t->e) continue;
        t->l = (launch_ctx){t->p->impl, K->c, &K->f->st, &t->run};
        t->x = time_extra(R->o, t->p->impl, &t->run);
        /* an input it writes in place restored after each of its batches: the next turn reads it as set up */
        t->x.after = t->run.ninplace ? presample_fn : NULL;
        nvtx_label(K, t->p->impl, &t->run, nv[m], sizeof nv[m]);
        u[m] = (kb_turn){.fn = launch_fn, .ctx = &t->l, .label = nv[m], .what = t->what, .st = &t->p->row.st, .x = &t->x};
        at[m++] = k;
    }
    if (m) {
        kb_time_turns(R->timer, u, m, R->o); /* the watchdog armed for each turn in its turn */
        kb_watch_disarm();
        for (int j = 0; j < m; j++) {
            turn_slot *t = &ts[at[j]];
            t->p->row.wall[KB_WALL_TIME] = u[j].wall_s; /* its own turns */
            if ((t->e = u[j].rc)) snprintf(t->err, sizeof t->err, "%s", u[j].error);
            row_timed(R, K, t->ii, &t->p->row, &t->x, t->e);
        }
    }
    free(at);
    free(nv);
    free(u);
}

/* Phase 2: each prepared implementation's verify run; an input it wrote in
 * place restored for the next one (its pristine copy, presample.h). A lost
 * context stops it: every other prepared row says so, and nothing is timed. */
static void turns_verify(run_state *R, case_state *K, turn_slot *ts, int n)
{
    for (int k = 0; k < n && !kb_stop_signal; k++) {
        turn_slot *t = &ts[k];
        if (t->state != TURN_PREPARED) continue;
        const int e0 = t->e; /* prepare's, its message in t->err */
        kb_last_error[0] = 0;
        t->e = impl_verify(R, K, t->p, &t->run, t->what, t->e);
        if (t->e && !e0) snprintf(t->err, sizeof t->err, "%s", kb_last_error[0] ? kb_last_error : cudaGetErrorString(t->e));
        kb_last_error[0] = 0;
        if (t->e && kb_cuda_sticky(t->e)) {
            for (int j = 0; j < n; j++)
                if (j != k && ts[j].state == TURN_PREPARED && !ts[j].e) {
                    ts[j].e = t->e;
                    snprintf(ts[j].err, sizeof ts[j].err, "not timed: the GPU context was lost in %.200s's verify run",
                             t->p->impl->name);
                }
            kb_watch_disarm();
            return;
        }
        if (t->e) cudaGetLastError(); /* not the next one's */
        if (t->run.ninplace && !e0) { /* restored whether or not its run succeeded */
            int e = kb_presample(&K->f->st, &t->run, R->stream);
            if (!e && (e = cudaStreamSynchronize((cudaStream_t)R->stream))) kb_cuda_fail(e, "restoring an input", __FILE__, __LINE__);
            if (e && !t->e) t->e = e, snprintf(t->err, sizeof t->err, "%s", kb_last_error);
        }
        kb_watch_disarm();
    }
}

/* Phase 4, one row: a prepared implementation closed (impl_close), or a
 * helper process's run (run_isolated). 1: the sweep was stopped (the row
 * freed). */
static int turns_close(run_state *R, case_state *K, turn_slot *t)
{
    if (t->state == TURN_PREPARED) {
        snprintf(kb_last_error, sizeof kb_last_error, "%s", t->err);
        kb_watch_arm(t->what, 2 * R->o->timeout + 60);
        return impl_close(R, K, t->p, &t->run, t->what, t->e);
    }
    if (t->state == TURN_ISOLATED && R->fatal) { /* an earlier row of the case stopped the sweep */
        snprintf(t->p->row.error, sizeof t->p->row.error, "not run: the sweep stops at this case (%.200s)",
                 R->fatal_what[0] ? R->fatal_what : "an earlier row's error");
        t->p->e = 1;
    } else if (t->state == TURN_ISOLATED)
        run_isolated(R, K, t->ii, t->p);
    progress_done(R->o->quiet);
    if (kb_stop_signal) free_pending(t->p);
    return kb_stop_signal != 0;
}

/* The case's implementations under --order turns: prepared, each verified,
 * timed in turns, then closed in order; a plugin's that run in a helper
 * process (--isolate) are timed there afterwards, one after another. 1:
 * the sweep was stopped in it (its rows are not written). */
int run_case_turns(run_state *R, case_state *K)
{
    const kb_op *op = K->c->op;
    inflight *f = K->f;
    turn_slot *ts = calloc((size_t)kb_op_nimpls(op) + 1, sizeof *ts);
    if (!ts) abort();
    for (int ii = 0; ii < kb_op_nimpls(op); ii++) /* a plugin may crash the process: the rows before it written */
        if (kb_impl_named(R->o->impl, kb_op_impl(op, ii)) && kb_plugin_path(kb_op_impl(op, ii)))
            while (R->head && drain_head(&R->head, 1, &R->sink)) {}
    const int n = turns_prepare(R, K, ts);
    turns_verify(R, K, ts, n);
    if (!kb_stop_signal) turns_time(R, K, ts, n);
    int k = 0;
    while (k < n && !turns_close(R, K, &ts[k])) k++;
    if (k < n) { /* stopped in row k (freed): the rows before it kept, the rest released and freed */
        for (int j = k + 1; j < n; j++) {
            if (ts[j].state == TURN_PREPARED) kb_impl_end(ts[j].p->impl, K->c, &f->st, &ts[j].run, R->fatal);
            free_pending(ts[j].p);
        }
        f->npend += k;
        free(ts);
        return 1;
    }
    f->npend += n;
    free(ts);
    while (R->head && drain_head(&R->head, 0, &R->sink)) {}
    return 0;
}
