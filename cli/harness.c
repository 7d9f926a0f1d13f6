/* Measurement: statistics, verification against the reference, timing
 * with CUDA events and an L2 flush before every sample, copy ceilings. */
#include "harness.h"

#include "../kernels/kernels.h"

#include <cuda_runtime_api.h>
#include <math.h>
#include <nvtx3/nvToolsExt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

char kb_last_error[512];

void kb_cuda_fail(int err, const char *what, const char *file, int line)
{
    snprintf(kb_last_error, sizeof kb_last_error, "%s:%d: %s: %s (%s)", file, line, what,
             cudaGetErrorString((cudaError_t)err), cudaGetErrorName((cudaError_t)err));
}

int kb_cuda_sticky(int err)
{
    switch ((cudaError_t)err) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
    case cudaErrorContextIsDestroyed:
        return 1;
    default:
        return 0;
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void kb_stats_compute(const double *ms, int n, kb_stats *st)
{
    memset(st, 0, sizeof *st);
    st->samples = n;
    if (n <= 0) return;
    double *s = malloc((size_t)n * sizeof *s);
    memcpy(s, ms, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    st->min = s[0];
    st->max = s[n - 1];
    st->median = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    /* quartiles: linear between the order statistics at (n-1)q (numpy's default) */
    for (int k = 0; k < 2; k++) {
        double pos = (n - 1) * (k ? 0.75 : 0.25), lo = floor(pos);
        int i = (int)lo, j = i + 1 < n ? i + 1 : i;
        (k ? &st->p75 : &st->p25)[0] = s[i] + (pos - lo) * (s[j] - s[i]);
    }
    double h = 0.98 * sqrt((double)n); /* 1.96 sqrt(n) / 2 */
    int lo = (int)floor(n / 2.0 - h), hi = (int)ceil(1 + n / 2.0 + h); /* 1-based ranks */
    st->med_lo = s[lo < 1 ? 0 : lo - 1];
    st->med_hi = s[hi > n ? n - 1 : hi - 1];
    double sum = 0;
    for (int i = 0; i < n; i++) sum += s[i];
    st->mean = sum / n;
    double var = 0;
    for (int i = 0; i < n; i++) var += (s[i] - st->mean) * (s[i] - st->mean);
    st->stddev = n > 1 ? sqrt(var / (n - 1)) : 0;
    st->noise_pct = st->mean > 0 ? 100.0 * st->stddev / st->mean : 0;
    free(s);
}

int kb_median_known(const kb_stats *st)
{
    if (st->samples < KB_MEDIAN_CI_MIN || !(st->median > 0)) return 0;
    double half = (st->med_hi - st->med_lo) / 2, pct = KB_MEDIAN_CI_PCT / 100 * st->median;
    return half <= (pct > KB_MEDIAN_CI_MS ? pct : KB_MEDIAN_CI_MS);
}

int kb_best_rate(const double *rates, int n)
{
    int best = -1;
    for (int i = 0; i < n; i++)
        if (isfinite(rates[i]) && rates[i] > 0 && (best < 0 || rates[i] > rates[best])) best = i;
    return best;
}

const char *kb_row_note(double pct_of_copy, double pct_of_gemm, double bytes, size_t l2_bytes, int hot)
{
    if (pct_of_copy > 100 && (hot || (l2_bytes && bytes <= (double)l2_bytes))) return "l2";
    if (pct_of_copy > 100 || pct_of_gemm > 100) return "ceiling?";
    return "";
}

size_t kb_buf_checked(const kb_buf *b) { return b->rows ? (size_t)b->nrows * b->row_len : b->n; }

long kb_buf_checked_rows(const kb_buf *b)
{
    if (!b->row_len) return 0;
    return b->rows ? b->nrows : (long)(b->n / b->row_len);
}

void kb_buf_gather(const kb_buf *b, const void *host, double *got)
{
    if (!b->rows) {
        kb_load_all(host, b->n, b->dtype, got);
        return;
    }
    const size_t len = b->row_len;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < b->nrows; i++)
        for (size_t k = 0; k < len; k++) got[(size_t)i * len + k] = kb_load(host, (size_t)b->rows[i] * len + k, b->dtype);
}

/* Knuth's selection sampling (Algorithm S) over the interior rows: each row
 * is taken with probability (still needed) / (still left), which yields
 * exactly the count asked for, in order, from one pass and the seed alone. */
long kb_sample_rows(long n, long want, uint64_t seed, long *out)
{
    if (n <= 0) return 0;
    if (want >= n) {
        for (long i = 0; i < n; i++) out[i] = i;
        return n;
    }
    if (want < 2) want = 2; /* n >= 3 here */
    kb_rng r;
    kb_rng_seed(&r, seed);
    long k = 0, need = want - 2, left = n - 2;
    out[k++] = 0;
    for (long i = 1; i < n - 1 && need > 0; i++, left--)
        if ((double)(kb_rng_next(&r) >> 11) * 0x1.0p-53 * (double)left < (double)need) {
            out[k++] = i;
            need--;
        }
    out[k++] = n - 1;
    return k;
}

/* Compares the checked elements (kb_buf_checked) of got with b->ref. */
int kb_compare(const kb_buf *b, const double *got, kb_tol tol, double *rel, double *maxabs)
{
    double num = 0, den = 0, mx = 0, mref = 0;
    int bad = 0;
    const size_t n = kb_buf_checked(b);
#pragma omp parallel for schedule(static) reduction(+ : num, den) reduction(max : mx, mref) reduction(| : bad)
    for (size_t i = 0; i < n; i++) {
        double r = b->ref[i], g = got[i];
        double d = fabs(g - r);
        if (!isfinite(g) || !isfinite(d)) bad = 1; /* NaN poison left: unwritten */
        else if (d > mx) mx = d;
        num += (g - r) * (g - r);
        den += r * r;
        if (fabs(r) > mref) mref = fabs(r);
    }
    if (bad) mx = NAN;
    den = den > b->scale * b->scale ? den : b->scale * b->scale;
    *rel = den > 0 ? sqrt(num / den) : sqrt(num);
    *maxabs = mx;
    if (bad || !isfinite(*rel) || !isfinite(mx)) return 0;
    return *rel <= tol.rel_l2 && mx <= tol.max_abs * (mref > 1 ? mref : 1);
}

#define KB_MAX_BATCH 64

struct kb_timer {
    void *scratch;
    size_t scratch_bytes;
    cudaStream_t stream;
    cudaEvent_t start[KB_MAX_BATCH], stop[KB_MAX_BATCH];
    unsigned flushes;
    int sm_count;
    /* copy ceilings measured so far, by byte count */
    struct { double r, w, gbps; int cand; } copies[256];
    int ncopies;
    /* GEMM ceilings measured so far (0: not yet), and the size used */
    double gemm[KB_NGEMM];
    int gemm_n[KB_NGEMM], gemm_layout[KB_NGEMM], gemm_shared[KB_NGEMM];
    double gemm_wait_s; /* the shared searches' wait for the parent's queue, summed */
    kb_ladder_share share; /* the ladder's search split over workers (fn NULL: alone) */
    /* cuBLAS on rows' own GEMM shapes, measured so far */
    struct { int k, n, mnk[KB_GEMM_BENCH_SHAPES][3]; double tflops; } shapes[64];
    int nshapes;
    kb_gpu_info nvml; /* the device's, for the conditions of the samples */
    kb_cond_acc cond;
};

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
static int enqueue_batch(kb_timer *t, kb_sample_fn fn, void *ctx, int batch, int hot, int graph, cudaGraphExec_t *exec)
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
        if (!hot) {
            t->flushes++;
            if ((rc = kb_l2_flush(t->scratch, t->scratch_bytes, t->sm_count, t->stream))) {
                kb_cuda_fail(rc, "kb_l2_flush", __FILE__, __LINE__);
                break;
            }
        }
        cudaEventRecordWithFlags(t->start[k], t->stream, rec);
        if ((rc = fn(ctx, t->stream)) != 0) break;
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

int kb_time(kb_timer *t, kb_sample_fn fn, void *ctx, const kb_opts *o, const char *label, kb_stats *st,
            kb_time_extra *x)
{
    nvtxRangePushA(label);
    int rc = 0, graph = !strcmp(o->timing, "graph");
    memset(st, 0, sizeof *st);
    if (x) {
        x->samples = NULL;
        memset(&x->cond, 0, sizeof x->cond);
    }
    for (int i = 0; i < o->warmup; i++)
        if ((rc = fn(ctx, t->stream)) != 0) goto out;
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
        if ((rc = enqueue_batch(t, fn, ctx, batch, o->hot, graph, &execs[slot]))) goto done;
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
    if (x && x->keep && rc == 0) x->samples = ms;
    else free(ms);
out:
    nvtxRangePop();
    return rc;
}

/* A copy candidate: cudaMemcpy (v < 0; r == w) or kbench's copy kernel v. */
typedef struct {
    int v, sm;
    void *dst;
    const void *src;
    size_t r, w;
} copy_ctx;

static int copy_fn(void *ctx, void *stream)
{
    copy_ctx *c = ctx;
    if (c->v >= 0) return kb_copy_variant_launch(c->v, c->dst, c->src, c->r, c->w, c->sm, stream);
    KB_CK(cudaMemcpyAsync(c->dst, c->src, c->r, cudaMemcpyDeviceToDevice, (cudaStream_t)stream));
    return 0;
}

/* The copy ceiling at a row's bytes read and written: the best rate of
 * cudaMemcpy (the same bytes in all, half read and half written) and of each
 * of kbench's copy kernels (reading rbytes, writing wbytes), each timed like a
 * row (L2 flushed, median). Cached by (rbytes, wbytes). */
/* The ceiling's candidates: cudaMemcpy and the copy kernels that were best
 * somewhere. Every variant at 16 MiB, 256 MiB and 1 GiB moved, read:write
 * 1:1, 2:1 and 3:1 (kbench device, H100 80GB HBM3, 2026-11-25, GB/s):
 *   16 MiB: vec16x2 persistent8 best at 1:1 and 3:1 (2648, 2661), vec16x1
 *     full at 2:1 (2703); cudaMemcpy 2595/2621/2558;
 *   256 MiB and 1 GiB: vec16x4 full noalloc+cs best everywhere (3023-3113),
 *     vec16x1 full within 1-3% of it; cudaMemcpy 2968-2998.
 * vec16x2 full stays for its 16 MiB 3:1 (2648, next to the best). The other
 * variants were never best and are measured only by kbench device. */
static const char *const ceiling_kernels[] = {"vec16x1 full", "vec16x2 full", "vec16x2 persistent8",
                                              "vec16x4 full noalloc+cs"};

int kb_copy_in_ceiling(int cand)
{
    if (cand == 0) return 1;
    const char *name = kb_copy_candidate_name(cand);
    for (size_t i = 0; name && i < sizeof ceiling_kernels / sizeof ceiling_kernels[0]; i++)
        if (!strcmp(name, ceiling_kernels[i])) return 1;
    return 0;
}

/* Buffers for a copy of rbytes read and wbytes written, each candidate's
 * context from them (cudaMemcpy: half of the sum each way); the source holds
 * real bits, not zeros. 0, or a CUDA error with nothing left allocated. */
typedef struct {
    void *a, *b;
    size_t r, w, half;
} copy_bufs;

/* the sizes: the copy's, and the two buffers' (na, nb) */
static void copy_bufs_size(copy_bufs *cb, double rbytes, double wbytes, size_t *na, size_t *nb)
{
    memset(cb, 0, sizeof *cb);
    cb->r = rbytes < 256 ? 256 : (size_t)rbytes;
    cb->w = wbytes < 256 ? 256 : (size_t)wbytes;
    cb->half = ((cb->r + cb->w) / 2 + 255) & ~(size_t)255;
    *na = cb->r > cb->half ? cb->r : cb->half;
    *nb = cb->w > cb->half ? cb->w : cb->half;
}

size_t kb_copy_bufs_bytes(double rbytes, double wbytes)
{
    copy_bufs cb;
    size_t na, nb;
    copy_bufs_size(&cb, rbytes, wbytes, &na, &nb);
    return na + nb;
}

static int copy_bufs_alloc(copy_bufs *cb, double rbytes, double wbytes)
{
    size_t na, nb;
    copy_bufs_size(cb, rbytes, wbytes, &na, &nb);
    int rc = cudaMalloc(&cb->a, na);
    if (!rc) rc = cudaMalloc(&cb->b, nb);
    if (!rc) rc = cudaMemset(cb->a, 0x3c, na);
    if (rc) {
        cudaFree(cb->a);
        cudaFree(cb->b);
        cb->a = cb->b = NULL;
        cudaGetLastError();
    }
    return rc;
}

static copy_ctx copy_cand(const copy_bufs *cb, int cand, int sm_count)
{
    copy_ctx c = {cand - 1, sm_count, cb->b, cb->a, cand == 0 ? cb->half : cb->r, cand == 0 ? cb->half : cb->w};
    return c;
}

int kb_copy_rates(kb_timer *t, double rbytes, double wbytes, const kb_opts *o, double *rates, int all)
{
    int nc = kb_copy_ncandidates();
    if (nc > KB_COPY_MAX_CAND) return (int)cudaErrorInvalidValue;
    for (int i = 0; i < nc; i++) rates[i] = 0;
    copy_bufs cb;
    if (copy_bufs_alloc(&cb, rbytes, wbytes)) return 0; /* too big to copy beside the case: unknown */
    int rc = 0;
    /* several candidates per size: 50 samples at least, 10 ms of copying (a
     * small copy is mostly flush: 0.3 s of it took seconds a candidate) */
    kb_opts oo = *o;
    snprintf(oo.timing, sizeof oo.timing, "events"); /* a ceiling, whatever the rows' timing */
    if (oo.timeout > 1) oo.timeout = 1;
    if (oo.min_time > 0.01) oo.min_time = 0.01;
    if (oo.min_samples < 50) oo.min_samples = 50;
    /* The ceiling (not kbench device, which shows every candidate) first
     * times each kernel briefly, after one launch untimed (a first launch
     * loads the module): the median of 3 samples or more, 1 ms of copying.
     * One under half the best rate so far cannot be the ceiling, and that
     * median is its rate. At a decode MLP's bytes (read:write 10^4:1 and
     * more) the kernels fold long runs on a few threads, 10-100x under
     * cudaMemcpy, and each took its whole 1 s timeout: 3-4.6 s a case (MLP
     * grid, tokens 1, H200). */
    kb_opts probe = oo;
    probe.warmup = 1, probe.min_samples = 3, probe.min_time = 0.001;
    double best = 0;
    for (int i = 0; i < nc && !rc && !kb_stop_signal; i++) {
        if (!all && !kb_copy_in_ceiling(i)) continue;
        copy_ctx c = copy_cand(&cb, i, t->sm_count);
        char label[160];
        snprintf(label, sizeof label, "copy %s r=%zu w=%zu", kb_copy_candidate_name(i), c.r, c.w);
        kb_stats st;
        if (!all && best > 0) {
            rc = kb_time(t, copy_fn, &c, &probe, label, &st, NULL);
            const double r = !rc && st.median > 0 ? (double)(c.r + c.w) / (st.median * 1e-3) / 1e9 : 0;
            if (rc || r < best / 2) {
                rates[i] = r;
                continue;
            }
        }
        rc = kb_time(t, copy_fn, &c, &oo, label, &st, NULL);
        if (!rc && st.median > 0) rates[i] = (double)(c.r + c.w) / (st.median * 1e-3) / 1e9;
        if (rates[i] > best) best = rates[i];
    }
    cudaFree(cb.a);
    cudaFree(cb.b);
    return rc;
}

int kb_copy_wall_gbps(kb_timer *t, int cand, double rbytes, double wbytes, int iters, double *gbps)
{
    *gbps = 0;
    copy_bufs cb;
    int rc = copy_bufs_alloc(&cb, rbytes, wbytes);
    if (rc) {
        kb_cuda_fail(rc, "host-timed copy buffers", __FILE__, __LINE__);
        return rc;
    }
    copy_ctx c = copy_cand(&cb, cand, t->sm_count);
    for (int i = 0; i < 3 && !rc; i++) rc = copy_fn(&c, t->stream); /* warm-up */
    if (!rc) rc = cudaStreamSynchronize(t->stream);
    double t0 = kb_now_s();
    for (int i = 0; i < iters && !rc; i++) rc = copy_fn(&c, t->stream);
    if (!rc) rc = cudaStreamSynchronize(t->stream);
    double s = kb_now_s() - t0;
    if (rc) kb_cuda_fail(rc, "host-timed copy", __FILE__, __LINE__);
    else if (s > 0) *gbps = (double)(c.r + c.w) * iters / s / 1e9;
    cudaFree(cb.a);
    cudaFree(cb.b);
    return rc;
}

int kb_copy_ncandidates(void) { return kb_copy_nvariants() + 1; }

const char *kb_copy_candidate_name(int i) { return i == 0 ? "cudaMemcpy" : kb_copy_variant_name(i - 1); }

int kb_copy_gbps(kb_timer *t, double rbytes, double wbytes, const kb_opts *o, double *gbps, int *cand)
{
    *gbps = 0;
    if (cand) *cand = -1;
    for (int i = 0; i < t->ncopies; i++)
        if (t->copies[i].r == rbytes && t->copies[i].w == wbytes) {
            *gbps = t->copies[i].gbps;
            if (cand) *cand = t->copies[i].cand;
            return 0;
        }
    double rates[KB_COPY_MAX_CAND];
    int rc = kb_copy_rates(t, rbytes, wbytes, o, rates, 0);
    if (rc) return rc;
    int best = kb_best_rate(rates, kb_copy_ncandidates());
    if (best < 0) return 0;
    *gbps = rates[best];
    if (cand) *cand = best;
    if (t->ncopies < 256) {
        t->copies[t->ncopies].r = rbytes;
        t->copies[t->ncopies].w = wbytes;
        t->copies[t->ncopies].cand = best;
        t->copies[t->ncopies++].gbps = rates[best];
    }
    return 0;
}

const char *kb_gemm_key_name(kb_gemm_key k)
{
    static const char *const names[KB_NGEMM] = {"fp32", "fp16", "bf16", "tf32"};
    return k >= 0 && k < KB_NGEMM ? names[k] : "none";
}

const char *kb_gemm_layout_name(int layout)
{
    static const char *const names[KB_GEMM_NLAYOUTS] = {"TN", "NN", "NT"};
    return layout >= 0 && layout < KB_GEMM_NLAYOUTS ? names[layout] : "?";
}

static int gemm_fn(void *ctx, void *stream) { return kb_gemm_bench_run(ctx, stream); }

static void gemm_type(kb_gemm_key k, int *dtype, int *tf32)
{
    *dtype = k == KB_GEMM_FP16 ? KB_FP16 : k == KB_GEMM_BF16 ? KB_BF16 : KB_FP32;
    *tf32 = k == KB_GEMM_TF32;
}

/* A GEMM is timed for at most this much GEMM time (and 20 samples); kb_time
 * still goes on until the median, the figure kept, is known to +-0.5% or the
 * noise is under 1%. A/B on 4 x H200 (2026-11-26, base, new, base, new on
 * each GPU):
 * - the ceiling's ladder (kb_gemm_tflops), 0.1 s a rung: at 20 ms the best
 *   rung read 2.4% higher (1.004-1.044 over 8 GPU-dtype pairs; base against
 *   base 0.986-1.009), short bursts at higher clocks, and kbench device's
 *   bf16 and tf32 ceilings spread 7-9% over four GPUs (4.4% at most at
 *   0.1 s on four others that day): it saved 2 s a run;
 * - the case's own shapes (kb_gemm_shapes_tflops), 20 ms: new/base median
 *   1.001 (p10-p90 0.962-1.037; base/base 0.969-1.029, 24 rows), and the
 *   MLP grid's per-case ceilings took 32 s of one H200 instead of 42. */
#define KB_GEMM_RUNG_S 0.1
#define KB_GEMM_SHAPES_S 0.02

/* Times a created bench (L2 flushed, median) for cap seconds at most (one
 * of the two above): TFLOP/s, or 0; frees it. */
static int gemm_rate(kb_timer *t, kb_gemm_bench *g, const kb_opts *o, const char *label, double cap, double *tflops)
{
    kb_stats st;
    kb_opts oo = *o;
    snprintf(oo.timing, sizeof oo.timing, "events"); /* a ceiling, whatever the rows' timing */
    if (oo.timeout > 3) oo.timeout = 3;
    if (oo.min_time > cap) oo.min_time = cap;
    int rc = kb_time(t, gemm_fn, g, &oo, label, &st, NULL);
    double f = kb_gemm_bench_flops(g);
    kb_gemm_bench_destroy(g);
    *tflops = !rc && st.median > 0 ? f / (st.median * 1e-3) / 1e12 : 0;
    return rc;
}

typedef struct {
    kb_timer *t;
    const kb_opts *o;
} rung_ctx;

_Static_assert(KB_RUNG_NO_ROOM == (int)cudaErrorMemoryAllocation, "ladder.c's 'does not fit' is CUDA's");

/* One rung (kb_rung_fn): an n^3 GEMM of key's type in a layout, timed;
 * cudaErrorMemoryAllocation when it does not fit (nothing printed, nothing
 * left allocated); nothing timed once the run stops */
static int rung_fn(void *ctx, int key, int n, int layout, double *tf)
{
    rung_ctx *r = ctx;
    kb_gemm_bench g;
    int dtype, tf32;
    *tf = 0;
    if (kb_stop_signal) return 0;
    gemm_type((kb_gemm_key)key, &dtype, &tf32);
    int rc = kb_gemm_bench_create_layout(&g, dtype, tf32, n, layout);
    if (rc) return rc;
    char label[128];
    snprintf(label, sizeof label, "gemm %s n=%d %s", kb_gemm_key_name((kb_gemm_key)key), n, kb_gemm_layout_name(layout));
    return gemm_rate(r->t, &g, r->o, label, KB_GEMM_RUNG_S, tf);
}

size_t kb_gemm_ladder_bytes(kb_gemm_key k)
{
    const int n = kb_gemm_ladder_sizes[KB_GEMM_LADDER - 1], big[1][3] = {{n, n, n}};
    return kb_gemm_shapes_bytes(k, big, 1);
}

void kb_timer_share_ladder(kb_timer *t, const kb_ladder_share *sh)
{
    if (sh) t->share = *sh;
    else memset(&t->share, 0, sizeof t->share);
}

/* The GEMM ceiling of key k: the best rate of a square cuBLAS GEMM over a
 * ladder of sizes (smaller ones can run at higher clocks than the largest,
 * which draw the most power), each L2 flushed, median: every size in the
 * TN layout, then the other layouts at the best size and its neighbours
 * (cuBLAS picks other kernels for them; fp32's best was NT on an H100), the
 * search shared by the workers of one GPU model (ladder.c). The operands
 * are kernels/gemm.cu's fill: uniform [-1, 1) drawn in fp32, rounded once,
 * like every op's inputs (a GEMM's power and so its clock depend on the
 * bits: torch.mm beat this ceiling by 3% only on torch.rand(bf16) * 2 - 1,
 * whose small values keep few mantissa bits). Cached per key for the
 * timer's life, searched once; a size that does not fit is left out (0:
 * none fitted).
 * kb_gemm_ceilings measures several keys in one search (shared, the
 * workers' queue hands out any key's rungs), kb_gemm_tflops reads one. */
int kb_gemm_ceilings(kb_timer *t, const kb_gemm_key *keys, int nk, const kb_opts *o)
{
    kb_gemm_key todo[KB_NGEMM];
    int n = 0;
    for (int j = 0; j < nk; j++) /* the keys not searched yet (gemm_shared is 1 or more once searched, fitted or not) */
        if (keys[j] >= 0 && keys[j] < KB_NGEMM && !t->gemm_shared[keys[j]]) {
            int dup = 0;
            for (int m = 0; m < n; m++) dup |= todo[m] == keys[j];
            if (!dup) todo[n++] = keys[j];
        }
    if (!n) return 0;
    rung_ctx r = {t, o};
    kb_ladder_result res[KB_NGEMM];
    int rc = kb_ladder_search(todo, n, rung_fn, &r, t->share.fn ? &t->share : NULL, res);
    if (rc) return rc;
    for (int j = 0; j < n; j++) {
        const int k = todo[j];
        t->gemm[k] = res[j].tflops;
        t->gemm_n[k] = res[j].n;
        t->gemm_layout[k] = res[j].layout;
        t->gemm_shared[k] = res[j].shared;
    }
    t->gemm_wait_s += res[0].wait_s;
    return 0;
}

int kb_gemm_tflops(kb_timer *t, kb_gemm_key k, const kb_opts *o, double *tflops, int *size, int *layout, int *shared)
{
    *tflops = 0;
    if (size) *size = 0;
    if (layout) *layout = KB_GEMM_TN;
    if (shared) *shared = 0;
    if (k < 0 || k >= KB_NGEMM) return 0;
    int rc = kb_gemm_ceilings(t, &k, 1, o);
    if (rc) return rc;
    *tflops = t->gemm[k];
    if (size) *size = t->gemm_n[k];
    if (layout) *layout = t->gemm_layout[k];
    if (shared) *shared = t->gemm_shared[k];
    return 0;
}

double kb_gemm_wait_s(const kb_timer *t) { return t->gemm_wait_s; }

size_t kb_gemm_shapes_bytes(kb_gemm_key k, const int (*mnk)[3], int n)
{
    if (k < 0 || k >= KB_NGEMM || n <= 0) return 0;
    int dtype, tf32;
    gemm_type(k, &dtype, &tf32);
    return kb_gemm_bench_shapes_bytes(dtype, mnk, n);
}

int kb_gemm_shapes_tflops(kb_timer *t, kb_gemm_key k, const int (*mnk)[3], int n, const kb_opts *o, double *tflops)
{
    *tflops = 0;
    if (k < 0 || k >= KB_NGEMM || n <= 0) return 0;
    for (int i = 0; i < t->nshapes; i++)
        if (t->shapes[i].k == k && t->shapes[i].n == n && !memcmp(t->shapes[i].mnk, mnk, (size_t)n * sizeof *mnk)) {
            *tflops = t->shapes[i].tflops;
            return 0;
        }
    int dtype, tf32;
    gemm_type(k, &dtype, &tf32);
    kb_gemm_bench g;
    int rc = kb_gemm_bench_create_shapes(&g, dtype, tf32, mnk, n);
    if (rc == (int)cudaErrorMemoryAllocation) return 0; /* no room beside the case: unknown */
    if (rc) return rc;
    char label[160];
    snprintf(label, sizeof label, "gemm %s shapes %dx%dx%d+%d", kb_gemm_key_name(k), mnk[0][0], mnk[0][1], mnk[0][2], n - 1);
    if ((rc = gemm_rate(t, &g, o, label, KB_GEMM_SHAPES_S, tflops))) return rc;
    if (t->nshapes < 64) {
        t->shapes[t->nshapes].k = k;
        t->shapes[t->nshapes].n = n;
        memcpy(t->shapes[t->nshapes].mnk, mnk, (size_t)n * sizeof *mnk);
        t->shapes[t->nshapes++].tflops = *tflops;
    }
    return 0;
}
