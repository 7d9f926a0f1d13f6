/* One implementation's row of a case (run_int.h): started, prepared,
 * verified against poisoned outputs, timed (kb_time, in sequence) or left
 * to the turns (turns.c), then closed; a plugin's run in the helper process. */
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

/* A row's fields from its case, before its implementation runs. */
void row_start(kb_row *row, const case_state *K, const kb_impl *impl, const kb_opts *o)
{
    row->c = K->c;
    row->impl = impl->name;
    row->bytes = K->bytes;
    row->flops = K->flops;
    row->verified = -1;
    row->copy_gbps = K->copy;
    row->gemm_tflops = K->gemm;
    row->cublas_shape_tflops = K->shape_tf;
    row->timing = row_timing(o, impl);
}

/* Whether impl takes the case here: its supports(), then (untimed) its
 * prepare(): plan, allocate its workspace, name the kernel. 1: n/a, not a
 * failure (row->reason says why); 0: run is prepared, or *e says why not. */
int impl_prepare(run_state *R, const case_state *K, const kb_impl *impl, kb_row *row, kb_impl_run *run, int *e)
{
    const kb_case *c = K->c;
    kb_last_error[0] = 0;
    *e = 0;
    if (kb_impl_supports(impl, c, &R->dev.attr, row->reason, sizeof row->reason)) return 1;
    *e = kb_impl_begin(impl, c, &K->f->st, &R->dev.attr, R->stream, run);
    if (*e == KB_NA) {
        snprintf(row->reason, sizeof row->reason, "%s", run->why);
        return 1;
    }
    row->bytes += kb_presample_read_bytes(&K->f->st, run); /* an accumulating output's read, no unwritten one */
    snprintf(row->kernel, sizeof row->kernel, "%s", run->kernel);
    if (*e && !kb_last_error[0])
        snprintf(kb_last_error, sizeof kb_last_error, "%s prepare: %s", impl->name, cudaGetErrorString((cudaError_t)*e));
    return 0;
}

/* A measured row's rates and shares of the ceilings. */
static void row_rates(run_state *R, case_state *K, kb_row *row, int baseline)
{
    row->gbps = row->bytes / (row->st.median * 1e-3) / 1e9;
    row->tflops = K->flops / (row->st.median * 1e-3) / 1e12;
    if (K->copy > 0) row->pct_of_copy = 100.0 * row->gbps / K->copy;
    if (K->gemm > 0) row->pct_of_gemm = 100.0 * row->tflops / K->gemm;
    if (K->shape_tf > 0) row->pct_of_cublas_shape = 100.0 * row->tflops / K->shape_tf;
    snprintf(row->note, sizeof row->note, "%s",
             kb_row_note(row->pct_of_copy, row->pct_of_gemm, row->bytes, R->dev.l2_bytes, R->o->hot));
    if (baseline) K->base_ms = row->st.median;
    if (K->base_ms > 0) row->speedup = K->base_ms / row->st.median;
}

/* The NVTX range of impl's measurements of the case: op/pass/impl [kernel] params. */
void nvtx_label(const case_state *K, const kb_impl *impl, const kb_impl_run *run, char *nv, size_t n)
{
    const kb_case *c = K->c;
    snprintf(nv, n, "%s/%s/%s [%s] %s", c->op->name, kb_case_enum(c, "pass") ? kb_case_enum(c, "pass") : "-",
             impl->name, run->kernel, K->f->label);
}

/* A prepared implementation's verify run, its outputs kept for the
 * comparison once the reference is done; the watchdog armed (what: the
 * implementation and case, for its message). e: prepare's error. The CUDA
 * error, 0. */
int impl_verify(run_state *R, case_state *K, pending *p, kb_impl_run *run, const char *what, int e)
{
    const kb_opts *o = R->o;
    /* a launch or a batch of samples finishes well within --timeout;
     * nothing finished for much longer is a hung kernel */
    kb_watch_arm(what, 2 * o->timeout + 60);
    p->unwritten = run->unwritten;
    if (!e && !o->no_verify) {
        char nv[1200];
        nvtx_label(K, p->impl, run, nv, sizeof nv);
        nvtxRangePushA(nv);
        const double tw = kb_now_s();
        e = verify_run(p->impl, K->c, &K->f->st, run, R->stream, R->info->check_mode, p->h, &p->ran, p->nondet,
                       sizeof p->nondet);
        p->row.wall[KB_WALL_VERIFY] = kb_now_s() - tw;
        nvtxRangePop();
    }
    return e;
}

/* What kb_time is told of impl's launches. */
kb_time_extra time_extra(const kb_opts *o, const kb_impl *impl, const kb_impl_run *run)
{
    return (kb_time_extra){.keep = o->save_samples, .before = kb_presample_any(run) ? presample_fn : NULL,
                           .interpreted = impl->interpreted};
}

/* A timed row's samples, conditions, rates and notes (e: the timing's error). */
void row_timed(run_state *R, case_state *K, int ii, kb_row *row, const kb_time_extra *x, int e)
{
    row->samples = x->samples;
    row->cond = x->cond;
    if (!e && row->st.median > 0) row_rates(R, K, row, ii == 0);
    if (!e && x->fallback[0]) row_graph_fallback(row, x->fallback);
    if (!e && x->host_ms > 0) row_host_note(row, x->host_ms);
}

/* A prepared implementation verified and timed, under the watchdog; e:
 * prepare's error. The CUDA error, 0. */
static int impl_measure(run_state *R, case_state *K, int ii, pending *p, kb_impl_run *run, const char *what, int e)
{
    e = impl_verify(R, K, p, run, what, e);
    if (!e && !R->info->check_mode) {
        char nv[1200];
        nvtx_label(K, p->impl, run, nv, sizeof nv);
        launch_ctx l = {p->impl, K->c, &K->f->st, run};
        kb_time_extra x = time_extra(R->o, p->impl, run);
        const double tw = kb_now_s();
        e = kb_time(R->timer, launch_fn, &l, R->o, nv, &p->row.st, &x);
        p->row.wall[KB_WALL_TIME] = kb_now_s() - tw;
        row_timed(R, K, ii, &p->row, &x, e);
    }
    return e;
}

/* A plugin implementation's row from the helper process (isolate.h): its
 * supports() here, its prepare, verify run and timing there; a fault or a
 * hang there costs this row (an error naming the plugin), not the sweep. */
void run_isolated(run_state *R, case_state *K, int ii, pending *p)
{
    const kb_case *c = K->c;
    const kb_impl *impl = p->impl;
    kb_row *row = &p->row;
    if (kb_impl_supports(impl, c, &R->dev.attr, row->reason, sizeof row->reason)) {
        row->verified = KB_V_NA;
        p->na = 1;
        return;
    }
    kb_iso_result r;
    const int gone = kb_isolate_run(c, impl, R->o, R->info->check_mode, &r) != 0; /* no answer: r.error says why */
    if (r.rep.na) {
        snprintf(row->reason, sizeof row->reason, "%s", r.rep.reason);
        row->verified = KB_V_NA;
        p->na = 1;
        free(r.samples);
        free_all(r.h, KB_MAX_OUTPUTS);
        return;
    }
    snprintf(row->kernel, sizeof row->kernel, "%s", r.rep.kernel[0] ? r.rep.kernel : impl->name);
    row->bytes += r.rep.extra_bytes;
    p->unwritten = r.rep.unwritten;
    row->wall[KB_WALL_VERIFY] = r.rep.wall_verify;
    row->wall[KB_WALL_TIME] = r.rep.wall_time;
    memcpy(p->h, r.h, sizeof p->h);
    p->ran = r.rep.ran;
    snprintf(p->nondet, sizeof p->nondet, "%s", r.rep.nondet);
    if (gone || r.rep.e) {
        const char *path = kb_plugin_path(impl);
        if (strstr(r.error, path)) kb_errf(row->error, sizeof row->error, "%s", r.error);
        else kb_errf(row->error, sizeof row->error, "plugin %s (%s): %s", impl->name, path, r.error);
        p->e = gone ? 1 : r.rep.e; /* an error row; not kbench's context's error */
        R->exit_code = KB_EXIT_CUDA; /* said; kbench's own context is untouched: the sweep goes on */
        free(r.samples);
        return;
    }
    if (R->info->check_mode) {
        free(r.samples);
        return;
    }
    row->st = r.rep.st;
    row->cond = r.rep.cond;
    row->samples = r.samples;
    if (row->st.median > 0) row_rates(R, K, row, ii == 0);
    if (r.rep.fallback[0]) row_graph_fallback(row, r.rep.fallback);
    if (r.rep.host_ms > 0) row_host_note(row, r.rep.host_ms);
}

/* The implementation and case, for the watchdog's and a lost context's message. */
void impl_what(const case_state *K, const kb_impl *impl, const kb_impl_run *run, char *what, size_t n)
{
    const char *pl = kb_plugin_path(impl);
    snprintf(what, n, "%s (%s%s) on %s %s", impl->name, pl ? "plugin " : "kernel ", pl ? pl : run->kernel,
             K->c->op->name, K->f->label);
}

/* A measured implementation's row closed: its error (e; kb_last_error says
 * it), the watchdog disarmed, its in-place inputs restored and its run
 * released. 1: the sweep was stopped in it (the row freed, not written). */
int impl_close(run_state *R, case_state *K, pending *p, kb_impl_run *run, const char *what, int e)
{
    kb_row *row = &p->row;
    if (e) {
        snprintf(row->error, sizeof row->error, "%.*s", (int)sizeof row->error - 1,
                 kb_last_error[0] ? kb_last_error : cudaGetErrorString(e));
        if (kb_cuda_sticky(e)) {
            if (!R->fatal) snprintf(R->fatal_what, sizeof R->fatal_what, "%s: %s", what, row->error); /* the first */
            R->fatal = 1;
        }
        R->exit_code = KB_EXIT_CUDA;
        cudaGetLastError();
        p->e = e;
    }
    kb_watch_disarm();
    if (kb_impl_end(p->impl, K->c, &K->f->st, run, R->fatal) && !p->e) {
        snprintf(row->error, sizeof row->error, "%.*s", (int)sizeof row->error - 1, kb_last_error);
        R->fatal = 1; /* the case's inputs are not what the reference read */
        R->exit_code = KB_EXIT_CUDA;
        p->e = 1;
    }
    progress_done(R->o->quiet);
    if (kb_stop_signal) { /* this row is unfinished: it is not written */
        free_pending(p);
        return 1;
    }
    return 0;
}

/* Implementation ii's row of the case, pending until the reference is
 * done. 1: the sweep was stopped in it (the row is not written). */
int run_impl(run_state *R, case_state *K, int ii)
{
    const kb_case *c = K->c;
    const kb_op *op = c->op;
    inflight *f = K->f;
    const kb_impl *impl = kb_op_impl(op, ii);
    if (!kb_impl_named(R->o->impl, impl)) return 0;
    const char *pl = kb_plugin_path(impl);
    const int iso = kb_isolated(R->o, impl);
    if (pl && !iso) /* a plugin may crash or hang the process (supports, prepare, launch): the rows before it written first */
        while (R->head && drain_head(&R->head, 1, &R->sink)) {}
    pending *p = &f->pend[f->npend];
    memset(p, 0, sizeof *p);
    p->impl = impl;
    kb_row *row = &p->row;
    row_start(row, K, impl, R->o);
    if (K->setup_rc) {
        snprintf(row->error, sizeof row->error, "%.*s", (int)sizeof row->error - 1, K->setup_err);
        if (kb_cuda_sticky(K->setup_rc)) R->fatal = 1;
        R->exit_code = R->exit_code ? R->exit_code : KB_EXIT_CUDA;
        p->e = K->setup_rc;
        f->npend++;
        return 0;
    }
    if (iso) {
        run_isolated(R, K, ii, p);
        progress_done(R->o->quiet);
        if (kb_stop_signal) {
            free_pending(p);
            return 1;
        }
        f->npend++;
        while (R->head && drain_head(&R->head, 0, &R->sink)) {}
        return 0;
    }
    kb_impl_run run;
    int e;
    if (impl_prepare(R, K, impl, row, &run, &e)) {
        row->verified = KB_V_NA;
        p->na = 1;
        f->npend++;
        progress_done(R->o->quiet);
        return 0;
    }
    char what[1400];
    impl_what(K, impl, &run, what, sizeof what);
    e = impl_measure(R, K, ii, p, &run, what, e);
    if (impl_close(R, K, p, &run, what, e)) return 1;
    f->npend++;
    while (R->head && drain_head(&R->head, 0, &R->sink)) {} /* the rows whose reference is done, in order */
    return 0;
}
