/* The copy ceiling: cudaMemcpy and kbench's copy kernels at a row's bytes,
 * L2 flushed, median, the best of them (copy.h). */
#include "copy.h"
#include "stats.h"
#include "timer.h"
#include "watch.h"
#include "../core/clock.h"
#include "../core/errors.h"
#include "../core/settings.h"
#include "../report/row.h"
#include "../../kernels/kernels.h"

#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    int v, sm;
    void *dst;
    const void *src;
    size_t r, w;
} copy_ctx;

/* Buffers for a copy of rbytes read and wbytes written, each candidate's
 * context from them (cudaMemcpy: half of the sum each way); the source holds
 * real bits, not zeros. 0, or a CUDA error with nothing left allocated. */
typedef struct {
    void *a, *b;
    size_t r, w, half;
} copy_bufs;


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

/* the sizes: the copy's, and the two buffers' (na, nb). cudaMemcpy's half:
 * from 1 MiB the nearest multiple of 4 KiB (so the bytes copied differ from
 * the row's by 0.2% at most; below, a multiple of 256 bytes), since a device-to-device
 * cudaMemcpy of any size 256-3840 bytes past a 4 KiB multiple ran slower than
 * the multiples either side (H100, CUDA 13.0, 2026-11-27, L2 flushed, median of
 * 50: about 33.8 MB 24.3-24.5 us against 21.2, about 8.4 MB 10.7-11.0 against
 * 7.9), which set a decode MLP's 1 x 1024 x 11008 ceiling at 2642-2676 GB/s
 * against 3014-3120 at 2 and 16 tokens, and LayerNorm's 4096 x 1024 rows over
 * 100% of it (results/curated/2026-11-27-h100-memcpy); the rate counts the
 * bytes it copied */
static void copy_bufs_size(copy_bufs *cb, double rbytes, double wbytes, size_t *na, size_t *nb)
{
    memset(cb, 0, sizeof *cb);
    cb->r = rbytes < 256 ? 256 : (size_t)rbytes;
    cb->w = wbytes < 256 ? 256 : (size_t)wbytes;
    const size_t h = (cb->r + cb->w) / 2;
    cb->half = h >= ((size_t)1 << 20) ? (h + 2048) & ~(size_t)4095 : (h + 255) & ~(size_t)255;
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

/* The flush check: cudaMemcpy of bytes/2 each way, timed with the flush (events):
 * the same buffers every sample, then a ring of KB_FLUSH_RING buffer pairs (each
 * pair last touched KB_FLUSH_RING - 1 samples and flushes before). */
typedef struct {
    copy_ctx c[KB_FLUSH_RING];
    int n, i;
} ring_ctx;

static int ring_fn(void *ctx, void *stream)
{
    ring_ctx *r = ctx;
    copy_ctx *c = &r->c[r->i];
    r->i = (r->i + 1) % r->n;
    return copy_fn(c, stream);
}

int kb_copy_flush_check(kb_timer *t, double bytes, const kb_opts *o, double *same_ms, double *ring_ms)
{
    *same_ms = *ring_ms = 0;
    copy_bufs cb[KB_FLUSH_RING];
    ring_ctx ring = {.n = 0};
    int rc = 0;
    for (int i = 0; i < KB_FLUSH_RING && !rc; i++)
        if (!(rc = copy_bufs_alloc(&cb[i], bytes / 2, bytes / 2))) ring.c[ring.n++] = copy_cand(&cb[i], 0, t->sm_count);
    kb_opts oo = *o;
    snprintf(oo.timing, sizeof oo.timing, "events"); /* a sample's launch is its own: the ring turns */
    oo.hot = 0;
    kb_stats st;
    if (!rc && !(rc = kb_time(t, copy_fn, &ring.c[0], &oo, "selftest flush same", &st, NULL))) *same_ms = st.median;
    if (!rc && !(rc = kb_time(t, ring_fn, &ring, &oo, "selftest flush ring", &st, NULL))) *ring_ms = st.median;
    if (rc) kb_cuda_fail(rc, "the flush check's copies", __FILE__, __LINE__);
    for (int i = 0; i < ring.n; i++) {
        cudaFree(cb[i].a);
        cudaFree(cb[i].b);
    }
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
