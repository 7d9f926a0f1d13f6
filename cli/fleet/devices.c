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
 * part's JSON (rewritten at each case unless the last rewrite is too
 * recent for what it cost: rows_sync). A worker that dies (a fault, a kill) has
 * the cases it had not said done reported as error rows (the one it was
 * running, and any whose rows waited for the part's next rewrite); the
 * others go on.
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
 * once do not oversubscribe the host, and a reference that starts takes
 * the shares of the workers with none running (kb_cores, in memory mapped
 * before the fork): the grid's waits for references on 4 x H200, 9.5 and
 * 13.5 s summed without, 0.6 and 5.7 s with. A worker that dies while its
 * reference runs has the cores it held given back here (kb_cores_reclaim). */
#include "cores.h"
#include "count.h"
#include "devices.h"
#include "gate.h"
#include "ladder_queue.h"
#include "merge.h"
#include "shard.h"
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
#include "../harness/run.h"
#include "../harness/watch.h"
#include "../report/files.h"
#include "../report/report.h"
#include "../report/row.h"

#include <errno.h>
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
        if (count == 0) { kb_errf(err, errlen, "--devices all: no CUDA device"); return -1; }
        int n = count < KB_MAX_DEVICES ? count : KB_MAX_DEVICES;
        for (int i = 0; i < n; i++) ids[i] = i;
        return n;
    }
    int n = 0;
    for (const char *p = s;;) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < 0 || v >= 1024 || (*end && *end != ',')) {
            kb_errf(err, errlen, "--devices: expected all or a list of GPU indices (0,2,3), got '%s'", s);
            return -1;
        }
        if (count == 0) { kb_errf(err, errlen, "--devices: no CUDA device (GPU %ld asked for)", v); return -1; }
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

typedef struct {
    int to, from;  /* the worker's pipes: cases to it, requests from it */
    int alone;     /* its ladders no longer shared (an exchange failed) */
    kb_cores *pool; /* the host's cores, shared by the workers' references */
    kb_gate *gate;  /* the workers open their GPUs in turn */
} worker_io;

/* a worker's side: its reference's team from the pool, and back */
static int worker_cores_take(void *ctx, int share) { return kb_cores_take(((worker_io *)ctx)->pool, share); }
static void worker_cores_give(void *ctx, int team) { kb_cores_give(((worker_io *)ctx)->pool, team); }
/* a worker's side: its GPU opened in its turn */
static int worker_open_enter(void *ctx) { return kb_gate_enter(((worker_io *)ctx)->gate); }
static void worker_open_leave(void *ctx, int taken) { kb_gate_leave(((worker_io *)ctx)->gate, taken); }

/* a worker's side: "done" to the parent when every row of its oldest
 * unfinished case is written (its rows may wait for the case's reference
 * after the next case was asked for) */
static void worker_done(void *ctx)
{
    const worker_io *io = ctx;
    if (write(io->from, "done\n", 5) != 5) {} /* the parent gone: nothing to tell */
}

/* a worker's side: what it asks (len bytes), the parent's one-line answer
 * (its newline dropped) into line; 0, or -1: the parent gone. A signal does
 * not cut the wait: the parent still answers. */
static int worker_ask(const worker_io *io, const char *ask, size_t len, char *line, size_t n)
{
    if (write(io->from, ask, len) != (ssize_t)len) return -1;
    for (size_t got = 0; got < n - 1;) {
        ssize_t k = read(io->to, line + got, 1);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        if (line[got] == '\n') {
            line[got] = 0;
            return 0;
        }
        got++;
    }
    return -1; /* no line that long is the protocol */
}

/* a worker's side: "next" to the parent, the index back (-1: none left) */
static int worker_next(void *ctx)
{
    char line[32];
    return worker_ask(ctx, "next\n", 5, line, sizeof line) ? -1 : atoi(line);
}

/* a worker's side of the GEMM ladders' shared search (kb_ladder_share.fn):
 * the rung it timed and its rate to the parent, its next rung back (1), or
 * the search's end (0: *gpus took part); -1: not shared (the parent gone, a
 * reply it cannot read), nor ever again */
static int worker_ladder(void *ctx, const kb_rung_msg *done, kb_rung_msg *next, int *gpus)
{
    worker_io *io = ctx;
    char ask[128], line[128];
    if (io->alone) return -1;
    int len = done ? kb_rung_format(ask, sizeof ask, done) : -1, m = -1; /* no done: it leaves */
    if (len > 0 && !worker_ask(io, ask, (size_t)len, line, sizeof line)) m = kb_rung_reply_parse(line, next, gpus);
    if (m < 0) { /* this worker's ladders alone from now on: its rung goes back to the group */
        io->alone = 1;
        if (write(io->from, "alone\n", 6) != 6) {} /* the parent gone: nobody waits */
    }
    return m;
}

/* A dry run's stand-in for a GEMM rung: a rate that peaks at 4096^3 TN,
 * nothing timed */
static int dry_rung(void *ctx, int key, int n, int layout, double *tf)
{
    (void)ctx;
    (void)key;
    *tf = 1000.0 - (n > 4096 ? n / 4096.0 : 4096.0 / n) * 10 - layout;
    return 0;
}

/* A dry run's workers go through the GEMM ladders' search of the keys the
 * plan needs, at their first case that needs one, shared as on GPUs of one
 * model (with those that need it), and say what each timed
 * ("ladder bf16 gpu 0: 4 of 13 rungs, the search shared by 4 GPUs") */
static void dry_ladders(const kb_plan *plan, int gpu, worker_io *io)
{
    kb_ladder_share sh = {worker_ladder, io};
    kb_gemm_key keys[KB_NGEMM];
    const int n = kb_plan_gemm_keys(plan, keys);
    kb_ladder_result r[KB_NGEMM], all[KB_NGEMM];
    kb_ladder_search(keys, n, dry_rung, NULL, NULL, all);
    kb_ladder_search(keys, n, dry_rung, NULL, &sh, r);
    for (int j = 0; j < n; j++) {
        printf("ladder %s gpu %d: %d of %d rungs, ", kb_gemm_key_name(keys[j]), gpu, r[j].rungs, all[j].rungs);
        if (r[j].shared > 1) printf("the search shared by %d GPUs\n", r[j].shared);
        else printf("searched alone\n");
    }
    fflush(stdout);
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
            if (plan->opts.impl[0] && !kb_list_has(plan->opts.impl, im)) continue;
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

int kb_run_devices(kb_plan *plan, const kb_run_info *info, int dry)
{
    int ids[KB_MAX_DEVICES];
    char err[KB_ERRLEN];
    if (info->check_mode) {
        fprintf(stderr, "kbench: --devices: kbench check runs on one GPU (give it CUDA_VISIBLE_DEVICES to pick it)\n");
        return KB_EXIT_USAGE;
    }
    if (in_child(plan, info, NULL)) return KB_EXIT_USAGE;
    /* the GPUs counted (in a child) unless a dry run names them */
    static char models[KB_MAX_DEVICES][KB_MODEL_LEN], wmodel[KB_MAX_DEVICES][KB_MODEL_LEN];
    int all = !strcmp(plan->opts.devices, "all"),
        count = all || !dry ? kb_devices_count_child(models, KB_MAX_DEVICES) : -1;
    int n = kb_devices_parse(plan->opts.devices, count, ids, err, sizeof err);
    if (n < 0) {
        fprintf(stderr, "kbench: %s\n", err);
        return all || count == 0 ? KB_EXIT_CUDA : KB_EXIT_USAGE;
    }
    /* the workers on GPUs of one model share the GEMM ladders' search (a
     * queue of rungs for each such group, made below) */
    ladders L = {.n = n, .dry = dry};
    for (int w = 0; w < n; w++)
        snprintf(wmodel[w], KB_MODEL_LEN, "%s", dry ? "a dry run's" : count > 0 && ids[w] < KB_MAX_DEVICES ? models[ids[w]] : "");
    kb_model_groups(wmodel, n, L.group, L.size);
    /* the outputs (the plan check in the child above checked them): the
     * run's, each worker writing its part beside the JSON (X.gpuD.json and
     * X.gpuD.csv: kbench merge reads a part's CSV beside its JSON) */
    kb_opts *o = &plan->opts;
    char csv[1100], json[1100];
    kb_output_paths(plan, info, csv, json, sizeof csv);
    char pj[KB_MAX_DEVICES + 1][1200], pc[1200];
    for (int w = 0; w <= n && !dry; w++) { /* no part of an earlier run is merged */
        char tag[16];
        snprintf(tag, sizeof tag, w < n ? "gpu%d" : "ended", w < n ? ids[w] : 0);
        kb_sibling_path(json, tag, "json", pj[w], sizeof pj[w]);
        kb_sibling_path(json, tag, "csv", pc, sizeof pc);
        if (strlen(pc) >= sizeof o->json) { /* a worker's --json and --csv hold its part's paths */
            fprintf(stderr, "kbench: --devices: %s: a path too long for a worker's part (%zu characters at most)\n",
                    pc, sizeof o->json - 1);
            return KB_EXIT_USAGE;
        }
        unlink(pj[w]);
        unlink(pc);
    }
    int *order = malloc(sizeof *order * (size_t)(plan->ncases + 1));
    int *group = malloc(sizeof *group * (size_t)(plan->ncases + 1)); /* cases that share ceilings: one GPU's */
    char *taken = calloc((size_t)plan->ncases + 1, 1);                /* places in order handed out */
    int *dead = malloc(sizeof *dead * (size_t)(plan->ncases + 1)); /* the worker that ended during it, else -1 */
    int *outs = malloc(sizeof *outs * (size_t)(plan->ncases + 1) * (size_t)n); /* each worker's outq: every case at most */
    if (!order || !group || !taken || !dead || !outs) abort();
    int cores = host_cores(), threads = cores > n ? cores / n : 1;
    kb_plan_by_queue(plan, kb_bg_team(threads), order);
    kb_ceiling_groups(plan, order, group);
    for (int i = 0; i < plan->ncases; i++) dead[i] = -1;
    kb_cores *pool = dry ? NULL : kb_cores_new(n, kb_bg_team(threads)); /* the references' spare cores, shared */
    /* The workers open their GPUs one at a time: CUDA's start is serialised
     * in the driver. Four opening at once (4 x H100) were all ready after
     * 1.3-1.6 s; in turn, after 0.35, 0.71, 1.21 and 1.77 s, so the GPUs
     * start their cases 0.5 s earlier on average, and make run's sweep took
     * 16.03 s against 16.27 s (medians of 8, alternated). A turn waits 2 s a
     * worker at most: one that died holding it, the others go on at once. */
    kb_gate *gate = dry ? NULL : kb_gate_new(2.0 * n);
    kb_gemm_key keys[KB_NGEMM];
    const int nkeys = kb_plan_gemm_keys(plan, keys);
    for (int w = 0; w < n; w++) L.q[w] = L.group[w] == w && L.size[w] > 1 ? kb_ladder_queue_new(keys, nkeys, n) : NULL;
    pid_t pid[KB_MAX_DEVICES];
    int to[KB_MAX_DEVICES], from[KB_MAX_DEVICES], cur[KB_MAX_DEVICES], status[KB_MAX_DEVICES];
    int last[KB_MAX_DEVICES]; /* each worker's last place in order (its ceilings are cached there), -1: none or gone */
    /* each worker's cases not yet said done, oldest first: outq[w][oh[w]] to
     * outq[w][nout[w] - 1] (its rows wait for their references, and on disk
     * they may wait for a later case: rows_sync) */
    int *outq[KB_MAX_DEVICES], oh[KB_MAX_DEVICES], nout[KB_MAX_DEVICES];
    for (int w = 0; w < n; w++) outq[w] = outs + (size_t)w * (size_t)(plan->ncases + 1);
    int started = 0, alive = 0, next = 0, rc = KB_EXIT_OK, halt = 0; /* halt: no more cases handed out */
    /* SIGINT/SIGTERM from here on: the workers finish their case, no other
     * is handed out (a worker's own run catches them as a sweep does) */
    struct sigaction old_stop[2], ign, old_pipe;
    kb_catch_stop(old_stop);
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN; /* a worker gone: its pipe's write fails, no signal */
    sigaction(SIGPIPE, &ign, &old_pipe);
    fflush(stdout);
    fflush(stderr);
    for (int w = 0; w < n; w++) {
        int a[2], b[2];
        if (pipe(a)) { perror("kbench: pipe"); rc = KB_EXIT_CUDA; break; }
        if (pipe(b)) { perror("kbench: pipe"); close(a[0]); close(a[1]); rc = KB_EXIT_CUDA; break; }
        pid[w] = fork();
        if (pid[w] < 0) {
            perror("kbench: fork");
            close(a[0]); close(a[1]); close(b[0]); close(b[1]);
            rc = KB_EXIT_CUDA;
            break;
        }
        if (pid[w] == 0) { /* the worker */
            close(a[1]);
            close(b[0]);
            for (int v = 0; v < w; v++) { close(to[v]); close(from[v]); }
            worker_io io = {a[0], b[1], 0};
            if (dry) { /* the ladders' shared search and the queue exercised, no GPU */
                int due = L.size[w] > 1; /* the search at its first case that compares with a GEMM ceiling */
                for (int ci; (ci = worker_next(&io)) >= 0; worker_done(&io))
                    if (due && ci < plan->ncases && kb_case_gemm_key(&plan->cases[ci]) >= 0) {
                        dry_ladders(plan, ids[w], &io);
                        due = 0;
                    }
                _exit(0);
            }
            char dev[64];
            visible_id(ids[w], dev, sizeof dev);
            setenv("CUDA_VISIBLE_DEVICES", dev, 1);
            omp_set_num_threads(threads);
            snprintf(o->json, sizeof o->json, "%s", pj[w]);
            char tag[16];
            snprintf(tag, sizeof tag, "gpu%d", ids[w]);
            kb_sibling_path(json, tag, "csv", o->csv, sizeof o->csv);
            o->quiet = 1;
            kb_ladder_share sh = {worker_ladder, &io};
            io.pool = pool;
            io.gate = gate;
            kb_cores_join(pool, w);
            const kb_run_hooks hooks = {
                .ctx = &io,
                .next_case = worker_next,
                .case_done = worker_done,
                .cores_take = worker_cores_take,
                .cores_give = worker_cores_give,
                .open_enter = worker_open_enter,
                .open_leave = worker_open_leave,
                .ladder = L.size[w] > 1 ? &sh : NULL,
                .worker = ids[w],
                .workers = n,
            };
            kb_run_info wi = *info;
            wi.hooks = &hooks;
            _exit(kb_run_plan(plan, &wi));
        }
        close(a[0]);
        close(b[1]);
        to[w] = a[1];
        from[w] = b[0];
        cur[w] = -1;
        last[w] = -1;
        nout[w] = oh[w] = 0;
        status[w] = 0;
        started++;
        alive++;
    }
    if (rc) halt = 1; /* a worker could not start: stop the others after their case */
    kb_gate_free(gate); /* the workers' now */
    /* the progress line on a terminal, each GPU's current case (a dry run's
     * too: its workers stand in for the GPUs) */
    int done = 0, died = 0, shown = 0, tty = !o->quiet && isatty(2); /* shown: a progress line is up */
    char want[KB_MAX_DEVICES] = {0}, asked[KB_MAX_DEVICES] = {0}; /* a worker's ask unanswered; it has asked */
    static char lb[KB_MAX_DEVICES][512]; /* each worker's words not yet a whole line */
    int nlb[KB_MAX_DEVICES] = {0};
    while (alive > 0) {
        struct pollfd fds[KB_MAX_DEVICES];
        for (int w = 0; w < started; w++) fds[w] = (struct pollfd){from[w], POLLIN, 0};
        if (poll(fds, (nfds_t)started, 1000) < 0) {
            if (errno == EINTR) continue;
            perror("kbench: poll"); /* cannot hear the workers: end them */
            for (int w = 0; w < started; w++)
                if (from[w] >= 0) {
                    kill(pid[w], SIGKILL);
                    while (waitpid(pid[w], &status[w], 0) < 0 && errno == EINTR) {}
                    close(from[w]);
                    close(to[w]);
                    from[w] = -1;
                }
            alive = 0;
            rc = KB_EXIT_CUDA;
            break;
        }
        for (int w = 0; w < started; w++) {
            if (from[w] < 0 || !(fds[w].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            ssize_t k = read(from[w], lb[w] + nlb[w], sizeof lb[w] - 1 - (size_t)nlb[w]);
            if (k < 0 && errno == EINTR) continue;
            if (k > 0) nlb[w] += (int)k;
            char *nl;
            while ((nl = memchr(lb[w], '\n', (size_t)nlb[w]))) { /* each whole line */
                *nl = 0;
                int heard = 0;
                if (!strcmp(lb[w], "done") && nout[w] > oh[w]) { /* the oldest of its cases written whole */
                    oh[w]++;
                    done++;
                    heard = 1;
                } else if (!strcmp(lb[w], "next")) {
                    cur[w] = -1;
                    want[w] = 1; /* answered below */
                    asked[w] = 1;
                    heard = 1;
                } else if (!strncmp(lb[w], "rung ", 5)) { /* a GEMM ladder rung's rate, and its next asked for */
                    kb_rung_msg m;
                    kb_ladder_queue *q = ladder_queue(&L, w);
                    if (q && !kb_rung_parse(lb[w], &m)) {
                        if (m.key >= 0) kb_ladder_queue_done(q, w, &m); /* not the rung it held: only its ask counts */
                        L.wait[w] = L.asked[w] = 1;
                        ladder_serve(&L, w, from, to, started); /* its rate may open a phase for others */
                    } else if (write(to[w], "?\n", 2) != 2) {} /* not understood: it goes on alone */
                } else if (!strcmp(lb[w], "alone")) { /* out of its group: its rung back in the queue */
                    ladder_leave(&L, w, from, to, started);
                    L.group[w] = KB_MAX_DEVICES + w;
                }
                const int used = (int)(nl - lb[w]) + 1;
                memmove(lb[w], nl + 1, (size_t)(nlb[w] -= used));
                if (heard && tty) {
                    shown = 1;
                    fprintf(stderr, "\r[%d/%d cases]", done, plan->ncases);
                    for (int v = 0; v < started; v++)
                        if (cur[v] >= 0)
                            fprintf(stderr, " gpu%d: %s #%d", ids[v], plan->cases[cur[v]].op->name, plan->cases[cur[v]].index + 1);
                    fprintf(stderr, "\033[K");
                }
            }
            if (nlb[w] == (int)sizeof lb[w] - 1) nlb[w] = 0; /* no line: not the protocol */
            if (k > 0) continue;
            /* the worker is gone: the cases it had not written whole with it */
            close(from[w]);
            close(to[w]);
            from[w] = -1;
            while (waitpid(pid[w], &status[w], 0) < 0 && errno == EINTR) {}
            alive--;
            kb_cores_reclaim(pool, w); /* the cores its reference held, if it died with one running */
            const int code = WIFEXITED(status[w]) ? WEXITSTATUS(status[w]) : -1,
                      death = !kb_stop_signal && code != 130 && code != 143; /* stopped by a signal: not a death */
            for (int q = oh[w]; q < nout[w] && death; q++) {
                const int ci = outq[w][q];
                died++;
                char label[1024], how[96];
                kb_case_label(&plan->cases[ci], label, sizeof label);
                worker_ended(ids[w], status[w], how, sizeof how);
                fprintf(stderr, "%skbench: %s during case %d, %s %s\n", shown ? "\n" : "", how,
                        plan->cases[ci].index + 1, plan->cases[ci].op->name, label);
                dead[ci] = w;
            }
            if (nout[w] == oh[w] && WIFSIGNALED(status[w]) && death) {
                char how[96]; /* a death between cases: nothing lost, but said */
                worker_ended(ids[w], status[w], how, sizeof how);
                fprintf(stderr, "%skbench: %s with no case in hand; the other GPUs take its share\n", shown ? "\n" : "", how);
            }
            nout[w] = oh[w] = 0;
            cur[w] = -1;
            last[w] = -1; /* its ceilings' cases: anyone's */
            ladder_leave(&L, w, from, to, started); /* the rung it was timing: another's */
        }
        /* A dry run's workers take no time, and one that starts late could
         * find the queue empty: its answers wait until every live worker has
         * asked, as real workers, which measure their GPU's ceilings first,
         * start together. */
        int all_asked = 1;
        for (int w = 0; w < started; w++) all_asked &= from[w] < 0 || asked[w];
        for (int w = 0; w < started && (!dry || all_asked); w++) {
            if (!want[w] || from[w] < 0) continue;
            want[w] = 0;
            const int j = !halt && !kb_stop_signal ? kb_queue_pick(group, plan->ncases, taken, last, started, w) : -1;
            const int ci = j >= 0 ? order[j] : -1;
            char line[32];
            int l = snprintf(line, sizeof line, "%d\n", ci);
            if (write(to[w], line, (size_t)l) == l && ci >= 0) { /* else gone: the case stays in the queue */
                taken[j] = 1;
                next++;
                last[w] = j;
                cur[w] = ci;
                if (nout[w] <= plan->ncases) outq[w][nout[w]++] = ci;
                if (dry) {
                    char label[1024];
                    kb_case_label(&plan->cases[ci], label, sizeof label);
                    if (shown) fprintf(stderr, "\r\033[K"); /* the line goes above the progress line */
                    printf("gpu %-3d %4d  %-6s %s\n", ids[w], plan->cases[ci].index + 1, plan->cases[ci].op->name, label);
                    fflush(stdout);
                }
            }
        }
    }
    kb_uncatch_stop(old_stop);
    sigaction(SIGPIPE, &old_pipe, NULL);
    if (shown) fprintf(stderr, "\r\033[K");
    for (int w = 0; w < started; w++) {
        int r = WIFEXITED(status[w]) ? WEXITSTATUS(status[w]) : KB_EXIT_CUDA;
        if (r == 130 || r == 143) continue; /* stopped by the signal: said below */
        if (r > rc) rc = r;
    }
    if (died && rc < KB_EXIT_CUDA) rc = KB_EXIT_CUDA;
    if (dry) {
        printf("%d cases on %d GPUs, longest first\n", next, started);
    } else {
        const char *parts[KB_MAX_DEVICES + 1];
        int np = 0;
        for (int w = 0; w < started; w++)
            if (!access(pj[w], R_OK)) parts[np++] = pj[w];
        char pe[1200];
        kb_sibling_path(json, "ended", "csv", pe, sizeof pe);
        ended e = {dead, status, ids, pj[n], pe};
        if (died && !in_child(plan, info, &e)) parts[np++] = pj[n];
        char *expected = calloc((size_t)plan->sweep_cases + 1, 1);
        if (!expected) abort();
        for (int i = 0; i < plan->ncases; i++) expected[plan->cases[i].index] = 1;
        int m = np ? kb_merge_files(parts, np, json, csv, o->quiet, expected) : KB_EXIT_CUDA;
        free(expected);
        if (m == KB_EXIT_USAGE) rc = KB_EXIT_USAGE;
        else if (m > rc) rc = m;
        if (m == KB_EXIT_OK || m == KB_EXIT_VERIFY) /* merged: the parts go */
            for (int p = 0; p < np; p++) {
                unlink(parts[p]);
                kb_sibling_path(parts[p], NULL, "csv", pc, sizeof pc);
                unlink(pc);
            }
    }
    free(order);
    free(group);
    free(taken);
    free(dead);
    free(outs);
    kb_cores_free(pool);
    for (int w = 0; w < n; w++) kb_ladder_queue_free(L.q[w]);
    const int sig = kb_stop_signal;
    if ((sig == SIGINT || sig == SIGTERM) && (!rc || rc == KB_EXIT_VERIFY)) {
        fprintf(stderr, "kbench: stopped by %s; the finished rows are in %s and %s\n", sig == SIGINT ? "SIGINT" : "SIGTERM",
                csv, json);
        return 128 + sig;
    }
    return rc;
}
