// The block kernels, backward (block_fwd.cu says how they hold a row), every dtype.
#include "kernels.cuh"
#include "sums.cuh"

namespace kb::norm {
namespace { // internal linkage, as one file had it: inlined helpers emit no copy of their own

constexpr int BWD_BLOCK = 512;
static_assert(BWD_BLOCK == KB_NORM_BWD_BLOCK, "plan.h");

// smem: red (RED_F2), then the block's dgamma/dbeta accumulator (several rows
// per block) and column_sums' slices (plan.c's plan_block sizes it for both).
template <typename T, int W, int NV>
__global__ void __launch_bounds__(BWD_BLOCK) opt_bwd(kb_norm_args a, int tpr, int iters)
{
    extern __shared__ float2 smem[];
    float2 *red = smem;
    Stager<T, W, NV, 0> st; // plain loads (staging lost here: DESIGN.md)
    st.init(smem + RED_F2, tpr, iters, a, false);
    const int g = st.g, t = st.t, rpb = st.rpb, second = 0; // no staging area
    const long cols = a.cols;
    const T *xg = (const T *)a.x, *dyg = (const T *)a.dy, *gm = (const T *)a.gamma;
    float dg[NV][W], db[NV][W];
#pragma unroll
    for (int k = 0; k < NV; k++)
#pragma unroll
        for (int i = 0; i < W; i++) dg[k][i] = db[k][i] = 0.f;
    for (int it = 0; it < iters; it++) {
        const long row = st.row0 + (long)it * st.stride;
        const bool live = row < a.rows;
        Vec<T, W> xv[NV], dv[NV];
#pragma unroll
        for (int k = 0; k < NV; k++) {
            xv[k] = st.get(it, k, xg, 0, live);
            dv[k] = st.get(it, k, dyg, second, live);
        }
        const float mean = live && !a.rms ? a.mean[row] : 0.f, rstd = live ? a.rstd[row] : 0.f;
        float sg = 0.f, sgx = 0.f;
#pragma unroll
        for (int k = 0; k < NV; k++) {
            const long c = ((long)k * tpr + t) * W;
            float gv[W];
            if (gm && c < cols) load_f<T, W>(gm + c, gv);
#pragma unroll
            for (int i = 0; i < W; i++) {
                const float gd = to_f(dv[k].v[i]) * (gm && c < cols ? gv[i] : 1.f); // 0 past the row
                sg += gd;
                sgx += gd * (to_f(xv[k].v[i]) - mean) * rstd;
            }
        }
        const float2 s = group_sum(make_float2(sg, sgx), tpr, red, it & 1);
        if (!live) continue;
        const float c1 = s.y / (float)cols, c2 = a.rms ? 0.f : s.x / (float)cols;
        T *dx = (T *)a.y + row * cols;
#pragma unroll
        for (int k = 0; k < NV; k++) {
            const long c = ((long)k * tpr + t) * W;
            if (c >= cols) continue;
            float gv[W], o[W];
            if (gm) load_f<T, W>(gm + c, gv);
#pragma unroll
            for (int i = 0; i < W; i++) {
                const float d = to_f(dv[k].v[i]), xh = (to_f(xv[k].v[i]) - mean) * rstd;
                o[i] = rstd * (d * (gm ? gv[i] : 1.f) - c2 - xh * c1);
                dg[k][i] += d * xh;
                db[k][i] += d;
            }
            store_f<T, W>(dx + c, o);
        }
    }
    if (!a.dgamma) return;
    block_partials<NV, W>(a, dg, db, tpr, reinterpret_cast<float *>(smem + RED_F2));
    end_sums(a, smem + RED_F2);
}

// Backward for rows too long for registers: one row per block at a time, x and
// dy read twice; the block's partial sums accumulate in its row of `work`.
template <typename T, int W> __global__ void __launch_bounds__(BWD_BLOCK) loop_bwd(kb_norm_args a, int iters)
{
    extern __shared__ float2 smem[];
    const long cols = a.cols, step = (long)blockDim.x * W;
    const T *gm = (const T *)a.gamma;
    float *work = a.dgamma ? partial_row(a, blockIdx.x) : nullptr;
    if (work)
        for (long c = (long)threadIdx.x * W; c < cols; c += step)
            for (int i = 0; i < W; i++) work[c + i] = work[cols + c + i] = 0.f;
    for (int it = 0; it < iters; it++) {
        const long row = (long)it * gridDim.x + blockIdx.x;
        if (row >= a.rows) break; // uniform over the block
        const T *x = (const T *)a.x + row * cols, *dy = (const T *)a.dy + row * cols;
        const float mean = a.rms ? 0.f : a.mean[row], rstd = a.rstd[row];
        float sg = 0.f, sgx = 0.f, xf[W], df[W], gv[W];
        for (long c = (long)threadIdx.x * W; c < cols; c += step) {
            load_f<T, W>(x + c, xf);
            load_f<T, W>(dy + c, df);
            if (gm) load_f<T, W>(gm + c, gv);
#pragma unroll
            for (int i = 0; i < W; i++) {
                const float gd = df[i] * (gm ? gv[i] : 1.f);
                sg += gd;
                sgx += gd * (xf[i] - mean) * rstd;
            }
        }
        const float2 s = group_sum(make_float2(sg, sgx), blockDim.x, smem);
        const float c1 = s.y / (float)cols, c2 = a.rms ? 0.f : s.x / (float)cols;
        T *dx = (T *)a.y + row * cols;
        for (long c = (long)threadIdx.x * W; c < cols; c += step) {
            float o[W];
            load_f<T, W>(x + c, xf);
            load_f<T, W>(dy + c, df);
            if (gm) load_f<T, W>(gm + c, gv);
#pragma unroll
            for (int i = 0; i < W; i++) {
                const float xh = (xf[i] - mean) * rstd;
                o[i] = rstd * (df[i] * (gm ? gv[i] : 1.f) - c2 - xh * c1);
                if (work) {
                    work[c + i] += df[i] * xh;
                    work[cols + c + i] += df[i];
                }
            }
            store_f<T, W>(dx + c, o);
        }
    }
    if (!work) return;
    __syncthreads();
    end_sums(a, smem + 32);
}

} // namespace
} // namespace kb::norm

namespace kb::norm {

// w=1: 1-8 elements a thread (at most 32, 16 for fp32); 16-byte vectors only
// past what warp_row holds: 4 vectors a thread (plan.c: plan_block), and the loop
template <typename T, int W> static const void *by_nv(int nv)
{
    if constexpr (W > 1) {
        return nv == 0 ? (const void *)loop_bwd<T, W> : nv == 4 ? (const void *)opt_bwd<T, W, 4> : nullptr;
    } else {
        switch (nv) {
        case 0: return (const void *)loop_bwd<T, 1>;
        case 1: return (const void *)opt_bwd<T, 1, 1>;
        case 2: return (const void *)opt_bwd<T, 1, 2>;
        case 4: return (const void *)opt_bwd<T, 1, 4>;
        case 8: return (const void *)opt_bwd<T, 1, 8>;
        }
        return nullptr;
    }
}

template <typename T> const void *block_bwd_kernel(const kb_norm_plan &p)
{
    constexpr int WV = 16 / sizeof(T);
    return p.w == 1 ? by_nv<T, 1>(p.nv) : p.w == WV ? by_nv<T, WV>(p.nv) : nullptr;
}
template const void *block_bwd_kernel<float>(const kb_norm_plan &);
template const void *block_bwd_kernel<__half>(const kb_norm_plan &);
template const void *block_bwd_kernel<__nv_bfloat16>(const kb_norm_plan &);

} // namespace kb::norm
