// cuBLAS: the process's handle, the nn.Linear GEMM the MLP implementations
// call, and the square GEMM the harness measures its ceiling with.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

#include "common.cuh"
#include "kernels.h"

namespace {

cublasHandle_t handle;
void *workspace;
cudaStream_t current;
bool have_stream;
constexpr size_t WORKSPACE = 32u << 20; // what cuBLAS recommends on Hopper

int cuda_fail(cudaError_t e, const char *what, const char *file, int line)
{
    snprintf(kb_last_error, sizeof kb_last_error, "%s:%d: %s: %s (%s)", file, line, what, cudaGetErrorString(e),
             cudaGetErrorName(e));
    return (int)e;
}

int cublas_fail(cublasStatus_t s, const char *what, const char *file, int line)
{
    snprintf(kb_last_error, sizeof kb_last_error, "%s:%d: %s: %s", file, line, what, kb_cublas_status_string((int)s));
    cudaError_t e = cudaPeekAtLastError(); // a sticky error behind it, if any
    if (e != cudaSuccess) return (int)e;
    switch (s) {
    case CUBLAS_STATUS_ALLOC_FAILED: return (int)cudaErrorMemoryAllocation;
    case CUBLAS_STATUS_INVALID_VALUE: return (int)cudaErrorInvalidValue;
    case CUBLAS_STATUS_NOT_SUPPORTED:
    case CUBLAS_STATUS_ARCH_MISMATCH: return (int)cudaErrorNotSupported;
    default: return (int)cudaErrorUnknown;
    }
}

#define CK_CUDA(call)                                                                \
    do {                                                                             \
        cudaError_t e_ = (call);                                                     \
        if (e_ != cudaSuccess) return cuda_fail(e_, #call, __FILE__, __LINE__);      \
    } while (0)
#define CK_CUBLAS(call)                                                              \
    do {                                                                             \
        cublasStatus_t s_ = (call);                                                  \
        if (s_ != CUBLAS_STATUS_SUCCESS) return cublas_fail(s_, #call, __FILE__, __LINE__); \
    } while (0)

// The handle on `stream`. cublasSetStream resets the workspace to cuBLAS's
// own pool, so ours is set again after it.
int bind(cudaStream_t stream)
{
    if (!handle) {
        int rc = kb_cublas_init();
        if (rc) return rc;
    }
    if (!have_stream || stream != current) {
        CK_CUBLAS(cublasSetStream(handle, stream));
        CK_CUBLAS(cublasSetWorkspace(handle, workspace, WORKSPACE));
        current = stream;
        have_stream = true;
    }
    return 0;
}

uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

__device__ __forceinline__ uint64_t dmix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

template <typename T> __global__ void fill_kernel(T *p, size_t n, uint64_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint64_t z = dmix(seed + (i + 1) * 0x9e3779b97f4a7c15ull);
        float v = (float)(z >> 40) * 0x1.0p-23f - 1.0f; // [-1, 1)
        p[i] = kb::from_f<T>(v);
    }
}

template <typename T> int fill(void *p, size_t n, uint64_t seed)
{
    fill_kernel<T><<<1024, 256>>>((T *)p, n, mix(seed));
    CK_CUDA(cudaGetLastError());
    return 0;
}

} // namespace

extern "C" const char *kb_cublas_status_string(int status)
{
    static char buf[8][256];
    static int next;
    char *b = buf[next++ & 7];
    snprintf(b, 256, "%s: %s", cublasGetStatusName((cublasStatus_t)status), cublasGetStatusString((cublasStatus_t)status));
    return b;
}

extern "C" int kb_cublas_init(void)
{
    if (handle) return 0;
    cublasHandle_t h = nullptr;
    CK_CUBLAS(cublasCreate(&h));
    cudaError_t e = cudaMalloc(&workspace, WORKSPACE);
    if (e != cudaSuccess) {
        cublasDestroy(h);
        workspace = nullptr;
        return cuda_fail(e, "cudaMalloc(&workspace, WORKSPACE)", __FILE__, __LINE__);
    }
    handle = h;
    have_stream = false;
    return 0;
}

extern "C" int kb_linear_cublas(const void *x, const void *w, void *y, int M, int N, int K, int dtype, int tf32,
                                void *stream)
{
    if (M <= 0 || N <= 0 || K <= 0) return (int)cudaErrorInvalidValue;
    cudaDataType_t t;
    cublasComputeType_t ct = CUBLAS_COMPUTE_32F;
    switch (dtype) {
    case 0: t = CUDA_R_32F; if (tf32) ct = CUBLAS_COMPUTE_32F_FAST_TF32; break;
    case 1: t = CUDA_R_16F; break;
    case 2: t = CUDA_R_16BF; break;
    default: return (int)cudaErrorInvalidValue;
    }
    int rc = bind((cudaStream_t)stream);
    if (rc) return rc;
    const float one = 1.0f, zero = 0.0f;
    // Column-major, cuBLAS sees y^T [N, M] = w [N, K] (w^T stored: OP_T) * x^T [K, M].
    CK_CUBLAS(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, w, t, K, x, t, K, &zero, y, t, N, ct,
                           CUBLAS_GEMM_DEFAULT));
    return 0;
}

extern "C" int kb_gemm_bench_create(kb_gemm_bench *g, int dtype, int tf32, int n)
{
    *g = kb_gemm_bench{nullptr, nullptr, nullptr, n, dtype, tf32};
    if (n <= 0 || dtype < 0 || dtype > 2) return (int)cudaErrorInvalidValue;
    int rc = kb_cublas_init();
    if (rc) return rc;
    size_t es = dtype == 0 ? 4 : 2, bytes = (size_t)n * (size_t)n * es;
    cudaError_t e = cudaMalloc(&g->a, bytes);
    if (e == cudaSuccess) e = cudaMalloc(&g->b, bytes);
    if (e == cudaSuccess) e = cudaMalloc(&g->c, bytes);
    if (e != cudaSuccess) {
        kb_gemm_bench_destroy(g);
        if (e == cudaErrorMemoryAllocation) {
            cudaGetLastError(); // not sticky: clear it
            return (int)e;
        }
        return cuda_fail(e, "cudaMalloc (GEMM ceiling)", __FILE__, __LINE__);
    }
    size_t nn = (size_t)n * (size_t)n;
    rc = kb::by_dtype(dtype, [&](auto t) {
        using T = decltype(t);
        int r = fill<T>(g->a, nn, 1);
        return r ? r : fill<T>(g->b, nn, 2);
    });
    if (!rc) {
        cudaError_t s = cudaDeviceSynchronize();
        if (s != cudaSuccess) rc = cuda_fail(s, "cudaDeviceSynchronize (GEMM ceiling inputs)", __FILE__, __LINE__);
    }
    if (rc) kb_gemm_bench_destroy(g);
    return rc;
}

extern "C" int kb_gemm_bench_run(const kb_gemm_bench *g, void *stream)
{
    return kb_linear_cublas(g->a, g->b, g->c, g->n, g->n, g->n, g->dtype, g->tf32, stream);
}

extern "C" void kb_gemm_bench_destroy(kb_gemm_bench *g)
{
    cudaFree(g->a);
    cudaFree(g->b);
    cudaFree(g->c);
    g->a = g->b = g->c = nullptr;
}
