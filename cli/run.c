/* Running a plan: for each case, setup, reference, then for each
 * implementation verify (poisoned outputs) and time; one row each. */
#include "harness.h"
#include "rows.h"

#include "../kernels/kernels.h"

#include <cuda_runtime_api.h>
#include <math.h>
#include <signal.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


static void human_bytes(double b, char *buf, size_t n)
{
    const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int i = 0;
    while (b >= 1024 && i < 4) { b /= 1024; i++; }
    snprintf(buf, n, i ? "%.1f %s" : "%.0f %s", b, u[i]);
}

/* Is impl name selected by the --impl filter (comma list)? */
static int impl_selected(const char *filter, const char *name) { return !filter[0] || kb_list_has(filter, name); }

static int check_impl_filter(const kb_plan *plan, char *err, size_t errlen)
{
    const char *f = plan->opts.impl;
    const kb_op *const *ops = plan->ops_all; /* the whole sweep's (kb_plan_shard): every shard takes the same names */
    const int nops = plan->nops_all;
    for (const char *s = f; *s;) {
        size_t l = strcspn(s, ",");
        int found = 0;
        const char *names[64];
        int nn = 0;
        for (int c = 0; c < nops && !found; c++) {
            const kb_op *op = ops[c];
            for (int i = 0; i < kb_op_nimpls(op); i++) {
                const char *nm = kb_op_impl(op, i)->name;
                if (strlen(nm) == l && !strncmp(nm, s, l)) found = 1;
                if (nn < 64) names[nn++] = nm;
            }
        }
        if (!found) {
            char w[64];
            snprintf(w, sizeof w, "%.*s", (int)(l < 63 ? l : 63), s);
            const char *near = kb_nearest(w, names, nn);
            kb_errf(err, errlen, "--impl: no implementation '%s' in this sweep%s%s%s", w, near ? " (did you mean '" : "",
                    near ? near : "", near ? "'?)" : " (see: kbench list)");
            return -1;
        }
        s += l + (s[l] == ',');
    }
    return 0;
}

/* kbench.h */
void kb_output_paths(const kb_plan *plan, const kb_run_info *info, char *csv, char *json, size_t n)
{
    const kb_opts *o = &plan->opts;
    snprintf(csv, n, "%s", o->csv);
    snprintf(json, n, "%s", o->json);
    if (!info->check_mode) {
        if (!csv[0]) snprintf(csv, n, "%s/%s.csv", o->out_dir, info->name);
        if (!json[0]) snprintf(json, n, "%s/%s.json", o->out_dir, info->name);
    }
}

/* Everything that can be refused before the GPU is touched; the plugins
 * (--plugin, --impl NAME=PATH, a sweep file's "plugins") are loaded here. */
int kb_plan_check(kb_plan *plan, const kb_run_info *info, char *err, size_t errlen)
{
    if (kb_plugin_load_list(plan->opts.plugin, err, errlen) ||
        kb_plugin_take_impls(plan->opts.impl, sizeof plan->opts.impl, err, errlen))
        return -1;
    if (check_impl_filter(plan, err, errlen)) return -1;
    char csv[1100], json[1100];
    kb_output_paths(plan, info, csv, json, sizeof csv);
    if (kb_output_check(csv, "--csv", err, errlen) || kb_output_check(json, "--json", err, errlen)) return -1;
    return 0;
}

int kb_dry_run(kb_plan *plan, const kb_run_info *info, FILE *out)
{
    char err[KB_ERRLEN];
    if (kb_plan_check(plan, info, err, sizeof err)) {
        fprintf(stderr, "kbench: %s\n", err);
        return KB_EXIT_USAGE;
    }
    double total = 0;
    for (int i = 0; i < plan->ncases; i++) {
        const kb_case *c = &plan->cases[i];
        char label[1024], mem[32], mv[32];
        kb_case_label(c, label, sizeof label);
        double db = (double)c->op->device_bytes(c);
        human_bytes(db, mem, sizeof mem);
        human_bytes(c->op->bytes(c), mv, sizeof mv);
        if (db > total) total = db;
        fprintf(out, "%4d  %-6s %-70s device %10s  moves %10s\n", c->index + 1, c->op->name, label, mem, mv);
    }
    char mx[32];
    human_bytes(total, mx, sizeof mx);
    fprintf(out, "%d cases; the largest needs %s of device memory (plus the L2 flush buffer)\n", plan->ncases, mx);
    if (plan->shard_n)
        fprintf(out, "shard %d/%d of sweep %s (%d cases in all)\n", plan->shard_k, plan->shard_n, plan->sweep_id,
                plan->sweep_cases);
    return KB_EXIT_OK;
}

int kb_impl_supports(const kb_impl *impl, const kb_case *c, const kb_devattr *d, char *why, size_t n)
{
    why[0] = 0;
    for (int i = 0; i < c->op->nparams; i++) {
        const kb_param *p = &c->op->params[i];
        if (!p->tunable || c->v[i].num == 0) continue; /* auto */
        if (!kb_list_has(impl->tunables, p->name)) {
            char v[64];
            kb_format_value(p, &c->v[i], v, sizeof v);
            snprintf(why, n, "%s takes no %s (%s=%s; auto for it)", impl->name, p->name, p->name, v);
            return 1;
        }
    }
    if (impl->plugin ? kb_plugin_supports(impl, c, why, n) : impl->supports && impl->supports(c, d, why, n)) {
        if (!why[0]) snprintf(why, n, "%s cannot take this case", impl->name);
        return 1;
    }
    return 0;
}


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

volatile sig_atomic_t kb_stop_signal;

static void on_stop(int sig) { kb_stop_signal = sig; }

/* SIGINT and SIGTERM (Ctrl-C, Slurm's time limit) stop the sweep after the
 * rows finished so far; a second one ends the process at once (SA_RESETHAND). */
void kb_catch_stop(struct sigaction old[2])
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    kb_stop_signal = 0;
    sigaction(SIGINT, &sa, &old[0]);
    sigaction(SIGTERM, &sa, &old[1]);
}

void kb_uncatch_stop(const struct sigaction old[2])
{
    sigaction(SIGINT, &old[0], NULL);
    sigaction(SIGTERM, &old[1], NULL);
}

/* The watchdog: a kernel that never finishes (a plugin's, or kbench's own)
 * would block the sweep in a CUDA call for ever. While a row verifies and
 * times, every finished launch or batch of samples kicks it (kb_watch_kick);
 * a thread checks that one came within the limit; if not, it names the row,
 * says where the rows are and ends the process (exit 3): the GPU cannot be
 * freed from a hung kernel by this process, and the rows finished before are
 * already on disk. */
static struct {
    pthread_mutex_t mu;
    double deadline; /* 0: nothing armed */
    double limit;
    char what[1400], files[2300];
    int started;
} watch = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void *watch_main(void *arg)
{
    (void)arg;
    for (;;) {
        usleep(200000);
        pthread_mutex_lock(&watch.mu);
        int late = watch.deadline > 0 && kb_now_s() > watch.deadline;
        if (late) {
            fprintf(stderr, "\nkbench: %s: nothing finished for %.0f s: a hung kernel; stopping (exit 3)%s%s\n",
                    watch.what, watch.limit, watch.files[0] ? "; the rows written so far are in " : "", watch.files);
            fflush(stderr);
            _exit(KB_EXIT_CUDA);
        }
        pthread_mutex_unlock(&watch.mu);
    }
    return NULL;
}

void kb_watch_kick(void)
{
    pthread_mutex_lock(&watch.mu);
    if (watch.deadline > 0) watch.deadline = kb_now_s() + watch.limit;
    pthread_mutex_unlock(&watch.mu);
}

static void watch_arm(const char *what, double seconds)
{
    pthread_mutex_lock(&watch.mu);
    if (!watch.started) {
        pthread_t th;
        if (pthread_create(&th, NULL, watch_main, NULL) == 0) {
            pthread_detach(th);
            watch.started = 1;
        }
    }
    snprintf(watch.what, sizeof watch.what, "%s", what);
    watch.limit = seconds;
    watch.deadline = kb_now_s() + seconds;
    pthread_mutex_unlock(&watch.mu);
}

static void watch_disarm(void)
{
    pthread_mutex_lock(&watch.mu);
    watch.deadline = 0;
    pthread_mutex_unlock(&watch.mu);
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
    const int turn = kb_gate_enter(info->open_gate); /* the driver serialises CUDA's start: one worker at a time */
    int rc = kb_device_open(&dev);
    kb_gate_leave(info->open_gate, turn);
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
            human_bytes((double)need, a, sizeof a);
            human_bytes((double)free_b, b, sizeof b);
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
    if (info->ladder) kb_timer_share_ladder(timer, info->ladder);
    kb_report *rep = kb_report_open(csv, json, ops, nops, &dev, info->argc, info->argv, o->quiet || info->check_mode,
                                    err, sizeof err);
    if (!rep) {
        fprintf(stderr, "kbench: %s\n", err);
        kb_timer_destroy(timer);
        return KB_EXIT_USAGE;
    }
    kb_report_sweep(rep, plan->sweep_id, plan->sweep_cases, plan->shard_k, plan->shard_n, info->worker);
    if (info->case_done) kb_report_by_sync(rep);
    if (!o->quiet && (csv[0] || json[0]))
        printf("writing%s%s%s%s\n", csv[0] ? " " : "", csv, json[0] ? " " : "", json);
    snprintf(watch.files, sizeof watch.files, "%s%s%s", csv, csv[0] && json[0] ? " and " : "", json);

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
        (size_t)sysconf(_SC_PHYS_PAGES) * (size_t)sysconf(_SC_PAGESIZE) / 8 / (size_t)(info->workers > 1 ? info->workers : 1);
    for (int step = 0; !fatal && !lost && !kb_stop_signal; step++) {
        int ci = info->next_case ? info->next_case(info->next_ctx) : step; /* a --devices worker: the queue's */
        if (ci < 0 || ci >= plan->ncases) break;
        kb_case *c = &plan->cases[ci];
        const kb_op *op = c->op;
        int any = 0; /* nothing to run for this op (check --impl of a plugin of one op): no setup */
        for (int ii = 0; ii < kb_op_nimpls(op) && !any; ii++) any = impl_selected(o->impl, kb_op_impl(op, ii)->name);
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
        f->rt = (ref_task){op, c, st, 0, &ref_done, 0, info->cores, 0};
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
            if (!impl_selected(o->impl, impl->name)) continue;
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
            watch_arm(what, 2 * o->timeout + 60);
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
            watch_disarm();
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
    if (info->case_done) rows_sync(&sink, 1); /* the cases not said done yet */
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
                watch.files[0] ? " (the rows before it are in " : "", watch.files, watch.files[0] ? ")" : "");
    else if (fatal)
        fprintf(stderr, "kbench: the GPU context is lost (%s); stopping the sweep\n", kb_last_error);
    if (kb_stop_signal) {
        fprintf(stderr, "kbench: stopped by %s; %d finished row%s kept%s%s\n", kb_stop_signal == SIGINT ? "SIGINT" : "SIGTERM",
                nrows, nrows == 1 ? "" : "s", watch.files[0] ? " in " : "", watch.files);
        exit_code = 128 + kb_stop_signal;
    }
    if (info->check_mode) printf("check: %d passed, %d failed, %d n/a\n", fin.npass, fin.nfail, fin.nna);
    else if (!o->quiet && !write_failed && !kb_stop_signal && (csv[0] || json[0])) printf("\nwrote %s %s\n", csv, json);
    return exit_code;
}

int kb_device_copy_report(kb_device *d)
{
    kb_timer *t = NULL;
    kb_opts o;
    kb_opts_default(&o);
    if (kb_timer_create(&t, d)) {
        fprintf(stderr, "kbench: %s\n", kb_last_error);
        kb_timer_destroy(t);
        return KB_EXIT_CUDA;
    }
    const kb_gpu_info *nv = &d->nvml;
    if (nv->ok) {
        printf("NVML          %s, persistence %s, power limit %.0f W, ECC %s\n", nv->uuid,
               nv->persistence < 0 ? "?" : nv->persistence ? "on" : "off", nv->power_limit_w,
               nv->ecc < 0 ? "?" : nv->ecc ? "on" : "off");
        printf("              application clocks SM %d / memory %d MHz, max SM %d / memory %d MHz\n", nv->app_sm_mhz,
               nv->app_mem_mhz, nv->max_sm_mhz, nv->max_mem_mhz);
    } else {
        printf("NVML          %s: clocks, power and throttling are not recorded\n", nv->why);
    }
    /* the copy ceiling's candidates at three sizes and the read:write ratios
     * of the ops' rows (1:1 RoPE, 2:1 norm forward, 3:1 norm backward) */
    static const double sizes[] = {16.0 * (1 << 20), 256.0 * (1 << 20), 1024.0 * (1 << 20)};
    static const int ratio[] = {1, 2, 3};
    int nc = kb_copy_ncandidates();
    double rates[9][KB_COPY_MAX_CAND];
    printf("copy          GB/s (bytes read + written), median, L2 flushed; columns: MiB moved, read:write\n");
    printf("  %-22s", "candidate");
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) printf(" %5.0f %d:1", sizes[i] / (1 << 20), ratio[j]);
    printf("\n");
    fflush(stdout);
    for (int i = 0; i < 9; i++) {
        double total = sizes[i / 3], w = total / (1 + ratio[i % 3]);
        if (kb_copy_rates(t, total - w, w, &o, rates[i], 1)) {
            fprintf(stderr, "kbench: %s\n", kb_last_error);
            kb_timer_destroy(t);
            return KB_EXIT_CUDA;
        }
    }
    for (int c = 0; c < nc; c++) {
        printf("%c %-22s", kb_copy_in_ceiling(c) ? '+' : ' ', kb_copy_candidate_name(c));
        for (int i = 0; i < 9; i++) {
            int best = kb_best_rate(rates[i], nc) == c;
            printf("  %6.0f%s", rates[i][c], best ? "*" : " ");
        }
        printf("\n");
    }
    printf("  (+ a candidate of the rows' copy ceiling; * the best at that size and ratio)\n");
    int best = kb_best_rate(rates[6], nc); /* 1 GiB, 1:1 */
    d->copy_gbps = best < 0 ? 0 : rates[6][best];
    printf("GEMM          dense cuBLAS n^3, fp32 accumulation, median, L2 flushed, best of n = 2048 to 16384\n"
           "              (cuBLAS layout TN; NN and NT at the best n and its neighbours):\n");
    for (int k = 0; k < KB_NGEMM; k++) {
        fflush(stdout);
        if (kb_gemm_tflops(t, (kb_gemm_key)k, &o, &d->gemm_tflops[k], &d->gemm_n[k], &d->gemm_layout[k], NULL)) {
            fprintf(stderr, "kbench: %s\n", kb_last_error);
            kb_timer_destroy(t);
            return KB_EXIT_CUDA;
        }
        if (d->gemm_tflops[k] <= 0) printf("              %-4s: not enough free memory\n", kb_gemm_key_name((kb_gemm_key)k));
        else
            printf("              %-4s: %7.1f TFLOP/s (%d^3 %s)\n", kb_gemm_key_name((kb_gemm_key)k), d->gemm_tflops[k],
                   d->gemm_n[k], kb_gemm_layout_name(d->gemm_layout[k]));
    }
    kb_timer_destroy(t);
    return KB_EXIT_OK;
}
