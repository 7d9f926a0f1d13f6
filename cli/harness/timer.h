/* The timer: CUDA events per sample, an L2 flush before each (unless --hot),
 * batches of samples between host checks, the stopping rule of kb_opts
 * (timer.c). */
#ifndef KB_HARNESS_TIMER_H
#define KB_HARNESS_TIMER_H

#include "timer_int.h"
#include "../core/errors.h"
#include "../core/settings.h"
#include "../report/conditions.h"
#include "../report/device.h"
#include "../report/row.h"
#include <stddef.h>

typedef struct kb_timer kb_timer;
/* One sample's work, launched on stream; 0 or a CUDA error (kb_last_error set). */
typedef int (*kb_sample_fn)(void *ctx, void *stream);

int kb_timer_create(kb_timer **t, const kb_device *d);
void kb_timer_destroy(kb_timer *t);
void *kb_timer_stream(kb_timer *t);
size_t kb_timer_scratch_bytes(const kb_timer *t);
/* Warm up, then sample (o->timing "graph": replayed from a CUDA graph) until min_samples and min_time are met and the noise
 * (stddev/mean) is under max_noise, or, past twice min_time, the noise has
 * converged above it (the later half of the samples as noisy as the whole,
 * within 10%), or timeout; the whole inside an NVTX range `label`. */
/* What kb_time gives besides the statistics (x may be NULL): the samples, in
 * the order measured, when keep is set (malloc'd; the caller frees), and the
 * conditions NVML saw while they ran (one poll per batch). */
typedef struct {
    kb_sample_fn before; /* untimed, before each launch and its flush (presample.h); NULL: nothing */
    kb_sample_fn after;  /* kb_time_turns: untimed, after each of its batches (the others' turns next); NULL: nothing */
    int keep;
    double *samples;
    kb_cond cond;
    /* non-empty: o->timing was graph, but the launch could not be captured
     * (why, one line); the samples are events' (timed as --timing events) */
    char fallback[200];
    /* interpreted: set by the caller for an interpreted implementation's
     * launch (kb_impl.interpreted): o->timing auto times it under graphs
     * (kb_timing_graph), and under events host_ms is the host's mean time
     * inside one launch call (ms; 0: not measured) */
    int interpreted;
    double host_ms;
} kb_time_extra;
/* Whether timing (o->timing: events, graph or auto) samples from CUDA
 * graphs: auto does for an interpreted implementation (a Python one: its
 * dispatch, up to 3x a small kernel, kept out of the samples), events for
 * the rest. */
int kb_timing_graph(const char *timing, int interpreted);
int kb_time(kb_timer *t, kb_sample_fn fn, void *ctx, const kb_opts *o, const char *label, kb_stats *st,
            kb_time_extra *x);
/* Several measurements in turns (--order turns): each warmed up, then a
 * batch of samples (about 20 ms) of each in rounds (ABBA: kb_turn_at), each stopping by
 * its own rule (kb_time's, its own sampled seconds against --timeout), so
 * that all of them see the same clocks and power rather than the last one
 * the hottest GPU. kb_time is one turn. Each turn's rc is 0 or its CUDA
 * error, the message in error; a lost context stops every turn (the
 * unfinished ones say so; the finished keep their samples). With several
 * turns, x->after runs after each one's warm-up and batches. The first
 * non-zero rc, else 0. */
typedef struct {
    kb_sample_fn fn;
    void *ctx;
    const char *label; /* its NVTX range (around each of its batches) */
    const char *what;  /* the watchdog armed for it before each of its steps (kb_watch_arm); NULL: as armed */
    kb_stats *st;
    kb_time_extra *x; /* may be NULL */
    int rc;
    char error[KB_ERRLEN];
    double wall_s; /* the seconds of its warm-up and its batches */
} kb_turn;
int kb_time_turns(kb_timer *t, kb_turn *turns, int n, const kb_opts *o);
/* Which of n turns takes step k of round r (rounds after the warm-ups, which
 * go in order): backward in even rounds, forward in odd ones, so that every
 * turn follows each of its neighbours as often (ABBA: 0 1 2, 2 1 0, 0 1 2).
 * Under a power cap a batch that follows a hotter one starts at lower clocks,
 * and in a fixed round robin the same turn always paid for it. */
static inline int kb_turn_at(unsigned r, int k, int n) { return r & 1u ? k : n - 1 - k; }

#endif
