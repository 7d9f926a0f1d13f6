// Faulty LayerNorm-forward plugins for the GPU checks of the plugin loader
// (issue 21): each implementation is wrong in one way kbench must report.
//   off_by_one  the last column of each row is left unwritten (NaN): verification fails, exit 1
//   oob         writes 1 GiB past y: the context is lost, exit 3, the plugin named
//   hang        never finishes: the watchdog stops kbench, exit 3
// Built by `make test-plugins` into build/tests/plugins/libfaulty.so; fp32 only.
#include <cuda_runtime.h>
#include <stdio.h>
#include "kbench_plugin.h"

__global__ void ln_rows(const float *x, float *y, float *mean, float *rstd, long rows, int cols, float eps, int skip_last,
                        long oob)
{
    long r = blockIdx.x;
    if (r >= rows) return;
    const float *xr = x + r * cols;
    __shared__ float s[2];
    if (threadIdx.x == 0) {
        float m = 0, v = 0;
        for (int c = 0; c < cols; c++) m += xr[c];
        m /= cols;
        for (int c = 0; c < cols; c++) v += (xr[c] - m) * (xr[c] - m);
        s[0] = m;
        s[1] = rsqrtf(v / cols + eps);
        mean[r] = s[0];
        rstd[r] = s[1];
    }
    __syncthreads();
    for (int c = threadIdx.x; c < cols - skip_last; c += blockDim.x) y[r * cols + c + oob] = (xr[c] - s[0]) * s[1];
}

__global__ void spin_forever(int *flag)
{
    while (atomicAdd(flag, 0) == 0) { }
}

static int supports(const kbp_case *c, char *why, size_t n)
{
    if (c->dtype != KBP_FP32 || !kbp_param_is(c, "pass", "fwd") || !kbp_param_is(c, "affine", "none")) {
        snprintf(why, n, "fp32 forward without affine only");
        return 1;
    }
    return 0;
}

static int run(const kbp_case *c, void *stream, int skip_last, long oob)
{
    const kbp_tensor *x = kbp_input(c, "x");
    long rows = (long)x->shape[0];
    int cols = (int)x->shape[1];
    ln_rows<<<(unsigned)rows, 128, 0, (cudaStream_t)stream>>>((const float *)x->data, (float *)kbp_output(c, "y")->data,
                                                             (float *)kbp_output(c, "mean")->data,
                                                             (float *)kbp_output(c, "rstd")->data, rows, cols,
                                                             (float)kbp_param_float(c, "eps", 1e-5), skip_last, oob);
    return (int)cudaGetLastError();
}

static int off_by_one(const kbp_case *c, void *state, void *stream) { (void)state; return run(c, stream, 1, 0); }
static int oob(const kbp_case *c, void *state, void *stream) { (void)state; return run(c, stream, 0, 1l << 28); }
static int hang(const kbp_case *c, void *state, void *stream)
{
    (void)c;
    spin_forever<<<1, 1, 0, (cudaStream_t)stream>>>((int *)state);
    return (int)cudaGetLastError();
}
static int hang_prepare(const kbp_case *c, void **state, void *stream, char *kernel, size_t kn, char *why, size_t wn)
{
    (void)stream; // nothing queued: allocations only
    (void)c, (void)kernel, (void)kn, (void)why, (void)wn;
    if (cudaMalloc(state, sizeof(int)) != cudaSuccess) return (int)cudaGetLastError();
    return (int)cudaMemset(*state, 0, sizeof(int));
}
static void hang_release(const kbp_case *c, void *state) { (void)c; cudaFree(state); }

static const kbp_impl impls[] = {
    {"layernorm", "off_by_one", "leaves each row's last column unwritten", supports, nullptr, off_by_one, nullptr, 0, nullptr, nullptr, nullptr, 0},
    {"layernorm", "oob", "writes 1 GiB past its output", supports, nullptr, oob, nullptr, 0, nullptr, nullptr, nullptr, 0},
    {"layernorm", "hang", "never finishes", supports, hang_prepare, hang, hang_release, 0, nullptr, nullptr, nullptr, 0},
};
static const kbp_table table = {KBP_ABI_VERSION, 3, impls};
extern "C" const kbp_table *kbench_plugin(void) { return &table; }
