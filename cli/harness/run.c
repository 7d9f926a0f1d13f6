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
#include <limits.h>
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
    R->t0 = kb_now_s();
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
/* A row's fields from its case, before its implementation runs. */
static void row_start(kb_row *row, const case_state *K, const kb_impl *impl, const kb_opts *o)
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
static int impl_prepare(run_state *R, const case_state *K, const kb_impl *impl, kb_row *row, kb_impl_run *run, int *e)
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
static void nvtx_label(const case_state *K, const kb_impl *impl, const kb_impl_run *run, char *nv, size_t n)
{
    const kb_case *c = K->c;
    snprintf(nv, n, "%s/%s/%s [%s] %s", c->op->name, kb_case_enum(c, "pass") ? kb_case_enum(c, "pass") : "-",
             impl->name, run->kernel, K->f->label);
}

/* A prepared implementation's verify run, its outputs kept for the
 * comparison once the reference is done; the watchdog armed (what: the
 * implementation and case, for its message). e: prepare's error. The CUDA
 * error, 0. */
static int impl_verify(run_state *R, case_state *K, pending *p, kb_impl_run *run, const char *what, int e)
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
static kb_time_extra time_extra(const kb_opts *o, const kb_impl *impl, const kb_impl_run *run)
{
    return (kb_time_extra){.keep = o->save_samples, .before = kb_presample_any(run) ? presample_fn : NULL,
                           .interpreted = impl->interpreted};
}

/* A timed row's samples, conditions, rates and notes (e: the timing's error). */
static void row_timed(run_state *R, case_state *K, int ii, kb_row *row, const kb_time_extra *x, int e)
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
static void run_isolated(run_state *R, case_state *K, int ii, pending *p)
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
static void impl_what(const case_state *K, const kb_impl *impl, const kb_impl_run *run, char *what, size_t n)
{
    const char *pl = kb_plugin_path(impl);
    snprintf(what, n, "%s (%s%s) on %s %s", impl->name, pl ? "plugin " : "kernel ", pl ? pl : run->kernel,
             K->c->op->name, K->f->label);
}

/* A measured implementation's row closed: its error (e; kb_last_error says
 * it), the watchdog disarmed, its in-place inputs restored and its run
 * released. 1: the sweep was stopped in it (the row freed, not written). */
static int impl_close(run_state *R, case_state *K, pending *p, kb_impl_run *run, const char *what, int e)
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
static int run_impl(run_state *R, case_state *K, int ii)
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
 * batch each in round robin; each row's samples and rates. */
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
static int run_case_turns(run_state *R, case_state *K)
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
    progress(R->o->quiet, ci, R->plan->ncases, c, R->t0);
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
