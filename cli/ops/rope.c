/* RoPE forward and backward: the op descriptor. */
#include "ops.h"
#include "../core/errors.h"
#include "../core/op.h"
#include "../core/params.h"
#include "../core/tensors.h"
#include "../../include/kb_devattr.h"
#include "../../include/kb_dtype.h"
#include "../../include/kbench_plugin.h"
#include "../../kernels/kernels.h"
#include "../../kernels/rope/plan.h"
#include "../../refs/refs.h"

#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const kb_param params[] = {
    {"pass", KB_P_ENUM, "fwd", 0, 0, "fwd,bwd", "fwd: out = t*cos + rotate(t)*sin; bwd: dt = R(-theta) dy"},
    {"dtype", KB_P_ENUM, "bf16", 0, 0, "fp32,fp16,bf16", "element type of t and out (angles and math in fp32)"},
    {"layout", KB_P_ENUM, "sbhd", 0, 0, "sbhd,bshd,thd", "memory layout: [s,b,h,d], [b,s,h,d] or packed [t,h,d] with cu_seqlens"},
    {"style", KB_P_ENUM, "neox", 0, 0, "neox,gptj", "neox rotates halves (i, i+rot/2); gptj adjacent pairs (2i, 2i+1)"},
    {"seq", KB_P_INT, "2048", 1, 1 << 20, NULL, "sequence length (thd: the longest sequence, the angle table's length)"},
    {"batch", KB_P_INT, "16", 1, 1 << 20, NULL, "batch size (thd: number of sequences)"},
    {"heads", KB_P_INT, "8", 1, 1 << 16, NULL, "attention heads"},
    {"dim", KB_P_INT, "256", 1, 8192, NULL, "head dimension"},
    {"rotary_dim", KB_P_INT, "0", 0, 8192, NULL, "dims rotated, even, <= dim; 0 = all (less than dim: partial rotary, the rest copied)"},
    {"base", KB_P_FLOAT, "10000", 1.0001, 1e12, NULL, "theta_i = pos * base^(-2i/rotary_dim)"},
    {"seqlens", KB_P_INTLIST, "", 1, 1 << 20, NULL,
     "thd: sequence lengths, e.g. 100,2048,7 ('/' between sweep values); default: batch lengths drawn in [1, seq]"},
};
enum { P_PASS, P_DTYPE, P_LAYOUT, P_STYLE, P_SEQ, P_BATCH, P_HEADS, P_DIM, P_ROT, P_BASE, P_SEQLENS, NPARAMS };

#define I(c, k) ((long)(c)->v[k].num)

static long rot_dim(const kb_case *c) { return I(c, P_ROT) ? I(c, P_ROT) : I(c, P_DIM); }

/* thd sequence lengths: the given list (read in place: the cases of a sweep
 * share it), or `batch` lengths drawn from the case's seed. Their count;
 * *tokens their sum, *longest the largest, and out[i] each (out may be NULL). */
static long seqlens(const kb_case *c, int *out, long *tokens, long *longest)
{
    const kb_val *v = &c->v[P_SEQLENS];
    long sum = 0;
    int mx = 0;
    if (v->nlist) { /* the sum and the largest kept with the list: a case of a long list costs no loop */
        if (out) memcpy(out, v->list, (size_t)v->nlist * sizeof *v->list);
        *tokens = kb_list_sum(v);
        *longest = kb_list_max(v);
        return v->nlist;
    }
    kb_rng r;
    kb_rng_seed(&r, c->seed ^ 0x5e9151ull);
    for (long i = 0; i < I(c, P_BATCH); i++) {
        int l = 1 + (int)(kb_rng_next(&r) % (uint64_t)I(c, P_SEQ));
        sum += l;
        mx = l > mx ? l : mx;
        if (out) out[i] = l;
    }
    *tokens = sum;
    *longest = mx;
    return I(c, P_BATCH);
}

/* rows of `dim` elements, and the positions the angle table covers */
static long rows(const kb_case *c, long *positions)
{
    if (I(c, P_LAYOUT) == KB_ROPE_THD) {
        long tokens, mx;
        seqlens(c, NULL, &tokens, &mx);
        if (positions) *positions = mx;
        return tokens * I(c, P_HEADS);
    }
    if (positions) *positions = I(c, P_SEQ);
    return I(c, P_SEQ) * I(c, P_BATCH) * I(c, P_HEADS);
}

static int validate(const kb_case *c, char *err, size_t n)
{
    long dim = I(c, P_DIM), rot = rot_dim(c);
    if (rot > dim) { snprintf(err, n, "rotary_dim %ld is larger than dim %ld", rot, dim); return -1; }
    if (rot % 2) { snprintf(err, n, "rotary_dim %ld must be even (dims rotate in pairs)%s", rot, I(c, P_ROT) ? "" : "; dim is odd, so give --rotary-dim"); return -1; }
    const kb_val *sl = &c->v[P_SEQLENS];
    if (sl->nlist && I(c, P_LAYOUT) != KB_ROPE_THD) { snprintf(err, n, "seqlens applies to layout thd only"); return -1; }
    long tokens = 0, longest = 0;
    if (sl->nlist) seqlens(c, NULL, &tokens, &longest);
    for (int i = 0; longest > I(c, P_SEQ) && i < sl->nlist; i++)
        if (sl->list[i] > I(c, P_SEQ)) {
            snprintf(err, n, "seqlens[%d] = %d exceeds seq %ld (the angle table's length); raise --seq", i, sl->list[i], I(c, P_SEQ));
            return -1;
        }
    long worst = I(c, P_LAYOUT) == KB_ROPE_THD && !sl->nlist ? I(c, P_SEQ) * I(c, P_BATCH) * I(c, P_HEADS) : 0;
    long nrows = worst ? worst : sl->nlist ? tokens * I(c, P_HEADS) : rows(c, NULL);
    if ((double)nrows * (double)dim > 2147483647.0) {
        snprintf(err, n, "%.0f elements per tensor; kbench rope supports up to 2^31-1", (double)nrows * dim);
        return -1;
    }
    return 0;
}

static double bytes(const kb_case *c)
{
    long pos, r = rows(c, &pos);
    size_t es = kb_dtype_size(kb_case_dtype(c));
    return 2.0 * (double)r * (double)I(c, P_DIM) * (double)es + (double)pos * (double)(rot_dim(c) / 2) * 4.0;
}

static double bytes_written(const kb_case *c)
{
    return (double)rows(c, NULL) * (double)I(c, P_DIM) * (double)kb_dtype_size(kb_case_dtype(c));
}

static double flops(const kb_case *c)
{
    long r = rows(c, NULL);
    return 3.0 * (double)r * (double)rot_dim(c); /* per pair: 4 mul + 2 add */
}

static size_t device_bytes(const kb_case *c)
{
    long pos, r = rows(c, &pos);
    size_t es = kb_dtype_size(kb_case_dtype(c));
    long nseq = c->v[P_SEQLENS].nlist ? c->v[P_SEQLENS].nlist : I(c, P_BATCH);
    return 2 * (size_t)r * (size_t)I(c, P_DIM) * es + (size_t)pos * (size_t)(rot_dim(c) / 2) * 4 +
           (size_t)(nseq + 1) * 4 * (I(c, P_LAYOUT) == KB_ROPE_THD);
}

typedef struct {
    int *cu_host, *cu_dev;
    long nseq;
    kb_rope_args args;
} rope_priv;

static int setup(const kb_case *c, kb_state *st)
{
    kb_dtype dt = kb_case_dtype(c);
    size_t es = kb_dtype_size(dt);
    long pos, r = rows(c, &pos), dim = I(c, P_DIM), rot = rot_dim(c);
    size_t n = (size_t)r * (size_t)dim, nang = (size_t)pos * (size_t)(rot / 2);
    rope_priv *p = calloc(1, sizeof *p);
    st->priv = p;
    int bwd = I(c, P_PASS) == 1;
    kb_buf *x = &st->in[0], *ang = &st->in[1], *y = &st->out[0];
    st->nin = 2;
    st->nout = 1;
    size_t xb = n * es, ab = nang * 4; /* bytes; the +1 keeps zero-size allocations valid */
    *x = (kb_buf){bwd ? "dy" : "t", dt, n, NULL, malloc(xb + 1), NULL};
    *ang = (kb_buf){"angles", KB_FP32, nang, NULL, malloc(ab + 1), NULL};
    *y = (kb_buf){bwd ? "dt" : "out", dt, n, NULL, NULL, NULL};
    kb_fill_uniform(x->host, n, dt, c->seed, -1.0, 1.0);
    ref_rope_angles(ang->host, pos, rot, c->v[P_BASE].num);
    KB_CK(cudaMalloc(&x->dev, xb + 16));
    KB_CK(cudaMalloc(&ang->dev, ab + 16));
    KB_CK(cudaMalloc(&y->dev, xb + 16));
    KB_CK(cudaMemcpy(x->dev, x->host, xb, cudaMemcpyHostToDevice));
    KB_CK(cudaMemcpy(ang->dev, ang->host, ab, cudaMemcpyHostToDevice));
    kb_rope_args *a = &p->args;
    *a = (kb_rope_args){x->dev, y->dev, ang->dev, NULL, (int)dt, (int)I(c, P_LAYOUT), (int)I(c, P_STYLE), bwd,
                        (int)I(c, P_SEQ), (int)I(c, P_BATCH), (int)I(c, P_HEADS), (int)dim, (int)rot, 0};
    if (a->layout == KB_ROPE_THD) {
        long tokens, mx;
        p->nseq = c->v[P_SEQLENS].nlist ? c->v[P_SEQLENS].nlist : I(c, P_BATCH);
        p->cu_host = malloc((size_t)(p->nseq + 1) * sizeof(int));
        if (!p->cu_host) KB_CK(cudaErrorMemoryAllocation); /* host memory: said as CUDA's out of memory */
        p->cu_host[0] = 0;
        seqlens(c, p->cu_host + 1, &tokens, &mx); /* the lengths, then summed in place */
        for (long i = 0; i < p->nseq; i++) p->cu_host[i + 1] += p->cu_host[i];
        a->batch = (int)p->nseq;
        a->tokens = p->cu_host[p->nseq];
        KB_CK(cudaMalloc((void **)&p->cu_dev, (size_t)(p->nseq + 1) * sizeof(int)));
        KB_CK(cudaMemcpy(p->cu_dev, p->cu_host, (size_t)(p->nseq + 1) * sizeof(int), cudaMemcpyHostToDevice));
        a->cu_seqlens = p->cu_dev;
    }
    return 0;
}

static void reference(const kb_case *c, kb_state *st)
{
    rope_priv *p = st->priv;
    const kb_rope_args *a = &p->args;
    kb_buf *x = &st->in[0], *y = &st->out[0];
    double *in = malloc(x->n * sizeof *in);
    kb_load_all(x->host, x->n, x->dtype, in);
    y->ref = malloc(y->n * sizeof *y->ref);
    ref_rope_args ra = {a->layout, a->style, a->backward, a->seq, a->batch, a->heads, a->dim, a->rot,
                        p->cu_host, st->in[1].host};
    (void)c;
    ref_rope(&ra, in, y->ref);
    free(in);
}

static void teardown(const kb_case *c, kb_state *st)
{
    (void)c;
    rope_priv *p = st->priv;
    if (!p) return;
    cudaFree(p->cu_dev);
    free(p->cu_host);
    free(p);
    st->priv = NULL;
}

static kb_tol tolerance(const kb_case *c, int out)
{
    (void)out;
    /* rounding the output to the dtype dominates: fp16 u = 2^-11, bf16 u = 2^-8 */
    switch (kb_case_dtype(c)) {
    case KB_FP16: return (kb_tol){1e-3, 2e-3};
    case KB_BF16: return (kb_tol){8e-3, 1.6e-2};
    default: return (kb_tol){1e-5, 2e-5};
    }
}

static int launch_naive(const kb_case *c, kb_state *st, kb_impl_run *r, void *stream)
{
    (void)c;
    (void)r;
    return kb_rope_naive(&((rope_priv *)st->priv)->args, stream);
}

/* opt: planned once per case (untimed), then run */
static int prepare_opt(const kb_case *c, kb_state *st, const kb_devattr *d, kb_impl_run *r)
{
    (void)d;
    const kb_rope_args *a = &((rope_priv *)st->priv)->args;
    kb_rope_plan *p = calloc(1, sizeof *p);
    r->priv = p;
    if (!p) return (int)cudaErrorMemoryAllocation;
    if (kb_rope_plan_make(a, p)) return (int)cudaErrorInvalidValue; /* setup gave invalid arguments */
    kb_rope_plan_describe(p, r->kernel, sizeof r->kernel);
    (void)c;
    return kb_rope_opt_prepare(a, p);
}

static int launch_opt(const kb_case *c, kb_state *st, kb_impl_run *r, void *stream)
{
    (void)c;
    return kb_rope_opt_run(&((rope_priv *)st->priv)->args, r->priv, stream);
}

static int prepare_naive(const kb_case *c, kb_state *st, const kb_devattr *d, kb_impl_run *r)
{
    (void)c, (void)st, (void)d;
    snprintf(r->kernel, sizeof r->kernel, "naive thread/element");
    return 0;
}

static void release_plan(const kb_case *c, kb_state *st, kb_impl_run *r)
{
    (void)c, (void)st;
    free(r->priv);
    r->priv = NULL;
}

static const kb_impl impls[] = {
    {.name = "naive", .prepare = prepare_naive, .launch = launch_naive,
     .help = "one thread per element, cos/sin per element, the formula as written"},
    {.name = "opt", .prepare = prepare_opt, .launch = launch_opt, .release = release_plan,
     .help = "16-byte vectors, cos/sin once per position in shared memory, reused over heads"},
};

/* ---- the tensors external implementations (plugins) see ---------------- */
#define ROPE_SHAPE "[seq, batch, heads, dim] (sbhd); [batch, seq, heads, dim] (bshd); [tokens, heads, dim] (thd)"
static const kb_tensor_decl tensors[] = {
    {"t", 0, "pass=fwd", ROPE_SHAPE,
     "the input: head vectors of dim elements, the first rot of them rotated in pairs (rot = rotary_dim, or dim "
     "when rotary_dim is 0; angles.shape[1] = rot/2). thd: the tokens of every sequence, one after another "
     "(tokens = cu_seqlens[nseq])"},
    {"dy", 0, "pass=bwd", ROPE_SHAPE, "the gradient of out, as t"},
    {"angles", 0, NULL, "[positions, rot/2] fp32",
     "the angle table (radians): angles[p][i] = p * base^(-2i/rot), the angle of pair i at position p, as "
     "TransformerEngine builds it; take cos and sin of it (fp32 is enough). positions = seq (sbhd, bshd) or the "
     "longest sequence (thd)"},
    {"cu_seqlens", 0, "layout=thd", "[nseq + 1] int32",
     "the sequences' prefix sums: sequence b holds tokens cu_seqlens[b] .. cu_seqlens[b+1]-1, and a token's "
     "position is its index minus its sequence's start. nseq = shape[0] - 1: the length of the seqlens "
     "parameter, or batch when it is empty (the batch parameter does not count then)"},
    {"out", 1, "pass=fwd", ROPE_SHAPE,
     "t rotated: in each head vector at position pos (the s index; thd: from cu_seqlens), for i < rot/2, the pair "
     "(p, q) = (i, i + rot/2) (style neox) or (2i, 2i+1) (gptj) and a = angles[pos][i]: out[p] = t[p] cos a - "
     "t[q] sin a, out[q] = t[q] cos a + t[p] sin a; elements rot..dim-1 copied from t"},
    {"dt", 1, "pass=bwd", ROPE_SHAPE,
     "the gradient of t: dy rotated back, the same pairs and angles with sin a negated: dt[p] = dy[p] cos a + "
     "dy[q] sin a, dt[q] = dy[q] cos a - dy[p] sin a; elements rot..dim-1 copied from dy"},
};

/* the shape of tensor name in case c (its dimensions' count; 0: none) */
static int tensor_shape(const kb_case *c, const char *name, int64_t *d)
{
    long pos, r = rows(c, &pos), heads = I(c, P_HEADS), dim = I(c, P_DIM);
    if (!strcmp(name, "angles")) {
        d[0] = pos;
        d[1] = rot_dim(c) / 2;
        return 2;
    }
    if (strcmp(name, "t") && strcmp(name, "dy") && strcmp(name, "out") && strcmp(name, "dt")) return 0;
    switch (I(c, P_LAYOUT)) {
    case KB_ROPE_SBHD: d[0] = I(c, P_SEQ), d[1] = I(c, P_BATCH), d[2] = heads, d[3] = dim; return 4;
    case KB_ROPE_BSHD: d[0] = I(c, P_BATCH), d[1] = I(c, P_SEQ), d[2] = heads, d[3] = dim; return 4;
    default: d[0] = r / heads, d[1] = heads, d[2] = dim; return 3;
    }
}

int kb_rope_plugin_tensors(const kb_case *c, const kb_state *st, const int *cu_seqlens, kbp_tensor *in, int *nin,
                           kbp_tensor *out, int *nout)
{
    if (kb_plugin_tensors_from_state(c, st, tensor_shape, in, nin, out, nout)) return -1;
    if (I(c, P_LAYOUT) == KB_ROPE_THD) {
        const kb_tensor_decl *d = kb_tensor_decl_find(c, "cu_seqlens", 0);
        int64_t n = (c->v[P_SEQLENS].nlist ? c->v[P_SEQLENS].nlist : I(c, P_BATCH)) + 1;
        if (!d || kb_plugin_tensor(&in[*nin], c, d, (void *)(uintptr_t)cu_seqlens, KB_FP32, 1, (size_t)n, 1, &n)) {
            if (!d) snprintf(kb_last_error, sizeof kb_last_error, "rope: cu_seqlens is not declared for thd");
            *nin = *nout = 0;
            return -1;
        }
        ++*nin;
    }
    return kb_plugin_tensors_finish(c, in, nin, out, nout);
}

/* after setup: thd's cu_seqlens is setup's device copy (st->priv) */
static int plugin_tensors(const kb_case *c, const kb_state *st, kbp_tensor *in, int *nin, kbp_tensor *out, int *nout)
{
    const rope_priv *p = st->priv;
    if (kb_rope_plugin_tensors(c, st, p ? p->cu_dev : NULL, in, nin, out, nout)) return -1;
    for (int i = 0; i < *nin; i++) /* thd: the offsets as data on the host too (kbp_seqlens) */
        if (!strcmp(in[i].name, "cu_seqlens")) in[i].host = p ? p->cu_host : NULL;
    return 0;
}

/* small and odd shapes: not multiples of the vector width or the block */
static const char *const checks[] = {
    "{\"seq\": [1, 7, 33], \"batch\": [1, 3], \"heads\": [1, 5], \"dim\": [2, 6, 130, 256]}",
    "{\"seq\": 19, \"batch\": 2, \"heads\": 3, \"dim\": [64, 130], \"rotary_dim\": [2, 16, 34, 62]}",
    "{\"seq\": 9, \"batch\": 2, \"heads\": 2, \"dim\": 7, \"rotary_dim\": [2, 4, 6]}",
    "{\"layout\": \"thd\", \"seq\": 50, \"heads\": 3, \"dim\": [64, 18], \"seqlens\": [[1], [5, 50, 17], [50, 1, 1, 33]]}",
    "{\"seq\": 300, \"batch\": 2, \"heads\": 4, \"dim\": 128, \"base\": [10000, 500000]}",
};

const kb_op kb_op_rope = {
    .name = "rope",
    .summary = "rotary position embedding, forward and backward (TransformerEngine's conventions)",
    .params = params,
    .nparams = NPARAMS,
    .impls = impls,
    .nimpls = KB_COUNT(impls),
    .bound = KB_MEMORY_BOUND,
    .validate = validate,
    .bytes = bytes,
    .bytes_written = bytes_written,
    .flops = flops,
    .device_bytes = device_bytes,
    .setup = setup,
    .reference = reference,
    .teardown = teardown,
    .tolerance = tolerance,
    .check_sweeps = checks,
    .ncheck = (int)(sizeof checks / sizeof checks[0]),
    .tensors = tensors,
    .ntensors = KB_COUNT(tensors),
    .plugin_tensors = plugin_tensors,
};
