// The fused implementations' host side (fused, fused_wgmma, fused_mma):
// prepare plans the case (plan.c, with the runtime's occupancy of the wgmma
// kernels), sets the kernel's shared-memory attribute, makes the TMA tensor
// maps and names what runs; launch runs the gate/up kernel the plan chose,
// or, where the planner measured cuBLAS ahead (KB_MLP_CUBLAS_CAT), cublas_cat's
// GEMM and silu(g) * u; then the down projection y = h D^T through cuBLAS
// (kb_linear_cublas), down_splitk (with its maps and workspace) or cuBLASLt
// with K split (kb_linear_lt), as the plan's down says.
#include <cuda.h> // CUtensorMap and its enums only: the encoder comes from cudaGetDriverEntryPoint, no -lcuda
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <new>

#include "../kernels.h"
#include "gate_up.cuh"
#include "mlp.h"
#include "plan.h"

struct kb_mlp_fused {
    kb_mlp_args a;
    kb_mlp_plan plan;
    kb::mlp::WgmmaLaunch w; // the wgmma kernel's maps and launch (plan.variant WGMMA)
    kb::mlp::DownSplitK dn;  // down_splitk's launch and workspace (plan.down 1)
    kb_lt_gemm *lt;          // cuBLASLt's split-K algorithm and workspace (plan.down 2)
};

namespace {

typedef CUresult (*encode_tiled_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                                    const cuuint64_t *, const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave,
                                    CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

// cuTensorMapEncodeTiled from the driver the runtime already loaded (no -lcuda)
encode_tiled_fn encoder()
{
    static encode_tiled_fn fn;
    static bool asked;
    if (!asked) {
        asked = true;
        void *p = nullptr;
        cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
        cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q);
#else
        cudaError_t e = cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &p, cudaEnableDefault, &q);
#endif
        if (e == cudaSuccess && q == cudaDriverEntryPointSuccess && p)
            fn = (encode_tiled_fn)p;
        else
            cudaGetLastError();
    }
    return fn;
}

// rows x cols (cols contiguous, 2-byte elements), boxes of box_rows rows:
// LOAD (x, G, U): 64 columns, 128B swizzle, zeros past the edges; STORE (h):
// 16 columns, no swizzle; STORE_SW (h from the swapped kernel): 64 columns,
// 128B swizzle. A store writes nothing past the edges.
enum map_kind { LOAD, STORE, STORE_SW };
bool tensor_map(CUtensorMap *m, const void *p, int dtype, int rows, int cols, int box_rows, map_kind kind)
{
    encode_tiled_fn enc = encoder();
    if (!enc) return false;
    const cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows}, strides[1] = {(cuuint64_t)cols * 2};
    const cuuint32_t box[2] = {kind == STORE ? 16u : 64u, (cuuint32_t)box_rows}, estr[2] = {1, 1};
    return enc(m, dtype == 2 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2,
               const_cast<void *>(p), dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
               kind == STORE ? CU_TENSOR_MAP_SWIZZLE_NONE : CU_TENSOR_MAP_SWIZZLE_128B,
               kind == LOAD ? CU_TENSOR_MAP_L2_PROMOTION_L2_256B : CU_TENSOR_MAP_L2_PROMOTION_NONE,
               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// x's, G's and U's maps (boxes of BM and BN rows; swapped: BN and 128), and
// h's where the plan stores h by TMA (else mh is a valid map the kernel never uses)
bool make_maps(kb::mlp::WgmmaLaunch &w, const kb_mlp_args *a, int bm, int bn, bool store, bool swap)
{
    const int xrows = swap ? bn : KB_MLP_WG_XROWS(a->tokens, bm), wrows = swap ? 128 : bn;
    if (!tensor_map(&w.mx, a->x, a->dtype, a->tokens, a->hidden, xrows, LOAD) ||
        !tensor_map(&w.mg, a->G, a->dtype, a->inter, a->hidden, wrows, LOAD) ||
        !tensor_map(&w.mu, a->U, a->dtype, a->inter, a->hidden, wrows, LOAD))
        return false;
    if (swap) return tensor_map(&w.mh, a->h, a->dtype, a->tokens, a->inter, bn, STORE_SW);
    if (store) return tensor_map(&w.mh, a->h, a->dtype, a->tokens, a->inter, 64, STORE);
    w.mh = w.mx;
    return true;
}

bool aligned16(const void *p) { return (uintptr_t)p % 16 == 0; }

bool args_ok(const kb_mlp_args *a)
{
    return a->tokens > 0 && a->hidden > 0 && a->inter > 0 && a->dtype >= 0 && a->dtype <= 2 && a->x && a->G && a->U &&
           a->D && a->y && a->h;
}

// kb_mlp_occupancy_fn: the runtime's answer (ctx: the SM count)
int occupancy(void *ctx, int dtype, int wg, int bn, int cl, int swap)
{
    if (swap) return kb::mlp::swap_ctas(dtype, bn, cl, *(const int *)ctx);
    return kb::mlp::wgmma_clusters(dtype, wg, bn, cl, *(const int *)ctx);
}

// keep_down: a forced down_splitk stays (it runs after fused_mma too); the
// DOWN row's was measured after fused_wgmma only, so a planned one goes
void fallback_to_mma(kb_mlp_plan &p, const kb_mlp_args *a, bool keep_down)
{
    const kb_mlp_plan was = p;
    // the wgmma kernels' rows no longer decide anything, nor the down rows
    // measured after them (DOWN_LT's cublas_cat arm is not a wgmma plan's)
    const unsigned gone = KB_MLP_TILE_ROWS | 1u << KB_MLP_ROW_WARPGROUPS | 1u << KB_MLP_ROW_SWAP |
                          1u << KB_MLP_ROW_SECTOR | 1u << KB_MLP_ROW_DOWN | 1u << KB_MLP_ROW_DOWN_LT |
                          1u << KB_MLP_ROW_DOWN_LT_FAST;
    memset(&p, 0, sizeof p);
    p.variant = KB_MLP_MMA;
    p.vec = a->hidden % 8 == 0;
    p.rows = (was.rows & ~gone) | 1u << KB_MLP_ROW_OCCUPANCY | 1u << KB_MLP_ROW_MMA_VEC;
    if (keep_down) p.down = was.down, p.dsplit = was.dsplit;
}

// down_splitk's launch: D's and h's tensor maps, the kernel's shared memory,
// its partials (64 x 16 floats a block) and its row blocks' counters, zeroed
// (the kernel leaves them at 0). 0, KB_MLP_NA (no tensor map) or a cudaError_t,
// with nothing left allocated.
int down_workspace(kb::mlp::DownSplitK &L, const kb_mlp_args *a, const kb_mlp_plan &p)
{
    L.y = a->y;
    L.M = a->tokens, L.H = a->hidden, L.I = a->inter, L.dtype = a->dtype;
    L.splits = p.dsplit.splits, L.kchunk = p.dsplit.kchunk, L.grid = p.dsplit.grid, L.per_sm = p.dsplit.per_sm;
    // the kernel's last block adds at most KB_MLP_DOWN_MAX_SPLITS partials, more than
    // KB_MLP_DOWN_SPLITS two blocks an SM only (plan.c's search plans no other;
    // checked here once, not on every launch)
    if (L.splits < 1 || L.splits > KB_MLP_DOWN_MAX_SPLITS || (L.splits > KB_MLP_DOWN_SPLITS && L.per_sm != 2))
        return (int)cudaErrorInvalidValue;
    if (!tensor_map(&L.md, a->D, a->dtype, a->hidden, a->inter, 64, LOAD) ||
        !tensor_map(&L.mh, a->h, a->dtype, a->tokens, a->inter, kb::mlp::down_splitk_hrows(a->tokens), LOAD))
        return KB_MLP_NA;
    const size_t rbs = (size_t)(a->hidden + 63) / 64;
    cudaError_t e = (cudaError_t)kb::mlp::down_splitk_setup(a->dtype, a->tokens, p.dsplit.per_sm, p.dsplit.splits);
    if (e == cudaSuccess) e = cudaMalloc(&L.ws, (size_t)p.dsplit.grid * 64 * 16 * sizeof(float));
    if (e == cudaSuccess) e = cudaMalloc(&L.count, rbs * sizeof(unsigned));
    if (e == cudaSuccess) e = cudaMemset(L.count, 0, rbs * sizeof(unsigned));
    if (e == cudaSuccess) e = cudaDeviceSynchronize(); // zeroed before a launch on any stream
    if (e != cudaSuccess) {
        cudaGetLastError();
        cudaFree(L.ws);
        cudaFree(L.count);
        L.ws = nullptr, L.count = nullptr;
    }
    return (int)e;
}

} // namespace

extern "C" int kb_mlp_fused_prepare(const kb_mlp_args *a, const kb_mlp_req *r, const kb_devattr *d, kb_mlp_fused **out,
                                    char *kernel, size_t kernel_len, char *why, size_t why_len)
{
    *out = nullptr;
    if (!args_ok(a)) return (int)cudaErrorInvalidValue;
    int sms = d->sm_count;
    kb_mlp_plan plan;
    if (kb_mlp_plan_make(r, d, occupancy, &sms, &plan, why, why_len)) return KB_MLP_NA;
    if (plan.variant == KB_MLP_WGMMA && plan.swap && !aligned16(a->h)) {
        // the swapped kernel stores h by TMA only: the tile, which can store
        // it from registers, unless swap=on was asked
        if (r->swap == 2) {
            snprintf(why, why_len, "swap=on: h is not 16-byte aligned (the swapped kernel stores h by TMA)");
            return KB_MLP_NA;
        }
        kb_mlp_req off = *r;
        off.swap = 1;
        if (kb_mlp_plan_make(&off, d, occupancy, &sms, &plan, why, why_len)) return KB_MLP_NA;
    }
    const bool forced = kb_mlp_fixed(r);
    kb_mlp_fused *f = new (std::nothrow) kb_mlp_fused();
    if (!f) return (int)cudaErrorMemoryAllocation;
    f->a = *a;
    f->a.sm_count = d->sm_count;
    char note[128] = "";
    if (plan.variant == KB_MLP_WGMMA) {
        // the planner's model of the occupancy against the runtime's: where
        // they differ, the kernel column says so (the runtime's value is used)
        kb_mlp_plan model;
        char w2[160];
        if (kb_mlp_plan_make(r, d, nullptr, nullptr, &model, w2, sizeof w2) == 0 && model.variant == KB_MLP_WGMMA &&
            (model.clusters != plan.clusters || model.bn != plan.bn || model.swap != plan.swap)) {
            int k = snprintf(note, sizeof note, " clusters=%d (model %d", plan.clusters, model.clusters);
            if (model.swap != plan.swap) k += snprintf(note + k, sizeof note - k, ", %s", model.swap ? "swapped" : "the tile");
            if (model.bn != plan.bn) k += snprintf(note + k, sizeof note - k, ", bn %d", model.bn);
            snprintf(note + k, sizeof note - k, ")");
        }
        // TMA: rows of 16-byte multiples (the plan's), bases 16-byte aligned
        const bool store = plan.tma_store && aligned16(a->h);
        if (!aligned16(a->x) || !aligned16(a->G) || !aligned16(a->U) ||
            !make_maps(f->w, a, plan.bm, plan.bn, store, plan.swap != 0)) {
            if (r->want == KB_MLP_WGMMA || forced) {
                delete f;
                snprintf(why, why_len, "%s", aligned16(a->x) && aligned16(a->G) && aligned16(a->U)
                                                 ? "the TMA tensor maps cannot be made (cuTensorMapEncodeTiled)"
                                                 : "x, G or U is not 16-byte aligned (TMA)");
                return KB_MLP_NA;
            }
            fallback_to_mma(plan, a, r->down >= 2);
            note[0] = 0;
        } else {
            plan.tma_store = store;
            kb::mlp::WgmmaLaunch &w = f->w;
            w.h = a->h;
            w.M = a->tokens, w.N = a->inter, w.K = a->hidden, w.dtype = a->dtype;
            w.wg = plan.wg, w.bn = plan.bn, w.cl = plan.cl, w.grid = plan.grid, w.group = plan.group;
            w.tma_store = store ? 1 : 0;
            w.dyn = plan.dyn;
            w.swap = plan.swap;
        }
    }
    if (plan.variant == KB_MLP_CUBLAS_CAT && (!a->GU || !a->gu || (long)2 * a->inter > 0x7fffffffL)) {
        delete f;
        return (int)cudaErrorInvalidValue; /* the caller gave no stacked weights or g/u workspace */
    }
    if (plan.variant == KB_MLP_MMA) plan.vec = plan.vec && aligned16(a->x) && aligned16(a->G) && aligned16(a->U);
    if (plan.down == 1 && !(aligned16(a->h) && aligned16(a->D))) {
        if (r->down == 2) {
            delete f;
            snprintf(why, why_len, "down=splitk: h or D is not 16-byte aligned (TMA)");
            return KB_MLP_NA;
        }
        plan.down = 0, plan.dsplit = {};
    }
    if (plan.down == 1) {
        const int rc = down_workspace(f->dn, a, plan);
        if (rc && r->down == 2) {
            delete f;
            if (rc == KB_MLP_NA) snprintf(why, why_len, "down=splitk: the TMA tensor maps of D and h cannot be made");
            return rc;
        }
        if (rc) plan.down = 0, plan.dsplit = {}; // the planner's choice: cuBLAS instead
    }
    if (plan.down == 2) {
        const int rc = kb_linear_lt_prepare(a->h, a->D, a->y, a->tokens, a->hidden, a->inter, a->dtype,
                                            plan.dsplit.splits, &f->lt);
        if (rc && r->down == 3) {
            delete f;
            if (rc == KB_MLP_NA)
                snprintf(why, why_len, "down=cublaslt: no cuBLASLt algorithm takes split-K %d here", plan.dsplit.splits);
            return rc;
        }
        if (rc) { // the planner's choice: cuBLAS instead
            cudaGetLastError();
            plan.down = 0, plan.dsplit = {};
            plan.rows &= ~(1u << KB_MLP_ROW_DOWN_LT);
        }
    }
    f->plan = plan;
    char what[128];
    kb_mlp_plan_describe(&plan, what, sizeof what);
    char down[40]; // the plan's down GEMM, its split as planned
    if (plan.down == 2) snprintf(down, sizeof down, "cublaslt split-k %d down", plan.dsplit.splits);
    else snprintf(down, sizeof down, "%s", plan.down ? "splitk down" : "cublas down");
    if (plan.variant == KB_MLP_CUBLAS_CAT && !plan.down) /* cublas_cat's whole path, its down GEMM included */
        snprintf(kernel, kernel_len, "%s", what);
    else
        snprintf(kernel, kernel_len, "%s%s + %s%s", what, note, down, a->dtype == 0 && a->tf32 ? " tf32" : "");
    *out = f;
    return 0;
}

extern "C" int kb_mlp_fused_launch(const kb_mlp_fused *f, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    const kb_mlp_args *a = &f->a;
    int rc;
    switch (f->plan.variant) {
    case KB_MLP_WGMMA: rc = f->w.swap ? kb::mlp::swap_launch(f->w, s) : kb::mlp::wgmma_launch(f->w, s); break;
    case KB_MLP_MMA: rc = kb::mlp::gate_up_mma(a, f->plan.vec != 0, s); break;
    case KB_MLP_F32: rc = kb::mlp::gate_up_f32(a, s); break;
    case KB_MLP_CUBLAS_CAT: rc = kb_mlp_cublas_cat_h(a, s); break;
    default: return (int)cudaErrorInvalidValue;
    }
    if (rc) return rc;
    if (f->plan.down == 1) return kb::mlp::down_splitk(f->dn, s);
    if (f->plan.down == 2) return kb_linear_lt(f->lt, a->h, a->D, a->y, s);
    return kb_linear_cublas(a->h, a->D, a->y, a->tokens, a->hidden, a->inter, a->dtype, a->tf32, s);
}

extern "C" void kb_mlp_fused_release(kb_mlp_fused *f)
{
    if (!f) return;
    cudaFree(f->dn.ws);
    cudaFree(f->dn.count);
    kb_linear_lt_release(f->lt);
    delete f;
}
