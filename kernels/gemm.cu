// cuBLAS: the process's handle, the nn.Linear GEMM the MLP implementations
// call, the same GEMM by cuBLASLt with K split (fused's down GEMM where its
// planner says), and the square GEMM the harness measures its ceiling with.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

#include <new>

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

// ---- y = x w^T by cuBLASLt, K split in `splits` ------------------------------
// cuBLAS's own pick (kb_linear_cublas) for a few hundred tokens runs one
// split with too few tiles to fill the SMs (300 x 4096 x 11008: 59.5 us),
// while the heuristic's split-K 2 algorithm takes 47.1 (H100, 2026-11-27):
// the fused planner asks for the split (KB_MLP_ROW_DOWN_LT), this finds it.
struct kb_lt_gemm {
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, lc; // w^T as [K, N] column-major, x as [K, M], y as [N, M]
    cublasLtMatmulAlgo_t algo;
    void *ws;
    size_t wsz;
};

namespace {
cublasLtHandle_t lt_handle;

// the largest power of two (up to 256) dividing the address: cuBLASLt's
// heuristic offers only algorithms that take operands aligned so
uint32_t align_of(const void *p)
{
    uint32_t a = 256;
    while (a > 1 && (uintptr_t)p % a) a /= 2;
    return a;
}

// the descriptors of g, and the first algorithm the heuristic offers with
// `splits` K ranges and fp32 partials (the compute type's reduction, out of
// place: deterministic), else the first that takes them; -1 where none
int lt_find(kb_lt_gemm *g, const void *x, const void *w, const void *y, int M, int N, int K, cudaDataType_t t,
            int splits)
{
    const cublasOperation_t ta = CUBLAS_OP_T, tn = CUBLAS_OP_N;
    CK_CUBLAS(cublasLtMatmulDescCreate(&g->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    CK_CUBLAS(cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    CK_CUBLAS(cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSB, &tn, sizeof tn));
    CK_CUBLAS(cublasLtMatrixLayoutCreate(&g->la, t, K, N, K));
    CK_CUBLAS(cublasLtMatrixLayoutCreate(&g->lb, t, K, M, K));
    CK_CUBLAS(cublasLtMatrixLayoutCreate(&g->lc, t, N, M, N));
    cublasLtMatmulPreference_t pr;
    CK_CUBLAS(cublasLtMatmulPreferenceCreate(&pr));
    const size_t max_ws = 64u << 20;
    const uint32_t red = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE, aa = align_of(w), ab = align_of(x), ac = align_of(y);
    cublasLtMatmulHeuristicResult_t res[16];
    int found = 0;
    cublasStatus_t s = cublasLtMatmulPreferenceSetAttribute(pr, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_ws, sizeof max_ws);
    if (!s) s = cublasLtMatmulPreferenceSetAttribute(pr, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &red, sizeof red);
    if (!s) s = cublasLtMatmulPreferenceSetAttribute(pr, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &aa, sizeof aa);
    if (!s) s = cublasLtMatmulPreferenceSetAttribute(pr, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &ab, sizeof ab);
    if (!s) s = cublasLtMatmulPreferenceSetAttribute(pr, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &ac, sizeof ac);
    if (!s) s = cublasLtMatmulPreferenceSetAttribute(pr, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &ac, sizeof ac);
    if (!s) s = cublasLtMatmulAlgoGetHeuristic(lt_handle, g->op, g->la, g->lb, g->lc, g->lc, pr, 16, res, &found);
    cublasLtMatmulPreferenceDestroy(pr);
    if (s == CUBLAS_STATUS_NOT_SUPPORTED) return -1; // no algorithm at all for this shape
    CK_CUBLAS(s);
    for (int i = 0; i < found; i++) {
        int k = 0;
        size_t got = 0;
        if (res[i].state != CUBLAS_STATUS_SUCCESS ||
            cublasLtMatmulAlgoConfigGetAttribute(&res[i].algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &k, sizeof k, &got) ||
            k != splits)
            continue;
        g->algo = res[i].algo;
        g->wsz = res[i].workspaceSize;
        return 0;
    }
    // none offered (small shapes): the first of its algorithms that takes the
    // split when it is set on it
    const uint32_t sk = (uint32_t)splits;
    for (int i = 0; i < found; i++) {
        cublasLtMatmulAlgo_t a = res[i].algo;
        cublasLtMatmulHeuristicResult_t chk = {};
        if (res[i].state != CUBLAS_STATUS_SUCCESS ||
            cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &sk, sizeof sk) ||
            cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &red, sizeof red) ||
            cublasLtMatmulAlgoCheck(lt_handle, g->op, g->la, g->lb, g->lc, g->lc, &a, &chk) ||
            chk.workspaceSize > max_ws)
            continue;
        g->algo = a;
        g->wsz = chk.workspaceSize;
        return 0;
    }
    return -1;
}
} // namespace

extern "C" void kb_linear_lt_release(kb_lt_gemm *g)
{
    if (!g) return;
    if (g->lc) cublasLtMatrixLayoutDestroy(g->lc);
    if (g->lb) cublasLtMatrixLayoutDestroy(g->lb);
    if (g->la) cublasLtMatrixLayoutDestroy(g->la);
    if (g->op) cublasLtMatmulDescDestroy(g->op);
    cudaFree(g->ws);
    delete g;
}

extern "C" int kb_linear_lt_prepare(const void *x, const void *w, const void *y, int M, int N, int K, int dtype,
                                    int splits, kb_lt_gemm **out)
{
    *out = nullptr;
    cudaDataType_t t;
    cublasComputeType_t ct;
    if (M <= 0 || N <= 0 || K <= 0 || splits < 2 || dtype == 0 || gemm_types(dtype, 0, &t, &ct))
        return (int)cudaErrorInvalidValue;
    if (!lt_handle) CK_CUBLAS(cublasLtCreate(&lt_handle));
    kb_lt_gemm *g = new (std::nothrow) kb_lt_gemm();
    if (!g) return (int)cudaErrorMemoryAllocation;
    int rc = lt_find(g, x, w, y, M, N, K, t, splits);
    if (rc == 0 && g->wsz) {
        cudaError_t e = cudaMalloc(&g->ws, g->wsz);
        if (e != cudaSuccess) rc = cuda_fail(e, "cudaMalloc(&g->ws, g->wsz)", __FILE__, __LINE__);
    }
    if (rc) {
        kb_linear_lt_release(g);
        return rc;
    }
    *out = g;
    return 0;
}

extern "C" int kb_linear_lt(const kb_lt_gemm *g, const void *x, const void *w, void *y, void *stream)
{
    const float one = 1.0f, zero = 0.0f;
    CK_CUBLAS(cublasLtMatmul(lt_handle, g->op, &one, w, g->la, x, g->lb, &zero, y, g->lc, y, g->lc, &g->algo, g->ws,
                             g->wsz, (cudaStream_t)stream));
    return 0;
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
