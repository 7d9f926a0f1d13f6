/* Running a plan: for each case, setup, reference, then for each
 * implementation verify (poisoned outputs) and time; one row each. */
#include "bg.h"
#include "ceilings.h"
#include "copy.h"
#include "device.h"
#include "gemm.h"
#include "hooks.h"
#include "isolate.h"
#include "lifecycle.h"
#include "presample.h"
#include "progress.h"
#include "rows.h"
#include "run.h"
#include "run_int.h"
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
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>



/* Case i begins: its line (progress.h), on stderr, unless --quiet. */
static void progress(run_state *R, int i, const kb_case *c)
{
    const int tty = isatty(2);
    const double now = kb_now_s();
    if (R->o->quiet || !kb_progress_due(tty, now, &R->progress_at)) return;
    char label[512];
    kb_case_label(c, label, sizeof label);
    kb_progress_print(stderr, tty, i, R->plan->ncases, now - R->t0, c->op->name, label);
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

/* The plan checked, the device opened, and no
 * case larger than its free memory. 0, or the exit code (said). */
static int open_device(run_state *R)
{
    char err[KB_ERRLEN];
    if (kb_plan_check(R->plan, R->info, err, sizeof err)) {
        fprintf(stderr, "kbench: %s\n", err);
        return KB_EXIT_USAGE;
    }
    int rc = kb_device_open(&R->dev);
    if (rc) return rc;
    if (!R->dev.nvml.ok && !R->o->quiet && !R->info->check_mode)
        fprintf(stderr, "kbench: %s: the rows' clock, power and throttle columns stay empty\n",
                R->dev.nvml.why[0] ? R->dev.nvml.why : "NVML not available");
    /* Refuse a case too big for the device before anything is allocated for it. */
    size_t free_b = 0, total_b = 0;
    kb_device_free_mem(&free_b, &total_b);
    for (int i = 0; i < R->plan->ncases; i++) {
        const kb_case *c = &R->plan->cases[i];
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
    return 0;
}

/* The timer, the device's copy ceiling (not under check), the report
 * opened. 0, or the exit code (said; the timer destroyed). */
static int open_timer_report(run_state *R)
{
    char err[KB_ERRLEN];
    kb_opts *o = R->o;
    kb_device *dev = &R->dev;
    if (kb_timer_create(&R->timer, dev)) {
        fprintf(stderr, "kbench: %s\n", kb_last_error);
        kb_timer_destroy(R->timer);
        return KB_EXIT_CUDA;
    }
    R->mark[1] = R->mark[2] = kb_now_s();
    if (kb_output_paths(R->plan, R->info, R->csv, R->json, sizeof R->csv, err, sizeof err)) { /* checked before: not here */
        fprintf(stderr, "kbench: %s\n", err);
        kb_timer_destroy(R->timer);
        return KB_EXIT_USAGE;
    }
    if (!R->info->check_mode) {
        int by = -1;
        int e = kb_copy_gbps(R->timer, (double)(1u << 29), (double)(1u << 29), o, &dev->copy_gbps, &by);
        if (e) {
            fprintf(stderr, "kbench: %s\n", kb_last_error);
            kb_timer_destroy(R->timer);
            return KB_EXIT_CUDA;
        }
        kb_device_clocks(dev);
        R->mark[2] = kb_now_s();
        if (!o->quiet)
            printf("%s, %d SMs, %.0f MiB L2, copy %.0f GB/s (1 GiB, median, %s)\n", dev->name, dev->sm_count,
                   (double)dev->l2_bytes / (1 << 20), dev->copy_gbps, by >= 0 ? kb_copy_candidate_name(by) : "-");
    }
    if (R->hooks && R->hooks->ladder) kb_timer_share_ladder(R->timer, R->hooks->ladder);
    /* the whole sweep's ops: every shard writes the same CSV columns */
    R->rep = kb_report_open(R->csv, R->json, R->plan->ops_all, R->plan->nops_all, dev, R->info->argc, R->info->argv,
                            o->quiet || R->info->check_mode, err, sizeof err);
    if (!R->rep) {
        fprintf(stderr, "kbench: %s\n", err);
        kb_timer_destroy(R->timer);
        return KB_EXIT_USAGE;
    }
    kb_report_sweep(R->rep, R->plan->sweep_id, R->plan->sweep_cases, R->plan->shard_k, R->plan->shard_n,
                    R->hooks ? R->hooks->worker : -1);
    if (!R->info->check_mode) kb_report_order(R->rep, o->order);
    if (!o->quiet && (R->csv[0] || R->json[0]))
        printf("writing%s%s%s%s\n", R->csv[0] ? " " : "", R->csv, R->json[0] ? " " : "", R->json);
    kb_watch_files(R->csv, R->json);
    return 0;
}

/* What the case loop starts from: the tally, the sink of rows, the bounds
 * on the cases that may wait for their references. */
static void start_cases(run_state *R)
{
    R->exit_code = KB_EXIT_OK;
    R->fin = (tally){0, 0, 0, &R->exit_code};
    R->sink = (row_sink){R->rep, &R->fin, &R->nrows, &R->lost, R->info->check_mode, R->info};
    R->t0 = R->progress_at = kb_now_s();
    R->stream = kb_timer_stream(R->timer);
    R->ladders_due = R->start_due = !R->info->check_mode;
    for (int i = 0; i < R->plan->ncases; i++) {
        const kb_case *c = &R->plan->cases[i];
        const size_t n = c->op->device_bytes(c) + kb_case_ceilings_bytes(c);
        if (n > R->plan_need) R->plan_need = n;
    }
    const int workers = R->hooks && R->hooks->workers > 1 ? R->hooks->workers : 1;
    R->host_budget = (size_t)sysconf(_SC_PHYS_PAGES) * (size_t)sysconf(_SC_PAGESIZE) / 8 / (size_t)workers;
}

/* The CPU reference runs on a thread of its own while the GPU times the
 * implementations (it was the host work that more GPUs of one host did not
 * cut: issue 24). Their outputs wait on the host, rows pending, until it is
 * done (the GPU may go on to the next cases: inflight); kbench check
 * (nothing timed) and --no-verify keep it in line. */
static void start_reference(run_state *R, inflight *f, int want_ref)
{
    const kb_case *c = f->c;
    const kb_op *op = c->op;
    double *wall = f->wall;
    f->rt = (ref_task){op, c, &f->st, 0, &R->ref_done, 0};
    const int bg_ref = want_ref && !R->info->check_mode;
    if (bg_ref) {
        f->rt.seq = ++R->ref_seq;
        if (kb_bg_start(&f->bg, ref_main, &f->rt)) { /* no thread: it ran here, nothing hid it */
            wall[KB_WALL_WAIT] = f->bg.run_s;
            wall[KB_WALL_REFERENCE] = f->bg.run_s - f->rt.queued_s;
        }
        else
            f->bg_live = 1;
    } else if (want_ref) {
        const double tw = kb_now_s();
        op->reference(c, &f->st);
        wall[KB_WALL_REFERENCE] = kb_now_s() - tw;
    }
}

/* Case c's ceilings, setup and reference (on its own thread, or in line),
 * its rows' figures into K; the case joins the waiting ones (R->head). The
 * sweep's GEMM ladders come at the first case that compares with them. */
static void prepare_case(run_state *R, case_state *K)
{
    kb_case *c = K->c;
    const kb_op *op = c->op;
    inflight *f = K->f;
    double *wall = f->wall, tw = kb_now_s(); /* the case's phases, on its first row (kb_wall_phase) */
    kb_state *st = &f->st;
    K->bytes = op->bytes(c);
    K->flops = op->flops(c);
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
    const int lad_now = R->ladders_due && gk >= 0 && gk < KB_NGEMM; /* a --devices worker with no such case measures none */
    R->ladders_due &= !lad_now;
    double lad_s = 0; /* the ladders' seconds, at this case */
    size_t free_b = 0, total_b = 0;
    const int check = R->info->check_mode;
    const int late = !check && !kb_device_free_mem(&free_b, &total_b) &&
                     free_b > op->device_bytes(c) + kb_case_ceilings_bytes(c) +
                                  (lad_now ? ladders_bytes(R->plan) : 0) + ((size_t)256 << 20);
    if (lad_now && !late) lad_s = ladders_timed(R->plan, R->timer, R->o, &R->dev, R->rep, &R->fatal, &R->exit_code);
    if (!check && !late && !R->fatal && kb_case_ceilings(R->timer, c, R->o, &K->copy, &K->shape_tf)) {
        R->fatal = 1; /* the context is lost: no row of this case or later ones */
        R->exit_code = KB_EXIT_CUDA;
    }
    if (!R->fatal) kb_last_error[0] = 0; /* else why, for the message that stops the sweep */
    wall[KB_WALL_CEILINGS] = kb_now_s() - tw - lad_s; /* the ladders added below, but at the first case */
    tw = kb_now_s();
    K->setup_rc = kb_case_setup(c, st); /* the inputs whole before any prepare reads them */
    wall[KB_WALL_SETUP] = kb_now_s() - tw;
    if (K->setup_rc) snprintf(K->setup_err, sizeof K->setup_err, "setup: %s", kb_last_error);
    start_reference(R, f, !K->setup_rc && !R->o->no_verify && !R->fatal);
    inflight **tail = &R->head; /* after the cases still waiting for their references */
    while (*tail) tail = &(*tail)->next;
    *tail = f;
    if (lad_now && late) lad_s = ladders_timed(R->plan, R->timer, R->o, &R->dev, R->rep, &R->fatal, &R->exit_code);
    if (gk >= 0 && gk < KB_NGEMM) K->gemm = R->dev.gemm_tflops[gk];
    if (late && !R->fatal) {
        tw = kb_now_s();
        if (kb_case_ceilings(R->timer, c, R->o, &K->copy, &K->shape_tf)) {
            R->fatal = 1;
            R->exit_code = KB_EXIT_CUDA;
        }
        wall[KB_WALL_CEILINGS] = kb_now_s() - tw;
    }
    if (!R->start_due) wall[KB_WALL_CEILINGS] += lad_s;
    else { /* the first case about to be timed: the run's start, the ladders in it not in the case */
        R->start_due = 0;
        const double end = kb_now_s(), parts[KB_START_NPARTS] = {R->mark[1] - R->mark[0], R->mark[2] - R->mark[1],
                                                                end - R->mark[2] - lad_s, lad_s};
        kb_report_start(R->rep, end - R->mark[0], parts);
    }
}
/* Case ci: its rows, pending until its reference is done; it may wait for
 * it while the GPU goes on, within the bounds of may_wait. */
static void run_case(run_state *R, int ci)
{
    kb_case *c = &R->plan->cases[ci];
    const kb_op *op = c->op;
    int any = 0; /* nothing to run for this op (check --impl of a plugin of one op): no setup */
    for (int ii = 0; ii < kb_op_nimpls(op) && !any; ii++) any = kb_impl_named(R->o->impl, kb_op_impl(op, ii));
    if (!any) { /* said done in its turn: the cases before it written first */
        while (R->head) drain_head(&R->head, 1, &R->sink);
        if (kb_report_skip(R->rep, c->index)) R->lost = 1; /* its mark not on disk: not said done, the run stops */
        rows_case_done(&R->sink);
        return;
    }
    progress(R, ci, c);
    inflight *f = calloc(1, sizeof *f); /* the case until its rows are written */
    if (!f) abort();
    f->c = c;
    f->first_row = 1;
    case_state K = {.f = f, .c = c};
    prepare_case(R, &K);
    const int nimpl = kb_op_nimpls(op);
    f->pend = calloc((size_t)nimpl + 1, sizeof *f->pend);
    if (!f->pend) abort();
    kb_case_label(c, f->label, sizeof f->label);
    if (!strcmp(R->o->order, "turns") && !R->info->check_mode && !K.setup_rc && !R->fatal && !R->lost)
        run_case_turns(R, &K);
    else
        for (int ii = 0; ii < nimpl && !R->fatal && !R->lost && !kb_stop_signal; ii++)
            if (run_impl(R, &K, ii)) break;
    f->complete = 1;
    f->aborted = R->fatal || R->lost || kb_stop_signal; /* implementations may have no row */
    while (R->head && drain_head(&R->head, 0, &R->sink)) {}
    while (R->head && (R->fatal || R->lost || kb_stop_signal || !may_wait(R->head, R->plan_need, R->host_budget)))
        drain_head(&R->head, 1, &R->sink);
}

/* kbench check's closing lines: each implementation's passed, failed and
 * n/a, then the whole; an implementation named by --impl that passed no
 * case fails the check (exit 1), saying so: a library that refuses every
 * shape check has was checked on nothing. */
static void check_summary(run_state *R)
{
    const tally *t = &R->fin;
    for (int k = 0; k < t->nper; k++)
        printf("check: %s %s: %d passed, %d failed, %d n/a\n", t->per[k].op->name, t->per[k].impl, t->per[k].pass,
               t->per[k].fail, t->per[k].na);
    for (int k = 0; k < t->nper && R->o->impl[0] && !kb_stop_signal && !R->fatal; k++) {
        if (t->per[k].pass) continue;
        printf("check: %s %s was named (--impl) and passed no case (%d failed, %d n/a)\n", t->per[k].op->name,
               t->per[k].impl, t->per[k].fail, t->per[k].na);
        if (R->exit_code == KB_EXIT_OK) R->exit_code = KB_EXIT_VERIFY;
    }
    printf("check: %d passed, %d failed, %d n/a\n", t->npass, t->nfail, t->nna);
}

/* The last cases' rows written, the report closed, and what stopped the
 * sweep said. The exit code. */
static int finish(run_state *R, const struct sigaction old_sig[2])
{
    while (R->head) { /* the last cases' references */
        R->head->complete = 1;
        drain_head(&R->head, 1, &R->sink);
    }
    progress_done(R->o->quiet);
    kb_isolate_stop();
    kb_uncatch_stop(old_sig);
    char werr[KB_ERRLEN] = "";
    const int write_failed = kb_report_close(R->rep, werr, sizeof werr) != 0;
    if (write_failed) {
        fprintf(stderr, "kbench: %s%s\n", werr, R->lost ? "; the sweep stopped there, the rows before it are in the files" : "");
        R->exit_code = KB_EXIT_USAGE;
    }
    kb_timer_destroy(R->timer);
    const char *files = kb_watch_files_text();
    if (R->fatal && R->fatal_what[0])
        fprintf(stderr, "kbench: %s; the GPU context is lost: the sweep stops here%s%s%s\n", R->fatal_what,
                files[0] ? " (the rows before it are in " : "", files, files[0] ? ")" : "");
    else if (R->fatal)
        fprintf(stderr, "kbench: the GPU context is lost (%s); stopping the sweep\n", kb_last_error);
    if (kb_stop_signal) {
        fprintf(stderr, "kbench: stopped by %s; %d finished row%s kept%s%s\n", kb_stop_signal == SIGINT ? "SIGINT" : "SIGTERM",
                R->nrows, R->nrows == 1 ? "" : "s", files[0] ? " in " : "", files);
        R->exit_code = 128 + kb_stop_signal;
    }
    if (R->info->check_mode) check_summary(R);
    else if (!R->o->quiet && !write_failed && !kb_stop_signal && (R->csv[0] || R->json[0]))
        printf("\nwrote %s %s\n", R->csv, R->json);
    return R->exit_code;
}

int kb_run_plan(kb_plan *plan, const kb_run_info *info)
{
    run_state *R = calloc(1, sizeof *R);
    if (!R) abort();
    R->mark[0] = kb_now_s();
    R->plan = plan;
    R->info = info;
    R->hooks = info->hooks;
    R->o = &plan->opts;
    int rc = open_device(R);
    if (!rc) rc = open_timer_report(R);
    if (rc) {
        free(R);
        return rc;
    }
    struct sigaction old_sig[2];
    kb_catch_stop(old_sig);
    start_cases(R);
    for (int step = 0; !R->fatal && !R->lost && !kb_stop_signal; step++) {
        const kb_run_hooks *h = R->hooks;
        const int ci = h && h->next_case ? h->next_case(h->ctx) : step; /* a --devices worker: the queue's */
        if (ci < 0 || ci >= plan->ncases) break;
        run_case(R, ci);
    }
    rc = finish(R, old_sig);
    free(R);
    return rc;
}
