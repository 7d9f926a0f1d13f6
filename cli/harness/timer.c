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

/* One batch of samples enqueued: each an L2 flush (unless hot), then the
 * launch between events start[k] and stop[k]. Under graph timing it is
 * captured once into a graph (kept in *exec for this batch size) and
 * replayed: the flushes and the event records are nodes of the graph, so
 * every sample still starts on a flushed L2, and no CPU launch overhead falls
 * between a sample's two events. */
static int enqueue_batch(kb_timer *t, kb_sample_fn before, kb_sample_fn fn, void *ctx, int batch, int hot, int graph,
                         int host, cudaGraphExec_t *exec)
{
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
    for (int k = 0; k < batch && !rc; k++) {
        if (before && (rc = before(ctx, t->stream))) break;
        if (!hot) {
            t->flushes++;
            if ((rc = kb_l2_flush(t->scratch, t->scratch_bytes, t->sm_count, t->stream))) {
                kb_cuda_fail(rc, "kb_l2_flush", __FILE__, __LINE__);
                break;
            }
        }
        cudaEventRecordWithFlags(t->start[k], t->stream, rec);
        const double h0 = host && !graph ? kb_now_s() : 0; /* kb_time_extra.interpreted */
        if ((rc = fn(ctx, t->stream)) != 0) break;
        if (host && !graph) t->host_s += kb_now_s() - h0, t->host_n++;
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

int kb_time(kb_timer *t, kb_sample_fn fn, void *ctx, const kb_opts *o, const char *label, kb_stats *st,
            kb_time_extra *x)
{
    nvtxRangePushA(label);
    int rc = 0, graph = kb_timing_graph(o->timing, x && x->interpreted);
    memset(st, 0, sizeof *st);
    if (x) {
        x->samples = NULL;
        x->fallback[0] = 0;
        x->host_ms = 0;
        memset(&x->cond, 0, sizeof x->cond);
    }
    kb_sample_fn before = x ? x->before : NULL;
    t->host_s = 0, t->host_n = 0;
    for (int i = 0; i < o->warmup; i++)
        if ((before && (rc = before(ctx, t->stream))) || (rc = fn(ctx, t->stream)) != 0) goto out;
    if (o->warmup && ((rc = cudaGetLastError()) || (rc = cudaStreamSynchronize(t->stream)))) {
        kb_cuda_fail(rc, "warm-up launches", __FILE__, __LINE__);
        goto out;
    }
    kb_watch_kick();
    /* graphs by batch size: powers of two up to KB_MAX_BATCH */
    cudaGraphExec_t execs[8] = {0};
    int cap = 1024, n = 0, batch = 1;
    double *ms = malloc((size_t)cap * sizeof *ms), sum = 0, t0 = kb_now_s();
    if (x) kb_cond_begin(&t->cond); /* the ceilings and selftest's floor read no conditions */
    for (;;) {
        if (kb_stop_signal) break; /* the caller drops this row */
        int slot = 0;
        while ((1 << slot) < batch) slot++;
        const int capturing = graph && !execs[slot];
        if ((rc = enqueue_batch(t, before, fn, ctx, batch, o->hot, graph, x && x->interpreted, &execs[slot]))) {
            /* The launch ran outside a graph (the verify run, the warm-up) but
             * cannot be captured (a host sync inside, an allocation, an
             * exception under capture): sampled with events instead, the row
             * saying so. A lost context is an error, not a fallback. */
            if (!capturing || !x || n > 0 || kb_cuda_sticky(rc)) goto done;
            snprintf(x->fallback, sizeof x->fallback, "%.190s", kb_last_error[0] ? kb_last_error : cudaGetErrorString((cudaError_t)rc));
            cudaGetLastError();
            if ((rc = cudaStreamSynchronize(t->stream))) goto done;
            kb_last_error[0] = 0;
            graph = 0;
            t0 = kb_now_s();
            continue;
        }
        if (x) kb_cond_poll(&t->cond); /* while the batch runs */
        if ((rc = cudaEventSynchronize(t->stop[batch - 1])) != 0) {
            kb_cuda_fail(rc, "cudaEventSynchronize", __FILE__, __LINE__);
            goto done;
        }
        if ((rc = cudaGetLastError()) != 0) {
            kb_cuda_fail(rc, "kernel launch", __FILE__, __LINE__);
            goto done;
        }
        kb_watch_kick(); /* a batch finished: not hung */
        for (int k = 0; k < batch; k++) {
            float e = 0;
            if ((rc = cudaEventElapsedTime(&e, t->start[k], t->stop[k])) != 0) {
                kb_cuda_fail(rc, "cudaEventElapsedTime", __FILE__, __LINE__);
                goto done;
            }
            if (n == cap) ms = realloc(ms, (size_t)(cap *= 2) * sizeof *ms);
            ms[n++] = e;
            sum += e;
        }
        kb_stats_compute(ms, n, st);
        double wall = kb_now_s() - t0;
        if (n >= o->min_samples && sum * 1e-3 >= o->min_time) {
            if (st->noise_pct <= o->max_noise) break;
            /* noisy (a kernel of a few us: launch jitter, outliers), but its median,
             * the figure reported, is known to +-0.5% (or 0.1 us) */
            if (kb_median_known(st)) break;
            /* Noise above the bar but converged: once twice the minimum time is in,
             * if the later half of the samples is as noisy as the whole (within
             * 10%), more samples will not lower it; stop, and the row says so. */
            if (sum * 1e-3 >= 2 * o->min_time && n >= 2 * o->min_samples) {
                kb_stats late;
                kb_stats_compute(ms + n / 2, n - n / 2, &late);
                if (fabs(late.noise_pct - st->noise_pct) <= 0.1 * st->noise_pct) break;
            }
        }
        if (wall >= o->timeout || n >= 10000000) break;
        /* batches of about 20 ms, so the GPU stays busy between host checks
         * (graphs: a power of two, so that few are captured) */
        double per = wall / n;
        batch = per > 0 ? (int)(0.02 / per) : KB_MAX_BATCH;
        if (batch < 1) batch = 1;
        if (batch > KB_MAX_BATCH) batch = KB_MAX_BATCH;
        if (graph)
            while (batch & (batch - 1)) batch &= batch - 1;
    }
done:
    for (int i = 0; i < 8; i++)
        if (execs[i]) cudaGraphExecDestroy(execs[i]);
    if (rc == 0) kb_stats_compute(ms, n, st);
    if (x) kb_cond_end(&t->cond, &t->nvml, o->throttle_threshold, &x->cond);
    if (x && t->host_n) x->host_ms = 1e3 * t->host_s / (double)t->host_n;
    if (x && x->keep && rc == 0) x->samples = ms;
    else free(ms);
out:
    nvtxRangePop();
    return rc;
}

/* A copy candidate: cudaMemcpy (v < 0; r == w) or kbench's copy kernel v. */


_Static_assert(KB_RUNG_NO_ROOM == (int)cudaErrorMemoryAllocation, "ladder.c's 'does not fit' is CUDA's");
