/* The timer: CUDA events around each sample, an L2 flush before each,
 * batches between host checks, the stopping rule (timer.h). */
#include "ladder.h"
#include "nvml.h"
#include "stats.h"
#include "timer.h"
#include "timer_int.h"
#include "watch.h"
#include "../core/clock.h"
#include "../core/errors.h"
#include "../core/settings.h"
#include "../report/device.h"
#include "../report/row.h"
#include "../../kernels/kernels.h"


#include <cuda_runtime_api.h>
#include <math.h>
#include <nvtx3/nvToolsExt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


int kb_timer_create(kb_timer **out, const kb_device *d)
{
    kb_timer *t = calloc(1, sizeof *t);
    *out = t;
    t->sm_count = d->attr.sm_count;
    t->nvml = d->nvml;
    /* at least twice the L2, so nothing of the inputs survives the flush */
    t->scratch_bytes = 2 * (d->l2_bytes ? d->l2_bytes : (64u << 20));
    if (t->scratch_bytes < (size_t)(128u << 20)) t->scratch_bytes = 128u << 20;
    KB_CK(cudaMalloc(&t->scratch, t->scratch_bytes));
    KB_CK(cudaMemset(t->scratch, 0x11, t->scratch_bytes)); /* small finite floats: the flush reads them */
    KB_CK(cudaStreamCreateWithFlags(&t->stream, cudaStreamNonBlocking));
    for (int i = 0; i < KB_MAX_BATCH; i++) {
        KB_CK(cudaEventCreate(&t->start[i]));
        KB_CK(cudaEventCreate(&t->stop[i]));
    }
    return 0;
}

void kb_timer_destroy(kb_timer *t)
{
    if (!t) return;
    for (int i = 0; i < KB_MAX_BATCH; i++) {
        if (t->start[i]) cudaEventDestroy(t->start[i]);
        if (t->stop[i]) cudaEventDestroy(t->stop[i]);
    }
    if (t->stream) cudaStreamDestroy(t->stream);
    cudaFree(t->scratch);
    free(t);
}

void *kb_timer_stream(kb_timer *t) { return t->stream; }
size_t kb_timer_scratch_bytes(const kb_timer *t) { return t->scratch_bytes; }

/* One measurement in progress (kb_time_turns): its samples so far, its
 * graphs by batch size (powers of two up to KB_MAX_BATCH), the conditions
 * NVML saw and the seconds it has sampled. */
typedef struct {
    kb_turn *u;
    int graph, batch, n, cap, done;
    double *ms, sum, wall;
    cudaGraphExec_t execs[8];
    kb_cond_acc cond;
    double host_s; /* events timing of an interpreted launch: the host's seconds inside the launches, and their count */
    long host_n;
} sampler;

/* One batch of samples enqueued: each an L2 flush (unless hot), then the
 * launch between events start[k] and stop[k]. Under graph timing it is
 * captured once into a graph (kept in *exec for this batch size) and
 * replayed: the flushes and the event records are nodes of the graph, so
 * every sample still starts on a flushed L2, and no CPU launch overhead falls
 * between a sample's two events. */
static int enqueue_batch(kb_timer *t, sampler *s, int hot, cudaGraphExec_t *exec)
{
    const kb_turn *u = s->u;
    const kb_sample_fn before = u->x ? u->x->before : NULL;
    const int graph = s->graph, host = u->x && u->x->interpreted;
    int rc = 0;
    if (graph && *exec) {
        if ((rc = cudaGraphLaunch(*exec, t->stream))) kb_cuda_fail(rc, "cudaGraphLaunch", __FILE__, __LINE__);
        return rc;
    }
    if (graph && (rc = cudaStreamBeginCapture(t->stream, cudaStreamCaptureModeRelaxed))) {
        kb_cuda_fail(rc, "cudaStreamBeginCapture", __FILE__, __LINE__);
        return rc;
    }
    unsigned rec = graph ? cudaEventRecordExternal : cudaEventRecordDefault;
    for (int k = 0; k < s->batch && !rc; k++) {
        if (before && (rc = before(u->ctx, t->stream))) break;
        if (!hot) {
            t->flushes++;
            if ((rc = kb_l2_flush(t->scratch, t->scratch_bytes, t->sm_count, t->stream))) {
                kb_cuda_fail(rc, "kb_l2_flush", __FILE__, __LINE__);
                break;
            }
        }
        cudaEventRecordWithFlags(t->start[k], t->stream, rec);
        const double h0 = host && !graph ? kb_now_s() : 0; /* kb_time_extra.interpreted */
        if ((rc = u->fn(u->ctx, t->stream)) != 0) break;
        if (host && !graph) s->host_s += kb_now_s() - h0, s->host_n++;
        cudaEventRecordWithFlags(t->stop[k], t->stream, rec);
    }
    if (!graph) return rc;
    cudaGraph_t g = NULL;
    int e = cudaStreamEndCapture(t->stream, &g);
    if (!rc && e) {
        rc = e;
        kb_cuda_fail(rc, "graph capture of the launch (cudaStreamEndCapture)", __FILE__, __LINE__);
    }
    if (!rc && (rc = cudaGraphInstantiate(exec, g, 0))) kb_cuda_fail(rc, "cudaGraphInstantiate", __FILE__, __LINE__);
    if (g) cudaGraphDestroy(g);
    if (rc) {
        *exec = NULL;
        cudaGetLastError();
        return rc;
    }
    if ((rc = cudaGraphLaunch(*exec, t->stream))) kb_cuda_fail(rc, "cudaGraphLaunch", __FILE__, __LINE__);
    return rc;
}

int kb_timing_graph(const char *timing, int interpreted)
{
    return !strcmp(timing, "graph") || (interpreted && !strcmp(timing, "auto"));
}

/* s's warm-up launches, synchronised; its state reset. 0 or the CUDA error. */
static int sampler_start(kb_timer *t, sampler *s, const kb_opts *o)
{
    kb_turn *u = s->u;
    kb_time_extra *x = u->x;
    int rc = 0;
    s->graph = kb_timing_graph(o->timing, x && x->interpreted);
    s->batch = 1;
    memset(u->st, 0, sizeof *u->st);
    if (x) {
        x->samples = NULL;
        x->fallback[0] = 0;
        x->host_ms = 0;
        memset(&x->cond, 0, sizeof x->cond);
    }
    kb_sample_fn before = x ? x->before : NULL;
    for (int i = 0; i < o->warmup; i++)
        if ((before && (rc = before(u->ctx, t->stream))) || (rc = u->fn(u->ctx, t->stream)) != 0) return rc;
    if (o->warmup && ((rc = cudaGetLastError()) || (rc = cudaStreamSynchronize(t->stream))))
        kb_cuda_fail(rc, "warm-up launches", __FILE__, __LINE__);
    if (!rc && !(s->ms = malloc((size_t)(s->cap = 1024) * sizeof *s->ms))) abort();
    if (!rc && x) kb_cond_begin(&s->cond); /* the ceilings and selftest's floor read no conditions */
    return rc;
}

/* The batch's samples read from its events into s. 0 or the CUDA error. */
static int sampler_read(kb_timer *t, sampler *s)
{
    int rc;
    if ((rc = cudaEventSynchronize(t->stop[s->batch - 1])) != 0) {
        kb_cuda_fail(rc, "cudaEventSynchronize", __FILE__, __LINE__);
        return rc;
    }
    if ((rc = cudaGetLastError()) != 0) {
        kb_cuda_fail(rc, "kernel launch", __FILE__, __LINE__);
        return rc;
    }
    kb_watch_kick(); /* a batch finished: not hung */
    for (int k = 0; k < s->batch; k++) {
        float e = 0;
        if ((rc = cudaEventElapsedTime(&e, t->start[k], t->stop[k])) != 0) {
            kb_cuda_fail(rc, "cudaEventElapsedTime", __FILE__, __LINE__);
            return rc;
        }
        if (s->n == s->cap && !(s->ms = realloc(s->ms, (size_t)(s->cap *= 2) * sizeof *s->ms))) abort();
        s->ms[s->n++] = e;
        s->sum += e;
    }
    return 0;
}

/* One batch of s's samples, then the stopping rule: s->done once it says
 * stop. 0 or the CUDA error (s done). */
static int sampler_step(kb_timer *t, sampler *s, const kb_opts *o)
{
    kb_turn *u = s->u;
    const double w0 = kb_now_s();
    int slot = 0;
    while ((1 << slot) < s->batch) slot++;
    const int capturing = s->graph && !s->execs[slot];
    int rc = enqueue_batch(t, s, o->hot, &s->execs[slot]);
    if (rc) {
        /* The launch ran outside a graph (the verify run, the warm-up) but
         * cannot be captured (a host sync inside, an allocation, an
         * exception under capture): sampled with events instead, the row
         * saying so. A lost context is an error, not a fallback. */
        if (!capturing || !u->x || s->n > 0 || kb_cuda_sticky(rc)) return s->done = 1, rc;
        snprintf(u->x->fallback, sizeof u->x->fallback, "%.190s",
                 kb_last_error[0] ? kb_last_error : cudaGetErrorString((cudaError_t)rc));
        cudaGetLastError();
        if ((rc = cudaStreamSynchronize(t->stream))) return s->done = 1, rc;
        kb_last_error[0] = 0;
        s->graph = 0;
        return 0;
    }
    if (u->x) kb_cond_poll(&s->cond); /* while the batch runs */
    if ((rc = sampler_read(t, s))) return s->done = 1, rc;
    s->wall += kb_now_s() - w0;
    kb_stats_compute(s->ms, s->n, u->st);
    if (kb_enough_samples(s->ms, s->n, s->sum, s->wall, o->min_time, o->min_samples, o->max_noise, o->timeout, u->st))
        return s->done = 1, 0;
    /* batches of about 20 ms, so the GPU stays busy between host checks
     * (graphs: a power of two, so that few are captured) */
    double per = s->wall / s->n;
    s->batch = per > 0 ? (int)(0.02 / per) : KB_MAX_BATCH;
    if (s->batch < 1) s->batch = 1;
    if (s->batch > KB_MAX_BATCH) s->batch = KB_MAX_BATCH;
    if (s->graph)
        while (s->batch & (s->batch - 1)) s->batch &= s->batch - 1;
    return 0;
}

/* s's graphs destroyed, its statistics and conditions into its turn. */
static void sampler_finish(kb_timer *t, sampler *s, const kb_opts *o)
{
    kb_turn *u = s->u;
    kb_time_extra *x = u->x;
    for (int i = 0; i < 8; i++)
        if (s->execs[i]) cudaGraphExecDestroy(s->execs[i]);
    if (u->rc == 0) kb_stats_compute(s->ms, s->n, u->st);
    if (x && s->ms) kb_cond_end(&s->cond, &t->nvml, o->throttle_threshold, &x->cond);
    if (x && s->host_n) x->host_ms = 1e3 * s->host_s / (double)s->host_n;
    if (x && x->keep && u->rc == 0) x->samples = s->ms;
    else free(s->ms);
}

/* A turn's error: its code, and kb_last_error kept with it (the next turn's
 * may overwrite the global). */
static void turn_fail(kb_turn *u, int rc)
{
    u->rc = rc;
    snprintf(u->error, sizeof u->error, "%s", kb_last_error[0] ? kb_last_error : cudaGetErrorString((cudaError_t)rc));
    kb_last_error[0] = 0;
    if (!kb_cuda_sticky(rc)) cudaGetLastError(); /* not the next turn's */
}

/* After a turn's warm-up or batch, with others' turns next (n > 1): its
 * x->after (an input it writes in place restored). 0 or the CUDA error. */
static int turn_after(kb_timer *t, const kb_turn *u, int n)
{
    return n > 1 && u->x && u->x->after ? u->x->after(u->ctx, t->stream) : 0;
}

/* Turn s's start (warm-up) or next batch, with what goes around either:
 * the watchdog armed for it, its NVTX range, kb_last_error clean, its
 * after-hook (after a failed step too, unless the context is lost: it may
 * have written in place), its wall time; an error kept in the turn (s done).
 * 0 or the CUDA error. */
static int turn_step(kb_timer *t, sampler *s, int n, const kb_opts *o, int start)
{
    kb_turn *u = s->u;
    if (u->what) kb_watch_arm(u->what, 2 * o->timeout + 60);
    if (n > 1) nvtxRangePushA(u->label);
    const double w0 = kb_now_s();
    kb_last_error[0] = 0;
    int rc = start ? sampler_start(t, s, o) : sampler_step(t, s, o);
    if (n > 1) nvtxRangePop();
    if (!rc) rc = turn_after(t, u, n);
    else if (!kb_cuda_sticky(rc)) turn_after(t, u, n);
    u->wall_s += kb_now_s() - w0;
    if (rc) turn_fail(u, rc), s->done = 1;
    return rc;
}

int kb_time_turns(kb_timer *t, kb_turn *turns, int n, const kb_opts *o)
{
    sampler *s = calloc((size_t)n, sizeof *s);
    if (!s) abort();
    int live = 0, lost = 0; /* lost: a turn's sticky error, the context gone */
    for (int i = 0; i < n; i++) turns[i].rc = 0, turns[i].error[0] = 0, turns[i].wall_s = 0;
    for (int i = 0; i < n && !lost; i++) {
        s[i].u = &turns[i];
        const int rc = turn_step(t, &s[i], n, o, 1);
        if (rc) lost = kb_cuda_sticky(rc) ? rc : 0;
        else live++;
    }
    kb_watch_kick();
    /* rounds of a batch (about 20 ms) each, in ABBA order (kb_turn_at), until each one's rule says stop */
    for (unsigned r = 0; live && !lost && !kb_stop_signal; r++) /* a stop signal: the caller drops these rows */
        for (int k = 0; k < n && !lost && !kb_stop_signal; k++) {
            const int i = kb_turn_at(r, k, n);
            if (s[i].done) continue;
            const int rc = turn_step(t, &s[i], n, o, 0);
            if (rc) lost = kb_cuda_sticky(rc) ? rc : 0;
            live -= s[i].done;
        }
    for (int i = 0; i < n; i++) {
        if (lost && !turns[i].rc && !s[i].done) { /* not finished: another turn lost the context */
            turns[i].rc = lost;
            snprintf(turns[i].error, sizeof turns[i].error, "not measured: the context was lost in another "
                     "implementation's turn (%s)", cudaGetErrorString((cudaError_t)lost));
        }
        if (s[i].u) sampler_finish(t, &s[i], o);
    }
    free(s);
    for (int i = 0; i < n; i++)
        if (turns[i].rc) return turns[i].rc;
    return 0;
}

int kb_time(kb_timer *t, kb_sample_fn fn, void *ctx, const kb_opts *o, const char *label, kb_stats *st,
            kb_time_extra *x)
{
    kb_turn u = {.fn = fn, .ctx = ctx, .label = label, .st = st, .x = x};
    nvtxRangePushA(label);
    const int rc = kb_time_turns(t, &u, 1, o);
    nvtxRangePop();
    if (rc && u.error[0]) snprintf(kb_last_error, sizeof kb_last_error, "%s", u.error);
    return rc;
}

/* A copy candidate: cudaMemcpy (v < 0; r == w) or kbench's copy kernel v. */


_Static_assert(KB_RUNG_NO_ROOM == (int)cudaErrorMemoryAllocation, "ladder.c's 'does not fit' is CUDA's");
