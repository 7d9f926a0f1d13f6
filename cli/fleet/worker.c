/* A --devices worker's side (worker.h): its asks to the parent through its
 * pipes (the next case, a case done, the GEMM ladders' rungs), and a dry
 * run's stand-ins for the ladders' rungs. */
#include "worker.h"
#include "ladder_queue.h"
#include "../core/config.h"
#include "../core/op.h"
#include "../harness/ceilings.h"
#include "../harness/ladder.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* a worker's side: "done" to the parent when every row of its oldest
 * unfinished case is written (its rows may wait for the case's reference
 * after the next case was asked for) */
void kb_worker_done(void *ctx)
{
    const kb_worker_io *io = ctx;
    if (write(io->from, "done\n", 5) != 5) {} /* the parent gone: nothing to tell */
}

/* a worker's side: what it asks (len bytes), the parent's one-line answer
 * (its newline dropped) into line; 0, or -1: the parent gone. A signal does
 * not cut the wait: the parent still answers. */
static int worker_ask(const kb_worker_io *io, const char *ask, size_t len, char *line, size_t n)
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
int kb_worker_next(void *ctx)
{
    char line[32];
    return worker_ask(ctx, "next\n", 5, line, sizeof line) ? -1 : atoi(line);
}

/* a worker's side of the GEMM ladders' shared search (kb_ladder_share.fn):
 * the rung it timed and its rate to the parent, its next rung back (1), or
 * the search's end (0: *gpus took part); -1: not shared (the parent gone, a
 * reply it cannot read), nor ever again */
int kb_worker_ladder(void *ctx, const kb_rung_msg *done, kb_rung_msg *next, int *gpus)
{
    kb_worker_io *io = ctx;
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
void kb_worker_dry_ladders(const kb_plan *plan, int gpu, kb_worker_io *io)
{
    kb_ladder_share sh = {kb_worker_ladder, io};
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
