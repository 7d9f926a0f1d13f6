// The bulk kernels (bulk.cuh: the ring; sm_90), forward and backward, every dtype.
#include "bulk.cuh"
#include "kernels.cuh"
#include "sums.cuh"

namespace kb::norm {
namespace { // internal linkage, as one file had it: inlined helpers emit no copy of their own

template <typename T, int NV> __global__ void __launch_bounds__(1024) bulk_fwd(kb_norm_args a, int tpr, int S)
{
#if __CUDA_ARCH__ >= 900 // sm_90a runs it; elsewhere an empty kernel the planner never picks
    constexpr int W = 16 / sizeof(T);
    using V = Vec<T, W>;
    extern __shared__ __align__(128) unsigned char sm[];
    float2 *red = reinterpret_cast<float2 *>(sm + 64);
    const int R = blockDim.x / tpr, g = threadIdx.x / tpr, t = threadIdx.x - g * tpr, nvec = (int)(a.cols / W);
    const long cols = a.cols;
    Ring ring;
    ring.start(sm, S, R, a.rows, cols * (long)sizeof(T), a.x, nullptr);
    const T *gm = (const T *)a.gamma, *bt = (const T *)a.beta;
    float4 *red4 = reinterpret_cast<float4 *>(red);
    const float inv_n = 1.f / (float)cols;
    const int iters = ring.iters();
    for (int i = 0; i < iters; i++) {
        const long row = ring.chunk(i) * R + g;
        const bool live = row < a.rows;
        ring.wait(i);
        const V *mine = reinterpret_cast<const V *>(ring.slot(i, 0)) + (long)g * nvec + t; // vector k at mine[k * tpr]
        // one reduction per row, as opt_fwd's
        float mean = 0.f, var, f[W];
        if (!a.rms) {
            float s = 0.f, cnt = 0.f;
#pragma unroll
            for (int k = 0; k < NV; k++)
                if (live && k * tpr + t < nvec) {
                    unpack<T, W>(mine[k * tpr], f);
                    cnt += (float)W;
#pragma unroll
                    for (int j = 0; j < W; j++) s += f[j];
                }
            const float3 w = lane_mean(s, cnt, tpr);
            float q = 0.f; // the row read again from the slot (shared memory)
#pragma unroll
            for (int k = 0; k < NV; k++)
                if (live && k * tpr + t < nvec) {
                    unpack<T, W>(mine[k * tpr], f);
#pragma unroll
                    for (int j = 0; j < W; j++) {
                        const float d = f[j] - w.z;
                        q = fmaf(d, d, q);
                    }
                }
            const float2 m = group_merge(w, q, tpr, red4, i & 1);
            mean = m.x;
            var = m.y * inv_n;
        } else {
            float ss = 0.f;
#pragma unroll
            for (int k = 0; k < NV; k++)
                if (live && k * tpr + t < nvec) {
                    unpack<T, W>(mine[k * tpr], f);
#pragma unroll
                    for (int j = 0; j < W; j++) ss = fmaf(f[j], f[j], ss);
                }
            var = group_sum(make_float2(ss, 0.f), tpr, red, i & 1).x * inv_n;
        }
        const float rstd = rsqrtf(var + a.eps);
        if (live) {
            T *y = (T *)a.y + row * cols;
#pragma unroll
            for (int k = 0; k < NV; k++) {
                const int c = k * tpr + t;
                if (c >= nvec) continue;
                float gv[W], bv[W];
                unpack<T, W>(mine[k * tpr], f);
                if (gm) load_f<T, W>(gm + (long)c * W, gv);
                if (bt) load_f<T, W>(bt + (long)c * W, bv);
#pragma unroll
                for (int j = 0; j < W; j++) f[j] = (f[j] - mean) * rstd * (gm ? gv[j] : 1.f) + (bt ? bv[j] : 0.f);
                store_f<T, W>(y + (long)c * W, f);
            }
            if (t == 0) {
                if (a.mean) a.mean[row] = mean;
                a.rstd[row] = rstd;
            }
        }
        __syncthreads(); // the slot is read: refill it
        if (threadIdx.x == 0) ring.issue(i + S);
    }
#endif
}

} // namespace
} // namespace kb::norm

namespace kb::norm {

template <typename T> const void *bulk_fwd_kernel(const kb_norm_plan &p)
{
    switch (p.nv) {
    case 4: return (const void *)bulk_fwd<T, 4>;
    case 8: return (const void *)bulk_fwd<T, 8>;
    }
    return nullptr;
}
template const void *bulk_fwd_kernel<float>(const kb_norm_plan &);
template const void *bulk_fwd_kernel<__half>(const kb_norm_plan &);
template const void *bulk_fwd_kernel<__nv_bfloat16>(const kb_norm_plan &);

} // namespace kb::norm

namespace kb::norm {
namespace { // internal linkage, as one file had it: inlined helpers emit no copy of their own

// PIPE: the piped ring (Ring::start_parts; one slot, R = 1, tpr = the block):
// part k is waited for before its vectors are summed, and refilled after a
// block barrier once every thread has written them (Ring::release_part). The
// planner's bulk.pipe.
template <typename T, int NV, bool GS, bool SST, bool PIPE = false>
__global__ void __launch_bounds__(1024) bulk_bwd(kb_norm_args a, int tpr, int S)
{
#if __CUDA_ARCH__ >= 900 // sm_90a runs it; elsewhere an empty kernel the planner never picks
    constexpr int W = 16 / sizeof(T);
    using V = Vec<T, W>;
    extern __shared__ __align__(128) unsigned char sm[];
    float2 *red = reinterpret_cast<float2 *>(sm + 64);
    const int R = blockDim.x / tpr, g = threadIdx.x / tpr, t = threadIdx.x - g * tpr, nvec = (int)(a.cols / W);
    const long cols = a.cols;
    const T *gm = (const T *)a.gamma;
    V *gs = reinterpret_cast<V *>(sm + RING_OFF + (size_t)S * 2 * R * cols * sizeof(T));
    if (GS) // gamma in shared memory past the ring (ring.start's barrier orders the copy)
        for (int c = threadIdx.x; c < nvec; c += blockDim.x) gs[c] = reinterpret_cast<const V *>(gm)[c];
    Ring ring;
    const int parts = PIPE ? (nvec + tpr - 1) / tpr : 0; // PIPE: parts with vectors in (at most NV)
    if constexpr (PIPE)
        ring.start_parts(sm, parts, 16L * tpr, a.rows, cols * (long)sizeof(T), a.x, a.dy);
    else
        ring.start(sm, S, R, a.rows, cols * (long)sizeof(T), a.x, a.dy);
    const int iters = ring.iters();
    float dg[NV][W], db[NV][W];
#pragma unroll
    for (int k = 0; k < NV; k++)
#pragma unroll
        for (int j = 0; j < W; j++) dg[k][j] = db[k][j] = 0.f;
    // the saved statistics, one iteration ahead. SST: by cp.async into
    // shared memory (st[i & 1]: R means, then R rstds), threads j < 2R
    // copying one value each and waiting for it before the barrier that ends
    // the iteration before the one that reads it. Else in registers (nmean,
    // nrstd): fp16 and fp32 at 64 registers spill them, and the spill's
    // store waits for the load: its latency paid once a row (see bulk_plan).
    float *st = reinterpret_cast<float *>(sm + STATS_OFF); // SST: R <= STATS_ROWS, 2R <= blockDim.x (bulk_plan)
    auto fetch = [&](int i) {
        const int j = threadIdx.x;
        if (j >= 2 * R || i >= iters) return;
        const long row = ring.chunk(i) * R + (j < R ? j : j - R);
        if (row >= a.rows || (j < R && a.rms)) return;
        ptx::cp_async4(st + (i & 1) * 2 * R + j, j < R ? a.mean + row : a.rstd + row);
        ptx::cp_async_commit();
    };
    auto stats = [&](int i, float &mean, float &rstd) {
        const long row = ring.chunk(i) * R + g;
        mean = 0.f;
        rstd = 0.f;
        if (i < iters && row < a.rows) {
            if (!a.rms) mean = a.mean[row];
            rstd = a.rstd[row];
        }
    };
    float mean, rstd;
    if constexpr (SST) {
        fetch(0);
        ptx::cp_async_wait<0>();
        __syncthreads();
    } else {
        stats(0, mean, rstd);
    }
    for (int i = 0; i < iters; i++) {
        const long row = ring.chunk(i) * R + g;
        const bool live = row < a.rows;
        float nmean, nrstd;
        if constexpr (SST) {
            mean = a.rms ? 0.f : st[(i & 1) * 2 * R + g];
            rstd = st[(i & 1) * 2 * R + R + g];
            fetch(i + 1); // into the half read last iteration (its readers passed the barrier since)
        } else {
            stats(i + 1, nmean, nrstd);
        }
        if constexpr (!PIPE) ring.wait(i);
        const V *xs = reinterpret_cast<const V *>(ring.slot(i, 0)) + (long)g * nvec + t;
        const V *ds = reinterpret_cast<const V *>(ring.slot(i, 1)) + (long)g * nvec + t;
        float sg = 0.f, sgx = 0.f;
#pragma unroll
        for (int k = 0; k < NV; k++) {
            const int c = k * tpr + t;
            if (PIPE && k < parts) ring.wait_part(i, k);
            if (!live || c >= nvec) continue;
            float xf[W], df[W], gv[W];
            unpack<T, W>(xs[k * tpr], xf);
            unpack<T, W>(ds[k * tpr], df);
            if (GS) unpack<T, W>(gs[c], gv);
            else if (gm) load_f<T, W>(gm + (long)c * W, gv);
#pragma unroll
            for (int j = 0; j < W; j++) {
                const float gd = df[j] * (gm ? gv[j] : 1.f);
                sg += gd;
                sgx += gd * (xf[j] - mean) * rstd;
            }
        }
        const float2 sum = group_sum(make_float2(sg, sgx), tpr, red, i & 1);
        if (live) {
            const float c1 = sum.y / (float)cols, c2 = a.rms ? 0.f : sum.x / (float)cols;
            T *dx = (T *)a.y + row * cols;
#pragma unroll
            for (int k = 0; k < NV; k++) {
                const int c = k * tpr + t;
                if (c < nvec) {
                    float xf[W], df[W], gv[W], o[W];
                    unpack<T, W>(xs[k * tpr], xf);
                    unpack<T, W>(ds[k * tpr], df);
                    if (GS) unpack<T, W>(gs[c], gv);
                    else if (gm) load_f<T, W>(gm + (long)c * W, gv);
#pragma unroll
                    for (int j = 0; j < W; j++) {
                        const float xh = (xf[j] - mean) * rstd;
                        o[j] = rstd * (df[j] * (gm ? gv[j] : 1.f) - c2 - xh * c1);
                        dg[k][j] += df[j] * xh;
                        db[k][j] += df[j];
                    }
                    store_f<T, W>(dx + (long)c * W, o);
                }
                if (PIPE && k < parts) ring.release_part(i, k, 16L * tpr); // read by every thread: refill it
            }
        }
        if constexpr (SST) {
            ptx::cp_async_wait<0>(); // the next iteration's statistics
        } else {
            mean = nmean;
            rstd = nrstd;
        }
        __syncthreads(); // the slot is read: refill it (PIPE: refilled; the statistics' barrier)
        if (!PIPE && threadIdx.x == 0) ring.issue(i + S);
    }
    if (!a.dgamma) return;
    // RMSNorm's dbeta half neither stored nor summed (TRIM) where that costs
    // no spill: fp32 NV 2 (elsewhere the kernels sit at the 64-register cap)
    constexpr bool TRIM = std::is_same<T, float>::value && NV == 2;
    block_partials<NV, W, TRIM>(a, dg, db, tpr, reinterpret_cast<float *>(sm + RING_OFF));
    end_sums<TRIM>(a, reinterpret_cast<float2 *>(sm + RING_OFF));
#endif
}

} // namespace
} // namespace kb::norm

namespace kb::norm {

template <typename T, int NV> static const void *by_flags(const kb_norm_plan &p)
{
    if constexpr (NV * 16 / sizeof(T) > 16) { // never planned past 16 elements (plan.c: bulk.max)
        return nullptr;
    } else if constexpr (std::is_same<T, __nv_bfloat16>::value) { // bf16 keeps the statistics in registers (plan.c)
        if (p.sst || p.pipe) return nullptr;
        return p.gsm ? (const void *)bulk_bwd<T, NV, true, false> : (const void *)bulk_bwd<T, NV, false, false>;
    } else {
        if (p.pipe) { // the piped ring: fp32 at 4 vectors a thread, statistics in shared memory (plan.c: bulk.pipe)
            if constexpr (std::is_same<T, float>::value && NV == 4)
                if (p.sst) return p.gsm ? (const void *)bulk_bwd<T, NV, true, true, true> : (const void *)bulk_bwd<T, NV, false, true, true>;
            return nullptr;
        }
        return p.gsm ? (p.sst ? (const void *)bulk_bwd<T, NV, true, true> : (const void *)bulk_bwd<T, NV, true, false>)
                     : (p.sst ? (const void *)bulk_bwd<T, NV, false, true> : (const void *)bulk_bwd<T, NV, false, false>);
    }
}

template <typename T> const void *bulk_bwd_kernel(const kb_norm_plan &p)
{
    switch (p.nv) {
    case 1: return by_flags<T, 1>(p);
    case 2: return by_flags<T, 2>(p);
    case 4: return by_flags<T, 4>(p);
    }
    return nullptr;
}
template const void *bulk_bwd_kernel<float>(const kb_norm_plan &);
template const void *bulk_bwd_kernel<__half>(const kb_norm_plan &);
template const void *bulk_bwd_kernel<__nv_bfloat16>(const kb_norm_plan &);

} // namespace kb::norm
