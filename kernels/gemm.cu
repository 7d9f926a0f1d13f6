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

namespace {
int gemm_types(int dtype, int tf32, cudaDataType_t *t, cublasComputeType_t *ct)
{
    *ct = CUBLAS_COMPUTE_32F;
    switch (dtype) {
    case 0: *t = CUDA_R_32F; if (tf32) *ct = CUBLAS_COMPUTE_32F_FAST_TF32; return 0;
    case 1: *t = CUDA_R_16F; return 0;
    case 2: *t = CUDA_R_16BF; return 0;
    }
    return (int)cudaErrorInvalidValue;
}

// y = op(x) op(w) as cuBLAS sees it, column-major: y^T [N, M] = opA(w) opB(x^T)
// with K deep. opA T, opB N is nn.Linear's y = x w^T on row-major data (w
// [N, K], x [M, K]); the other layouts of a ceiling GEMM take the same
// buffers with other ops (kb_gemm_layout), leading dimensions to match.
int gemm_ex(cublasOperation_t oa, cublasOperation_t ob, const void *x, const void *w, void *y, int M, int N, int K,
            int dtype, int tf32, cudaStream_t stream)
{
    if (M <= 0 || N <= 0 || K <= 0) return (int)cudaErrorInvalidValue;
    cudaDataType_t t;
    cublasComputeType_t ct;
    int rc = gemm_types(dtype, tf32, &t, &ct);
    if (rc || (rc = bind(stream))) return rc;
    const float one = 1.0f, zero = 0.0f;
    const int lda = oa == CUBLAS_OP_T ? K : N, ldb = ob == CUBLAS_OP_N ? K : M;
    CK_CUBLAS(cublasGemmEx(handle, oa, ob, N, M, K, &one, w, t, lda, x, t, ldb, &zero, y, t, N, ct,
                           CUBLAS_GEMM_DEFAULT));
    return 0;
}
} // namespace

extern "C" int kb_linear_cublas(const void *x, const void *w, void *y, int M, int N, int K, int dtype, int tf32,
                                void *stream)
{
    return gemm_ex(CUBLAS_OP_T, CUBLAS_OP_N, x, w, y, M, N, K, dtype, tf32, (cudaStream_t)stream);
}

// elements: the largest of each operand over the shapes; false on a shape not positive
static bool shapes_elems(const int (*mnk)[3], int nshapes, size_t *na, size_t *nb, size_t *nc)
{
    *na = *nb = *nc = 0;
    for (int i = 0; i < nshapes; i++) {
        size_t M = (size_t)mnk[i][0], N = (size_t)mnk[i][1], K = (size_t)mnk[i][2];
        if (mnk[i][0] <= 0 || mnk[i][1] <= 0 || mnk[i][2] <= 0) return false;
        *na = *na > M * K ? *na : M * K;
        *nb = *nb > N * K ? *nb : N * K;
        *nc = *nc > M * N ? *nc : M * N;
    }
    return true;
}

extern "C" size_t kb_gemm_bench_shapes_bytes(int dtype, const int (*mnk)[3], int nshapes)
{
    size_t na, nb, nc;
    if (!shapes_elems(mnk, nshapes, &na, &nb, &nc)) return 0;
    return (na + nb + nc) * (dtype == 0 ? 4 : 2);
}

extern "C" int kb_gemm_bench_create_shapes(kb_gemm_bench *g, int dtype, int tf32, const int (*mnk)[3], int nshapes)
{
    *g = kb_gemm_bench{};
    g->dtype = dtype;
    g->tf32 = tf32;
    if (nshapes <= 0 || nshapes > KB_GEMM_BENCH_SHAPES || dtype < 0 || dtype > 2) return (int)cudaErrorInvalidValue;
    size_t na, nb, nc;
    if (!shapes_elems(mnk, nshapes, &na, &nb, &nc)) return (int)cudaErrorInvalidValue;
    for (int i = 0; i < nshapes; i++)
        for (int j = 0; j < 3; j++) g->mnk[i][j] = mnk[i][j];
    g->nshapes = nshapes;
    g->n = mnk[0][0];
    int rc = kb_cublas_init();
    if (rc) return rc;
    size_t es = dtype == 0 ? 4 : 2;
    cudaError_t e = cudaMalloc(&g->a, na * es);
    if (e == cudaSuccess) e = cudaMalloc(&g->b, nb * es);
    if (e == cudaSuccess) e = cudaMalloc(&g->c, nc * es);
    if (e != cudaSuccess) {
        kb_gemm_bench_destroy(g);
        if (e == cudaErrorMemoryAllocation) {
            cudaGetLastError(); // not sticky: clear it
            return (int)e;
        }
        return cuda_fail(e, "cudaMalloc (GEMM ceiling)", __FILE__, __LINE__);
    }
    rc = kb::by_dtype(dtype, [&](auto t) {
        using T = decltype(t);
        int r = fill<T>(g->a, na, 1);
        return r ? r : fill<T>(g->b, nb, 2);
    });
    if (!rc) {
        cudaError_t s = cudaDeviceSynchronize();
        if (s != cudaSuccess) rc = cuda_fail(s, "cudaDeviceSynchronize (GEMM ceiling inputs)", __FILE__, __LINE__);
    }
    if (rc) kb_gemm_bench_destroy(g);
    return rc;
}

extern "C" int kb_gemm_bench_create_layout(kb_gemm_bench *g, int dtype, int tf32, int n, int layout)
{
    if (layout < 0 || layout >= KB_GEMM_NLAYOUTS) return (int)cudaErrorInvalidValue;
    const int sq[1][3] = {{n, n, n}};
    int rc = kb_gemm_bench_create_shapes(g, dtype, tf32, sq, 1);
    g->layout = layout;
    return rc;
}

extern "C" int kb_gemm_bench_run(const kb_gemm_bench *g, void *stream)
{
    const cublasOperation_t oa = g->layout == KB_GEMM_TN ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t ob = g->layout == KB_GEMM_NT ? CUBLAS_OP_T : CUBLAS_OP_N;
    for (int i = 0; i < g->nshapes; i++) {
        int rc = gemm_ex(oa, ob, g->a, g->b, g->c, g->mnk[i][0], g->mnk[i][1], g->mnk[i][2], g->dtype, g->tf32,
                         (cudaStream_t)stream);
        if (rc) return rc;
    }
    return 0;
}

extern "C" double kb_gemm_bench_flops(const kb_gemm_bench *g)
{
    double f = 0;
    for (int i = 0; i < g->nshapes; i++) f += 2.0 * g->mnk[i][0] * (double)g->mnk[i][1] * (double)g->mnk[i][2];
    return f;
}

extern "C" void kb_gemm_bench_destroy(kb_gemm_bench *g)
{
    cudaFree(g->a);
    cudaFree(g->b);
    cudaFree(g->c);
    g->a = g->b = g->c = nullptr;
}
