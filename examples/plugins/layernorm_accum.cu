// layernorm_accum.cu: a LayerNorm backward as a training codebase writes it,
// as a kbench plugin: implementation "example_accum" of op "layernorm".
//   - accumulating outputs: it adds into dx, dgamma and dbeta (dx += ...,
//     as when x feeds a residual too), declared in accumulates: kbench
//     zeroes them untimed before every launch instead of filling them with
//     NaN, and the row's bytes count the kernel's read of them;
//   - a tunable of its own, chunk (rows each dgamma/dbeta partial sum
//     covers: 16, 64 or 256; 64 at auto): a flag and a sweep key while the
//     plugin is loaded, named in the kernel column.
// Build it with `make examples`, then run
//   kbench layernorm --pass bwd --impl opt,example_accum=build/examples/libkb_layernorm_accum.so --chunk 16,64,256
//
// The backward's tensors (`kbench list layernorm`): inputs x, dy [rows, cols],
// gamma [cols] (affine on), mean, rstd [rows] (fp32, the forward's); outputs
// dx [rows, cols], dgamma, dbeta [cols] (fp32, affine on). With xhat =
// (x - mean) * rstd and g = dy * gamma (affine none: dy):
//   dx += rstd * (g - mean(g) - xhat * mean(g * xhat))   (means over the row)
//   dgamma += sum over rows of dy * xhat      dbeta += sum over rows of dy
// Sums in fp32, in a fixed order (no atomics): two launches write the same bits.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdio.h>

#include "kbench_plugin.h"

__device__ float to_f(float v) { return v; }
__device__ float to_f(__half v) { return __half2float(v); }
__device__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ T from_f(float v);
template <> __device__ float from_f<float>(float v) { return v; }
template <> __device__ __half from_f<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __nv_bfloat16 from_f<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

constexpr int THREADS = 256;

// The block's sum, to every thread, in a fixed order.
__device__ float block_sum(float v)
{
    __shared__ float w[THREADS / 32];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    __syncthreads();
    if (threadIdx.x % 32 == 0) w[threadIdx.x / 32] = v;
    __syncthreads();
    v = threadIdx.x % 32 < THREADS / 32 ? w[threadIdx.x % 32] : 0.f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// dx += ..., block r takes row r.
template <typename T>
__global__ void dx_add(const T *x, const T *dy, const T *gamma, const float *mean, const float *rstd, T *dx, int cols)
{
    const long off = (long)blockIdx.x * cols;
    const float mu = mean[blockIdx.x], rs = rstd[blockIdx.x];
    float sg = 0.f, sgx = 0.f;
    for (int j = threadIdx.x; j < cols; j += THREADS) {
        const float xh = (to_f(x[off + j]) - mu) * rs, g = to_f(dy[off + j]) * (gamma ? to_f(gamma[j]) : 1.f);
        sg += g;
        sgx += g * xh;
    }
    const float mg = block_sum(sg) / cols, mgx = block_sum(sgx) / cols;
    for (int j = threadIdx.x; j < cols; j += THREADS) {
        const float xh = (to_f(x[off + j]) - mu) * rs, g = to_f(dy[off + j]) * (gamma ? to_f(gamma[j]) : 1.f);
        dx[off + j] = from_f<T>(to_f(dx[off + j]) + rs * (g - mg - xh * mgx));
    }
}

// Partial column sums of chunk rows each (block (k, b): rows k*chunk.., 256 columns).
template <typename T>
__global__ void partial(const T *x, const T *dy, const float *mean, const float *rstd, float *part, long rows, int cols,
                        int chunk)
{
    const int j = blockIdx.y * THREADS + threadIdx.x;
    if (j >= cols) return;
    const long r0 = (long)blockIdx.x * chunk, r1 = r0 + chunk < rows ? r0 + chunk : rows;
    float dg = 0.f, db = 0.f;
    for (long r = r0; r < r1; r++) {
        const float d = to_f(dy[r * cols + j]);
        dg += d * (to_f(x[r * cols + j]) - mean[r]) * rstd[r];
        db += d;
    }
    part[(long)blockIdx.x * cols + j] = dg;
    part[((long)gridDim.x + blockIdx.x) * cols + j] = db;
}

// dgamma += and dbeta += the partials, added in order.
__global__ void colsum_add(const float *part, long chunks, int cols, float *dgamma, float *dbeta)
{
    const int j = blockIdx.x * THREADS + threadIdx.x;
    if (j >= cols) return;
    float dg = 0.f, db = 0.f;
    for (long k = 0; k < chunks; k++) {
        dg += part[k * cols + j];
        db += part[(chunks + k) * cols + j];
    }
    dgamma[j] += dg;
    dbeta[j] += db;
}

// ---- the plugin: what kbench calls --------------------------------------
struct Plan {
    float *part; // [2][chunks][cols], affine on
    int chunk;
    long chunks;
};

static int supports(const kbp_case *c, char *why, size_t n)
{
    if (!kbp_param_is(c, "pass", "bwd")) return snprintf(why, n, "the backward only"), 1;
    if (c->dtype != KBP_FP32 && c->dtype != KBP_FP16 && c->dtype != KBP_BF16)
        return snprintf(why, n, "dtype %d: this example knows fp32, fp16 and bf16", (int)c->dtype), 1;
    return 0;
}

// Untimed: the workspace for the partial sums, sized by the tunable chunk
// (kbench passes its value; at auto, the default below).
static int prepare(const kbp_case *c, void **state, void *stream, char *kernel, size_t n, char *why, size_t wn)
{
    (void)stream, (void)kernel, (void)n; // kbench names the chunk in the kernel column
    Plan *p = (Plan *)calloc(1, sizeof *p);
    if (!p) return (int)cudaErrorMemoryAllocation;
    *state = p;
    p->chunk = (int)kbp_param_int(c, "chunk", 64);
    p->chunks = (kbp_param_int(c, "rows", 0) + p->chunk - 1) / p->chunk;
    if (!kbp_param_is(c, "affine", "on")) return 0;
    cudaError_t e = cudaMalloc(&p->part, 2 * p->chunks * kbp_param_int(c, "cols", 0) * sizeof(float) + 1);
    if (e) snprintf(why, wn, "cudaMalloc of the partial sums: %s", cudaGetErrorString(e));
    return (int)e;
}

static void release(const kbp_case *c, void *state)
{
    (void)c;
    Plan *p = (Plan *)state;
    if (p) cudaFree(p->part);
    free(p);
}

template <typename T> static int run(const kbp_case *c, const Plan *p, cudaStream_t s)
{
    const long rows = kbp_param_int(c, "rows", 0);
    const int cols = (int)kbp_param_int(c, "cols", 0);
    auto in = [&](const char *name) { const kbp_tensor *t = kbp_input(c, name); return t ? t->data : nullptr; };
    auto out = [&](const char *name) { const kbp_tensor *t = kbp_output(c, name); return t ? t->data : nullptr; };
    const T *x = (const T *)in("x"), *dy = (const T *)in("dy"), *gamma = (const T *)in("gamma");
    const float *mean = (const float *)in("mean"), *rstd = (const float *)in("rstd");
    T *dx = (T *)out("dx");
    if (!x || !dy || !mean || !rstd || !dx) return (int)cudaErrorInvalidValue;
    if (!rows || !cols) return 0;
    dx_add<T><<<(unsigned)rows, THREADS, 0, s>>>(x, dy, gamma, mean, rstd, dx, cols);
    if (p->part) {
        const unsigned cb = (cols + THREADS - 1) / THREADS;
        partial<T><<<dim3((unsigned)p->chunks, cb), THREADS, 0, s>>>(x, dy, mean, rstd, p->part, rows, cols, p->chunk);
        colsum_add<<<cb, THREADS, 0, s>>>(p->part, p->chunks, cols, (float *)out("dgamma"), (float *)out("dbeta"));
    }
    return (int)cudaGetLastError();
}

static int launch(const kbp_case *c, void *state, void *stream)
{
    const Plan *p = (const Plan *)state;
    switch (c->dtype) {
    case KBP_FP32: return run<float>(c, p, (cudaStream_t)stream);
    case KBP_FP16: return run<__half>(c, p, (cudaStream_t)stream);
    case KBP_BF16: return run<__nv_bfloat16>(c, p, (cudaStream_t)stream);
    default: return (int)cudaErrorInvalidValue;
    }
}

extern "C" const kbp_table *kbench_plugin(void)
{
    static const kbp_tunable tunables[] = {{"chunk", "16,64,256", "64", "rows each dgamma/dbeta partial sum covers"}};
    static const kbp_impl impls[] = {{"layernorm", "example_accum", // op, name (--impl example_accum=...)
        "LayerNorm backward adding into dx, dgamma and dbeta; block a row, partial column sums of chunk rows",
        supports, prepare, launch, release, 0 /* flags: deterministic */,
        NULL /* inplace */, "dx,dgamma,dbeta" /* accumulates */, tunables, 1}};
    static const kbp_table table = {KBP_ABI_VERSION, 1, impls};
    return &table;
}
