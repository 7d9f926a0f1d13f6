/* The SwiGLU MLP of the LLaMA decoder layer: the op descriptor.
 *
 *   y = (silu(x G^T) * (x U^T)) D^T
 *
 * x [tokens, hidden]; G, U [inter, hidden] and D [hidden, inter] stored as
 * nn.Linear stores them (row-major, out x in); no biases. Forward only.
 *
 * The implementations (kernels/mlp/, DESIGN.md there): naive, cublas and
 * cublas_cat store g and u; fused_wgmma (Hopper), fused_mma (sm_80+) and
 * fused, the planner's choice among them and the fp32 CUDA-core kernel
 * (kernels/mlp/plan.c), compute h = silu(g) * u in one kernel from G and U
 * where they are (the Hopper kernel loads a G tile and the matching U tile
 * into one stage, so no interleaved copy is needed) and write only h; the
 * tolerance below already covers a kernel that keeps g and u in fp32.
 * bn, cluster, warpgroups, sched and swap are the wgmma kernel's tunables.
 */
#include "ops.h"
#include "../core/errors.h"
#include "../core/op.h"
#include "../core/params.h"
#include "../core/tensors.h"
#include "../../include/kb_devattr.h"
#include "../../include/kb_dtype.h"
#include "../../include/kbench_plugin.h"
#include "../../kernels/kernels.h"
#include "../../kernels/mlp/mlp.h"
#include "../../kernels/mlp/plan.h"
#include "../../refs/refs.h"

#include <cuda_runtime_api.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const kb_param params[] = {
    {"dtype", KB_P_ENUM, "bf16", 0, 0, "fp32,fp16,bf16", "element type of x, the weights, g, u, h and y (GEMMs accumulate in fp32)"},
    {"tf32", KB_P_ENUM, "off", 0, 0, "off,on", "dtype fp32 only: on lets the cuBLAS implementations use TF32 tensor cores"},
    {"tokens", KB_P_INT, "2048", 1, 1 << 20, NULL, "rows of x (batch x sequence; 1..64 is decode)"},
    {"hidden", KB_P_INT, "1024", 1, 65536, NULL, "model width: x's and y's row length"},
    {"inter", KB_P_INT, "11008", 1, 1 << 18, NULL, "intermediate width: rows of G and U, columns of D"},
    {"bn", KB_P_ENUM, "auto", 0, 0, "auto,64,80,96,104,112,128",
     "fused_wgmma's tile width: columns of h a tile, the wgmma m64 n(2 bn) k16 (64, 96, 112, 128); with swap=on the "
     "tokens a tile, the wgmma m64 n(bn) k16 (80, 96, 104, 112, 128); auto: the wave model's", .tunable = 1},
    {"cluster", KB_P_ENUM, "auto", 0, 0, "auto,1,2",
     "fused_wgmma's cluster size (2: the CTAs of two m-blocks multicast G's and U's tiles; with swap=on, of two "
     "token tiles)", .tunable = 1},
    {"warpgroups", KB_P_ENUM, "auto", 0, 0, "auto,1,2",
     "fused_wgmma's consumer warpgroups (64 rows of the tile each; 1 runs clusters of 1)", .tunable = 1},
    {"sched", KB_P_ENUM, "auto", 0, 0, "auto,static,dynamic",
     "fused_wgmma's tile scheduler: static (tile t on CTA t mod the grid) or dynamic (tiles in order from a global "
     "counter as CTAs free up; clusters of 1); auto: dynamic where the planner runs clusters of 1 with two warpgroups, else static",
     .tunable = 1},
    {"down", KB_P_ENUM, "auto", 0, 0, "auto,cublas,splitk,cublaslt",
     "the fused implementations' down GEMM y = h D^T: cublas; splitk (Hopper, 1-16 tokens, bf16/fp16, inter % 8 "
     "== 0: one TMA + wgmma kernel, 64 rows of D a block, K split across blocks and added in order, D loaded while "
     "the gate/up kernel ends); or cublaslt (bf16/fp16: cuBLASLt's heuristic's first algorithm with K split in two, "
     "else one that takes the split, fp32 partials reduced out of place); auto: the planner's", .tunable = 1},
    {"swap", KB_P_ENUM, "auto", 0, 0, "auto,off,on",
     "fused_wgmma's operands: off, x's 128 rows are wgmma's A and the weights its N; on (swap-AB), G's and U's "
     "128 rows are A and bn tokens its N, so a tile wastes fewer than bn rows past the last token (two warpgroups, "
     "clusters of 1, or 2 with cluster=2, static, inter % 8 == 0); auto: the planner's", .tunable = 1},
};
enum { P_DTYPE, P_TF32, P_TOKENS, P_HIDDEN, P_INTER, P_BN, P_CLUSTER, P_WARPGROUPS, P_SCHED, P_DOWN, P_SWAP, NPARAMS };

#define I(c, k) ((long)(c)->v[k].num)

static int validate(const kb_case *c, char *err, size_t n)
{
    if (I(c, P_TF32) && kb_case_dtype(c) != KB_FP32) {
        snprintf(err, n, "tf32 applies to dtype fp32 only (fp16 and bf16 GEMMs use tensor cores anyway)");
        return -1;
    }
    double T = (double)I(c, P_TOKENS), H = (double)I(c, P_HIDDEN), In = (double)I(c, P_INTER);
    /* the largest tensors: x and y, the weights, the [tokens, 2*inter] workspace, the stacked weights */
    double sizes[] = {T * H, 2 * In * H, 2 * T * In};
    const char *what[] = {"x", "the stacked [G; U]", "the [tokens, 2*inter] workspace"};
    for (int i = 0; i < 3; i++)
        if (sizes[i] > 2147483647.0) {
            snprintf(err, n, "%.0f elements in %s; kbench mlp supports up to 2^31-1 per tensor", sizes[i], what[i]);
            return -1;
        }
    return 0;
}

/* x, G, U and D read once, y written once */
static double bytes(const kb_case *c)
{
    double T = (double)I(c, P_TOKENS), H = (double)I(c, P_HIDDEN), In = (double)I(c, P_INTER);
    return (2.0 * T * H + 3.0 * H * In) * (double)kb_dtype_size(kb_case_dtype(c));
}

static double bytes_written(const kb_case *c)
{
    return (double)I(c, P_TOKENS) * (double)I(c, P_HIDDEN) * (double)kb_dtype_size(kb_case_dtype(c));
}

/* cuBLAS alone on the MLP's GEMMs, as the cublas_cat implementation runs
 * them: [x] x [G; U]^T (tokens x 2 inter x hidden), then h x D^T (tokens x
 * hidden x inter) */
static int gemm_shapes(const kb_case *c, int (*mnk)[3], int max)
{
    if (max < 2) return 0;
    int T = (int)I(c, P_TOKENS), H = (int)I(c, P_HIDDEN), In = (int)I(c, P_INTER);
    mnk[0][0] = T, mnk[0][1] = 2 * In, mnk[0][2] = H;
    mnk[1][0] = T, mnk[1][1] = H, mnk[1][2] = In;
    return 2;
}

/* three GEMMs of tokens x hidden x inter multiply-adds (the silu-multiply's
 * few FLOPs per h element are left out, as everyone quotes it) */
static double flops(const kb_case *c)
{
    return 6.0 * (double)I(c, P_TOKENS) * (double)I(c, P_HIDDEN) * (double)I(c, P_INTER);
}

/* The reference's core-seconds (kb_op.ref_cost): its three GEMMs over the
 * sampled rows, each weight row turned into doubles once. Fitted on the 4 x
 * H200 host's cores over the grid's 96 cases (refs/mlp.c's two-double
 * vectors: 8.8e-10 and 1.8e-8, median error 9%), times 0.83 for the four-
 * double vectors (2.45-3.07 s against 2.40-2.60 s, 64 rows of 8192 x 28672
 * four at once). */
static double ref_cost(const kb_case *c)
{
    const long T = I(c, P_TOKENS), H = I(c, P_HIDDEN), In = I(c, P_INTER);
    return 3.0 * (double)H * (double)In * (7.3e-10 * (double)ref_mlp_sample_count(T, H, In) + 1.5e-8);
}

#define CUBLAS_WORKSPACE ((size_t)32 << 20) /* kernels/gemm.cu's, allocated once */

static size_t device_bytes(const kb_case *c)
{
    size_t T = (size_t)I(c, P_TOKENS), H = (size_t)I(c, P_HIDDEN), In = (size_t)I(c, P_INTER);
    size_t es = kb_dtype_size(kb_case_dtype(c));
    /* x, y; G, U, D; stacked [G; U]; g/u workspace; h */
    return (2 * T * H + 3 * H * In + 2 * H * In + 2 * T * In + T * In) * es + CUBLAS_WORKSPACE;
}

typedef struct {
    kb_mlp_args args;
    void *GU, *gu, *h;
} mlp_priv;

/* Inputs O(1) whatever the shape: x in [-1, 1) (variance 1/3); weights in
 * +-3/sqrt(fan_in) (variance 3/fan_in), so g and u have variance about 1,
 * as after a norm layer in a trained model, and y too. Input i's fill: */
static void input_fill(const kb_case *c, int i, uint64_t *seed, double *lo, double *hi)
{
    static const uint64_t salt[4] = {0, 0x6a09e667f3bcc908ull, 0xbb67ae8584caa73bull, 0x3c6ef372fe94f82bull};
    const double a = i == 0 ? 1.0 : 3.0 / sqrt((double)(i == 3 ? I(c, P_INTER) : I(c, P_HIDDEN)));
    *seed = c->seed ^ salt[i];
    *lo = -a;
    *hi = a;
}

/* The inputs are filled on the device (the weights are up to 1.4 GB: filled
 * on the host and uploaded they took 0.5 s a case, half of it again with a
 * second GPU's worker on the host); the reference fills the host's copies,
 * the same bits, on its own thread. */
static int setup(const kb_case *c, kb_state *st)
{
    kb_dtype dt = kb_case_dtype(c);
    size_t es = kb_dtype_size(dt);
    long T = I(c, P_TOKENS), H = I(c, P_HIDDEN), In = I(c, P_INTER);
    mlp_priv *p = calloc(1, sizeof *p);
    st->priv = p;
    st->nin = 4;
    st->nout = 1;
    size_t nx = (size_t)T * (size_t)H, nw = (size_t)In * (size_t)H;
    kb_buf *x = &st->in[0], *G = &st->in[1], *U = &st->in[2], *D = &st->in[3], *y = &st->out[0];
    *x = (kb_buf){"x", dt, nx, NULL, malloc(nx * es + 1), NULL};
    *G = (kb_buf){"G", dt, nw, NULL, malloc(nw * es + 1), NULL};
    *U = (kb_buf){"U", dt, nw, NULL, malloc(nw * es + 1), NULL};
    *D = (kb_buf){"D", dt, nw, NULL, malloc(nw * es + 1), NULL};
    *y = (kb_buf){"y", dt, nx, NULL, NULL, NULL};
    y->row_len = (size_t)H;
    for (int i = 0; i < 4; i++) {
        kb_buf *b = &st->in[i];
        uint64_t seed;
        double lo, hi;
        input_fill(c, i, &seed, &lo, &hi);
        KB_CK(cudaMalloc(&b->dev, b->n * es + 16));
        KB_CK(kb_fill_uniform_dev(b->dev, b->n, (int)dt, seed, lo, hi));
    }
    KB_CK(cudaMalloc(&y->dev, nx * es + 16));
    /* cublas_cat's stacked weights: G's rows, then U's */
    KB_CK(cudaMalloc(&p->GU, 2 * nw * es + 16));
    KB_CK(cudaMemcpy(p->GU, G->dev, nw * es, cudaMemcpyDeviceToDevice));
    KB_CK(cudaMemcpy((char *)p->GU + nw * es, U->dev, nw * es, cudaMemcpyDeviceToDevice));
    KB_CK(cudaMalloc(&p->gu, 2 * (size_t)T * (size_t)In * es + 16));
    KB_CK(cudaMalloc(&p->h, (size_t)T * (size_t)In * es + 16));
    st->scratch[0].dev = p->gu, st->scratch[0].bytes = 2 * (size_t)T * (size_t)In * es; /* NaN in fp16 and bf16, */
    st->scratch[1].dev = p->h, st->scratch[1].bytes = (size_t)T * (size_t)In * es;      /* and in fp32 */
    int rc = kb_cublas_init(); /* the handle and its workspace, once per process; sets kb_last_error */
    if (rc) return rc;
    p->args = (kb_mlp_args){x->dev, G->dev, U->dev, D->dev, p->GU, y->dev, p->gu, p->h, (int)dt, (int)I(c, P_TF32),
                            (int)T, (int)H, (int)In};
    return 0;
}

/* The reference at large shapes computes a seeded sample of the tokens'
 * rows (ref_mlp_sample_count: at least 64, the first and the last among
 * them), and the harness compares only those. */
static void reference(const kb_case *c, kb_state *st)
{
    long T = I(c, P_TOKENS), H = I(c, P_HIDDEN), In = I(c, P_INTER);
    kb_buf *x = &st->in[0], *y = &st->out[0];
    for (int i = 0; i < 4; i++) { /* the host's copies of what setup filled on the device */
        uint64_t seed;
        double lo, hi;
        input_fill(c, i, &seed, &lo, &hi);
        kb_fill_uniform(st->in[i].host, st->in[i].n, st->in[i].dtype, seed, lo, hi);
    }
    long want = ref_mlp_sample_count(T, H, In), R = T;
    if (want < T) {
        y->rows = malloc((size_t)want * sizeof *y->rows);
        R = y->nrows = kb_sample_rows(T, want, c->seed ^ 0xa54ff53a5f1d36f1ull, y->rows);
    }
    double *xs = malloc((size_t)(R * H + 1) * sizeof *xs);
    if (y->rows) {
#pragma omp parallel for schedule(static)
        for (long r = 0; r < R; r++)
            for (long k = 0; k < H; k++) xs[r * H + k] = kb_load(x->host, (size_t)(y->rows[r] * H + k), x->dtype);
    } else {
        kb_load_all(x->host, x->n, x->dtype, xs);
    }
    y->ref = malloc((size_t)(R * H + 1) * sizeof *y->ref);
    ref_mlp_args a = {R, H, In, (int)kb_case_dtype(c)};
    /* the weights as setup stored them: no double copy of them (three 1.9 GB at 8192 x 28672) */
    y->scale = ref_mlp_typed(&a, xs, st->in[1].host, st->in[2].host, st->in[3].host, y->ref); /* where g or u cancel: kb_compare divides by it */
    free(xs);
}

static void teardown(const kb_case *c, kb_state *st)
{
    (void)c;
    mlp_priv *p = st->priv;
    if (!p) return;
    cudaFree(p->GU);
    cudaFree(p->gu);
    cudaFree(p->h);
    free(p);
    st->priv = NULL;
}

/* Tolerances. The reference rounds g, u and h to the dtype where the naive
 * and cuBLAS paths store them; what remains between a correct GPU result
 * and it (u: the unit roundoff, 2^-24 fp32, 2^-11 fp16, 2^-8 bf16):
 *
 * - y rounded to the dtype (the reference's y is exact): <= u relative per
 *   element, about u/2.5 in rms.
 * - g and u: the GPU's fp32 sums differ from the exact ones, so a stored
 *   value can round to the neighbouring step (2u) now and then; a fused
 *   kernel keeps g and u in fp32 and differs from the rounded ones by up to
 *   u each, every time. Through h = silu(g) u (|silu'| <= 1.1) each h is off
 *   by up to ~2.2u relative, and h's own rounding may then flip by 2u. In y,
 *   a sum of inter such errors with random signs, that is about u in rms
 *   relative to y's rms, and a few times that at the worst of many elements.
 * - fp32 accumulation over K = hidden (g, u) and K = inter (y): a running
 *   sum's rounding errors add up like a random walk, ~0.3 sqrt(K) 2^-24
 *   relative; they scale with the shape and matter only for fp32.
 * - tf32 (fp32 with tf32 on): the tensor cores read 10 of the 23 mantissa
 *   bits (t = 2^-11). If truncated rather than rounded, each operand shrinks
 *   by ~0.7t on average: products by ~1.4t, g and u by 1.4t, h by ~3t, y by
 *   ~4.5t, all the same way, plus ~t of random error.
 *
 * - cancellation: all of the above is relative to y's size when g and u are
 *   about as large as the products they sum. Where a few products cancel (at
 *   hidden 5, u = x.U was once 170 times smaller than they), the sums err
 *   relative to the products, and with inter 1 nothing averages it out: the
 *   reference's conditioned scale (ref_mlp, kb_buf.scale) carries that into
 *   y, and rel_l2 divides by max(||y||, scale). At the larger check shapes the
 *   scale is within 1-7% of ||y||, so it loosens nothing there
 *   (tests/test_mlp.c: test_tolerance_cancelling).
 *
 * rel_l2  = 3u + (sqrt(hidden) + sqrt(inter)) 2^-24 [+ 8t]
 * max_abs = 6u + 4 (sqrt(hidden) + sqrt(inter)) 2^-24 [+ 16t], per element,
 *           relative to max(1, max|ref|) (y's rms is about 1)
 * bf16: 1.2e-2 / 2.3e-2; fp16: 1.5e-3 / 2.9e-3; fp32 at 4096 x 11008:
 * 1.0e-5 / 4.1e-5; tf32: 3.9e-3 / 7.8e-3.
 *
 * A CPU emulation (fp32 fmaf running sums, expf, the dtype roundings) of
 * the rounded (cuBLAS-like) and the unrounded (fused-like) g and u, at the
 * check shapes and 64 x 1024 x 1100, gave as a share of these: bf16 and
 * fp16 rel 7-15% rounded, 11-40% fused, max 2-22%; fp32 rel 21-27%, max
 * 3-9%; tf32 truncated rel 51-60%, max 4-32% (rounded: under 20%). Tighter
 * would fail correct kernels at other seeds and shapes. */
static kb_tol tolerance(const kb_case *c, int out)
{
    (void)out;
    kb_dtype dt = kb_case_dtype(c);
    double u = dt == KB_BF16 ? 0x1p-8 : dt == KB_FP16 ? 0x1p-11 : 0x1p-24;
    double acc = (sqrt((double)I(c, P_HIDDEN)) + sqrt((double)I(c, P_INTER))) * 0x1p-24;
    double t = dt == KB_FP32 && I(c, P_TF32) ? 0x1p-11 : 0;
    return (kb_tol){3 * u + acc + 8 * t, 6 * u + 4 * acc + 16 * t};
}

static kb_gemm_key gemm_ceiling(const kb_case *c)
{
    switch (kb_case_dtype(c)) {
    case KB_FP16: return KB_GEMM_FP16;
    case KB_BF16: return KB_GEMM_BF16;
    default: return I(c, P_TF32) ? KB_GEMM_TF32 : KB_GEMM_FP32;
    }
}

/* naive, cublas, cublas_cat: their own copy of the case's arguments, with
 * the device's SM count (the silu(g) * u kernel's grid) */
static int prepare_args(const kb_case *c, kb_state *st, const kb_devattr *d, kb_impl_run *r, const char *what,
                        int cublas)
{
    kb_mlp_args *a = malloc(sizeof *a);
    if (!a) return (int)cudaErrorMemoryAllocation;
    *a = ((mlp_priv *)st->priv)->args;
    a->sm_count = d->sm_count;
    r->priv = a;
    snprintf(r->kernel, sizeof r->kernel, "%s%s", what,
             cublas && kb_case_dtype(c) == KB_FP32 && I(c, P_TF32) ? " tf32" : "");
    return 0;
}

static int prepare_naive(const kb_case *c, kb_state *st, const kb_devattr *d, kb_impl_run *r)
{
    return prepare_args(c, st, d, r, "naive 16x16 tiles", 0); /* CUDA cores: tf32 does not apply */
}
static int prepare_cublas(const kb_case *c, kb_state *st, const kb_devattr *d, kb_impl_run *r)
{
    return prepare_args(c, st, d, r, "cublas", 1);
}
static int prepare_cublas_cat(const kb_case *c, kb_state *st, const kb_devattr *d, kb_impl_run *r)
{
    return prepare_args(c, st, d, r, "cublas_cat", 1);
}

static void release_args(const kb_case *c, kb_state *st, kb_impl_run *r)
{
    (void)c;
    (void)st;
    free(r->priv);
    r->priv = NULL;
}

static int launch_naive(const kb_case *c, kb_state *st, kb_impl_run *r, void *stream)
{
    (void)c;
    (void)st;
    return kb_mlp_naive(r->priv, stream);
}

static int launch_cublas(const kb_case *c, kb_state *st, kb_impl_run *r, void *stream)
{
    (void)c;
    (void)st;
    return kb_mlp_cublas(r->priv, stream);
}

static int launch_cublas_cat(const kb_case *c, kb_state *st, kb_impl_run *r, void *stream)
{
    (void)c;
    (void)st;
    return kb_mlp_cublas_cat(r->priv, stream);
}

/* ---- the fused implementations: kernels/mlp/plan.c decides ---- */

static kb_mlp_req fused_req(const kb_case *c, kb_mlp_variant want)
{
    /* bn, cluster and warpgroups: their choices' text is the value (0: auto); sched, down and swap: the
     * choice's index is kb_mlp_req's code (0: auto) */
    kb_mlp_req r = {(int)I(c, P_TOKENS), (int)I(c, P_HIDDEN), (int)I(c, P_INTER), (int)kb_case_dtype(c), want,
                    kb_case_choice_num(c, P_BN, 0), kb_case_choice_num(c, P_CLUSTER, 0),
                    kb_case_choice_num(c, P_WARPGROUPS, 0), (int)I(c, P_SCHED), (int)I(c, P_DOWN), (int)I(c, P_SWAP)};
    return r;
}

static int fused_supports(const kb_case *c, const kb_devattr *d, kb_mlp_variant want, char *why, size_t n)
{
    kb_mlp_req r = fused_req(c, want);
    kb_mlp_plan p;
    return kb_mlp_plan_make(&r, d, NULL, NULL, &p, why, n); /* the occupancy's model: no GPU here */
}

static int supports_wgmma(const kb_case *c, const kb_devattr *d, char *why, size_t n)
{
    return fused_supports(c, d, KB_MLP_WGMMA, why, n);
}
static int supports_mma(const kb_case *c, const kb_devattr *d, char *why, size_t n)
{
    return fused_supports(c, d, KB_MLP_MMA, why, n);
}
static int supports_fused(const kb_case *c, const kb_devattr *d, char *why, size_t n)
{
    return fused_supports(c, d, KB_MLP_AUTO, why, n);
}

static int fused_prepare(const kb_case *c, kb_state *st, const kb_devattr *d, kb_impl_run *r, kb_mlp_variant want)
{
    kb_mlp_req req = fused_req(c, want);
    kb_mlp_fused *f = NULL;
    int rc = kb_mlp_fused_prepare(&((mlp_priv *)st->priv)->args, &req, d, &f, r->kernel, sizeof r->kernel, r->why,
                                  sizeof r->why);
    r->priv = f;
    return rc == KB_MLP_NA ? KB_NA : rc;
}

static int prepare_wgmma(const kb_case *c, kb_state *st, const kb_devattr *d, kb_impl_run *r)
{
    return fused_prepare(c, st, d, r, KB_MLP_WGMMA);
}
static int prepare_mma(const kb_case *c, kb_state *st, const kb_devattr *d, kb_impl_run *r)
{
    return fused_prepare(c, st, d, r, KB_MLP_MMA);
}
static int prepare_fused(const kb_case *c, kb_state *st, const kb_devattr *d, kb_impl_run *r)
{
    return fused_prepare(c, st, d, r, KB_MLP_AUTO);
}

static int launch_fused(const kb_case *c, kb_state *st, kb_impl_run *r, void *stream)
{
    (void)c;
    (void)st;
    return kb_mlp_fused_launch(r->priv, stream);
}

static void release_fused(const kb_case *c, kb_state *st, kb_impl_run *r)
{
    (void)c;
    (void)st;
    kb_mlp_fused_release(r->priv);
    r->priv = NULL;
}

#define FUSED_TUNABLES "bn,cluster,warpgroups,sched,down,swap"

static const kb_impl impls[] = {
    {.name = "naive", .prepare = prepare_naive, .launch = launch_naive, .release = release_args,
     .help = "a textbook 16x16 shared-memory tiled GEMM (CUDA cores) three times, then silu(g)*u"},
    {.name = "cublas", .prepare = prepare_cublas, .launch = launch_cublas, .release = release_args,
     .help = "PyTorch eager: three cuBLAS GEMMs (nn.Linear layout) and an elementwise silu(g)*u"},
    {.name = "cublas_cat", .prepare = prepare_cublas_cat, .launch = launch_cublas_cat, .release = release_args,
     .help = "one cuBLAS GEMM over the stacked [G; U], silu(g)*u over both halves, the down GEMM"},
    {.name = "fused_wgmma", .supports = supports_wgmma, .prepare = prepare_wgmma, .launch = launch_fused,
     .release = release_fused, .tunables = FUSED_TUNABLES,
     .help = "Hopper: silu(x G^T)*(x U^T) in one persistent TMA + wgmma kernel (warp-specialised, clusters; swapped, the weights as the 128-row operand, at 129-1024 tokens where the planner says), then the down GEMM (cuBLAS, down_splitk at decode, cuBLASLt's split-K 2 where the planner says)"},
    {.name = "fused_mma", .supports = supports_mma, .prepare = prepare_mma, .launch = launch_fused,
     .release = release_fused, .tunables = "down",
     .help = "sm_80+: silu(x G^T)*(x U^T) in one mma.sync + cp.async kernel, then the down GEMM (bf16/fp16)"},
    {.name = "fused", .supports = supports_fused, .prepare = prepare_fused, .launch = launch_fused,
     .release = release_fused, .tunables = FUSED_TUNABLES,
     .help = "the planner's fused gate/up: fused_wgmma on Hopper, else fused_mma; fp32 on CUDA cores; then cuBLAS down, down_splitk at decode on Hopper, or cuBLASLt's split-K 2 where the planner says; "
             "cublas_cat's path in the boxes of tokens x hidden x inter where cuBLAS was measured ahead (mid-size token counts "
             "from hidden 4096, tensor-parallel shards at 65-128 tokens; kernels/mlp/plan.c's CUBLAS_MID row), and on rows 16 "
             "bytes past a 32-byte sector (hidden % 16 == 8) at some token counts (the SECTOR row; SECTOR_FAST on devices "
             "of 4 TB/s or more), and on devices of 4 TB/s or more at 385-432 tokens where cuBLAS was measured ahead "
             "of the swapped kernel (CUBLAS_MID_FAST); the kernel column says so"},
};

/* ---- the tensors external implementations (plugins) see ----------------
 * The op's inputs and its output as setup makes them: not the stacked [G; U]
 * copy nor the g/u and h workspaces of the built-in implementations (a
 * plugin allocates what it needs in prepare). */
static const kb_tensor_decl tensors[] = {
    {"x", 0, NULL, "[tokens, hidden]", "the activations, one row a token"},
    {"G", 0, NULL, "[inter, hidden]", "the gate projection as nn.Linear stores it (out x in): g = x G^T [tokens, inter]"},
    {"U", 0, NULL, "[inter, hidden]", "the up projection (out x in): u = x U^T [tokens, inter]"},
    {"D", 0, NULL, "[hidden, inter]", "the down projection (out x in): y = h D^T"},
    {"y", 1, NULL, "[tokens, hidden]",
     "y = (silu(g) * u) D^T, silu(a) = a / (1 + exp(-a)), h = silu(g) * u [tokens, inter]; no biases. GEMMs "
     "accumulate in fp32 (dtype fp32 with tf32=on: TF32 tensor cores allowed); the reference rounds g, u and h to "
     "the dtype as kbench's kernels store them, and a kernel that keeps g and u in fp32 is within the tolerance; "
     "y rounded to the dtype. Large cases verify a sample of y's "
     "rows, but every row must be written"},
};

static int tensor_shape(const kb_case *c, const char *name, int64_t *d)
{
    long T = I(c, P_TOKENS), H = I(c, P_HIDDEN), In = I(c, P_INTER);
    if (!strcmp(name, "x") || !strcmp(name, "y")) d[0] = T, d[1] = H;
    else if (!strcmp(name, "G") || !strcmp(name, "U")) d[0] = In, d[1] = H;
    else if (!strcmp(name, "D")) d[0] = H, d[1] = In;
    else return 0;
    return 2;
}

static int plugin_tensors(const kb_case *c, const kb_state *st, kbp_tensor *in, int *nin, kbp_tensor *out, int *nout)
{
    if (kb_plugin_tensors_from_state(c, st, tensor_shape, in, nin, out, nout)) return -1;
    return kb_plugin_tensors_finish(c, in, nin, out, nout);
}

/* small and odd shapes, sizes that are no multiple of any tile; tf32 only with fp32 */
static const char *const checks[] = {
    "{\"dtype\": [\"fp16\", \"bf16\"], \"tf32\": \"off\", \"tokens\": 1, \"hidden\": 64, \"inter\": 128}",
    "{\"dtype\": \"fp32\", \"tf32\": [\"off\", \"on\"], \"tokens\": 1, \"hidden\": 64, \"inter\": 128}",
    "{\"dtype\": [\"fp16\", \"bf16\"], \"tf32\": \"off\", \"tokens\": 31, \"hidden\": 520, \"inter\": 1400}",
    "{\"dtype\": \"fp32\", \"tf32\": [\"off\", \"on\"], \"tokens\": 31, \"hidden\": 520, \"inter\": 1400}",
    "{\"dtype\": [\"fp16\", \"bf16\"], \"tf32\": \"off\", \"tokens\": 130, \"hidden\": 257, \"inter\": 513}",
    "{\"dtype\": \"fp32\", \"tf32\": [\"off\", \"on\"], \"tokens\": 130, \"hidden\": 257, \"inter\": 513}",
    "{\"dtype\": [\"fp32\", \"fp16\", \"bf16\"], \"tf32\": \"off\", \"tokens\": [1, 3], \"hidden\": [1, 5], \"inter\": [1, 7]}",
    /* fused on Hopper: two consumer warpgroups (tokens > 64), clusters of 2
     * (an even number of 128-row blocks: 200) and not (300), each with the
     * last row block, column tile (200 = 128 + 72) and k block (72 = 64 + 8)
     * cut short; planned (the SWAP row's kernel there) and the tile (swap off) */
    "{\"dtype\": [\"fp16\", \"bf16\"], \"tf32\": \"off\", \"tokens\": [200, 300], \"hidden\": 72, \"inter\": 200, "
    "\"swap\": [\"auto\", \"off\"]}",
    /* ... and CTAs that take two tiles or more (the tile at BN 96: 84 tiles
     * for 66 clusters of 2 at 512 tokens, 210 for 132 CTAs at 640; the swapped
     * kernel at bn 80: 256 tiles at 640), the last n-block and k-block cut
     * short */
    "{\"dtype\": [\"fp16\", \"bf16\"], \"tf32\": \"off\", \"tokens\": [512, 640], \"hidden\": 72, \"inter\": 4000, "
    "\"swap\": \"off\"}",
    "{\"dtype\": [\"fp16\", \"bf16\"], \"tf32\": \"off\", \"tokens\": 640, \"hidden\": 72, \"inter\": 4000, \"bn\": 80, "
    "\"swap\": \"on\"}",
    /* ... whose h rows are not 16-byte multiples (inter % 8 != 0: no TMA
     * store, the threads store h, pairs where inter is even), with one
     * consumer warpgroup (40 tokens) and two */
    "{\"dtype\": [\"fp16\", \"bf16\"], \"tf32\": \"off\", \"tokens\": [40, 200], \"hidden\": 72, \"inter\": [1003, 1004]}",
    /* fused's CUBLAS_MID row (cublas_cat's path at hidden >= 4096 and 129
     * tokens), and the wgmma tile over 64 k-blocks with a short last m-block
     * (300 x 16: one n-block, where the SWAP row keeps the tile) */
    "{\"dtype\": [\"fp16\", \"bf16\"], \"tf32\": \"off\", \"tokens\": [129, 300], \"hidden\": 4096, \"inter\": 16}",
    /* fused_wgmma's and fused's tunables forced (n/a off Hopper and for the
     * other implementations): every two-warpgroup tile width in clusters of
     * 1 and 2, over an even (200) and an odd (300: the last cluster's second
     * CTA wholly past the last token) number of 128-row m-blocks, with TMA
     * stores of h (inter 200) and register stores (1004) */
    "{\"dtype\": [\"fp16\", \"bf16\"], \"tf32\": \"off\", \"tokens\": [200, 300], \"hidden\": 72, \"inter\": [200, 1004], "
    "\"bn\": [64, 96, 112, 128], \"cluster\": [1, 2], \"warpgroups\": 2}",
    /* ... and fewer tokens than the tile's 128 rows (x's box the tokens
     * rounded up to 8, the A tile's other rows stale; in clusters of 2 the
     * second CTA's box wholly past the last token), over more k-blocks than
     * BN 128's 4 stages (hidden 520), and with register stores of h (1004) */
    "{\"dtype\": [\"fp16\", \"bf16\"], \"tf32\": \"off\", \"tokens\": [5, 72], \"hidden\": 520, \"inter\": 200, "
    "\"bn\": [64, 128], \"cluster\": [1, 2], \"warpgroups\": 2}",
    "{\"dtype\": [\"fp16\", \"bf16\"], \"tf32\": \"off\", \"tokens\": 72, \"hidden\": 72, \"inter\": 1004, "
    "\"bn\": 64, \"cluster\": [1, 2], \"warpgroups\": 2}",
    /* ... and one warpgroup's widths, at decode (40) and over 4 m-blocks of 64 rows */
    "{\"dtype\": [\"fp16\", \"bf16\"], \"tf32\": \"off\", \"tokens\": [40, 200], \"hidden\": 72, \"inter\": [200, 1003], "
    "\"bn\": [64, 96, 112, 128], \"cluster\": 1, \"warpgroups\": 1}",
    /* the swapped kernel forced (swap=on): every token tile, over 1 token,
     * a tile and one more (105), three tiles the last short (300), columns of
     * h cut short (inter 200 and 1000: 128-column tiles), K of two k-blocks
     * the last short (hidden 72) and of three (136); inter % 8 != 0 is n/a */
    "{\"dtype\": [\"fp16\", \"bf16\"], \"tf32\": \"off\", \"tokens\": [1, 105, 300], \"hidden\": 72, "
    "\"inter\": [200, 1000], \"bn\": [80, 96, 104, 112, 128], \"swap\": \"on\"}",
    "{\"dtype\": [\"fp16\", \"bf16\"], \"tf32\": \"off\", \"tokens\": [17, 130], \"hidden\": 136, "
    "\"inter\": [200, 1003], \"swap\": \"on\"}",
    /* ... and over more k-blocks than its ring has stages (hidden 520: 9
     * through 5 stages at bn 80, 4 at 128), the stages reused and the phase
     * turned within a tile */
    "{\"dtype\": [\"fp16\", \"bf16\"], \"tf32\": \"off\", \"tokens\": 105, \"hidden\": 520, \"inter\": 200, "
    "\"bn\": [80, 128], \"swap\": \"on\"}",
    /* ... in clusters of 2 (the weights multicast to two token tiles): one
     * token (the peer's tile wholly past it), two tiles (105 at bn 80), three
     * (300 at 128: the last cluster's second CTA past the last token), and
     * over more k-blocks than stages (520) */
    "{\"dtype\": [\"fp16\", \"bf16\"], \"tf32\": \"off\", \"tokens\": [1, 105, 300], \"hidden\": 72, "
    "\"inter\": [200, 1000], \"bn\": [80, 128], \"swap\": \"on\", \"cluster\": 2}",
    "{\"dtype\": [\"fp16\", \"bf16\"], \"tf32\": \"off\", \"tokens\": 105, \"hidden\": 520, \"inter\": 200, "
    "\"bn\": [80, 128], \"swap\": \"on\", \"cluster\": 2}",
    /* the dynamic scheduler: one and two warpgroups, CTAs that take one
     * tile (300 x 200) and several (640 x 4000: more tiles than CTAs at any
     * BN), TMA and register stores of h, one launch after another (the
     * counter set back by the last CTA: a launch that began from a stale
     * counter would leave tiles of h, poisoned before each verified run,
     * unwritten) */
    "{\"dtype\": [\"fp16\", \"bf16\"], \"tf32\": \"off\", \"tokens\": [40, 300], \"hidden\": 72, \"inter\": [200, 1004], "
    "\"sched\": \"dynamic\"}",
    "{\"dtype\": [\"fp16\", \"bf16\"], \"tf32\": \"off\", \"tokens\": 640, \"hidden\": 72, \"inter\": 4000, \"sched\": \"dynamic\"}",
    /* down_splitk forced: 8- and 16-token boxes of h (1, 5, 9 and 16 tokens),
     * a last row block of D cut short (hidden 72, 200, 1000), 8 K ranges of 2
     * k-blocks (inter 1000 = 15 x 64 + 40, the last range short) and of 3
     * (1400 = 21 x 64 + 56: the last range one short k-block), the last
     * block's adds over 8 ranges; one launch after another (a counter left
     * above 0 would leave y's poisoned rows unwritten) */
    "{\"dtype\": [\"fp16\", \"bf16\"], \"tf32\": \"off\", \"tokens\": [1, 5, 9, 16], \"hidden\": [72, 200, 1000], "
    "\"inter\": [1000, 1400], \"down\": \"splitk\"}",
    /* ... at two blocks an SM (hidden 2056: 33 row blocks x 5 K ranges of 2
     * k-blocks, 165 blocks; one an SM would split K in 4), the last row block
     * 8 rows */
    "{\"dtype\": [\"fp16\", \"bf16\"], \"tf32\": \"off\", \"tokens\": [1, 5, 9, 16], \"hidden\": 2056, \"inter\": 640, "
    "\"down\": \"splitk\"}",
    /* ... with one K range (inter 168: 3 k-blocks; 129 row blocks, the last 8
     * rows): no partials, y stored by each block */
    "{\"dtype\": [\"fp16\", \"bf16\"], \"tf32\": \"off\", \"tokens\": [1, 16], \"hidden\": 8200, \"inter\": 168, "
    "\"down\": \"splitk\"}",
    /* ... with more than 8 K ranges, two blocks an SM (8 ranges of 16 row
     * blocks fill fewer blocks than SMs: hidden 1000, the last row block 40
     * rows; inter 11000: 16 ranges of 11 k-blocks, the last of 7, its last
     * k-block 56 columns): the last block's adds over 16 */
    "{\"dtype\": [\"fp16\", \"bf16\"], \"tf32\": \"off\", \"tokens\": [1, 5, 9, 16], \"hidden\": 1000, "
    "\"inter\": 11000, \"down\": \"splitk\"}",
    /* ... and chosen by fused's planner (the DOWN row: hidden 1024-3071 from
     * inter 2816): 17 row blocks (the last 8 rows) x 8 K ranges of 8
     * k-blocks (the last 7, cut short), two an SM, at 3 and 16 tokens; where
     * the row leaves the down GEMM to cuBLAS (hidden 3072-8191 under inter
     * 5504: 4104 x 4000; inter under 2816: x 1000; inter % 8 != 0: x 1003) */
    "{\"dtype\": [\"fp16\", \"bf16\"], \"tf32\": \"off\", \"tokens\": [3, 16], \"hidden\": 1032, \"inter\": 4000}",
    "{\"dtype\": [\"fp16\", \"bf16\"], \"tf32\": \"off\", \"tokens\": [1, 3], \"hidden\": 4104, \"inter\": [1000, 1003, 4000]}",
    /* cuBLASLt's split-K 2 down GEMM forced: after fused_wgmma (hidden 72)
     * and fused_mma (257: rows of x not 16-byte multiples), rows of h 16-byte
     * multiples (inter 200) and not (1003); and after cublas_cat's path
     * (129 x 4096, the CUBLAS_MID row) */
    "{\"dtype\": [\"fp16\", \"bf16\"], \"tf32\": \"off\", \"tokens\": [17, 80], \"hidden\": [72, 257], "
    "\"inter\": [200, 1003], \"down\": \"cublaslt\"}",
    "{\"dtype\": [\"fp16\", \"bf16\"], \"tf32\": \"off\", \"tokens\": 129, \"hidden\": 4096, \"inter\": 40, "
    "\"down\": \"cublaslt\"}",
};

const kb_op kb_op_mlp = {
    .name = "mlp",
    .summary = "SwiGLU MLP, (silu(x G^T) * (x U^T)) D^T, LLaMA's feed-forward block (forward)",
    .params = params,
    .nparams = NPARAMS,
    .impls = impls,
    .nimpls = KB_COUNT(impls),
    .bound = KB_COMPUTE_BOUND,
    .validate = validate,
    .bytes = bytes,
    .bytes_written = bytes_written,
    .flops = flops,
    .device_bytes = device_bytes,
    .setup = setup,
    .reference = reference,
    .ref_cost = ref_cost,
    .teardown = teardown,
    .tolerance = tolerance,
    .check_sweeps = checks,
    .ncheck = (int)(sizeof checks / sizeof checks[0]),
    .gemm_ceiling = gemm_ceiling,
    .gemm_shapes = gemm_shapes,
    .tensors = tensors,
    .ntensors = KB_COUNT(tensors),
    .plugin_tensors = plugin_tensors,
};
