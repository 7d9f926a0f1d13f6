/* Running a plan: for each case, setup, reference, then for each
 * implementation verify (poisoned outputs) and time; one row each. */
#include "bg.h"
#include "ceilings.h"
#include "copy.h"
#include "device.h"
#include "gemm.h"
#include "hooks.h"
#include "rows.h"
#include "run.h"
#include "stats.h"
#include "timer.h"
#include "watch.h"
#include "../core/clock.h"
#include "../core/config.h"
#include "../core/errors.h"
#include "../core/op.h"
#include "../core/params.h"
#include "../core/plugin.h"
#include "../core/settings.h"
#include "../report/device.h"
#include "../report/report.h"
#include "../report/row.h"


#include <cuda_runtime_api.h>
#include <math.h>
#include <signal.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>



static void progress(int quiet, int i, int n, const kb_case *c, double t0)
{
    if (quiet || !isatty(2)) return;
    char label[512];
    kb_case_label(c, label, sizeof label);
    fprintf(stderr, "\r\033[K[%d/%d %.0fs] %s %.150s", i + 1, n, kb_now_s() - t0, c->op->name, label);
    fflush(stderr);
}

static void progress_done(int quiet)
{
    if (!quiet && isatty(2)) fprintf(stderr, "\r\033[K");
}

/* the device bytes the plan's GEMM ladders allocate at most (their largest rung) */
static size_t ladders_bytes(const kb_plan *plan)
{
    kb_gemm_key keys[KB_NGEMM];
    size_t most = 0;
    for (int j = 0, n = kb_plan_gemm_keys(plan, keys); j < n; j++) {
        const size_t b = kb_gemm_ladder_bytes(keys[j]);
        if (b > most) most = b;
    }
    return most;
}

/* The GEMM ceilings the plan's cases compare with (the device's, in the
 * report). 0, or KB_EXIT_CUDA once said. */
static int sweep_ladders(const kb_plan *plan, kb_timer *timer, const kb_opts *o, kb_device *dev, kb_report *rep)
{
    kb_gemm_key keys[KB_NGEMM];
    const int nk = kb_plan_gemm_keys(plan, keys);
    if (kb_gemm_ceilings(timer, keys, nk, o)) { /* all keys in one search: shared, any key's rungs fill the waits */
        fprintf(stderr, "kbench: GEMM ceilings: %s\n", kb_last_error);
        return KB_EXIT_CUDA;
    }
    for (int j = 0; j < nk; j++) {
        const kb_gemm_key k = keys[j];
        if (kb_gemm_tflops(timer, k, o, &dev->gemm_tflops[k], &dev->gemm_n[k], &dev->gemm_layout[k],
                           &dev->gemm_shared[k])) {
            fprintf(stderr, "kbench: GEMM ceiling %s: %s\n", kb_gemm_key_name(k), kb_last_error);
            return KB_EXIT_CUDA;
        }
        if (o->quiet) continue;
        if (dev->gemm_tflops[k] > 0) {
            printf("GEMM %s %.1f TFLOP/s (cuBLAS %d^3 %s, median", kb_gemm_key_name(k), dev->gemm_tflops[k],
                   dev->gemm_n[k], kb_gemm_layout_name(dev->gemm_layout[k]));
            if (dev->gemm_shared[k] > 1) printf("; the search shared by %d GPUs of this model", dev->gemm_shared[k]);
            printf(")\n");
        } else
            printf("GEMM %s: not enough free memory to measure\n", kb_gemm_key_name(k));
    }
    kb_report_ladder_wait(rep, kb_gemm_wait_s(timer));
    kb_report_gemm(rep, dev); /* (writes both) */
    return 0;
}

/* sweep_ladders, timed: the seconds it took */
static double ladders_timed(const kb_plan *plan, kb_timer *timer, const kb_opts *o, kb_device *dev, kb_report *rep,
                            int *fatal, int *exit_code)
{
    const double t = kb_now_s();
    if (sweep_ladders(plan, timer, o, dev, rep)) *fatal = 1, *exit_code = KB_EXIT_CUDA;
    return kb_now_s() - t;
}

int kb_run_plan(kb_plan *plan, const kb_run_info *info)
{
    double mark[3] = {kb_now_s(), 0, 0}; /* entry, the device and timer ready, the copy ceiling known */
    char err[KB_ERRLEN];
    kb_opts *o = &plan->opts;
    if (kb_plan_check(plan, info, err, sizeof err)) {
        fprintf(stderr, "kbench: %s\n", err);
        return KB_EXIT_USAGE;
    }
    kb_device dev;
    const kb_run_hooks *hooks = info->hooks;
    const int opens = hooks && hooks->open_enter && hooks->open_leave;
    const int turn = opens ? hooks->open_enter(hooks->ctx) : 0; /* the driver serialises CUDA's start */
    int rc = kb_device_open(&dev);
    if (opens) hooks->open_leave(hooks->ctx, turn);
    if (rc) return rc;
    if (!dev.nvml.ok && !o->quiet && !info->check_mode)
        fprintf(stderr, "kbench: %s: the rows' clock, power and throttle columns stay empty\n",
                dev.nvml.why[0] ? dev.nvml.why : "NVML not available");
    /* Refuse a case too big for the device before anything is allocated for it. */
    size_t free_b = 0, total_b = 0;
    kb_device_free_mem(&free_b, &total_b);
    for (int i = 0; i < plan->ncases; i++) {
        const kb_case *c = &plan->cases[i];
        size_t need = c->op->device_bytes(c);
        if (need > free_b) {
            char label[1024], a[32], b[32];
            kb_case_label(c, label, sizeof label);
            kb_human_bytes((double)need, a, sizeof a);
            kb_human_bytes((double)free_b, b, sizeof b);
            fprintf(stderr, "kbench: %s %s needs %s (%zu bytes) of device memory; %s (%zu bytes) are free\n",
                    c->op->name, label, a, need, b, free_b);
            return KB_EXIT_USAGE;
        }
    }
    kb_timer *timer = NULL;
    if (kb_timer_create(&timer, &dev)) {
        fprintf(stderr, "kbench: %s\n", kb_last_error);
        kb_timer_destroy(timer);
        return KB_EXIT_CUDA;
    }
    mark[1] = mark[2] = kb_now_s();
    const kb_op *const *ops = plan->ops_all; /* the whole sweep's: every shard writes the same CSV columns */
    const int nops = plan->nops_all;
    char csv[1100], json[1100];
    kb_output_paths(plan, info, csv, json, sizeof csv);
    if (!info->check_mode) {
        int by = -1;
        int e = kb_copy_gbps(timer, (double)(1u << 29), (double)(1u << 29), o, &dev.copy_gbps, &by);
        if (e) {
            fprintf(stderr, "kbench: %s\n", kb_last_error);
            kb_timer_destroy(timer);
            return KB_EXIT_CUDA;
        }
        kb_device_clocks(&dev);
        mark[2] = kb_now_s();
        if (!o->quiet)
            printf("%s, %d SMs, %.0f MiB L2, copy %.0f GB/s (1 GiB, median, %s)\n", dev.name, dev.sm_count,
                   (double)dev.l2_bytes / (1 << 20), dev.copy_gbps, by >= 0 ? kb_copy_candidate_name(by) : "-");
    }
    if (hooks && hooks->ladder) kb_timer_share_ladder(timer, hooks->ladder);
    kb_report *rep = kb_report_open(csv, json, ops, nops, &dev, info->argc, info->argv, o->quiet || info->check_mode,
                                    err, sizeof err);
    if (!rep) {
        fprintf(stderr, "kbench: %s\n", err);
        kb_timer_destroy(timer);
        return KB_EXIT_USAGE;
    }
    kb_report_sweep(rep, plan->sweep_id, plan->sweep_cases, plan->shard_k, plan->shard_n, hooks ? hooks->worker : -1);
    if (hooks && hooks->case_done) kb_report_by_sync(rep);
    if (!o->quiet && (csv[0] || json[0]))
        printf("writing%s%s%s%s\n", csv[0] ? " " : "", csv, json[0] ? " " : "", json);
    kb_watch_files(csv, json);

    int exit_code = KB_EXIT_OK, fatal = 0;
    tally fin = {0, 0, 0, &exit_code};
    int lost = 0; /* a result file could not be written: stop, keep what is there */
    char fatal_what[2000] = ""; /* the implementation and case that lost the context */
    int nrows = 0;
    struct sigaction old_sig[2];
    kb_catch_stop(old_sig);
    double t0 = kb_now_s();
    void *stream = kb_timer_stream(timer);
    inflight *head = NULL; /* the cases whose rows wait for their references, oldest first */
    int ladders_due = !info->check_mode; /* the GEMM ladders, at the first case that compares with one */
    int start_due = !info->check_mode;   /* kbench.start_s, at the first case */
    long ref_seq = 0, ref_done = 0;
    row_sink sink = {rep, &fin, &nrows, &lost, info->check_mode, info, 0};
    size_t plan_need = 0; /* the largest case's device memory, its ceilings' beside it */
    for (int i = 0; i < plan->ncases; i++) {
        const kb_case *c = &plan->cases[i];
        const size_t n = c->op->device_bytes(c) + kb_case_ceilings_bytes(c);
        if (n > plan_need) plan_need = n;
    }
    const size_t host_budget = /* an eighth of the host's memory, shared by the workers of --devices */
        (size_t)sysconf(_SC_PHYS_PAGES) * (size_t)sysconf(_SC_PAGESIZE) / 8 / (size_t)(hooks && hooks->workers > 1 ? hooks->workers : 1);
    for (int step = 0; !fatal && !lost && !kb_stop_signal; step++) {
        int ci = hooks && hooks->next_case ? hooks->next_case(hooks->ctx) : step; /* a --devices worker: the queue's */
        if (ci < 0 || ci >= plan->ncases) break;
        kb_case *c = &plan->cases[ci];
        const kb_op *op = c->op;
        int any = 0; /* nothing to run for this op (check --impl of a plugin of one op): no setup */
        for (int ii = 0; ii < kb_op_nimpls(op) && !any; ii++) any = kb_impl_selected(o->impl, kb_op_impl(op, ii)->name);
        if (!any) { /* said done in its turn: the cases before it written first */
            while (head) drain_head(&head, 1, &sink);
            kb_report_skip(rep, c->index);
            rows_case_done(&sink);
            continue;
        }
        progress(o->quiet, ci, plan->ncases, c, t0);
        inflight *f = calloc(1, sizeof *f); /* the case until its rows are written */
        if (!f) abort();
        f->c = c;
        f->first_row = 1;
        double *wall = f->wall, tw = kb_now_s(); /* the case's phases, on its first row (kb_wall_phase) */
        kb_state *st = &f->st;
        double bytes = op->bytes(c), flops = op->flops(c), copy = 0, gemm = 0, shape_tf = 0;
        /* every row gets GB/s against copy (a compute-bound op's small shapes,
         * such as MLP decode, are bound by memory), and TFLOP/s against the
         * op's GEMM ceiling where it has one */
        const kb_gemm_key gk = kb_case_gemm_key(c);
        /* The case's own ceilings are measured while the reference runs on the
         * host (below) where their buffers fit beside the case's, else first;
         * so are the sweep's GEMM ladders, at the first case that compares
         * with them (at the first case, the start every worker of --devices
         * pays: its first reference hides behind them; the default sweep's
         * one MLP case had four workers search the bf16 ladder, one needs it) */
        const int lad_now = ladders_due && gk >= 0 && gk < KB_NGEMM; /* so that a --devices worker with no such case measures none */
        ladders_due &= !lad_now;
        double lad_s = 0; /* the ladders' seconds, at this case */
        size_t free_b = 0, total_b = 0;
        const int late = !info->check_mode && !kb_device_free_mem(&free_b, &total_b) &&
                         free_b > op->device_bytes(c) + kb_case_ceilings_bytes(c) +
                                      (lad_now ? ladders_bytes(plan) : 0) + ((size_t)256 << 20);
        if (lad_now && !late) lad_s = ladders_timed(plan, timer, o, &dev, rep, &fatal, &exit_code);
        if (!info->check_mode && !late && !fatal && kb_case_ceilings(timer, c, o, &copy, &shape_tf)) {
            fatal = 1; /* the context is lost: no row of this case or later ones */
            exit_code = KB_EXIT_CUDA;
        }
        if (!fatal) kb_last_error[0] = 0; /* else why, for the message that stops the sweep */
        wall[KB_WALL_CEILINGS] = kb_now_s() - tw - lad_s; /* the ladders added below, but at the first case */
        tw = kb_now_s();
        int setup_rc = op->setup(c, st);
        wall[KB_WALL_SETUP] = kb_now_s() - tw;
        char setup_err[512] = "";
        if (setup_rc) snprintf(setup_err, sizeof setup_err, "setup: %s", kb_last_error);
        /* The CPU reference runs on a thread of its own while the GPU times
         * the implementations (it was the host work that more GPUs of one
         * host did not cut: issue 24). Their outputs wait on the host, rows
         * pending, until it is done (the GPU may go on to the next cases:
         * inflight); kbench check (nothing timed) and --no-verify keep it in
         * line. */
        f->rt = (ref_task){op, c, st, 0, &ref_done, 0, hooks, 0};
        const int want_ref = !setup_rc && !o->no_verify && !fatal, bg_ref = want_ref && !info->check_mode;
        if (bg_ref) {
            f->rt.seq = ++ref_seq;
            if (kb_bg_start(&f->bg, ref_main, &f->rt)) { /* no thread: it ran here, nothing hid it */
                wall[KB_WALL_WAIT] = f->bg.run_s;
                wall[KB_WALL_REFERENCE] = f->bg.run_s - f->rt.queued_s;
            }
            else
                f->bg_live = 1;
        } else if (want_ref) {
            tw = kb_now_s();
            op->reference(c, st);
            wall[KB_WALL_REFERENCE] = kb_now_s() - tw;
        }
        inflight **tail = &head; /* after the cases still waiting for their references */
        while (*tail) tail = &(*tail)->next;
        *tail = f;
        if (lad_now && late) lad_s = ladders_timed(plan, timer, o, &dev, rep, &fatal, &exit_code);
        if (gk >= 0 && gk < KB_NGEMM) gemm = dev.gemm_tflops[gk];
        if (late && !fatal) {
            tw = kb_now_s();
            if (kb_case_ceilings(timer, c, o, &copy, &shape_tf)) {
                fatal = 1;
                exit_code = KB_EXIT_CUDA;
            }
            wall[KB_WALL_CEILINGS] = kb_now_s() - tw;
        }
        if (!start_due) wall[KB_WALL_CEILINGS] += lad_s;
        else { /* the first case about to be timed: the run's start, the ladders in it not in the case */
            start_due = 0;
            const double end = kb_now_s(), parts[KB_START_NPARTS] = {mark[1] - mark[0], mark[2] - mark[1],
                                                                    end - mark[2] - lad_s, lad_s};
            kb_report_start(rep, end - mark[0], parts);
        }
        const int nimpl = kb_op_nimpls(op);
        pending *pend = f->pend = calloc((size_t)nimpl + 1, sizeof *pend);
        if (!pend) abort();
        double base_ms = 0;
        char *label = f->label;
        kb_case_label(c, label, sizeof f->label);
        for (int ii = 0; ii < nimpl && !fatal && !lost && !kb_stop_signal; ii++) {
            const kb_impl *impl = kb_op_impl(op, ii);
            if (!kb_impl_selected(o->impl, impl->name)) continue;
            const char *pl = kb_plugin_path(impl);
            if (pl) { /* a plugin may crash or hang the process (supports, prepare, launch): the rows before it written first */
                while (head && drain_head(&head, 1, &sink)) {}
                rows_sync(&sink, 1);
            }
            pending *p = &pend[f->npend];
            memset(p, 0, sizeof *p);
            p->impl = impl;
            kb_row *row = &p->row;
            row->c = c;
            row->impl = impl->name;
            row->bytes = bytes;
            row->flops = flops;
            row->verified = -1;
            row->copy_gbps = copy;
            row->gemm_tflops = gemm;
            row->cublas_shape_tflops = shape_tf;
            row->timing = o->timing;
            char nv[1200];
            if (setup_rc) {
                snprintf(row->error, sizeof row->error, "%s", setup_err);
                if (kb_cuda_sticky(setup_rc)) fatal = 1;
                exit_code = exit_code ? exit_code : KB_EXIT_CUDA;
                p->e = setup_rc;
                f->npend++;
                continue;
            }
            /* n/a: the implementation cannot take this case here (not a failure), by
             * its supports() or, once planned, by its prepare() */
            kb_impl_run run;
            memset(&run, 0, sizeof run);
            run.impl = impl;
            kb_last_error[0] = 0;
            int e = 0, na = kb_impl_supports(impl, c, &dev.attr, row->reason, sizeof row->reason);
            if (!na) { /* untimed: plan, allocate the implementation's workspace, name the kernel */
                e = impl->prepare ? impl->prepare(c, st, &dev.attr, &run) : 0;
                if (e == KB_NA) {
                    na = 1;
                    snprintf(row->reason, sizeof row->reason, "%s", run.why[0] ? run.why : "cannot take this case");
                    if (impl->release) impl->release(c, st, &run);
                }
            }
            if (na) {
                row->verified = KB_V_NA;
                p->na = 1;
                f->npend++;
                progress_done(o->quiet);
                continue;
            }
            if (!run.kernel[0]) snprintf(run.kernel, sizeof run.kernel, "%s", impl->name);
            snprintf(row->kernel, sizeof row->kernel, "%s", run.kernel);
            snprintf(nv, sizeof nv, "%s/%s/%s [%s] %s", op->name, kb_case_enum(c, "pass") ? kb_case_enum(c, "pass") : "-",
                     impl->name, run.kernel, label);
            if (e) {
                if (!kb_last_error[0])
                    snprintf(kb_last_error, sizeof kb_last_error, "%s prepare: %s", impl->name, cudaGetErrorString((cudaError_t)e));
            }
            char what[1400];
            snprintf(what, sizeof what, "%s (%s%s) on %s %s", impl->name, pl ? "plugin " : "kernel ", pl ? pl : run.kernel,
                     op->name, label);
            /* a launch or a batch of samples finishes well within --timeout;
             * nothing finished for much longer is a hung kernel */
            kb_watch_arm(what, 2 * o->timeout + 60);
            if (!e && !o->no_verify) { /* its outputs kept for the comparison, once the reference is done */
                nvtxRangePushA(nv);
                tw = kb_now_s();
                e = verify_run(impl, c, st, &run, stream, info->check_mode, p->h, &p->ran, p->nondet, sizeof p->nondet);
                row->wall[KB_WALL_VERIFY] = kb_now_s() - tw;
                nvtxRangePop();
            }
            if (!e && !info->check_mode) {
                launch_ctx l = {impl, c, st, &run};
                kb_time_extra x = {.keep = o->save_samples};
                tw = kb_now_s();
                e = kb_time(timer, launch_fn, &l, o, nv, &row->st, &x);
                row->wall[KB_WALL_TIME] = kb_now_s() - tw;
                row->samples = x.samples;
                row->cond = x.cond;
                if (!e && row->st.median > 0) {
                    row->gbps = bytes / (row->st.median * 1e-3) / 1e9;
                    row->tflops = flops / (row->st.median * 1e-3) / 1e12;
                    if (copy > 0) row->pct_of_copy = 100.0 * row->gbps / copy;
                    if (gemm > 0) row->pct_of_gemm = 100.0 * row->tflops / gemm;
                    if (shape_tf > 0) row->pct_of_cublas_shape = 100.0 * row->tflops / shape_tf;
                    snprintf(row->note, sizeof row->note, "%s",
                             kb_row_note(row->pct_of_copy, row->pct_of_gemm, bytes, dev.l2_bytes, o->hot));
                    if (ii == 0) base_ms = row->st.median;
                    if (base_ms > 0) row->speedup = base_ms / row->st.median;
                }
            }
            if (e) {
                snprintf(row->error, sizeof row->error, "%s", kb_last_error[0] ? kb_last_error : cudaGetErrorString(e));
                if (kb_cuda_sticky(e)) {
                    fatal = 1;
                    snprintf(fatal_what, sizeof fatal_what, "%s: %s", what, row->error);
                }
                exit_code = KB_EXIT_CUDA;
                cudaGetLastError();
                p->e = e;
            }
            kb_watch_disarm();
            if (impl->release) impl->release(c, st, &run);
            progress_done(o->quiet);
            if (kb_stop_signal) { /* this row is unfinished: it is not written */
                free(row->samples);
                free_all(p->h, KB_MAX_OUTPUTS);
                break;
            }
            f->npend++;
            while (head && drain_head(&head, 0, &sink)) {} /* the rows whose reference is done, in order */
        }
        f->complete = 1;
        f->aborted = fatal || lost || kb_stop_signal; /* implementations may have no row */
        while (head && drain_head(&head, 0, &sink)) {}
        /* this case and the ones before it may wait for their references
         * while the GPU goes on, within the bounds of may_wait */
        while (head && (fatal || lost || kb_stop_signal || !may_wait(head, plan_need, host_budget)))
            drain_head(&head, 1, &sink);
    }
    while (head) { /* the last cases' references */
        head->complete = 1;
        drain_head(&head, 1, &sink);
    }
    if (hooks && hooks->case_done) rows_sync(&sink, 1); /* the cases not said done yet */
    progress_done(o->quiet);
    kb_uncatch_stop(old_sig);
    char werr[KB_ERRLEN] = "";
    int write_failed = kb_report_close(rep, werr, sizeof werr) != 0;
    if (write_failed) {
        fprintf(stderr, "kbench: %s%s\n", werr, lost ? "; the sweep stopped there, the rows before it are in the files" : "");
        exit_code = KB_EXIT_USAGE;
    }
    kb_timer_destroy(timer);
    if (fatal && fatal_what[0])
        fprintf(stderr, "kbench: %s; the GPU context is lost: the sweep stops here%s%s%s\n", fatal_what,
                kb_watch_files_text()[0] ? " (the rows before it are in " : "", kb_watch_files_text(), kb_watch_files_text()[0] ? ")" : "");
    else if (fatal)
        fprintf(stderr, "kbench: the GPU context is lost (%s); stopping the sweep\n", kb_last_error);
    if (kb_stop_signal) {
        fprintf(stderr, "kbench: stopped by %s; %d finished row%s kept%s%s\n", kb_stop_signal == SIGINT ? "SIGINT" : "SIGTERM",
                nrows, nrows == 1 ? "" : "s", kb_watch_files_text()[0] ? " in " : "", kb_watch_files_text());
        exit_code = 128 + kb_stop_signal;
    }
    if (info->check_mode) printf("check: %d passed, %d failed, %d n/a\n", fin.npass, fin.nfail, fin.nna);
    else if (!o->quiet && !write_failed && !kb_stop_signal && (csv[0] || json[0])) printf("\nwrote %s %s\n", csv, json);
    return exit_code;
}
