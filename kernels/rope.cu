// RoPE forward and backward: the textbook kernel and the optimized one.
//
// out = t*cos(theta) + rotate(t)*sin(theta) over the first `rot` dims of each
// head, the rest copied. neox rotates halves (i, i + rot/2); gptj rotates
// adjacent pairs (2i, 2i+1). theta for pair i at position p is
// angles[p][i]. Backward applies the transpose rotation: sin -> -sin.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "kernels.h"

namespace {

template <typename T> __device__ __forceinline__ float to_f(T x);
template <> __device__ __forceinline__ float to_f<float>(float x) { return x; }
template <> __device__ __forceinline__ float to_f<__half>(__half x) { return __half2float(x); }
template <> __device__ __forceinline__ float to_f<__nv_bfloat16>(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T> __device__ __forceinline__ T from_f(float x);
template <> __device__ __forceinline__ float from_f<float>(float x) { return x; }
template <> __device__ __forceinline__ __half from_f<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

// Sequence of token t in a thd batch: the last i with cu[i] <= t.
__device__ __forceinline__ int thd_sequence(const int *__restrict__ cu, int batch, long t)
{
    int lo = 0, hi = batch - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) >> 1;
        if (__ldg(cu + mid) <= t) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

// Position of a row (one head vector of `dim` elements).
__device__ __forceinline__ int row_position(const kb_rope_args &a, long row)
{
    if (a.layout == KB_ROPE_SBHD) return (int)(row / ((long)a.batch * a.heads));
    long token = row / a.heads;
    if (a.layout == KB_ROPE_BSHD) return (int)(token % a.seq);
    return (int)(token - __ldg(a.cu_seqlens + thd_sequence(a.cu_seqlens, a.batch, token)));
}

// ---- naive: one thread per element, the formula as written ---------------
template <typename T>
__global__ void rope_naive_kernel(const T *__restrict__ in, T *__restrict__ out, kb_rope_args a, long n)
{
    long idx = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= n) return;
    long row = idx / a.dim;
    int j = (int)(idx - row * a.dim);
    if (j >= a.rot) {
        out[idx] = in[idx];
        return;
    }
    int half = a.rot / 2, i, partner;
    float sign;
    if (a.style == KB_ROPE_NEOX) {
        i = j < half ? j : j - half;
        partner = j < half ? j + half : j - half;
        sign = j < half ? -1.f : 1.f;
    } else {
        i = j / 2;
        partner = j ^ 1;
        sign = (j & 1) ? 1.f : -1.f;
    }
    if (a.backward) sign = -sign;
    int pos = row_position(a, row);
    float theta = a.angles[(long)pos * half + i];
    float x = to_f(in[idx]), y = to_f(in[row * a.dim + partner]);
    out[idx] = from_f<T>(x * cosf(theta) + sign * y * sinf(theta));
}

// ---- opt -------------------------------------------------------------------
// A block owns one "group" of rows that share a position (sbhd: all b*h heads
// at one s; bshd: the h heads of one (b, s); thd: the h heads of one token),
// or a slice of it (blockIdx.y). It computes cos/sin once for the position
// into shared memory and reuses them over every row of the slice.
//
// Work unit: V elements from each side of V pairs (neox: t[uV..] and
// t[rot/2 + uV..]; gptj: the 2V contiguous elements t[2uV..]), or V
// pass-through elements. V is the widest vector (<= 16 bytes) that keeps
// every access aligned: dim % V == 0 and rot % 2V == 0.
constexpr int UNROLL = 4;

template <typename T, int V> struct alignas(sizeof(T) * V) Vec {
    T v[V];
};

template <typename T, int V, bool GPTJ> struct RopeTile {
    Vec<T, V> x1[UNROLL], x2[UNROLL];
    int unit[UNROLL];
    long off[UNROLL]; // element offset of the unit's row

    // Issue every load of this thread for one slice (no dependence on the position).
    __device__ __forceinline__ void load(const T *__restrict__ in, const kb_rope_args &a, long row0, unsigned first,
                                         unsigned total, int upr, int nrot, int half)
    {
#pragma unroll
        for (int k = 0; k < UNROLL; k++) {
            unsigned u = first + k * blockDim.x;
            unit[k] = -1;
            if (u < total) {
                unsigned r = u / upr;
                int un = (int)(u - r * upr);
                unit[k] = un;
                off[k] = (row0 + r) * a.dim;
                const T *p = in + off[k];
                if (un < nrot) {
                    int o1 = GPTJ ? 2 * un * V : un * V;
                    int o2 = GPTJ ? o1 + V : half + un * V;
                    x1[k] = *reinterpret_cast<const Vec<T, V> *>(p + o1);
                    x2[k] = *reinterpret_cast<const Vec<T, V> *>(p + o2);
                } else {
                    x1[k] = *reinterpret_cast<const Vec<T, V> *>(p + a.rot + (un - nrot) * V);
                }
            }
        }
    }

    __device__ __forceinline__ void store(T *__restrict__ out, const float2 *cs, const kb_rope_args &a, int nrot,
                                          int half)
    {
#pragma unroll
        for (int k = 0; k < UNROLL; k++) {
            int un = unit[k];
            if (un < 0) continue;
            T *op = out + off[k];
            if (un < nrot) {
                Vec<T, V> y1, y2;
                if (GPTJ) {
                    // pairs (e[2m], e[2m+1]) of e = x1 ++ x2, pair index un*V + m
#pragma unroll
                    for (int m = 0; m < V; m++) {
                        float2 c = cs[un * V + m];
                        const int e0 = 2 * m, e1 = 2 * m + 1;
                        float p = to_f(e0 < V ? x1[k].v[e0] : x2[k].v[e0 - V]);
                        float q = to_f(e1 < V ? x1[k].v[e1] : x2[k].v[e1 - V]);
                        T rp = from_f<T>(p * c.x - q * c.y), rq = from_f<T>(q * c.x + p * c.y);
                        if (e0 < V) y1.v[e0] = rp; else y2.v[e0 - V] = rp;
                        if (e1 < V) y1.v[e1] = rq; else y2.v[e1 - V] = rq;
                    }
                    *reinterpret_cast<Vec<T, V> *>(op + 2 * un * V) = y1;
                    *reinterpret_cast<Vec<T, V> *>(op + 2 * un * V + V) = y2;
                } else {
#pragma unroll
                    for (int m = 0; m < V; m++) {
                        float2 c = cs[un * V + m];
                        float p = to_f(x1[k].v[m]), q = to_f(x2[k].v[m]);
                        y1.v[m] = from_f<T>(p * c.x - q * c.y);
                        y2.v[m] = from_f<T>(q * c.x + p * c.y);
                    }
                    *reinterpret_cast<Vec<T, V> *>(op + un * V) = y1;
                    *reinterpret_cast<Vec<T, V> *>(op + half + un * V) = y2;
                }
            } else {
                *reinterpret_cast<Vec<T, V> *>(op + a.rot + (un - nrot) * V) = x1[k];
            }
        }
    }
};

template <typename T, int V, bool GPTJ>
__global__ void __launch_bounds__(256) rope_opt_kernel(const T *__restrict__ in, T *__restrict__ out, kb_rope_args a,
                                                       int rows_per_group, unsigned nchunks)
{
    extern __shared__ float2 cs[]; // (cos, +-sin) per pair index
    const int half = a.rot / 2;
    const int nrot = half / V;                  // rotary units per row
    const int upr = nrot + (a.dim - a.rot) / V; // units per row
    const unsigned total = (unsigned)rows_per_group * (unsigned)upr;
    const long row0 = (long)blockIdx.x * rows_per_group;
    const unsigned step = blockDim.x * UNROLL;

    RopeTile<T, V, GPTJ> tile;
    unsigned chunk = blockIdx.y;
    tile.load(in, a, row0, chunk * step + threadIdx.x, total, upr, nrot, half);
    // cos/sin of this position, once per block, while the loads are in flight
    const int pos = row_position(a, row0);
    const float *ang = a.angles + (long)pos * half;
    for (int i = threadIdx.x; i < half; i += blockDim.x) {
        float s, c;
        sincosf(__ldg(ang + i), &s, &c);
        cs[i] = make_float2(c, a.backward ? -s : s);
    }
    __syncthreads();
    for (;;) {
        tile.store(out, cs, a, nrot, half);
        chunk += gridDim.y;
        if (chunk >= nchunks) break;
        tile.load(in, a, row0, chunk * step + threadIdx.x, total, upr, nrot, half);
    }
}

template <typename T> int launch_naive(const kb_rope_args *a, cudaStream_t s)
{
    long rows = a->layout == KB_ROPE_THD ? a->tokens * a->heads : (long)a->seq * a->batch * a->heads;
    long n = rows * a->dim;
    if (n == 0) return 0;
    int threads = 256;
    long blocks = (n + threads - 1) / threads;
    rope_naive_kernel<T><<<(unsigned)blocks, threads, 0, s>>>((const T *)a->in, (T *)a->out, *a, n);
    return (int)cudaGetLastError();
}

template <typename T, int V, bool GPTJ> int launch_opt_v(const kb_rope_args *a, cudaStream_t s)
{
    long groups;
    int rpg;
    if (a->layout == KB_ROPE_SBHD) { groups = a->seq; rpg = a->batch * a->heads; }
    else if (a->layout == KB_ROPE_BSHD) { groups = (long)a->batch * a->seq; rpg = a->heads; }
    else { groups = a->tokens; rpg = a->heads; }
    if (groups == 0) return 0;
    unsigned upr = (unsigned)(a->rot / 2 / V + (a->dim - a->rot) / V);
    unsigned total = (unsigned)rpg * upr;
    unsigned threads = total >= 256 ? 256 : (total + 31) / 32 * 32;
    unsigned chunks = (total + threads * UNROLL - 1) / (threads * UNROLL);
    dim3 grid((unsigned)groups, chunks < 65535 ? chunks : 65535);
    size_t smem = (size_t)(a->rot / 2) * sizeof(float2);
    rope_opt_kernel<T, V, GPTJ><<<grid, threads, smem, s>>>((const T *)a->in, (T *)a->out, *a, rpg, chunks);
    return (int)cudaGetLastError();
}

template <typename T, bool GPTJ> int launch_opt_s(const kb_rope_args *a, cudaStream_t s)
{
    // widest aligned vector: dim % V == 0 and rot % (2V) == 0, at most 16 bytes
    auto fits = [&](int v) {
        return a->dim % v == 0 && a->rot % (2 * v) == 0 && ((uintptr_t)a->in % (v * sizeof(T))) == 0 &&
               ((uintptr_t)a->out % (v * sizeof(T))) == 0;
    };
    if (sizeof(T) == 2 && fits(8)) return launch_opt_v<T, (sizeof(T) == 2 ? 8 : 4), GPTJ>(a, s);
    if (fits(4)) return launch_opt_v<T, 4, GPTJ>(a, s);
    if (fits(2)) return launch_opt_v<T, 2, GPTJ>(a, s);
    return launch_opt_v<T, 1, GPTJ>(a, s);
}

template <typename T> int launch_opt(const kb_rope_args *a, cudaStream_t s)
{
    return a->style == KB_ROPE_GPTJ ? launch_opt_s<T, true>(a, s) : launch_opt_s<T, false>(a, s);
}

bool args_ok(const kb_rope_args *a)
{
    return a->rot >= 2 && a->rot % 2 == 0 && a->rot <= a->dim && a->dim <= 8192 && a->heads > 0 &&
           (a->layout != KB_ROPE_THD || a->cu_seqlens);
}

} // namespace

extern "C" int kb_rope_naive(const kb_rope_args *a, void *stream)
{
    if (!args_ok(a)) return (int)cudaErrorInvalidValue;
    cudaStream_t s = (cudaStream_t)stream;
    switch (a->dtype) {
    case 0: return launch_naive<float>(a, s);
    case 1: return launch_naive<__half>(a, s);
    case 2: return launch_naive<__nv_bfloat16>(a, s);
    }
    return (int)cudaErrorInvalidValue;
}

extern "C" int kb_rope_opt(const kb_rope_args *a, void *stream)
{
    if (!args_ok(a)) return (int)cudaErrorInvalidValue;
    cudaStream_t s = (cudaStream_t)stream;
    switch (a->dtype) {
    case 0: return launch_opt<float>(a, s);
    case 1: return launch_opt<__half>(a, s);
    case 2: return launch_opt<__nv_bfloat16>(a, s);
    }
    return (int)cudaErrorInvalidValue;
}
