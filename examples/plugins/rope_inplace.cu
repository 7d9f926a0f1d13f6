// rope_inplace.cu: rotary position embedding as an inference server does it,
// as a kbench plugin: implementation "example_inplace" of op "rope".
//   - in place: the rotated vectors overwrite the input (inplace "out=t,dt=dy":
//     kbench hands us t's buffer as out and restores t before every launch);
//   - a cos/sin cache in the model's dtype, built once from kbench's angle
//     table in prepare (on kbench's stream, untimed), as the server builds it
//     at start-up;
//   - positions per token, built in prepare too: thd's sequence offsets come
//     as data (kbp_seqlens), so a launch reads pos[token] instead of a search.
// Build it with `make examples`, then run
//   kbench rope --impl naive,opt,example_inplace=build/examples/libkb_rope_inplace.so
//
// The tensors (`kbench list rope`): input t (fwd) or dy (bwd), output out or
// dt, angles [positions, rot/2] fp32, cu_seqlens [nseq + 1] int32 (thd).
// A row is one head vector of dim elements at position p; pairs (i, i + rot/2)
// (style neox) or (2i, 2i+1) (gptj) rotate by angles[p][i] (the backward by
// -angles[p][i]); elements rot..dim-1 are not rotated, and in place they stay
// as they are: nothing to write. The cache's rounding to bf16 costs about
// 2^-9 of each product, well inside rope's bf16 tolerance (docs/rope.md).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kbench_plugin.h"

__device__ float to_f(float v) { return v; }
__device__ float to_f(__half v) { return __half2float(v); }
__device__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __host__ __device__ T from_f(float v);
template <> __host__ __device__ float from_f<float>(float v) { return v; }
template <> __host__ __device__ __half from_f<__half>(float v) { return __float2half_rn(v); }
template <> __host__ __device__ __nv_bfloat16 from_f<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

// What prepare builds and launch reads.
struct Cache {
    void *cos, *sin;  // [positions, rot/2] in the case's dtype
    int *pos;         // [rows / heads]: each token's position
    long rows;        // head vectors
    int dim, rot, heads;
    bool neox, bwd;
};

// cos and sin of the angle table, rounded to T (one thread an entry).
template <typename T> __global__ void build_cache(const float *angles, long n, T *c, T *s)
{
    const long k = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n) return;
    float sv, cv;
    sincosf(angles[k], &sv, &cv);
    c[k] = from_f<T>(cv);
    s[k] = from_f<T>(sv);
}

// Positions per token: sbhd [s, b] -> s, bshd [b, s] -> s, thd from the
// sequence offsets (token - the start of its sequence).
__global__ void build_pos(int *pos, long tokens, int layout, long seq, long batch, const int *starts, int nseq)
{
    const long t = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= tokens) return;
    if (layout == 0) { pos[t] = (int)(t / batch); return; }
    if (layout == 1) { pos[t] = (int)(t % seq); return; }
    int lo = 0, hi = nseq - 1; // once per case, untimed
    while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (starts[mid] <= t) lo = mid;
        else hi = mid - 1;
    }
    pos[t] = (int)(t - starts[lo]);
}

// One thread a rotated pair, in place.
template <typename T> __global__ void rope_inplace(T *x, Cache a)
{
    const int half = a.rot / 2;
    const long k = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= a.rows * half) return;
    const long r = k / half;
    const int i = (int)(k - r * half);
    const int p = a.pos[r / a.heads];
    const float c = to_f(((const T *)a.cos)[(long)p * half + i]);
    const float s = (a.bwd ? -1.f : 1.f) * to_f(((const T *)a.sin)[(long)p * half + i]);
    T *v = x + r * a.dim;
    const int j0 = a.neox ? i : 2 * i, j1 = a.neox ? i + half : 2 * i + 1;
    const float x0 = to_f(v[j0]), x1 = to_f(v[j1]);
    v[j0] = from_f<T>(x0 * c - x1 * s);
    v[j1] = from_f<T>(x1 * c + x0 * s);
}

// ---- the plugin: what kbench calls --------------------------------------
static int supports(const kbp_case *c, char *why, size_t n)
{
    if (c->dtype != KBP_FP32 && c->dtype != KBP_FP16 && c->dtype != KBP_BF16) {
        snprintf(why, n, "dtype %d: this example knows fp32, fp16 and bf16", (int)c->dtype);
        return 1;
    }
    return 0;
}

static size_t esize(kbp_dtype t) { return t == KBP_FP32 ? 4 : 2; }

template <typename T> static void cache_kernel(const float *ang, long n, Cache *k, cudaStream_t s)
{
    build_cache<T><<<(unsigned)((n + 255) / 256), 256, 0, s>>>(ang, n, (T *)k->cos, (T *)k->sin);
}

// Untimed, once per case, on kbench's stream: the inputs are filled, so the
// cache is built from them; kbench synchronises the stream afterwards.
static int prepare(const kbp_case *c, void **state, void *stream, char *kernel, size_t n, char *why, size_t wn)
{
    const bool bwd = kbp_param_is(c, "pass", "bwd");
    const kbp_tensor *x = kbp_input(c, bwd ? "dy" : "t"), *ang = kbp_input(c, "angles");
    if (!x || !ang || x->ndim < 3 || ang->ndim != 2) return snprintf(why, wn, "unexpected tensors"), (int)cudaErrorInvalidValue;
    Cache *k = (Cache *)calloc(1, sizeof *k);
    if (!k) return (int)cudaErrorMemoryAllocation;
    *state = k;
    k->dim = (int)x->shape[x->ndim - 1];
    k->heads = (int)x->shape[x->ndim - 2];
    k->rot = 2 * (int)ang->shape[1];
    k->rows = kbp_numel(x) / k->dim;
    k->neox = kbp_param_is(c, "style", "neox");
    k->bwd = bwd;
    const int layout = kbp_param_is(c, "layout", "sbhd") ? 0 : kbp_param_is(c, "layout", "bshd") ? 1 : 2;
    const long tokens = k->rows / (k->heads ? k->heads : 1), entries = kbp_numel(ang);
    cudaStream_t s = (cudaStream_t)stream;
    cudaError_t e = cudaMalloc(&k->cos, entries * esize(c->dtype) + 1);
    if (!e) e = cudaMalloc(&k->sin, entries * esize(c->dtype) + 1);
    if (!e) e = cudaMalloc(&k->pos, tokens * sizeof(int) + 1);
    int nseq = 0;
    const int32_t *starts = kbp_seqlens(c, &nseq); // thd: the offsets as data (host), for the search's bounds
    const kbp_tensor *cu = kbp_input(c, "cu_seqlens");
    if (!e && layout == 2 && (!starts || !cu)) e = cudaErrorInvalidValue;
    if (e) return snprintf(why, wn, "%s", cudaGetErrorString(e)), (int)e;
    if (entries) {
        if (c->dtype == KBP_FP32) cache_kernel<float>((const float *)ang->data, entries, k, s);
        else if (c->dtype == KBP_FP16) cache_kernel<__half>((const float *)ang->data, entries, k, s);
        else cache_kernel<__nv_bfloat16>((const float *)ang->data, entries, k, s);
    }
    if (tokens)
        build_pos<<<(unsigned)((tokens + 255) / 256), 256, 0, s>>>(
            k->pos, tokens, layout, layout == 1 ? x->shape[1] : 0, layout == 0 ? x->shape[1] : 1,
            layout == 2 ? (const int *)cu->data : NULL, nseq);
    snprintf(kernel, n, "in place, %s cos/sin cache%s", c->dtype == KBP_FP32 ? "fp32" : c->dtype == KBP_FP16 ? "fp16" : "bf16",
             layout == 2 ? ", positions from cu_seqlens" : "");
    return (int)cudaGetLastError();
}

// Timed: one kernel rotating kbench's buffer in place.
static int launch(const kbp_case *c, void *state, void *stream)
{
    const Cache *k = (const Cache *)state;
    const kbp_tensor *y = kbp_output(c, k->bwd ? "dt" : "out"); // t's (dy's) buffer: inplace
    const long threads = k->rows * (k->rot / 2);
    if (!threads) return 0;
    const unsigned blocks = (unsigned)((threads + 255) / 256);
    cudaStream_t s = (cudaStream_t)stream;
    if (c->dtype == KBP_FP32) rope_inplace<float><<<blocks, 256, 0, s>>>((float *)y->data, *k);
    else if (c->dtype == KBP_FP16) rope_inplace<__half><<<blocks, 256, 0, s>>>((__half *)y->data, *k);
    else rope_inplace<__nv_bfloat16><<<blocks, 256, 0, s>>>((__nv_bfloat16 *)y->data, *k);
    return (int)cudaGetLastError();
}

static void release(const kbp_case *c, void *state)
{
    (void)c;
    Cache *k = (Cache *)state;
    if (!k) return;
    cudaFree(k->cos);
    cudaFree(k->sin);
    cudaFree(k->pos);
    free(k);
}

extern "C" const kbp_table *kbench_plugin(void)
{
    static const kbp_impl impls[] = {{"rope", "example_inplace", // op, name (--impl example_inplace=...)
        "RoPE in place with a cos/sin cache in the dtype and positions per token, built in prepare; neox and gptj",
        supports, prepare, launch, release, 0 /* flags: deterministic */,
        "out=t,dt=dy" /* inplace: out over t (fwd), dt over dy (bwd) */, NULL /* accumulates */, NULL, 0 /* tunables */}};
    static const kbp_table table = {KBP_ABI_VERSION, 1, impls};
    return &table;
}
