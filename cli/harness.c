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
    double sum = 0;
    for (int i = 0; i < n; i++) sum += s[i];
    st->mean = sum / n;
    double var = 0;
    for (int i = 0; i < n; i++) var += (s[i] - st->mean) * (s[i] - st->mean);
    st->stddev = n > 1 ? sqrt(var / (n - 1)) : 0;
    st->noise_pct = st->mean > 0 ? 100.0 * st->stddev / st->mean : 0;
    free(s);
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

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
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
    struct { double bytes, gbps; } copies[256];
    int ncopies;
    /* GEMM ceilings measured so far (0: not yet), and the size used */
    double gemm[KB_NGEMM];
    int gemm_n[KB_NGEMM];
};

int kb_timer_create(kb_timer **out, const kb_device *d)
{
    kb_timer *t = calloc(1, sizeof *t);
    *out = t;
    t->sm_count = d->attr.sm_count;
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

int kb_time(kb_timer *t, kb_sample_fn fn, void *ctx, const kb_opts *o, const char *label, kb_stats *st)
{
    nvtxRangePushA(label);
    int rc = 0;
    for (int i = 0; i < o->warmup; i++)
        if ((rc = fn(ctx, t->stream)) != 0) goto out;
    if (o->warmup && ((rc = cudaGetLastError()) || (rc = cudaStreamSynchronize(t->stream)))) {
        kb_cuda_fail(rc, "warm-up launches", __FILE__, __LINE__);
        goto out;
    }
    int cap = 1024, n = 0, batch = 1;
    double *ms = malloc((size_t)cap * sizeof *ms), sum = 0, t0 = now_s();
    for (;;) {
        if (kb_stop_signal) break; /* the caller drops this row */
        for (int k = 0; k < batch; k++) {
            if (!o->hot) {
                t->flushes++;
                if ((rc = kb_l2_flush(t->scratch, t->scratch_bytes, t->sm_count, t->stream))) {
                    kb_cuda_fail(rc, "kb_l2_flush", __FILE__, __LINE__);
                    goto done;
                }
            }
            cudaEventRecord(t->start[k], t->stream);
            if ((rc = fn(ctx, t->stream)) != 0) goto done;
            cudaEventRecord(t->stop[k], t->stream);
        }
        if ((rc = cudaEventSynchronize(t->stop[batch - 1])) != 0) {
            kb_cuda_fail(rc, "cudaEventSynchronize", __FILE__, __LINE__);
            goto done;
        }
        if ((rc = cudaGetLastError()) != 0) {
            kb_cuda_fail(rc, "kernel launch", __FILE__, __LINE__);
            goto done;
        }
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
        double wall = now_s() - t0;
        if (n >= o->min_samples && sum * 1e-3 >= o->min_time) {
            if (st->noise_pct <= o->max_noise) break;
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
        /* batches of about 20 ms, so the GPU stays busy between host checks */
        double per = wall / n;
        batch = per > 0 ? (int)(0.02 / per) : KB_MAX_BATCH;
        if (batch < 1) batch = 1;
        if (batch > KB_MAX_BATCH) batch = KB_MAX_BATCH;
    }
done:
    if (rc == 0) kb_stats_compute(ms, n, st);
    free(ms);
out:
    nvtxRangePop();
    return rc;
}

typedef struct { void *dst; const void *src; size_t n; } copy_ctx;

static int copy_fn(void *ctx, void *stream)
{
    copy_ctx *c = ctx;
    KB_CK(cudaMemcpyAsync(c->dst, c->src, c->n, cudaMemcpyDeviceToDevice, (cudaStream_t)stream));
    return 0;
}

int kb_copy_gbps(kb_timer *t, double bytes, const kb_opts *o, double *gbps)
{
    *gbps = 0;
    for (int i = 0; i < t->ncopies; i++)
        if (t->copies[i].bytes == bytes) { *gbps = t->copies[i].gbps; return 0; }
    size_t half = (size_t)(bytes / 2);
    half &= ~(size_t)255;
    if (half < 256) half = 256;
    void *a = NULL, *b = NULL;
    int rc = cudaMalloc(&a, half);
    if (!rc) rc = cudaMalloc(&b, half);
    if (rc) { /* too big to copy beside the case: leave the ceiling unknown */
        cudaFree(a);
        cudaGetLastError();
        return 0;
    }
    rc = cudaMemset(a, 0x3c, half); /* real bits, not zeros */
    copy_ctx c = {b, a, half};
    kb_stats st;
    kb_opts oo = *o;
    if (oo.timeout > 2) oo.timeout = 2;
    char label[128];
    snprintf(label, sizeof label, "copy bytes=%.0f", 2.0 * (double)half);
    if (!rc) rc = kb_time(t, copy_fn, &c, &oo, label, &st);
    cudaFree(a);
    cudaFree(b);
    if (rc) return rc;
    *gbps = 2.0 * (double)half / (st.median * 1e-3) / 1e9;
    if (t->ncopies < 256) {
        t->copies[t->ncopies].bytes = bytes;
        t->copies[t->ncopies++].gbps = *gbps;
    }
    return 0;
}

const char *kb_gemm_key_name(kb_gemm_key k)
{
    static const char *const names[KB_NGEMM] = {"fp32", "fp16", "bf16", "tf32"};
    return k >= 0 && k < KB_NGEMM ? names[k] : "none";
}

static int gemm_fn(void *ctx, void *stream) { return kb_gemm_bench_run(ctx, stream); }

/* The GEMM ceiling of key k: a square cuBLAS GEMM (8192, or 4096 or 2048 when
 * the larger does not fit beside what is allocated), timed like any case
 * (L2 flushed, median), 2 n^3 FLOPs. Cached per key for the timer's life. */
int kb_gemm_tflops(kb_timer *t, kb_gemm_key k, const kb_opts *o, double *tflops, int *size)
{
    *tflops = 0;
    if (size) *size = 0;
    if (k < 0 || k >= KB_NGEMM) return 0;
    if (t->gemm[k] > 0) {
        *tflops = t->gemm[k];
        if (size) *size = t->gemm_n[k];
        return 0;
    }
    static const int sizes[] = {8192, 4096, 2048};
    int dtype = k == KB_GEMM_FP16 ? KB_FP16 : k == KB_GEMM_BF16 ? KB_BF16 : KB_FP32, tf32 = k == KB_GEMM_TF32;
    kb_gemm_bench g;
    int rc = (int)cudaErrorMemoryAllocation;
    for (int i = 0; i < 3 && rc == (int)cudaErrorMemoryAllocation; i++) rc = kb_gemm_bench_create(&g, dtype, tf32, sizes[i]);
    if (rc == (int)cudaErrorMemoryAllocation) return 0; /* no room: the ceiling stays unknown */
    if (rc) return rc;
    kb_stats st;
    kb_opts oo = *o;
    if (oo.timeout > 3) oo.timeout = 3;
    char label[128];
    snprintf(label, sizeof label, "gemm %s n=%d", kb_gemm_key_name(k), g.n);
    rc = kb_time(t, gemm_fn, &g, &oo, label, &st);
    int n = g.n;
    kb_gemm_bench_destroy(&g);
    if (rc) return rc;
    if (st.median <= 0) return 0;
    *tflops = t->gemm[k] = 2.0 * (double)n * (double)n * (double)n / (st.median * 1e-3) / 1e12;
    t->gemm_n[k] = n;
    if (size) *size = n;
    return 0;
}
