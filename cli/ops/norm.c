/* LayerNorm and RMSNorm, forward and backward: two op descriptors over one
 * parameter table, one reference (refs/norm.c) and the kernels of
 * kernels/norm/ (DESIGN.md there): naive, and the variants warp_row, block,
 * bulk as named implementations, opt the planner's choice among them. */
#include "ops.h"
#include "norm_inputs.h"
#include "../core/errors.h"
#include "../core/op.h"
#include "../core/params.h"
#include "../core/tensors.h"
#include "../../include/kb_devattr.h"
#include "../../include/kb_dtype.h"
#include "../../include/kbench_plugin.h"
#include "../../kernels/kernels.h"
#include "../../kernels/norm/norm.h"
#include "../../kernels/norm/plan.h"
#include "../../refs/refs.h"

#include <cuda_runtime_api.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const kb_param params[] = {
    {"pass", KB_P_ENUM, "fwd", 0, 0, "fwd,bwd",
     "fwd: y, mean, rstd from x; bwd: dx, dgamma, dbeta from dy, x, gamma and the saved mean, rstd (RMSNorm: no mean, no beta)"},
    {"dtype", KB_P_ENUM, "bf16", 0, 0, "fp32,fp16,bf16", "element type of x, y, dy, dx, gamma, beta (statistics and sums in fp32)"},
    {"rows", KB_P_INT, "4096", 1, 1 << 28, NULL, "rows of x (tokens); each row is normalised on its own"},
    {"cols", KB_P_INT, "4096", 1, 1 << 20, NULL, "elements per row (the hidden size), the dimension normalised"},
    {"eps", KB_P_FLOAT, "1e-5", 0, 1, NULL, "added to the variance (RMSNorm: the mean square) before the square root"},
    {"affine", KB_P_ENUM, "on", 0, 0, "on,none",
     "on: y = xhat*gamma + beta (RMSNorm: xhat*gamma) and the backward sums dgamma (and dbeta); none: y = xhat"},
    /* tunables (warp_row, bulk): auto is the planner's choice (kernels/norm/plan.c) */
    {"vec", KB_P_ENUM, "auto", 0, 0, "auto,1,2,4,8",
     "16-byte vectors a lane: warp_row forward 4 (8: one-warp 16-bit rows, cols <= 2048, and rows of 2-32 warps; "
     "1, 2: one-warp rows), backward 2 (1: one-warp rows, unstaged); bulk forward 4 or 8, backward 16 elements at most", 1},
    {"stages", KB_P_ENUM, "auto", 0, 0, "auto,0,2,3",
     "warp_row backward: rows of x and dy staged ahead by cp.async (0: the next row in registers; 2: rows of 4 "
     "and 8 warps only)", 1},
    {"slots", KB_P_ENUM, "auto", 0, 0, "auto,1,2,3,4", "bulk: chunks of rows in the ring of bulk copies (sm_90)", 1},
};
enum { P_PASS, P_DTYPE, P_ROWS, P_COLS, P_EPS, P_AFFINE, P_VEC, P_STAGES, P_SLOTS, NPARAMS };

#define I(c, k) ((long)(c)->v[k].num)

static int is_rms(const kb_case *c) { return strcmp(c->op->name, "rmsnorm") == 0; }
static int is_bwd(const kb_case *c) { return I(c, P_PASS) == 1; }
static int affine(const kb_case *c) { return I(c, P_AFFINE) == 0; }

/* The outputs, in order: forward y, mean (LayerNorm), rstd; backward dx,
 * dgamma and dbeta (LayerNorm) when affine. */
enum { O_Y, O_MEAN, O_RSTD, O_DX, O_DGAMMA, O_DBETA };
static int outputs(const kb_case *c, int *kind)
{
    int n = 0, rms = is_rms(c);
    if (!is_bwd(c)) {
        kind[n++] = O_Y;
        if (!rms) kind[n++] = O_MEAN;
        kind[n++] = O_RSTD;
    } else {
        kind[n++] = O_DX;
        if (affine(c)) kind[n++] = O_DGAMMA;
        if (affine(c) && !rms) kind[n++] = O_DBETA;
    }
    return n;
}

static int validate(const kb_case *c, char *err, size_t n)
{
    if ((double)I(c, P_ROWS) * (double)I(c, P_COLS) > 4294967296.0) {
        snprintf(err, n, "rows*cols = %.0f elements; kbench %s supports up to 2^32", (double)I(c, P_ROWS) * I(c, P_COLS),
                 c->op->name);
        return -1;
    }
    return 0;
}

/* What a perfect kernel moves: forward reads x, gamma, beta and writes y,
 * mean, rstd; backward reads x, dy, gamma, mean, rstd and writes dx, dgamma,
 * dbeta. */
static double bytes(const kb_case *c)
{
    double rows = (double)I(c, P_ROWS), cols = (double)I(c, P_COLS), es = (double)kb_dtype_size(kb_case_dtype(c));
    int rms = is_rms(c), aff = affine(c);
    double nparams = aff ? (rms ? 1 : 2) : 0, stats = (rms ? 1 : 2) * rows * 4;
    if (!is_bwd(c)) return 2 * rows * cols * es + nparams * cols * es + stats;
    return 3 * rows * cols * es + (aff ? cols * es : 0) + stats + nparams * cols * 4;
}

/* of those, written: y, mean, rstd; dx, dgamma, dbeta */
static double bytes_written(const kb_case *c)
{
    double rows = (double)I(c, P_ROWS), cols = (double)I(c, P_COLS), es = (double)kb_dtype_size(kb_case_dtype(c));
    int rms = is_rms(c), aff = affine(c);
    double nparams = aff ? (rms ? 1 : 2) : 0, stats = (rms ? 1 : 2) * rows * 4;
    if (!is_bwd(c)) return rows * cols * es + stats;
    return rows * cols * es + nparams * cols * 4;
}

/* Arithmetic per element: LayerNorm forward 8 (sum; subtract, square, add;
 * subtract, scale, gamma, beta), RMSNorm 5; backward 14 and 11. */
static double flops(const kb_case *c)
{
    double per = is_bwd(c) ? (is_rms(c) ? 11 : 14) : (is_rms(c) ? 5 : 8);
    return per * (double)I(c, P_ROWS) * (double)I(c, P_COLS);
}

/* a persistent backward's partial sums (allocated by the implementation's
 * prepare from its grid): one row (dgamma, dbeta) per resident block, about
 * min(rows, 1024) blocks at most */
static size_t work_bound(const kb_case *c)
{
    if (!is_bwd(c) || !affine(c)) return 0;
    long blocks = I(c, P_ROWS) < 1024 ? I(c, P_ROWS) : 1024;
    return (size_t)blocks * 2 * (size_t)I(c, P_COLS) * sizeof(float);
}

static size_t device_bytes(const kb_case *c)
{
    size_t rows = (size_t)I(c, P_ROWS), cols = (size_t)I(c, P_COLS), es = kb_dtype_size(kb_case_dtype(c));
    size_t tensors = is_bwd(c) ? 3 : 2;
    return tensors * rows * cols * es + 2 * cols * es + 2 * rows * 4 + 2 * cols * 4 + work_bound(c);
}

typedef struct {
    kb_norm_args args; /* the case's tensors (work: NULL; each implementation has its own) */
} norm_priv;

/* A device buffer for b, from its host copy when it is an input. */
static int upload(kb_buf *b)
{
    size_t nb = b->n * kb_dtype_size(b->dtype);
    KB_CK(cudaMalloc(&b->dev, nb + 16));
    if (b->host) KB_CK(cudaMemcpy(b->dev, b->host, nb, cudaMemcpyHostToDevice));
    return 0;
}

static int setup(const kb_case *c, kb_state *st)
{
    kb_dtype dt = kb_case_dtype(c);
    long rows = I(c, P_ROWS), cols = I(c, P_COLS);
    size_t n = (size_t)rows * (size_t)cols, es = kb_dtype_size(dt);
    int rms = is_rms(c), bwd = is_bwd(c), aff = affine(c);
    norm_priv *p = calloc(1, sizeof *p);
    st->priv = p;
    kb_norm_args *a = &p->args;
    a->dtype = (int)dt;
    a->rms = rms;
    a->backward = bwd;
    a->rows = rows;
    a->cols = cols;
    a->eps = (float)c->v[P_EPS].num;

    /* inputs: x as norm_inputs.h says (uniform, one row in four with a
     * massive activation), gamma in [0.5, 1.5), beta in [-0.5, 0.5), dy in
     * [-1, 1) */
    kb_buf *x = &st->in[st->nin++];
    *x = (kb_buf){"x", dt, n, NULL, malloc(n * es + 1), NULL};
    kb_fill_uniform(x->host, n, dt, c->seed, KB_NORM_X_LO, KB_NORM_X_HI);
    for (long r = 0; r < rows; r++) { /* kb_norm_outlier says which rows */
        double v;
        const long j = kb_norm_outlier(r, cols, &v);
        if (j >= 0) kb_store(x->host, (size_t)r * (size_t)cols + (size_t)j, v, dt);
    }
    kb_buf *gamma = NULL, *beta = NULL;
    if (aff) {
        gamma = &st->in[st->nin++];
        *gamma = (kb_buf){"gamma", dt, (size_t)cols, NULL, malloc((size_t)cols * es + 1), NULL};
        kb_fill_uniform(gamma->host, (size_t)cols, dt, c->seed + 1, 0.5, 1.5);
        if (!rms && !bwd) {
            beta = &st->in[st->nin++];
            *beta = (kb_buf){"beta", dt, (size_t)cols, NULL, malloc((size_t)cols * es + 1), NULL};
            kb_fill_uniform(beta->host, (size_t)cols, dt, c->seed + 2, -0.5, 0.5);
        }
    }
    for (int i = 0; i < st->nin; i++) KB_CK(upload(&st->in[i]));
    a->x = x->dev;
    a->gamma = gamma ? gamma->dev : NULL;
    a->beta = beta ? beta->dev : NULL;

    if (bwd) {
        kb_buf *dy = &st->in[st->nin++];
        *dy = (kb_buf){"dy", dt, n, NULL, malloc(n * es + 1), NULL};
        kb_fill_uniform(dy->host, n, dt, c->seed + 3, -1.0, 1.0);
        /* the saved statistics: x's own, in double, rounded to fp32 */
        double *xd = malloc(n * sizeof *xd + 1), *mu = malloc((size_t)rows * sizeof *mu), *rs = malloc((size_t)rows * sizeof *rs);
        kb_load_all(x->host, n, dt, xd);
        ref_norm_fwd(rms, rows, cols, c->v[P_EPS].num, xd, NULL, NULL, NULL, mu, rs);
        free(xd);
        kb_buf *bm = NULL;
        if (!rms) {
            bm = &st->in[st->nin++];
            *bm = (kb_buf){"mean", KB_FP32, (size_t)rows, NULL, malloc((size_t)rows * 4), NULL};
            for (long r = 0; r < rows; r++) ((float *)bm->host)[r] = (float)mu[r];
        }
        kb_buf *br = &st->in[st->nin++];
        *br = (kb_buf){"rstd", KB_FP32, (size_t)rows, NULL, malloc((size_t)rows * 4), NULL};
        for (long r = 0; r < rows; r++) ((float *)br->host)[r] = (float)rs[r];
        free(mu);
        free(rs);
        KB_CK(upload(dy));
        if (bm) KB_CK(upload(bm));
        KB_CK(upload(br));
        a->dy = dy->dev;
        a->mean = bm ? bm->dev : NULL;
        a->rstd = br->dev;
    }

    int kind[KB_MAX_OUTPUTS], no = outputs(c, kind);
    for (int i = 0; i < no; i++) {
        kb_buf *o = &st->out[st->nout++];
        switch (kind[i]) {
        case O_Y: *o = (kb_buf){"y", dt, n, NULL, NULL, NULL}; break;
        case O_MEAN: *o = (kb_buf){"mean", KB_FP32, (size_t)rows, NULL, NULL, NULL}; break;
        case O_RSTD: *o = (kb_buf){"rstd", KB_FP32, (size_t)rows, NULL, NULL, NULL}; break;
        case O_DX: *o = (kb_buf){"dx", dt, n, NULL, NULL, NULL}; break;
        case O_DGAMMA: *o = (kb_buf){"dgamma", KB_FP32, (size_t)cols, NULL, NULL, NULL}; break;
        case O_DBETA: *o = (kb_buf){"dbeta", KB_FP32, (size_t)cols, NULL, NULL, NULL}; break;
        }
        KB_CK(upload(o));
        switch (kind[i]) {
        case O_Y: case O_DX: a->y = o->dev; break;
        case O_MEAN: a->mean = o->dev; break;
        case O_RSTD: a->rstd = o->dev; break;
        case O_DGAMMA: a->dgamma = o->dev; break;
        case O_DBETA: a->dbeta = o->dev; break;
        }
    }
    return 0;
}

static void reference(const kb_case *c, kb_state *st)
{
    long rows = I(c, P_ROWS), cols = I(c, P_COLS);
    int rms = is_rms(c);
    /* the inputs by name, in double */
    double *in[KB_MAX_INPUTS] = {0};
    const char *names[] = {"x", "gamma", "beta", "dy", "mean", "rstd"};
    double *v[6] = {0};
    for (int i = 0; i < st->nin; i++) {
        in[i] = malloc(st->in[i].n * sizeof(double) + 1);
        kb_load_all(st->in[i].host, st->in[i].n, st->in[i].dtype, in[i]);
        for (int k = 0; k < 6; k++)
            if (!strcmp(st->in[i].name, names[k])) v[k] = in[i];
    }
    double *o[6] = {0};
    int kind[KB_MAX_OUTPUTS], no = outputs(c, kind);
    for (int i = 0; i < no; i++) {
        st->out[i].ref = malloc(st->out[i].n * sizeof(double) + 1);
        o[kind[i]] = st->out[i].ref;
    }
    if (!is_bwd(c)) ref_norm_fwd(rms, rows, cols, c->v[P_EPS].num, v[0], v[1], v[2], o[O_Y], o[O_MEAN], o[O_RSTD]);
    else {
        double terms = ref_norm_bwd(rms, rows, cols, v[0], v[3], v[1], v[4], v[5], o[O_DX], o[O_DGAMMA], o[O_DBETA]);
        st->out[0].scale = terms; /* dx: x^ and mean(g) cancel g when a row is short (cols 1: dx = 0) */
        /* dgamma, dbeta: with few rows, dy's signs cancel their terms (rmsnorm
         * bf16 rows 7 cols 1: fp32 errs 4e-5 of the sum, ~1e-7 of the terms) */
        double sg, sb;
        ref_norm_colsum_scales(rms, rows, cols, v[0], v[3], v[4], v[5], &sg, &sb);
        for (int i = 0; i < no; i++) {
            if (kind[i] == O_DGAMMA) st->out[i].scale = sg;
            if (kind[i] == O_DBETA) st->out[i].scale = sb;
        }
    }
    for (int i = 0; i < st->nin; i++) free(in[i]);
}

long kb_norm_outlier(long row, long cols, double *value)
{
    if (row % 4 != 3 || cols < 1) return -1;
    const long kind = row / 4 % 3;
    *value = kind == 2 ? -KB_NORM_OUTLIER : KB_NORM_OUTLIER;
    return kind == 0 ? 0 : kind == 1 ? cols / 2 : cols - 1;
}

static void teardown(const kb_case *c, kb_state *st)
{
    (void)c;
    norm_priv *p = st->priv;
    if (!p) return;
    free(p);
    st->priv = NULL;
}

/* Tolerances. u = 2^-24 (fp32). A sum of n fp32 terms carries a relative
 * error of about u*sqrt(n) (rounding errors of a random walk), whatever the
 * order; we allow 4u*sqrt(n) on top of 1e-5 for the fp32 outputs that come
 * from sums over a row (y, mean, rstd, dx in fp32: n = cols) and for dgamma
 * and dbeta (sums over the rows: n = rows), and 4x that for the largest
 * single error. fp16 and bf16 outputs are dominated by their own rounding
 * (2^-11, 2^-8 relative). A row or column summed wrongly or left out moves
 * the error by about 1/sqrt(n), far above these. */
static kb_tol fp32_sum(double n)
{
    double rel = 1e-5 + 4.0 * ldexp(1.0, -24) * sqrt(n);
    return (kb_tol){rel, 4 * rel};
}

static kb_tol tolerance(const kb_case *c, int out)
{
    int kind[KB_MAX_OUTPUTS];
    outputs(c, kind);
    double cols = (double)I(c, P_COLS), rows = (double)I(c, P_ROWS);
    switch (kind[out]) {
    case O_Y:
    case O_DX:
        switch (kb_case_dtype(c)) {
        case KB_FP16: return (kb_tol){1e-3, 2e-3};
        case KB_BF16: return (kb_tol){8e-3, 1.6e-2};
        default: return fp32_sum(cols);
        }
    case O_MEAN:
    case O_RSTD: return fp32_sum(cols);
    default: return fp32_sum(rows);
    }
}

/* ---- implementations ---------------------------------------------------- */
static kb_norm_shape shape_of(const kb_case *c, const kb_norm_args *a)
{
    kb_norm_shape s = {(int)kb_case_dtype(c), is_rms(c), is_bwd(c), affine(c), I(c, P_ROWS), I(c, P_COLS), 0};
    if (a) {
        const void *t[] = {a->x, a->y, a->gamma, a->beta, a->dy};
        for (int i = 0; i < 5; i++) s.unaligned |= ((uintptr_t)t[i] & 15) != 0;
    }
    return s;
}

static kb_norm_tune tune_of(const kb_case *c)
{
    const int A = KB_NORM_TUNE_AUTO; /* the enums' choices are the values (kb_case_choice_num) */
    return (kb_norm_tune){kb_case_choice_num(c, P_VEC, A), kb_case_choice_num(c, P_STAGES, A),
                          kb_case_choice_num(c, P_SLOTS, A)};
}

typedef struct {
    kb_norm_args args; /* the case's, with this implementation's workspace */
    kb_norm_plan plan;
    kb_norm_exec x;
} impl_priv;

static int supports_variant(const kb_case *c, const kb_devattr *d, int variant, char *why, size_t n)
{
    kb_norm_shape s = shape_of(c, NULL);
    kb_norm_tune t = tune_of(c);
    kb_norm_plan p;
    return kb_norm_plan_make(&s, d, variant, &t, &p, why, n) ? 1 : 0;
}
static int supports_warp_row(const kb_case *c, const kb_devattr *d, char *why, size_t n)
{
    return supports_variant(c, d, KB_NORM_WARP_ROW, why, n);
}
static int supports_block(const kb_case *c, const kb_devattr *d, char *why, size_t n)
{
    return supports_variant(c, d, KB_NORM_BLOCK, why, n);
}
static int supports_bulk(const kb_case *c, const kb_devattr *d, char *why, size_t n)
{
    return supports_variant(c, d, KB_NORM_BULK, why, n);
}

/* plan (with the tensors' alignment), name the kernel, size and allocate the
 * backward's partial rows from the grid actually launched */
static int prepare_variant(const kb_case *c, kb_state *st, const kb_devattr *d, kb_impl_run *r, int variant)
{
    impl_priv *p = calloc(1, sizeof *p);
    if (!p) return (int)cudaErrorMemoryAllocation;
    r->priv = p;
    p->args = ((norm_priv *)st->priv)->args;
    p->args.work = NULL;
    kb_norm_shape s = shape_of(c, &p->args);
    kb_norm_tune t = tune_of(c);
    if (kb_norm_plan_make(&s, d, variant, &t, &p->plan, r->why, sizeof r->why)) return KB_NA;
    kb_norm_plan_describe(&p->plan, r->kernel, sizeof r->kernel);
    const int e = kb_norm_exec_prepare(&p->args, &p->plan, d, &p->x);
    if (e == KB_NORM_NO_CLUSTER) {
        snprintf(r->why, sizeof r->why, "this device cannot place a cluster of %d blocks of %d threads", p->plan.cl,
                 p->plan.block);
        return KB_NA;
    }
    KB_CK(e);
    if (p->x.work_bytes) { /* zeroed once: the grid barrier's counter (kernels/norm/plan.h) */
        KB_CK(cudaMalloc(&p->args.work, p->x.work_bytes));
        KB_CK(cudaMemset(p->args.work, 0, p->x.work_bytes));
    }
    return 0;
}
static int prepare_warp_row(const kb_case *c, kb_state *st, const kb_devattr *d, kb_impl_run *r)
{
    return prepare_variant(c, st, d, r, KB_NORM_WARP_ROW);
}
static int prepare_block(const kb_case *c, kb_state *st, const kb_devattr *d, kb_impl_run *r)
{
    return prepare_variant(c, st, d, r, KB_NORM_BLOCK);
}
static int prepare_bulk(const kb_case *c, kb_state *st, const kb_devattr *d, kb_impl_run *r)
{
    return prepare_variant(c, st, d, r, KB_NORM_BULK);
}
static int prepare_opt(const kb_case *c, kb_state *st, const kb_devattr *d, kb_impl_run *r)
{
    return prepare_variant(c, st, d, r, KB_NORM_AUTO);
}

static int launch_variant(const kb_case *c, kb_state *st, kb_impl_run *r, void *stream)
{
    (void)c;
    (void)st;
    const impl_priv *p = r->priv;
    return kb_norm_exec_launch(&p->args, &p->x, stream);
}

static void release_variant(const kb_case *c, kb_state *st, kb_impl_run *r)
{
    (void)c;
    (void)st;
    impl_priv *p = r->priv;
    if (!p) return;
    cudaFree(p->args.work);
    free(p);
    r->priv = NULL;
}

static int prepare_naive(const kb_case *c, kb_state *st, const kb_devattr *d, kb_impl_run *r)
{
    (void)st;
    (void)d;
    snprintf(r->kernel, sizeof r->kernel, "%s",
             !is_bwd(c) ? "naive thread/row" : affine(c) ? "naive thread/row, dgamma thread/column" : "naive thread/row");
    return 0;
}

static int launch_naive(const kb_case *c, kb_state *st, kb_impl_run *r, void *stream)
{
    (void)c;
    (void)r;
    return kb_norm_naive(&((norm_priv *)st->priv)->args, stream);
}

static const kb_impl impls[] = {
    {.name = "naive", .prepare = prepare_naive, .launch = launch_naive,
     .help = "one thread per row (x read three times); backward: dx per row, dgamma/dbeta one thread per column"},
    {.name = "warp_row", .supports = supports_warp_row, .prepare = prepare_warp_row, .launch = launch_variant,
     .release = release_variant, .tunables = "vec,stages",
     .help = "whole warps a row, the row in 16-byte vectors in registers, the row's warps meeting at their own named "
             "barrier; backward persistent, x and dy staged rows ahead by cp.async (rows 16-byte multiples, 32 warps "
             "forward, 20 backward)"},
    {.name = "block", .supports = supports_block, .prepare = prepare_block, .launch = launch_variant,
     .release = release_variant,
     .help = "a power-of-two thread group a row, block barriers for the sums; sm_90 forward rows past 64 KiB: a "
             "cluster of 2-8 blocks a row (fp32 to 128 KiB, RMSNorm from 64 KiB, LayerNorm from 72: one block of "
             "1024 a row, x read again through L2); rows too long for registers: one row a block, re-read (rows "
             "that are not 16-byte multiples, and rows past what warp_row holds)"},
    {.name = "bulk", .supports = supports_bulk, .prepare = prepare_bulk, .launch = launch_variant,
     .release = release_variant, .tunables = "vec,slots",
     .help = "sm_90: chunks of whole rows by bulk copies (cp.async.bulk + mbarrier) into a ring of slots in shared "
             "memory, one thread issuing them (rows 16-byte multiples)"},
    {.name = "opt", .prepare = prepare_opt, .launch = launch_variant, .release = release_variant,
     .help = "the planner's choice among warp_row, bulk and block (kernels/norm/plan.c's table); takes no tunables"},
};
/* Every backward but naive's: per-block dgamma/dbeta partial rows, then a
 * grid-wide column sum in block order (deterministic). */

/* ---- the tensors external implementations (plugins) see ----------------
 * The same buffers as setup's, by the same names: statistics and column sums
 * in fp32, everything else in the case's dtype. */
/* x, both ops' (norm_inputs.h draws it) */
#define X_HELP                                                                                                     \
    "the rows, each normalised on its own over its cols elements; uniform in [-1, 3), one row in four with one "   \
    "value of +-1000 (first, middle or last: a massive activation)"
static const kb_tensor_decl ln_tensors[] = {
    {"x", 0, NULL, "[rows, cols]", X_HELP},
    {"gamma", 0, "affine=on", "[cols]", "the scale, one per column"},
    {"beta", 0, "pass=fwd affine=on", "[cols]", "the shift, one per column (the backward does not need it)"},
    {"dy", 0, "pass=bwd", "[rows, cols]", "the gradient of y"},
    {"mean", 0, "pass=bwd", "[rows] fp32",
     "the statistics the forward saved: each row's mean of x (computed exactly, rounded to fp32); the reference's "
     "dx, dgamma and dbeta use these"},
    {"rstd", 0, "pass=bwd", "[rows] fp32", "the forward's saved 1 / sqrt(var + eps) of each row (as mean)"},
    {"y", 1, "pass=fwd", "[rows, cols]",
     "y = (x - mean) * rstd * gamma + beta, per row (affine=none: (x - mean) * rstd); statistics in fp32, y rounded "
     "to the dtype"},
    {"mean", 1, "pass=fwd", "[rows] fp32", "each row's mean, sum(x) / cols"},
    {"rstd", 1, "pass=fwd", "[rows] fp32",
     "each row's 1 / sqrt(var + eps), var = sum((x - mean)^2) / cols (biased: over cols, not cols - 1), eps the "
     "case's parameter"},
    {"dx", 1, "pass=bwd", "[rows, cols]",
     "dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) per row, means over the row's cols, g = dy * gamma "
     "(affine=none: dy), xhat = (x - mean) * rstd from the inputs mean and rstd"},
    {"dgamma", 1, "pass=bwd affine=on", "[cols] fp32",
     "sum over the rows of dy * xhat, in fp32 (not the case's dtype), every launch in the same order (the same "
     "bits; float atomics: flag the implementation KBP_NONDETERMINISTIC)"},
    {"dbeta", 1, "pass=bwd affine=on", "[cols] fp32", "sum over the rows of dy, in fp32 (as dgamma)"},
};

static const kb_tensor_decl rms_tensors[] = {
    {"x", 0, NULL, "[rows, cols]", X_HELP},
    {"gamma", 0, "affine=on", "[cols]", "the scale, one per column"},
    {"dy", 0, "pass=bwd", "[rows, cols]", "the gradient of y"},
    {"rstd", 0, "pass=bwd", "[rows] fp32",
     "the statistic the forward saved: each row's 1 / sqrt(sum(x^2) / cols + eps) (computed exactly, rounded to "
     "fp32); the reference's dx and dgamma use it"},
    {"y", 1, "pass=fwd", "[rows, cols]",
     "y = x * rstd * gamma, per row (affine=none: x * rstd); statistics in fp32, y rounded to the dtype"},
    {"rstd", 1, "pass=fwd", "[rows] fp32",
     "each row's 1 / sqrt(sum(x^2) / cols + eps) (no mean is subtracted), eps the case's parameter"},
    {"dx", 1, "pass=bwd", "[rows, cols]",
     "dx = rstd * (g - xhat * mean(g * xhat)) per row, the mean over the row's cols, g = dy * gamma (affine=none: "
     "dy), xhat = x * rstd from the input rstd"},
    {"dgamma", 1, "pass=bwd affine=on", "[cols] fp32",
     "sum over the rows of dy * xhat, in fp32 (not the case's dtype), every launch in the same order (the same "
     "bits; float atomics: flag the implementation KBP_NONDETERMINISTIC)"},
};

static int tensor_shape(const kb_case *c, const char *name, int64_t *d)
{
    static const char *const matrix[] = {"x", "dy", "y", "dx"}, *const per_row[] = {"mean", "rstd"},
                             *const per_col[] = {"gamma", "beta", "dgamma", "dbeta"};
    for (int i = 0; i < 4; i++)
        if (!strcmp(name, matrix[i])) {
            d[0] = I(c, P_ROWS), d[1] = I(c, P_COLS);
            return 2;
        }
    for (int i = 0; i < 2; i++)
        if (!strcmp(name, per_row[i])) {
            d[0] = I(c, P_ROWS);
            return 1;
        }
    for (int i = 0; i < 4; i++)
        if (!strcmp(name, per_col[i])) {
            d[0] = I(c, P_COLS);
            return 1;
        }
    return 0;
}

static int plugin_tensors(const kb_case *c, const kb_state *st, kbp_tensor *in, int *nin, kbp_tensor *out, int *nout)
{
    if (kb_plugin_tensors_from_state(c, st, tensor_shape, in, nin, out, nout)) return -1;
    return kb_plugin_tensors_finish(c, in, nin, out, nout);
}

/* small and odd shapes (not multiples of the vector width or the block), in
 * every dtype and pass, for every variant (n/a where one cannot take them):
 * block: thread groups of 1 to 512 (w=1: the odd cols), several rows per
 * block, backward grids that loop over rows, 16-byte rows past warp_row
 * (12288, 16384, 20000), forward rows past 64 KiB split over clusters of 2,
 * 4 and 8 blocks on sm_90 (fp32 17000 LayerNorm, 65536, 131072; 16-bit 65536,
 * 131072, 140000) or a block of 1024 reading x again (fp32 17000 RMSNorm,
 * 20000, 32768), rows too long for registers (70001, fp32 140000);
 * warp_row: groups of 1 to 32 warps, powers of two and not (3000, 4608,
 * 5120: 3, 5, 6, 9, 10, 12 warps; 9000, 10240: the backward's groups of 18
 * and 20 warps at 640 threads), one-warp rows of 1, 2 (200, 384) and 8
 * (1032-2040, 16-bit forward) vectors a lane, lanes past the row's end idle;
 * bulk (sm_90): every shape above with 16-byte rows, odd row counts (partial
 * chunks), 10248-20000 the backward's blocks of 1024 (fp32 12288 and 16384:
 * the piped ring). Then the tunables:
 * every vec, stages and slots value on shapes that take them. */
static const char *const checks[] = {
    "{\"rows\": [1, 7, 300], \"cols\": [1, 3, 127, 769, 4097]}",
    "{\"rows\": [5, 300], \"cols\": [3000, 4608, 5120, 9000, 10240]}",
    "{\"rows\": [3, 130], \"cols\": [8, 64, 1000, 2048, 8192, 16384]}",
    "{\"rows\": 3000, \"cols\": [200, 1024]}",
    "{\"rows\": [3, 130], \"cols\": [200, 384, 1032, 1544, 2040]}",
    "{\"rows\": [2, 33], \"cols\": [32768, 65536, 70001, 131072, 140000], \"affine\": \"on\"}",
    "{\"rows\": 5, \"cols\": 4096, \"eps\": [0, 0.1], \"affine\": \"on\"}",
    "{\"rows\": [7, 1000], \"cols\": [10248, 12288, 17000, 20000]}",
    "{\"rows\": [7, 300], \"cols\": [8, 384, 1000, 2048, 5120, 10240], \"vec\": [\"1\", \"2\", \"4\", \"8\"], \"affine\": \"on\"}",
    "{\"rows\": [7, 300], \"cols\": [64, 1000, 2048, 3000, 4096, 5120, 9000], \"stages\": [\"0\", \"2\", \"3\"], \"pass\": \"bwd\"}",
    "{\"rows\": [7, 300], \"cols\": [64, 4096, 12288, 16384], \"slots\": [\"1\", \"2\", \"3\", \"4\"], \"affine\": \"on\"}",
};

#define NORM_OP(var, nm, summ, tens)                                                                                \
    const kb_op var = {                                                                                            \
        .name = nm,                                                                                                \
        .summary = summ,                                                                                           \
        .params = params,                                                                                          \
        .nparams = NPARAMS,                                                                                        \
        .impls = impls,                                                                                            \
        .nimpls = KB_COUNT(impls),                                                                                               \
        .bound = KB_MEMORY_BOUND,                                                                                  \
        .validate = validate,                                                                                      \
        .bytes = bytes,                                                                                            \
        .bytes_written = bytes_written,                                                                            \
        .flops = flops,                                                                                            \
        .device_bytes = device_bytes,                                                                              \
        .setup = setup,                                                                                            \
        .reference = reference,                                                                                    \
        .teardown = teardown,                                                                                      \
        .tolerance = tolerance,                                                                                    \
        .check_sweeps = checks,                                                                                    \
        .ncheck = (int)(sizeof checks / sizeof checks[0]),                                                         \
        .tensors = tens,                                                                                           \
        .ntensors = KB_COUNT(tens),                                                                                \
        .plugin_tensors = plugin_tensors,                                                                          \
    }

NORM_OP(kb_op_layernorm, "layernorm", "LayerNorm over the last dimension: forward (y, mean, rstd) and backward (dx, dgamma, dbeta)",
        ln_tensors);
NORM_OP(kb_op_rmsnorm, "rmsnorm", "RMSNorm over the last dimension: forward (y, rstd) and backward (dx, dgamma)",
        rms_tensors);
