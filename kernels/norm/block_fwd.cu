// The block kernels, forward: a thread group of `tpr` threads a row (a power of two,
// 1 to 1024), blockDim/tpr rows a block. Thread t of a group owns the vectors
// t, t + tpr, t + 2 tpr, ... of W elements (W = 16 bytes when cols allows it,
// else 1), NV of them, kept in registers between the statistics and the
// output, so x is read once. Row sums: shuffles within a warp, shared memory
// across the warps of a group. Rows too long for registers: the loop
// kernels, one row a block, x read three times (forward) or x and dy twice.
// They take every case (DESIGN.md: where they win).
#include "common.cuh"
#include "kernels.cuh"

namespace kb::norm {
namespace { // internal linkage, as one file had it: inlined helpers emit no copy of their own

template <typename T, int W, int NV>
__global__ void __launch_bounds__(1024) opt_fwd(kb_norm_args a, int tpr, int iters)
{
    extern __shared__ float2 smem[];
    Stager<T, W, NV, 0> st; // plain loads (staging lost here: DESIGN.md)
    st.init(smem + RED_F2, tpr, iters, a, false);
    const int t = st.t;
    const long cols = a.cols;
    const T *xg = (const T *)a.x, *gm = (const T *)a.gamma, *bt = (const T *)a.beta;
    const float inv_n = 1.f / (float)cols;
    for (int i = 0; i < iters; i++) {
        const long row = st.row0 + (long)i * st.stride;
        const bool live = row < a.rows;
        float v[NV][W];
        int n = 0; // this thread's values in the row
#pragma unroll
        for (int k = 0; k < NV; k++) {
            Vec<T, W> p = st.get(i, k, xg, 0, live);
            if (((long)k * tpr + t) * W < cols) n += W;
#pragma unroll
            for (int j = 0; j < W; j++) v[k][j] = to_f(p.v[j]);
        }
        // one reduction per row: each warp's mean and squares about it, merged (LayerNorm), or squares (RMSNorm)
        float mean = 0.f, var;
        if (!a.rms) {
            float s = 0.f;
#pragma unroll
            for (int k = 0; k < NV; k++)
                if (((long)k * tpr + t) * W < cols)
#pragma unroll
                    for (int j = 0; j < W; j++) s += v[k][j];
            const float3 w = lane_mean(s, (float)n, tpr);
            float q = 0.f;
#pragma unroll
            for (int k = 0; k < NV; k++)
                if (((long)k * tpr + t) * W < cols)
#pragma unroll
                    for (int j = 0; j < W; j++) {
                        const float d = v[k][j] - w.z;
                        q = fmaf(d, d, q);
                    }
            const float2 m = group_merge(w, q, tpr, reinterpret_cast<float4 *>(smem), i & 1);
            mean = m.x;
            var = m.y * inv_n;
        } else {
            float ss = 0.f;
#pragma unroll
            for (int k = 0; k < NV; k++)
#pragma unroll
                for (int j = 0; j < W; j++) ss = fmaf(v[k][j], v[k][j], ss);
            var = group_sum(make_float2(ss, 0.f), tpr, smem, i & 1).x * inv_n;
        }
        const float rstd = rsqrtf(var + a.eps);
        if (!live) continue;
        T *y = (T *)a.y + row * cols;
#pragma unroll
        for (int k = 0; k < NV; k++) {
            const long c = ((long)k * tpr + t) * W;
            if (c >= cols) continue;
            float gv[W], bv[W], o[W];
            if (gm) load_f<T, W>(gm + c, gv);
            if (bt) load_f<T, W>(bt + c, bv);
#pragma unroll
            for (int j = 0; j < W; j++) o[j] = (v[k][j] - mean) * rstd * (gm ? gv[j] : 1.f) + (bt ? bv[j] : 0.f);
            store_f<T, W>(y + c, o);
        }
        if (t == 0) {
            if (a.mean) a.mean[row] = mean;
            a.rstd[row] = rstd;
        }
    }
}

// Forward for rows too long for registers: one row per block, x read three
// times (the second and third reads mostly hit L2).
template <typename T, int W> __global__ void __launch_bounds__(1024) loop_fwd(kb_norm_args a)
{
    __shared__ float2 red[32];
    const long row = blockIdx.x, cols = a.cols, step = (long)blockDim.x * W;
    const T *x = (const T *)a.x + row * cols, *gm = (const T *)a.gamma, *bt = (const T *)a.beta;
    float mean = 0.f, ss = 0.f, f[W];
    if (!a.rms) {
        float s = 0.f;
        for (long c = (long)threadIdx.x * W; c < cols; c += step) {
            load_f<T, W>(x + c, f);
#pragma unroll
            for (int i = 0; i < W; i++) s += f[i];
        }
        mean = group_sum(make_float2(s, 0.f), blockDim.x, red).x / (float)cols;
    }
    for (long c = (long)threadIdx.x * W; c < cols; c += step) {
        load_f<T, W>(x + c, f);
#pragma unroll
        for (int i = 0; i < W; i++) ss += (f[i] - mean) * (f[i] - mean);
    }
    const float rstd = rsqrtf(group_sum(make_float2(ss, 0.f), blockDim.x, red).x / (float)cols + a.eps);
    T *y = (T *)a.y + row * cols;
    for (long c = (long)threadIdx.x * W; c < cols; c += step) {
        float gv[W], bv[W];
        load_f<T, W>(x + c, f);
        if (gm) load_f<T, W>(gm + c, gv);
        if (bt) load_f<T, W>(bt + c, bv);
#pragma unroll
        for (int i = 0; i < W; i++) f[i] = (f[i] - mean) * rstd * (gm ? gv[i] : 1.f) + (bt ? bv[i] : 0.f);
        store_f<T, W>(y + c, f);
    }
    if (threadIdx.x == 0) {
        if (a.mean) a.mean[row] = mean;
        a.rstd[row] = rstd;
    }
}

} // namespace
} // namespace kb::norm

namespace kb::norm {

// w=1: 1-8 elements a thread (at most 32); 16-byte vectors only past what
// warp_row holds: fp32 8 vectors a thread (plan.c: plan_block), and the loop
template <typename T, int W> static const void *by_nv(int nv)
{
    if constexpr (W > 1) {
        if (nv == 0) return (const void *)loop_fwd<T, W>;
        if constexpr (sizeof(T) == 4) return nv == 8 ? (const void *)opt_fwd<T, W, 8> : nullptr;
        return nullptr;
    } else {
        switch (nv) {
        case 0: return (const void *)loop_fwd<T, 1>;
        case 1: return (const void *)opt_fwd<T, 1, 1>;
        case 2: return (const void *)opt_fwd<T, 1, 2>;
        case 4: return (const void *)opt_fwd<T, 1, 4>;
        case 8: return (const void *)opt_fwd<T, 1, 8>;
        }
        return nullptr;
    }
}

template <typename T> const void *block_fwd_kernel(const kb_norm_plan &p)
{
    constexpr int WV = 16 / sizeof(T);
    return p.w == 1 ? by_nv<T, 1>(p.nv) : p.w == WV ? by_nv<T, WV>(p.nv) : nullptr;
}
template const void *block_fwd_kernel<float>(const kb_norm_plan &);
template const void *block_fwd_kernel<__half>(const kb_norm_plan &);
template const void *block_fwd_kernel<__nv_bfloat16>(const kb_norm_plan &);

} // namespace kb::norm
