// mlp_cublas.cu: the SwiGLU MLP y = (silu(x G^T) * (x U^T)) D^T with its three
// GEMMs by cuBLAS and a small SwiGLU kernel between them, as a kbench plugin:
// implementation "example_cublas" of op "mlp". Build it with `make examples`
// (it links -lcublas), then run
//   kbench mlp --impl cublas,fused,example_cublas=build/examples/libkb_mlp_cublas.so
//
// What kbench passes (`kbench list mlp`): the parameters tokens, hidden,
// inter, tf32 (off|on: fp32 only, TF32 tensor cores allowed); the dtype in
// c->dtype; and, row-major in the dtype, by name:
//   inputs  "x" [tokens, hidden]; "G", "U" [inter, hidden]; "D" [hidden, inter]
//           (the weights as nn.Linear stores them: out x in)
//   output  "y" [tokens, hidden]
// What kbench's reference computes (refs/mlp.c), which this follows:
//   g = x G^T, u = x U^T   summed in fp32, stored (rounded) in the dtype
//   h = silu(g) * u        in fp32, silu(a) = a / (1 + exp(-a)), stored in the dtype
//   y = h D^T              summed in fp32, rounded to the dtype
// Every element of y is written (kbench checks a sample of rows at large shapes).
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#include "kbench_plugin.h"

__device__ float to_f(float v) { return v; }
__device__ float to_f(__half v) { return __half2float(v); }
__device__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ T from_f(float v);
template <> __device__ float from_f<float>(float v) { return v; }
template <> __device__ __half from_f<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __nv_bfloat16 from_f<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

// h = silu(g) * u, element by element; h is written over g (each thread reads
// its g before writing the same place).
template <typename T> __global__ void swiglu(T *g, const T *u, long n)
{
    const long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float a = to_f(g[i]);
    g[i] = from_f<T>(a / (1.0f + expf(-a)) * to_f(u[i]));
}

constexpr size_t CUBLAS_WORKSPACE = 32u << 20; // what cuBLAS recommends on Hopper

// What prepare makes and release frees: the cuBLAS handle, its workspace, g and u.
struct Plan {
    cublasHandle_t blas;
    void *workspace, *g, *u;
};

static void destroy(Plan *p)
{
    if (!p) return;
    if (p->blas) cublasDestroy(p->blas);
    cudaFree(p->workspace);
    cudaFree(p->g);
    cudaFree(p->u);
    free(p);
}

// ---- the plugin: what kbench calls --------------------------------------
static int supports(const kbp_case *c, char *why, size_t n)
{
    if (c->dtype == KBP_FP32 || c->dtype == KBP_FP16 || c->dtype == KBP_BF16) return 0;
    snprintf(why, n, "dtype %d: this example knows fp32, fp16 and bf16", (int)c->dtype);
    return 1;
}

// Untimed, once per case: everything launch needs, allocated here.
static int prepare(const kbp_case *c, void **state, void *stream, char *kernel, size_t n, char *why, size_t wn)
{
    (void)stream; // nothing queued: allocations only
    const size_t tokens = kbp_param_int(c, "tokens", 0), inter = kbp_param_int(c, "inter", 0);
    const size_t bytes = tokens * inter * (c->dtype == KBP_FP32 ? 4 : 2); // g or u: [tokens, inter]
    Plan *p = (Plan *)calloc(1, sizeof *p);
    *state = NULL;
    if (!p) return (int)cudaErrorMemoryAllocation;
    cudaError_t e = cudaMalloc(&p->g, bytes);
    if (e == cudaSuccess) e = cudaMalloc(&p->u, bytes);
    if (e == cudaSuccess) e = cudaMalloc(&p->workspace, CUBLAS_WORKSPACE);
    cublasStatus_t s = e == cudaSuccess ? cublasCreate(&p->blas) : CUBLAS_STATUS_SUCCESS;
    if (e != cudaSuccess || s != CUBLAS_STATUS_SUCCESS) {
        snprintf(why, wn, "%s", e != cudaSuccess ? cudaGetErrorString(e) : cublasGetStatusString(s));
        cudaGetLastError(); // cleared: the next case's launch reads cudaGetLastError
        destroy(p);         // ours to free: *state stays NULL
        return e != cudaSuccess ? (int)e : (int)cudaErrorUnknown;
    }
    *state = p;
    snprintf(kernel, n, "cublas x3 + swiglu%s", kbp_param_is(c, "tf32", "on") ? " tf32" : "");
    return 0;
}
static void release(const kbp_case *, void *state) { destroy((Plan *)state); }

// Row-major out[M, N] = in[M, K] w[N, K]^T (nn.Linear). cuBLAS is column-major:
// there, these arrays are out^T [N, M], in^T [K, M] and w^T [K, N], and
// out^T = (w^T)^T in^T: A = w transposed (lda K), B = in (ldb K), C = out (ldc N).
static cublasStatus_t linear(cublasHandle_t h, const void *in, const void *w, void *out, int M, int N, int K,
                             cudaDataType_t type, cublasComputeType_t compute)
{
    const float one = 1.0f, zero = 0.0f; // fp32 scalars: the compute type is 32F
    return cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, w, type, K, in, type, K, &zero, out, type, N,
                        compute, CUBLAS_GEMM_DEFAULT);
}

// A failed cuBLAS call ends launch with cudaErrorUnknown (launch has no room for a reason).
#define BLAS(call) do { if ((call) != CUBLAS_STATUS_SUCCESS) return (int)cudaErrorUnknown; } while (0)

// Timed: launches only, all on kbench's stream.
template <typename T> static int run(const kbp_case *c, Plan *p, cudaStream_t stream, cudaDataType_t type)
{
    const int tokens = (int)kbp_param_int(c, "tokens", 0), hidden = (int)kbp_param_int(c, "hidden", 0),
              inter = (int)kbp_param_int(c, "inter", 0);
    const kbp_tensor *x = kbp_input(c, "x"), *G = kbp_input(c, "G"), *U = kbp_input(c, "U"), *D = kbp_input(c, "D");
    const kbp_tensor *y = kbp_output(c, "y");
    if (!p || !x || !G || !U || !D || !y) return (int)cudaErrorInvalidValue;
    const cublasComputeType_t compute =
        c->dtype == KBP_FP32 && kbp_param_is(c, "tf32", "on") ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    BLAS(cublasSetStream(p->blas, stream)); // cuBLAS on kbench's stream; this resets the
    BLAS(cublasSetWorkspace(p->blas, p->workspace, CUBLAS_WORKSPACE)); // workspace: ours again
    BLAS(linear(p->blas, x->data, G->data, p->g, tokens, inter, hidden, type, compute)); // g = x G^T
    BLAS(linear(p->blas, x->data, U->data, p->u, tokens, inter, hidden, type, compute)); // u = x U^T
    const long n = (long)tokens * inter;
    swiglu<T><<<(unsigned)((n + 255) / 256), 256, 0, stream>>>((T *)p->g, (const T *)p->u, n); // h over g
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return (int)e;
    BLAS(linear(p->blas, p->g, D->data, y->data, tokens, hidden, inter, type, compute)); // y = h D^T
    return 0;
}
static int launch(const kbp_case *c, void *state, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    switch (c->dtype) {
    case KBP_FP32: return run<float>(c, (Plan *)state, s, CUDA_R_32F);
    case KBP_FP16: return run<__half>(c, (Plan *)state, s, CUDA_R_16F);
    case KBP_BF16: return run<__nv_bfloat16>(c, (Plan *)state, s, CUDA_R_16BF);
    default: return (int)cudaErrorInvalidValue; // supports() refused it
    }
}

extern "C" const kbp_table *kbench_plugin(void)
{
    static const kbp_impl impls[] = {{"mlp", "example_cublas", // op, name (--impl example_cublas=...)
        "SwiGLU MLP: cuBLAS GEMMs for g = x G^T and u = x U^T, a SwiGLU kernel (h over g), cuBLAS for y = h D^T",
        supports, prepare, launch, release, 0 /* flags: deterministic */,
        NULL /* inplace */, NULL /* accumulates */, NULL, 0 /* tunables */}};
    static const kbp_table table = {KBP_ABI_VERSION, 1, impls};
    return &table;
}
