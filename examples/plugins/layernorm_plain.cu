// layernorm_plain.cu: LayerNorm forward and backward, written plainly, as a
// kbench plugin: implementation "example" of op "layernorm". `make examples` builds it:
//   kbench layernorm --impl naive,opt,example=build/examples/libkb_layernorm_plain.so
//
// What kbench passes (`kbench list layernorm`): the parameters rows, cols,
// eps, pass (fwd|bwd), affine (on|none), the dtype in c->dtype, and these
// tensors, contiguous, row-major, by name:
//   fwd: inputs  x [rows, cols], gamma and beta [cols] (affine on)
//        outputs y [rows, cols], mean and rstd [rows] (fp32)
//   bwd: inputs  x and dy [rows, cols], gamma [cols] (affine on),
//                mean and rstd [rows] (fp32: the forward's, saved)
//        outputs dx [rows, cols], dgamma and dbeta [cols] (fp32, affine on)
// x, y, dy, dx, gamma, beta are in the case's dtype. kbench fills the outputs
// with NaN and checks every element against refs/norm.c, so write them all:
//   mean = sum(x) / cols        rstd = 1 / sqrt(sum((x - mean)^2) / cols + eps)
//   y    = (x - mean) * rstd * gamma + beta        (affine none: y = xhat)
//   xhat = (x - mean) * rstd    g = dy * gamma     (affine none: g = dy)
//   dx   = rstd * (g - mean(g) - xhat * mean(g * xhat))   (means over the row)
//   dgamma = sum over rows of dy * xhat            dbeta = sum over rows of dy
// We sum in fp32 and round y and dx to the dtype once, when storing them.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include "kbench_plugin.h" // the plugin ABI: kbp_case, kbp_tensor, kbp_impl, kbp_table

// fp32 from and to the element type T (float, __half or __nv_bfloat16)
__device__ float to_f(float v) { return v; }
__device__ float to_f(__half v) { return __half2float(v); }
__device__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ T from_f(float v);
template <> __device__ float from_f<float>(float v) { return v; }
template <> __device__ __half from_f<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __nv_bfloat16 from_f<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

constexpr int THREADS = 256; // one block of 256 threads a row
constexpr int CHUNK = 64;    // backward: rows summed into one partial dgamma/dbeta row

// The sum of v over the block, returned to every thread. Always added in the
// same order, so two launches write the same bits (kbench checks that).
__device__ float block_sum(float v)
{
    __shared__ float warp_sums[THREADS / 32];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    __syncthreads(); // a previous call may still be reading warp_sums
    if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = v;
    __syncthreads();
    v = threadIdx.x % 32 < THREADS / 32 ? warp_sums[threadIdx.x % 32] : 0.f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Forward, block r normalises row r: mean, then the variance about it (two
// passes, as the reference), then y. gamma and beta are NULL when affine is none.
template <typename T>
__global__ void ln_fwd(const T *x, const T *gamma, const T *beta, T *y, float *mean, float *rstd, int cols, float eps)
{
    const T *xr = x + (long)blockIdx.x * cols;
    T *yr = y + (long)blockIdx.x * cols;
    float s = 0.f, ss = 0.f;
    for (int j = threadIdx.x; j < cols; j += THREADS) s += to_f(xr[j]);
    const float mu = block_sum(s) / cols;
    for (int j = threadIdx.x; j < cols; j += THREADS) ss += (to_f(xr[j]) - mu) * (to_f(xr[j]) - mu);
    const float rs = rsqrtf(block_sum(ss) / cols + eps); // biased variance: divided by cols
    for (int j = threadIdx.x; j < cols; j += THREADS) {
        float v = (to_f(xr[j]) - mu) * rs;
        if (gamma) v = v * to_f(gamma[j]) + to_f(beta[j]);
        yr[j] = from_f<T>(v);
    }
    if (threadIdx.x == 0) { mean[blockIdx.x] = mu; rstd[blockIdx.x] = rs; }
}

// Backward dx, block r takes row r, from the saved mean and rstd.
template <typename T>
__global__ void ln_bwd_dx(const T *x, const T *dy, const T *gamma, const float *mean, const float *rstd, T *dx, int cols)
{
    const long off = (long)blockIdx.x * cols;
    const float mu = mean[blockIdx.x], rs = rstd[blockIdx.x];
    float sg = 0.f, sgx = 0.f;
    for (int j = threadIdx.x; j < cols; j += THREADS) {
        const float xh = (to_f(x[off + j]) - mu) * rs, g = to_f(dy[off + j]) * (gamma ? to_f(gamma[j]) : 1.f);
        sg += g;
        sgx += g * xh;
    }
    const float mean_g = block_sum(sg) / cols, mean_gx = block_sum(sgx) / cols;
    for (int j = threadIdx.x; j < cols; j += THREADS) {
        const float xh = (to_f(x[off + j]) - mu) * rs, g = to_f(dy[off + j]) * (gamma ? to_f(gamma[j]) : 1.f);
        dx[off + j] = from_f<T>(rs * (g - mean_g - xh * mean_gx));
    }
}

// Backward dgamma and dbeta are sums down the columns. No atomics (they would
// add in a different order each launch): block (k, b) sums rows k*CHUNK ..
// k*CHUNK + CHUNK-1 of 256 columns into partial row k of part (the workspace
// prepare allocated: [2][chunks][cols]); then ln_colsum adds the partials in order.
template <typename T>
__global__ void ln_partial(const T *x, const T *dy, const float *mean, const float *rstd, float *part, long rows, int cols)
{
    const int j = blockIdx.y * THREADS + threadIdx.x;
    if (j >= cols) return;
    const long r0 = (long)blockIdx.x * CHUNK, r1 = r0 + CHUNK < rows ? r0 + CHUNK : rows;
    float dg = 0.f, db = 0.f;
    for (long r = r0; r < r1; r++) {
        const float d = to_f(dy[r * cols + j]), xh = (to_f(x[r * cols + j]) - mean[r]) * rstd[r];
        dg += d * xh;
        db += d;
    }
    part[(long)blockIdx.x * cols + j] = dg;
    part[((long)gridDim.x + blockIdx.x) * cols + j] = db;
}
__global__ void ln_colsum(const float *part, long chunks, int cols, float *dgamma, float *dbeta)
{
    const int j = blockIdx.x * THREADS + threadIdx.x;
    if (j >= cols) return;
    float dg = 0.f, db = 0.f;
    for (long k = 0; k < chunks; k++) {
        dg += part[k * cols + j];
        db += part[(chunks + k) * cols + j];
    }
    if (dgamma) dgamma[j] = dg;
    if (dbeta) dbeta[j] = db;
}

// ---- the plugin: what kbench calls --------------------------------------
static long chunks_of(const kbp_case *c) { return (kbp_param_int(c, "rows", 0) + CHUNK - 1) / CHUNK; }
static bool needs_sums(const kbp_case *c) { return kbp_param_is(c, "pass", "bwd") && kbp_param_is(c, "affine", "on"); }

// Host only, no tensors yet: refuse what this file does not do, with a reason
// (the row reads n/a). It does every shape, pass and affine of kbench's
// layernorm, in the dtypes it was written for; a newer kbench may add dtypes.
static int supports(const kbp_case *c, char *why, size_t n)
{
    if (c->dtype == KBP_FP32 || c->dtype == KBP_FP16 || c->dtype == KBP_BF16) return 0;
    snprintf(why, n, "dtype %d: this example knows fp32, fp16 and bf16", (int)c->dtype);
    return 1;
}

// Untimed, once per case: the backward's partial sums (the state launch gets).
static int prepare(const kbp_case *c, void **state, void *stream, char *kernel, size_t n, char *why, size_t wn)
{
    (void)stream; // nothing queued: allocations only
    *state = NULL;
    snprintf(kernel, n, "example block/row t=%d%s", THREADS, needs_sums(c) ? " + dgamma/dbeta partials" : "");
    if (!needs_sums(c)) return 0;
    cudaError_t e = cudaMalloc(state, 2 * chunks_of(c) * kbp_param_int(c, "cols", 0) * sizeof(float));
    if (e == cudaSuccess) return 0;
    *state = NULL;
    cudaGetLastError(); // cleared: the next case's launch reads cudaGetLastError
    snprintf(why, wn, "cudaMalloc of the partial sums: %s", cudaGetErrorString(e));
    return (int)e;
}
static void release(const kbp_case *, void *state) { cudaFree(state); }

// Timed: launches only, on kbench's stream. The tensors are looked up by name
// (NULL when the case has no such tensor: gamma and beta with affine none).
template <typename T> static int run(const kbp_case *c, float *part, cudaStream_t s)
{
    const long rows = kbp_param_int(c, "rows", 0);
    const int cols = (int)kbp_param_int(c, "cols", 0);
    auto in = [&](const char *name) { const kbp_tensor *t = kbp_input(c, name); return t ? t->data : nullptr; };
    auto out = [&](const char *name) { const kbp_tensor *t = kbp_output(c, name); return t ? t->data : nullptr; };
    const T *x = (const T *)in("x"), *gamma = (const T *)in("gamma");
    if (kbp_param_is(c, "pass", "fwd")) {
        T *y = (T *)out("y");
        float *mean = (float *)out("mean"), *rstd = (float *)out("rstd");
        if (!x || !y || !mean || !rstd) return (int)cudaErrorInvalidValue;
        const float eps = (float)kbp_param_float(c, "eps", 1e-5);
        ln_fwd<T><<<(unsigned)rows, THREADS, 0, s>>>(x, gamma, (const T *)in("beta"), y, mean, rstd, cols, eps);
        return (int)cudaGetLastError();
    }
    const T *dy = (const T *)in("dy");
    const float *mean = (const float *)in("mean"), *rstd = (const float *)in("rstd"); // inputs now
    T *dx = (T *)out("dx");
    if (!x || !dy || !mean || !rstd || !dx) return (int)cudaErrorInvalidValue;
    ln_bwd_dx<T><<<(unsigned)rows, THREADS, 0, s>>>(x, dy, gamma, mean, rstd, dx, cols);
    if (part) { // affine on: dgamma and dbeta are outputs too
        const long chunks = chunks_of(c);
        const unsigned col_blocks = (cols + THREADS - 1) / THREADS;
        ln_partial<T><<<dim3((unsigned)chunks, col_blocks), THREADS, 0, s>>>(x, dy, mean, rstd, part, rows, cols);
        ln_colsum<<<col_blocks, THREADS, 0, s>>>(part, chunks, cols, (float *)out("dgamma"), (float *)out("dbeta"));
    }
    return (int)cudaGetLastError();
}
static int launch(const kbp_case *c, void *state, void *stream)
{
    switch (c->dtype) {
    case KBP_FP32: return run<float>(c, (float *)state, (cudaStream_t)stream);
    case KBP_FP16: return run<__half>(c, (float *)state, (cudaStream_t)stream);
    case KBP_BF16: return run<__nv_bfloat16>(c, (float *)state, (cudaStream_t)stream);
    default: return (int)cudaErrorInvalidValue; // supports() refused it
    }
}

extern "C" const kbp_table *kbench_plugin(void)
{
    static const kbp_impl impls[] = {{"layernorm", "example", // op, name (--impl example=...)
        "plain LayerNorm: a block of 256 threads a row, fp32 sums; backward dgamma/dbeta by 64-row partial sums",
        supports, prepare, launch, release, 0 /* flags: deterministic, no KBP_NONDETERMINISTIC */,
        NULL /* inplace */, NULL /* accumulates */, NULL, 0 /* tunables */}};
    static const kbp_table table = {KBP_ABI_VERSION, 1, impls};
    return &table;
}
