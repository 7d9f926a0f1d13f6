/* kbench sweep FILE --devices all|0,2,3: one sweep on several GPUs of a host.
 *
 * The parent process never touches CUDA (a process that initialised CUDA
 * must not fork workers that use it). It forks one worker per GPU, each
 * pinned with CUDA_VISIBLE_DEVICES, and hands out cases from a queue,
 * longest first (kb_case_queue_cost: the GPU's wall or the CPU reference's,
 * whichever is longer), one at a time over a pipe: a worker asks for
 * its next case when the last is done, so the GPUs finish together. Cases
 * that share their ceilings (one shape in bf16 and fp16) stay with the worker
 * that took the first of them, which has measured them (kb_queue_pick: split
 * over two GPUs, the grid's per-case ceilings took 65 s summed, not 44). Each
 * worker is kb_run_plan on the whole plan (it measures its own GPU's
 * ceilings) writing its own part files (ALL.gpuD.{csv,json}); at the end
 * kb_merge_files joins them into the run's CSV and JSON in case order, every
 * row saying its GPU. A worker says a case done once its rows are in its
 * part's JSON (each row is appended as it is written: report/json.h). A
 * worker that dies (a fault, a kill) has the cases it had not said done
 * reported as error rows (the one it was running, and any whose rows still
 * waited for their references); the others go on.
 *
 * The GEMM ceilings' ladders: the workers on GPUs of one model (named by a
 * child: NVML's list where it is CUDA's, else CUDA's) share their search
 * through a queue of rungs here (ladder.c): each sends the rate of its last
 * rung ("rung K I L R") and gets its next ("K I L"), or "end" once every
 * key's search is over and it has timed each key's best point itself. On 4
 * x H200, the MLP grid (bf16 and fp16 ladders): a worker's start 7-9 s
 * alone, 4.5-4.8 s split by rank with a barrier a phase, 3.6-3.9 s with the
 * queue (the ladders 2.1-2.4 s instead of 2.9-3.2 s).
 *
 * The host's cores: the CPU references run in OpenMP; each worker gets an
 * equal share of the cores (omp_set_num_threads), so N workers verifying at
 * once do not oversubscribe the host.
 *
 * Two more pieces were measured and dropped (4 x H100, 2026-11-26, two runs
 * each, scripts/ab/fleet-ab.sh): the workers' turns at opening their GPUs
 * (kb_gate) and a pool lending a worker's cores to another's reference
 * (kb_cores). Without both, the MLP grid on 4 GPUs took 32.6 and 34.0 s,
 * with them 36.3 and 36.4 s; make run's sweep on 2 GPUs 28.3 and 28.4 s
 * against 28.9 and 27.8 s (one GPU: 56.7 s). The ladders' shared search
 * stays: without it too, the grid took 40.1 and 38.3 s. */
#include "count.h"
#include "devices.h"
#include "ladder_queue.h"
#include "worker.h"
#include "merge.h"
#include "shard.h"
#include "../core/clock.h"
#include "../core/config.h"
#include "../core/errors.h"
#include "../core/op.h"
#include "../core/params.h"
#include "../core/plugin.h"
#include "../core/settings.h"
#include "../harness/bg.h"
#include "../harness/ceilings.h"
#include "../harness/hooks.h"
#include "../harness/ladder.h"
#include "../harness/progress.h"
#include "../harness/run.h"
#include "../harness/watch.h"
#include "../report/files.h"
#include "../report/report.h"
#include "../report/row.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
int kb_devices_parse(const char *s, int count, int *ids, char *err, size_t errlen)
{
    if (!strcmp(s, "all")) {
        if (count < 0) { kb_errf(err, errlen, "--devices all: the GPUs could not be counted"); return -1; }
        if (count == 0) { kb_errf(err, errlen, "--devices all: no CUDA device: no NVIDIA GPU or driver found"); return -1; }
        int n = count < KB_MAX_DEVICES ? count : KB_MAX_DEVICES;
        for (int i = 0; i < n; i++) ids[i] = i;
        return n;
    }
    int n = 0;
    for (const char *p = s;;) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < 0 || (*end && *end != ',')) {
            kb_errf(err, errlen, "--devices: expected all or a list of GPU indices (0,2,3), got '%s'", s);
            return -1;
        }
        if (v >= KB_MAX_DEVICES) { /* a dry run does not count the GPUs: the bound is kbench's own */
            kb_errf(err, errlen, "--devices: GPU %ld is past the last kbench drives (indices 0 to %d)", v, KB_MAX_DEVICES - 1);
            return -1;
        }
        if (count == 0) { kb_errf(err, errlen, "--devices: no CUDA device (GPU %ld asked for): no NVIDIA GPU or driver found", v); return -1; }
        if (count > 0 && v >= count) {
            kb_errf(err, errlen, "--devices: GPU %ld is not there (%d visible: 0 to %d)", v, count, count - 1);
            return -1;
        }
        for (int i = 0; i < n; i++)
            if (ids[i] == v) { kb_errf(err, errlen, "--devices: GPU %ld twice in '%s' (a GPU runs one worker)", v, s); return -1; }
        if (n == KB_MAX_DEVICES) { kb_errf(err, errlen, "--devices: more than %d GPUs", KB_MAX_DEVICES); return -1; }
        ids[n++] = (int)v;
        if (!*end) break;
        p = end + 1;
    }
    return n;
}

/* The CUDA index of worker i's GPU: the i-th of this process's
 * CUDA_VISIBLE_DEVICES where it is set (a Slurm allocation, a container's
 * share), else the index itself. */
static void visible_id(int id, char *buf, size_t n)
{
    const char *v = getenv("CUDA_VISIBLE_DEVICES");
    snprintf(buf, n, "%d", id);
    if (!v || !*v) return;
    for (int k = 0; *v; k++) {
        size_t l = strcspn(v, ",");
        if (k == id) {
            snprintf(buf, n, "%.*s", (int)l, v);
            return;
        }
        v += l;
        if (*v) v++;
    }
}

/* "the worker on GPU G ended (signal 9)" from its wait status */
static void worker_ended(int gpu, int st, char *buf, size_t n)
{
    snprintf(buf, n, "the worker on GPU %d ended (%s %d)", gpu, WIFSIGNALED(st) ? "signal" : "exit",
             WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
}

/* The cases whose worker ended during them (dead[i]: that worker, else
 * -1): the error rows of the implementations the run selects, as a part
 * for kbench merge. */
typedef struct {
    const int *dead, *status, *ids;
    const char *json, *csv;
} ended;

static int write_ended(const kb_plan *plan, const ended *e, char *err, size_t errlen)
{
    kb_report *rep = kb_report_open(e->csv, e->json, plan->ops_all, plan->nops_all, NULL, 0, NULL, 1, err, errlen);
    if (!rep) return -1;
    kb_report_sweep(rep, plan->sweep_id, plan->sweep_cases, plan->shard_k, plan->shard_n, -1);
    for (int i = 0; i < plan->ncases; i++) {
        if (e->dead[i] < 0) continue;
        const int gpu = e->ids[e->dead[i]], st = e->status[e->dead[i]];
        const kb_case *c = &plan->cases[i];
        for (int k = 0; k < kb_op_nimpls(c->op); k++) {
            const char *im = kb_op_impl(c->op, k)->name;
            if (!kb_impl_named(plan->opts.impl, kb_op_impl(c->op, k))) continue;
            kb_row row;
            memset(&row, 0, sizeof row);
            row.c = c;
            row.impl = im;
            row.verified = -1;
            row.gpu_known = 1;
            row.gpu = gpu;
            char how[96];
            worker_ended(gpu, st, how, sizeof how);
            snprintf(row.error, sizeof row.error, "%s during this case", how);
            kb_report_row(rep, &row);
        }
    }
    return kb_report_close(rep, err, errlen);
}

/* In a child, so that this process stays free of plugins and CUDA:
 * kb_plan_check (it loads the plugins), then, given e, the ended cases'
 * error rows (a plugin's implementations get theirs too). The child's error
 * comes back through a pipe and is said here, on this process's stderr
 * (wherever the caller has put it). 0, or -1 once it was said (a failed
 * fork: 0, the workers will say it). */
static int in_child(kb_plan *plan, const kb_run_info *info, const ended *e)
{
    int fd[2];
    if (pipe(fd)) return e ? -1 : 0;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return e ? -1 : 0;
    }
    if (pid == 0) {
        close(fd[0]);
        char err[KB_ERRLEN] = "";
        if (kb_plan_check(plan, info, err, sizeof err) || (e && write_ended(plan, e, err, sizeof err))) {
            if (write(fd[1], err, strlen(err)) < 0) {} /* the parent gone: nobody to tell */
            _exit(KB_EXIT_USAGE);
        }
        _exit(0);
    }
    close(fd[1]);
    char msg[KB_ERRLEN];
    size_t n = 0;
    for (;;) {
        ssize_t k = read(fd[0], msg + n, sizeof msg - 1 - n);
        if (k > 0 && (n += (size_t)k) < sizeof msg - 1) continue;
        if (k < 0 && errno == EINTR) continue;
        break;
    }
    msg[n] = 0;
    close(fd[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return 0;
    if (n) fprintf(stderr, "kbench: %s\n", msg);
    else fprintf(stderr, "kbench: checking the plan in a child process failed (%s %d)\n",
                 WIFSIGNALED(st) ? "signal" : "exit", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
    return -1;
}

/* cores this process may run on (its affinity: a Slurm task's, a cgroup's) */
static int host_cores(void)
{
    cpu_set_t set;
    if (!sched_getaffinity(0, sizeof set, &set) && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* The parent's side of the GEMM ladders' search: a queue of rungs for each
 * group of workers on GPUs of one model (ladder.c), by group (the index of
 * its first worker; a worker that said "alone" has a group of its own, with
 * no queue), and which workers wait for a rung and have asked for one. */
typedef struct {
    kb_ladder_queue *q[KB_MAX_DEVICES];
    int group[KB_MAX_DEVICES], size[KB_MAX_DEVICES];
    char wait[KB_MAX_DEVICES], asked[KB_MAX_DEVICES];
    int n, dry;
} ladders;

static kb_ladder_queue *ladder_queue(const ladders *L, int w)
{
    const int g = L->group[w];
    return g >= 0 && g < L->n ? L->q[g] : NULL;
}

/* each worker of w's group waiting for a rung given one, or the end, as
 * the queue allows. A dry run's workers take no time: its answers wait
 * until every live worker of the group has asked, as real ones, slowed by
 * their GPUs, meet. */
static void ladder_serve(ladders *L, int w0, const int *from, const int *to, int nw)
{
    kb_ladder_queue *q = ladder_queue(L, w0);
    const int g = L->group[w0];
    for (int w = 0; w < nw && q && L->dry; w++)
        if (L->group[w] == g && from[w] >= 0 && !L->asked[w]) return;
    for (int w = 0; w < nw && q; w++) {
        if (L->group[w] != g || !L->wait[w] || from[w] < 0) continue;
        kb_rung_msg next;
        char line[64];
        const int r = kb_ladder_queue_next(q, w, &next);
        if (!r) continue; /* none yet: it waits for another's rate */
        L->wait[w] = 0;
        const int len = kb_rung_reply_format(line, sizeof line, r, &next, kb_ladder_queue_gpus(q));
        if (len > 0 && write(to[w], line, (size_t)len) != len) {} /* gone: heard of by poll */
    }
}

/* worker w out of its group (gone, or alone): the rung it held back in the
 * queue, for the others */
static void ladder_leave(ladders *L, int w, const int *from, const int *to, int nw)
{
    L->wait[w] = 0;
    if (!ladder_queue(L, w)) return;
    kb_ladder_queue_leave(ladder_queue(L, w), w);
    ladder_serve(L, w, from, to, nw);
}

/* The parent's state while its workers run, handed from step to step of
 * kb_run_devices: the GPUs, the outputs, the queue, each worker's pipes and
 * cases, what it has said, the progress line. */
typedef struct {
    kb_plan *plan;
    const kb_run_info *info;
    int dry, n; /* n: the GPUs of --devices, a worker each */
    int ids[KB_MAX_DEVICES];
    ladders L;
    /* the run's outputs, and the parts beside its JSON: pj[w] worker w's,
     * pj[n] the ended cases' error rows */
    char csv[PATH_MAX], json[PATH_MAX], pj[KB_MAX_DEVICES + 1][PATH_MAX];
    int *order, *group; /* the queue, longest first; cases that share ceilings: one GPU's */
    char *taken;        /* places in order handed out */
    int *dead;          /* the worker that ended during it, else -1 */
    int *outs;          /* each worker's outq: every case at most */
    int threads;        /* a worker's share of the host's cores */
    pid_t pid[KB_MAX_DEVICES];
    int to[KB_MAX_DEVICES], from[KB_MAX_DEVICES], cur[KB_MAX_DEVICES], status[KB_MAX_DEVICES];
    int last[KB_MAX_DEVICES]; /* each worker's last place in order (its ceilings are cached there), -1: none or gone */
    /* each worker's cases not yet said done, oldest first: outq[w][oh[w]] to
     * outq[w][nout[w] - 1] (its rows wait for their references) */
    int *outq[KB_MAX_DEVICES], oh[KB_MAX_DEVICES], nout[KB_MAX_DEVICES];
    int started, alive, next, rc, halt; /* halt: no more cases handed out */
    int done, died, shown, tty;         /* shown: a progress line is up */
    double t0, progress_at;             /* the fleet's start; the last such line */
    char want[KB_MAX_DEVICES], asked[KB_MAX_DEVICES]; /* a worker's ask unanswered; it has asked */
    char lb[KB_MAX_DEVICES][512]; /* each worker's words not yet a whole line */
    int nlb[KB_MAX_DEVICES];
} fleet;

/* The GPUs of --devices, counted (in a child) unless a dry run names them,
 * and the workers grouped by their GPUs' model: 0, or the exit code, said */
static int pick_gpus(fleet *f)
{
    char err[KB_ERRLEN];
    static char models[KB_MAX_DEVICES][KB_MODEL_LEN], wmodel[KB_MAX_DEVICES][KB_MODEL_LEN];
    const char *devices = f->plan->opts.devices;
    int all = !strcmp(devices, "all"),
        count = all || !f->dry ? kb_devices_count_child(models, KB_MAX_DEVICES) : -1;
    f->n = kb_devices_parse(devices, count, f->ids, err, sizeof err);
    if (f->n < 0) {
        fprintf(stderr, "kbench: %s\n", err);
        return all || count == 0 ? KB_EXIT_CUDA : KB_EXIT_USAGE;
    }
    /* the workers on GPUs of one model share the GEMM ladders' search (a
     * queue of rungs for each such group, made by make_queue) */
    f->L = (ladders){.n = f->n, .dry = f->dry};
    for (int w = 0; w < f->n; w++)
        snprintf(wmodel[w], KB_MODEL_LEN, "%s",
                 f->dry ? "a dry run's" : count > 0 && f->ids[w] < KB_MAX_DEVICES ? models[f->ids[w]] : "");
    kb_model_groups(wmodel, f->n, f->L.group, f->L.size);
    return 0;
}

/* The outputs (the plan check in the child checked them): the run's, each
 * worker writing its part beside the JSON (X.gpuD.json and X.gpuD.csv:
 * kbench merge reads a part's CSV beside its JSON). 0, or the exit code,
 * said. */
static int part_paths(fleet *f)
{
    const kb_opts *o = &f->plan->opts;
    char pc[PATH_MAX], err[KB_ERRLEN];
    if (kb_output_paths(f->plan, f->info, f->csv, f->json, sizeof f->csv, err, sizeof err)) {
        fprintf(stderr, "kbench: %s\n", err);
        return KB_EXIT_USAGE;
    }
    for (int w = 0; w <= f->n && !f->dry; w++) { /* no part of an earlier run is merged */
        char tag[16];
        snprintf(tag, sizeof tag, w < f->n ? "gpu%d" : "ended", w < f->n ? f->ids[w] : 0);
        /* a worker's --json and --csv hold its part's paths: whole, with their temporaries */
        const int cut = kb_sibling_path(f->json, tag, "json", f->pj[w], sizeof o->json) ||
                        kb_sibling_path(f->json, tag, "csv", pc, sizeof o->csv);
        if (cut)
            kb_errf(err, sizeof err, "--devices: a worker's parts beside %s: too long (%zu characters at most)", f->json,
                    sizeof o->json - 1);
        if (cut || kb_path_fits(f->pj[w], "--devices: a worker's part", err, sizeof err) ||
            kb_path_fits(pc, "--devices: a worker's part", err, sizeof err)) {
            fprintf(stderr, "kbench: %s\n", err);
            return KB_EXIT_USAGE;
        }
        unlink(f->pj[w]);
        unlink(pc);
    }
    return 0;
}

/* The queue (longest first, cases that share ceilings grouped), the
 * workers' share of the host's cores, the GEMM ladders' queues of rungs */
static void make_queue(fleet *f)
{
    const kb_plan *plan = f->plan;
    const int n = f->n;
    f->order = malloc(sizeof *f->order * (size_t)(plan->ncases + 1));
    f->group = malloc(sizeof *f->group * (size_t)(plan->ncases + 1));
    f->taken = calloc((size_t)plan->ncases + 1, 1);
    f->dead = malloc(sizeof *f->dead * (size_t)(plan->ncases + 1));
    f->outs = malloc(sizeof *f->outs * (size_t)(plan->ncases + 1) * (size_t)n);
    if (!f->order || !f->group || !f->taken || !f->dead || !f->outs) abort();
    int cores = host_cores();
    f->threads = cores > n ? cores / n : 1;
    kb_plan_by_queue(plan, kb_bg_team(f->threads), f->order);
    kb_ceiling_groups(plan, f->order, f->group);
    for (int i = 0; i < plan->ncases; i++) f->dead[i] = -1;
    kb_gemm_key keys[KB_NGEMM];
    const int nkeys = kb_plan_gemm_keys(plan, keys);
    for (int w = 0; w < n; w++) f->L.q[w] = f->L.group[w] == w && f->L.size[w] > 1 ? kb_ladder_queue_new(keys, nkeys, n) : NULL;
    for (int w = 0; w < n; w++) f->outq[w] = f->outs + (size_t)w * (size_t)(plan->ncases + 1);
}

/* A dry run's worker w: the ladders' shared search and the queue
 * exercised, no GPU */
static void dry_worker(const fleet *f, int w, kb_worker_io *io)
{
    const kb_plan *plan = f->plan;
    int due = f->L.size[w] > 1; /* the search at its first case that compares with a GEMM ceiling */
    for (int ci; (ci = kb_worker_next(io)) >= 0; kb_worker_done(io))
        if (due && ci < plan->ncases && kb_case_gemm_key(&plan->cases[ci]) >= 0) {
            kb_worker_dry_ladders(plan, f->ids[w], io);
            due = 0;
        }
}

/* Worker w, in its child: the plan run on its GPU, its cases asked for
 * through its pipes (in: cases to it, out: its requests); it exits with
 * the run's code */
static void run_worker(fleet *f, int w, int in, int out)
{
    kb_plan *plan = f->plan;
    kb_opts *o = &plan->opts;
    for (int v = 0; v < w; v++) { close(f->to[v]); close(f->from[v]); }
    kb_worker_io io = {in, out, 0};
    if (f->dry) {
        dry_worker(f, w, &io);
        _exit(0);
    }
    char dev[64];
    visible_id(f->ids[w], dev, sizeof dev);
    setenv("CUDA_VISIBLE_DEVICES", dev, 1);
    omp_set_num_threads(f->threads);
    snprintf(o->json, sizeof o->json, "%s", f->pj[w]);
    char tag[16];
    snprintf(tag, sizeof tag, "gpu%d", f->ids[w]);
    kb_sibling_path(f->json, tag, "csv", o->csv, sizeof o->csv);
    o->quiet = 1;
    kb_ladder_share sh = {kb_worker_ladder, &io};
    const kb_run_hooks hooks = {
        .ctx = &io,
        .next_case = kb_worker_next,
        .case_done = kb_worker_done,
        .ladder = f->L.size[w] > 1 ? &sh : NULL,
        .worker = f->ids[w],
        .workers = f->n,
    };
    kb_run_info wi = *f->info;
    wi.hooks = &hooks;
    _exit(kb_run_plan(plan, &wi));
}

/* A worker forked for each GPU, with its pipes. One that cannot start (a
 * pipe, a fork) stops the starting, and the others after their case
 * (f->rc). */
static void start_workers(fleet *f)
{
    fflush(stdout);
    fflush(stderr);
    for (int w = 0; w < f->n; w++) {
        int a[2], b[2];
        if (pipe(a)) { perror("kbench: pipe"); f->rc = KB_EXIT_CUDA; break; }
        if (pipe(b)) { perror("kbench: pipe"); close(a[0]); close(a[1]); f->rc = KB_EXIT_CUDA; break; }
        f->pid[w] = fork();
        if (f->pid[w] < 0) {
            perror("kbench: fork");
            close(a[0]); close(a[1]); close(b[0]); close(b[1]);
            f->rc = KB_EXIT_CUDA;
            break;
        }
        if (f->pid[w] == 0) { /* the worker */
            close(a[1]);
            close(b[0]);
            run_worker(f, w, a[0], b[1]); /* it does not return */
        }
        close(a[0]);
        close(b[1]);
        f->to[w] = a[1];
        f->from[w] = b[0];
        f->cur[w] = -1;
        f->last[w] = -1;
        f->nout[w] = f->oh[w] = 0;
        f->status[w] = 0;
        f->started++;
        f->alive++;
    }
    if (f->rc) f->halt = 1; /* a worker could not start: stop the others after their case */
}

/* the progress line: the cases done, each GPU's current case */
static void show_progress(const fleet *f)
{
    const kb_plan *plan = f->plan;
    fprintf(stderr, "\r[%d/%d cases]", f->done, plan->ncases);
    for (int v = 0; v < f->started; v++)
        if (f->cur[v] >= 0)
            fprintf(stderr, " gpu%d: %s #%d", f->ids[v], plan->cases[f->cur[v]].op->name, plan->cases[f->cur[v]].index + 1);
    fprintf(stderr, "\033[K");
}

/* A whole line from worker w (lb[w], its newline dropped) acted on: 1 if
 * it moves the progress line (a case done, the next asked for) */
static int heard_line(fleet *f, int w)
{
    const char *line = f->lb[w];
    if (!strcmp(line, "done") && f->nout[w] > f->oh[w]) { /* the oldest of its cases written whole */
        f->oh[w]++;
        f->done++;
        return 1;
    }
    if (!strcmp(line, "next")) {
        f->cur[w] = -1;
        f->want[w] = 1; /* answered by hand_out */
        f->asked[w] = 1;
        return 1;
    }
    if (!strncmp(line, "rung ", 5)) { /* a GEMM ladder rung's rate, and its next asked for */
        kb_rung_msg m;
        kb_ladder_queue *q = ladder_queue(&f->L, w);
        if (q && !kb_rung_parse(line, &m)) {
            if (m.key >= 0) kb_ladder_queue_done(q, w, &m); /* not the rung it held: only its ask counts */
            f->L.wait[w] = f->L.asked[w] = 1;
            ladder_serve(&f->L, w, f->from, f->to, f->started); /* its rate may open a phase for others */
        } else if (write(f->to[w], "?\n", 2) != 2) {} /* not understood: it goes on alone */
    } else if (!strcmp(line, "alone")) { /* out of its group: its rung back in the queue */
        ladder_leave(&f->L, w, f->from, f->to, f->started);
        f->L.group[w] = KB_MAX_DEVICES + w;
    }
    return 0;
}

/* Worker w gone (its pipe closed: it exited, or died): reaped, and the
 * cases it had not written whole with it, said and marked for their error
 * rows (dead) */
static void worker_gone(fleet *f, int w)
{
    const kb_plan *plan = f->plan;
    close(f->from[w]);
    close(f->to[w]);
    f->from[w] = -1;
    while (waitpid(f->pid[w], &f->status[w], 0) < 0 && errno == EINTR) {}
    f->alive--;
    const int code = WIFEXITED(f->status[w]) ? WEXITSTATUS(f->status[w]) : -1,
              death = !kb_stop_signal && code != 130 && code != 143; /* stopped by a signal: not a death */
    for (int q = f->oh[w]; q < f->nout[w] && death; q++) {
        const int ci = f->outq[w][q];
        f->died++;
        char label[1024], how[96];
        kb_case_label(&plan->cases[ci], label, sizeof label);
        worker_ended(f->ids[w], f->status[w], how, sizeof how);
        fprintf(stderr, "%skbench: %s during case %d, %s %s\n", f->shown ? "\n" : "", how,
                plan->cases[ci].index + 1, plan->cases[ci].op->name, label);
        f->dead[ci] = w;
    }
    if (f->nout[w] == f->oh[w] && WIFSIGNALED(f->status[w]) && death) {
        char how[96]; /* a death between cases: nothing lost, but said */
        worker_ended(f->ids[w], f->status[w], how, sizeof how);
        fprintf(stderr, "%skbench: %s with no case in hand; the other GPUs take its share\n", f->shown ? "\n" : "", how);
    }
    f->nout[w] = f->oh[w] = 0;
    f->cur[w] = -1;
    f->last[w] = -1; /* its ceilings' cases: anyone's */
    ladder_leave(&f->L, w, f->from, f->to, f->started); /* the rung it was timing: another's */
}

/* What worker w wrote, read, and each whole line heard; at its end, the
 * worker gone */
static void hear(fleet *f, int w)
{
    ssize_t k = read(f->from[w], f->lb[w] + f->nlb[w], sizeof f->lb[w] - 1 - (size_t)f->nlb[w]);
    if (k < 0 && errno == EINTR) return;
    if (k > 0) f->nlb[w] += (int)k;
    char *nl;
    while ((nl = memchr(f->lb[w], '\n', (size_t)f->nlb[w]))) { /* each whole line */
        *nl = 0;
        const int heard = heard_line(f, w);
        const int used = (int)(nl - f->lb[w]) + 1;
        memmove(f->lb[w], nl + 1, (size_t)(f->nlb[w] -= used));
        if (heard && f->tty) {
            f->shown = 1;
            show_progress(f);
        } else if (heard && !f->plan->opts.quiet && kb_progress_due(0, kb_now_s(), &f->progress_at)) /* off a terminal */
            kb_progress_print_done(stderr, f->done, f->plan->ncases, f->progress_at - f->t0);
    }
    if (f->nlb[w] == (int)sizeof f->lb[w] - 1) f->nlb[w] = 0; /* no line: not the protocol */
    if (k > 0) return;
    /* the worker is gone: the cases it had not written whole with it */
    worker_gone(f, w);
}

/* Each worker that asked for a case given the next the queue picks for it,
 * or -1: none left (the queue empty, a stop, a worker that could not
 * start). A dry run says each case's GPU. */
static void hand_out(fleet *f)
{
    const kb_plan *plan = f->plan;
    /* A dry run's workers take no time, and one that starts late could
     * find the queue empty: its answers wait until every live worker has
     * asked, as real workers, which measure their GPU's ceilings first,
     * start together. */
    int all_asked = 1;
    for (int w = 0; w < f->started; w++) all_asked &= f->from[w] < 0 || f->asked[w];
    for (int w = 0; w < f->started && (!f->dry || all_asked); w++) {
        if (!f->want[w] || f->from[w] < 0) continue;
        f->want[w] = 0;
        const int j = !f->halt && !kb_stop_signal ? kb_queue_pick(f->group, plan->ncases, f->taken, f->last, f->started, w) : -1;
        const int ci = j >= 0 ? f->order[j] : -1;
        char line[32];
        int l = snprintf(line, sizeof line, "%d\n", ci);
        if (write(f->to[w], line, (size_t)l) == l && ci >= 0) { /* else gone: the case stays in the queue */
            f->taken[j] = 1;
            f->next++;
            f->last[w] = j;
            f->cur[w] = ci;
            if (f->nout[w] <= plan->ncases) f->outq[w][f->nout[w]++] = ci;
            if (f->dry) {
                char label[1024];
                kb_case_label(&plan->cases[ci], label, sizeof label);
                if (f->shown) fprintf(stderr, "\r\033[K"); /* the line goes above the progress line */
                printf("gpu %-3d %4d  %-6s %s\n", f->ids[w], plan->cases[ci].index + 1, plan->cases[ci].op->name, label);
                fflush(stdout);
            }
        }
    }
}

/* The workers served until every one is gone: their lines heard, their
 * asks answered */
static void serve(fleet *f)
{
    while (f->alive > 0) {
        struct pollfd fds[KB_MAX_DEVICES];
        for (int w = 0; w < f->started; w++) fds[w] = (struct pollfd){f->from[w], POLLIN, 0};
        if (poll(fds, (nfds_t)f->started, 1000) < 0) {
            if (errno == EINTR) continue;
            perror("kbench: poll"); /* cannot hear the workers: end them */
            for (int w = 0; w < f->started; w++)
                if (f->from[w] >= 0) {
                    kill(f->pid[w], SIGKILL);
                    while (waitpid(f->pid[w], &f->status[w], 0) < 0 && errno == EINTR) {}
                    close(f->from[w]);
                    close(f->to[w]);
                    f->from[w] = -1;
                }
            f->alive = 0;
            f->rc = KB_EXIT_CUDA;
            break;
        }
        for (int w = 0; w < f->started; w++)
            if (f->from[w] >= 0 && (fds[w].revents & (POLLIN | POLLHUP | POLLERR))) hear(f, w);
        hand_out(f);
    }
}

/* the run's exit code from the workers' ends: the worst of theirs and
 * f->rc, a stopped one's aside, 3 at least where a worker died during a
 * case */
static int workers_exit(const fleet *f)
{
    int rc = f->rc;
    for (int w = 0; w < f->started; w++) {
        int r = WIFEXITED(f->status[w]) ? WEXITSTATUS(f->status[w]) : KB_EXIT_CUDA;
        if (r == 130 || r == 143) continue; /* stopped by the signal: said below */
        if (r > rc) rc = r;
    }
    if (f->died && rc < KB_EXIT_CUDA) rc = KB_EXIT_CUDA;
    return rc;
}

/* The workers' parts, and the ended cases' error rows (written in a
 * child), merged into the run's CSV and JSON, then removed: rc with the
 * merge's exit code */
static int merge_parts(fleet *f, int rc)
{
    const kb_plan *plan = f->plan;
    const char *parts[KB_MAX_DEVICES + 1];
    int np = 0;
    for (int w = 0; w < f->started; w++)
        if (!access(f->pj[w], R_OK)) parts[np++] = f->pj[w];
    char pe[PATH_MAX], pc[PATH_MAX]; /* they fit: part_paths checked them */
    kb_sibling_path(f->json, "ended", "csv", pe, sizeof pe);
    ended e = {f->dead, f->status, f->ids, f->pj[f->n], pe};
    if (f->died && !in_child(f->plan, f->info, &e)) parts[np++] = f->pj[f->n];
    char *expected = calloc((size_t)plan->sweep_cases + 1, 1);
    if (!expected) abort();
    for (int i = 0; i < plan->ncases; i++) expected[plan->cases[i].index] = 1;
    int m = np ? kb_merge_files(parts, np, f->json, f->csv, plan->opts.quiet, expected) : KB_EXIT_CUDA;
    free(expected);
    if (m == KB_EXIT_USAGE) rc = KB_EXIT_USAGE;
    else if (m > rc) rc = m;
    if (m == KB_EXIT_OK || m == KB_EXIT_VERIFY) /* merged: the parts go */
        for (int p = 0; p < np; p++) {
            unlink(parts[p]);
            kb_sibling_path(parts[p], NULL, "csv", pc, sizeof pc);
            unlink(pc);
        }
    return rc;
}

static void fleet_free(fleet *f)
{
    free(f->order);
    free(f->group);
    free(f->taken);
    free(f->dead);
    free(f->outs);
    for (int w = 0; w < f->n; w++) kb_ladder_queue_free(f->L.q[w]);
}

int kb_run_devices(kb_plan *plan, const kb_run_info *info, int dry)
{
    if (info->check_mode) {
        fprintf(stderr, "kbench: --devices: kbench check runs on one GPU (give it CUDA_VISIBLE_DEVICES to pick it)\n");
        return KB_EXIT_USAGE;
    }
    if (in_child(plan, info, NULL)) return KB_EXIT_USAGE;
    fleet f = {.plan = plan, .info = info, .dry = dry};
    int rc = pick_gpus(&f);
    if (!rc) rc = part_paths(&f);
    if (rc) return rc;
    make_queue(&f);
    /* SIGINT/SIGTERM from here on: the workers finish their case, no other
     * is handed out (a worker's own run catches them as a sweep does) */
    struct sigaction old_stop[2], ign, old_pipe;
    kb_catch_stop(old_stop);
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN; /* a worker gone: its pipe's write fails, no signal */
    sigaction(SIGPIPE, &ign, &old_pipe);
    start_workers(&f);
    /* the progress line on a terminal, each GPU's current case (a dry run's
     * too: its workers stand in for the GPUs) */
    f.tty = !plan->opts.quiet && isatty(2);
    f.t0 = f.progress_at = kb_now_s();
    serve(&f);
    kb_uncatch_stop(old_stop);
    sigaction(SIGPIPE, &old_pipe, NULL);
    if (f.shown) fprintf(stderr, "\r\033[K");
    rc = workers_exit(&f);
    if (!dry) rc = merge_parts(&f, rc);
    else if (!kb_stop_signal) printf("%d cases on %d GPUs, longest first\n", f.next, f.started);
    fleet_free(&f);
    const int sig = kb_stop_signal;
    if ((sig == SIGINT || sig == SIGTERM) && (!rc || rc == KB_EXIT_VERIFY)) {
        if (dry) /* a dry run writes no file: none is claimed */
            fprintf(stderr, "kbench: stopped by %s after %d of %d cases (a dry run: nothing was written)\n",
                    sig == SIGINT ? "SIGINT" : "SIGTERM", f.next, plan->ncases);
        else
            fprintf(stderr, "kbench: stopped by %s; the finished rows are in %s and %s\n",
                    sig == SIGINT ? "SIGINT" : "SIGTERM", f.csv, f.json);
        return 128 + sig;
    }
    return rc;
}
