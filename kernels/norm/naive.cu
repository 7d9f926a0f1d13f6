// LayerNorm / RMSNorm, the textbook kernels: one thread a row (x read three
// times); backward: dx one thread a row, dgamma/dbeta one thread a column.
#include <cuda_runtime.h>

#include "../common.cuh"
#include "../kernels.h"

namespace {

using kb::from_f;
using kb::to_f;

// ---- naive: one thread per row (dx: per row; dgamma/dbeta: per column) ----
template <typename T> __global__ void naive_fwd(kb_norm_args a)
{
    const long r = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= a.rows) return;
    const T *x = (const T *)a.x + r * a.cols, *gm = (const T *)a.gamma, *bt = (const T *)a.beta;
    T *y = (T *)a.y + r * a.cols;
    float mean = 0.f, ss = 0.f;
    if (!a.rms) {
        for (long j = 0; j < a.cols; j++) mean += to_f(x[j]);
        mean /= (float)a.cols;
    }
    for (long j = 0; j < a.cols; j++) {
        float d = to_f(x[j]) - mean;
        ss += d * d;
    }
    const float rstd = rsqrtf(ss / (float)a.cols + a.eps);
    for (long j = 0; j < a.cols; j++) {
        float v = (to_f(x[j]) - mean) * rstd;
        if (gm) v *= to_f(gm[j]);
        if (bt) v += to_f(bt[j]);
        y[j] = from_f<T>(v);
    }
    if (a.mean) a.mean[r] = mean;
    a.rstd[r] = rstd;
}

template <typename T> __global__ void naive_bwd_dx(kb_norm_args a)
{
    const long r = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= a.rows) return;
    const T *x = (const T *)a.x + r * a.cols, *dy = (const T *)a.dy + r * a.cols, *gm = (const T *)a.gamma;
    T *dx = (T *)a.y + r * a.cols;
    const float mean = a.rms ? 0.f : a.mean[r], rstd = a.rstd[r];
    float sg = 0.f, sgx = 0.f;
    for (long j = 0; j < a.cols; j++) {
        float xh = (to_f(x[j]) - mean) * rstd, g = to_f(dy[j]) * (gm ? to_f(gm[j]) : 1.f);
        sg += g;
        sgx += g * xh;
    }
    const float c1 = sgx / (float)a.cols, c2 = a.rms ? 0.f : sg / (float)a.cols;
    for (long j = 0; j < a.cols; j++) {
        float xh = (to_f(x[j]) - mean) * rstd, g = to_f(dy[j]) * (gm ? to_f(gm[j]) : 1.f);
        dx[j] = from_f<T>(rstd * (g - c2 - xh * c1));
    }
}

template <typename T> __global__ void naive_bwd_dgamma(kb_norm_args a)
{
    const long j = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= a.cols) return;
    const T *x = (const T *)a.x, *dy = (const T *)a.dy;
    float dg = 0.f, db = 0.f;
    for (long r = 0; r < a.rows; r++) {
        float xh = (to_f(x[r * a.cols + j]) - (a.rms ? 0.f : a.mean[r])) * a.rstd[r], d = to_f(dy[r * a.cols + j]);
        dg += d * xh;
        db += d;
    }
    a.dgamma[j] = dg;
    if (a.dbeta) a.dbeta[j] = db;
}

template <typename T> int launch_naive(const kb_norm_args *a, cudaStream_t s)
{
    const int threads = 128;
    if (!a->backward) {
        naive_fwd<T><<<(unsigned)((a->rows + threads - 1) / threads), threads, 0, s>>>(*a);
        return (int)cudaGetLastError();
    }
    naive_bwd_dx<T><<<(unsigned)((a->rows + threads - 1) / threads), threads, 0, s>>>(*a);
    cudaError_t e = cudaGetLastError();
    if (e || !a->dgamma) return (int)e;
    naive_bwd_dgamma<T><<<(unsigned)((a->cols + threads - 1) / threads), threads, 0, s>>>(*a);
    return (int)cudaGetLastError();
}

} // namespace

extern "C" int kb_norm_naive(const kb_norm_args *a, void *stream)
{
    if (a->rows < 1 || a->cols < 1 || !a->x || !a->y || !a->rstd || (!a->rms && !a->mean) || (a->backward && !a->dy))
        return (int)cudaErrorInvalidValue;
    cudaStream_t s = (cudaStream_t)stream;
    return kb::by_dtype(a->dtype, [&](auto t) { return launch_naive<decltype(t)>(a, s); });
}
