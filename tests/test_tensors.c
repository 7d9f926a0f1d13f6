/* The tensors the ops hand to plugins (cli/core/tensors.c, each op's tensors
 * table and plugin_tensors): for every op, over every pass, layout, style,
 * affine and dtype it has and odd sizes, plugin_tensors on a kb_state filled
 * by hand (fake device pointers: nothing is read through them) against this
 * file's own account of what each op's setup makes and its kernels read
 * (kb_rope_args, kb_norm_args, kb_mlp_args); the tables' `when` conditions;
 * refusals of states that do not match; the printed table. On a GPU, the same
 * after the ops' real setup(). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <cuda_runtime_api.h>

#include "have_gpu.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cli/core/errors.h"
#include "../cli/core/op.h"
#include "../cli/core/params.h"
#include "../cli/core/registry.h"
#include "../cli/core/tensors.h"
#include "../include/kb_dtype.h"
#include "../include/kbench_plugin.h"

/* ---- cases --------------------------------------------------------------- */

/* The cases of one sweep: kv is NAME, VALUES pairs (flag syntax), NULL-ended;
 * each case gets its own seed. */
static kb_case *expand(const char *opname, const char *const *kv, int *n)
{
    const kb_op *op = kb_find_op(opname);
    assert_non_null(op);
    kb_sweep s;
    kb_sweep_init(&s, op);
    char err[KB_ERRLEN] = "";
    for (int i = 0; kv[i]; i += 2)
        if (kb_sweep_set(&s, kv[i], kv[i + 1], err, sizeof err)) fail_msg("%s %s=%s: %s", opname, kv[i], kv[i + 1], err);
    kb_case *cases = NULL;
    *n = 0;
    if (kb_sweep_expand(&s, &cases, n, err, sizeof err)) fail_msg("%s: %s", opname, err);
    kb_sweep_free(&s);
    assert_true(*n > 0);
    for (int i = 0; i < *n; i++) cases[i].seed = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
    return cases;
}

static const char *label(const kb_case *c)
{
    static char buf[512];
    snprintf(buf, sizeof buf, "%s ", c->op->name);
    kb_case_label(c, buf + strlen(buf), sizeof buf - strlen(buf));
    return buf;
}

static int is(const kb_case *c, const char *param, const char *value)
{
    const char *v = kb_case_enum(c, param);
    return v && !strcmp(v, value);
}

/* ---- what each op's tensors must be (this file's own account) ------------ */

typedef struct {
    const char *name;
    kb_dtype dtype;
    int is_int32;
    int ndim;
    int64_t shape[KBP_MAX_DIMS];
    int extra; /* not one of st's buffers: the op keeps it in st->priv (RoPE's cu_seqlens) */
} want;

typedef struct {
    want in[KB_MAX_PLUGIN_INPUTS], out[KB_MAX_OUTPUTS];
    int nin, nout;
} wants;

static void add(want *w, int *n, const char *name, kb_dtype dt, int ndim, int64_t d0, int64_t d1, int64_t d2, int64_t d3)
{
    w[*n] = (want){name, dt, 0, ndim, {d0, d1, d2, d3}, 0};
    ++*n;
}

/* RoPE: kb_rope_args reads in (t or dy), angles and, for thd, cu_seqlens;
 * writes out (out or dt), the same shape as in. */
static void rope_wants(const kb_case *c, wants *w)
{
    memset(w, 0, sizeof *w);
    kb_dtype dt = kb_case_dtype(c);
    long seq = kb_case_int(c, "seq"), batch = kb_case_int(c, "batch"), heads = kb_case_int(c, "heads"),
         dim = kb_case_int(c, "dim"), rot = kb_case_int(c, "rotary_dim") ? kb_case_int(c, "rotary_dim") : dim;
    int bwd = is(c, "pass", "bwd");
    int64_t s[4] = {seq, batch, heads, dim};
    int nd = 4;
    long positions = seq, nseq = batch;
    if (is(c, "layout", "bshd")) s[0] = batch, s[1] = seq;
    if (is(c, "layout", "thd")) {
        const kb_val *sl = kb_case_val(c, "seqlens");
        long tokens = 0;
        if (sl->nlist) {
            nseq = sl->nlist;
            positions = 0;
            for (int i = 0; i < sl->nlist; i++) {
                tokens += sl->list[i];
                if (sl->list[i] > positions) positions = sl->list[i];
            }
        } else {
            /* lengths drawn from the seed: the byte model says how many
             * tokens (bytes_written: the output, rows * dim elements) and
             * how long the angle table (bytes: input, output and the table) */
            double es = (double)kb_dtype_size(dt), written = c->op->bytes_written(c);
            tokens = (long)(written / (es * (double)dim * (double)heads));
            positions = (long)((c->op->bytes(c) - 2 * written) / ((double)(rot / 2) * 4.0));
            assert_true(tokens >= nseq && tokens <= nseq * seq);
            assert_true(positions >= 1 && positions <= seq);
        }
        s[0] = tokens, s[1] = heads, s[2] = dim;
        nd = 3;
    }
    add(w->in, &w->nin, bwd ? "dy" : "t", dt, nd, s[0], s[1], s[2], s[3]);
    add(w->in, &w->nin, "angles", KB_FP32, 2, positions, rot / 2, 0, 0);
    if (is(c, "layout", "thd")) {
        add(w->in, &w->nin, "cu_seqlens", KB_FP32, 1, nseq + 1, 0, 0, 0);
        w->in[w->nin - 1].is_int32 = 1;
        w->in[w->nin - 1].extra = 1;
    }
    add(w->out, &w->nout, bwd ? "dt" : "out", dt, nd, s[0], s[1], s[2], s[3]);
}

/* LayerNorm / RMSNorm: kb_norm_args reads x, gamma (affine), beta (LayerNorm
 * forward, affine), and backward dy and the saved mean (LayerNorm) and rstd;
 * writes forward y, mean (LayerNorm), rstd, backward dx, dgamma and dbeta
 * (LayerNorm) when affine; statistics and column sums in fp32. Setup's order. */
static void norm_wants(const kb_case *c, wants *w)
{
    memset(w, 0, sizeof *w);
    kb_dtype dt = kb_case_dtype(c);
    long rows = kb_case_int(c, "rows"), cols = kb_case_int(c, "cols");
    int rms = !strcmp(c->op->name, "rmsnorm"), bwd = is(c, "pass", "bwd"), aff = is(c, "affine", "on");
    add(w->in, &w->nin, "x", dt, 2, rows, cols, 0, 0);
    if (aff) add(w->in, &w->nin, "gamma", dt, 1, cols, 0, 0, 0);
    if (aff && !rms && !bwd) add(w->in, &w->nin, "beta", dt, 1, cols, 0, 0, 0);
    if (bwd) {
        add(w->in, &w->nin, "dy", dt, 2, rows, cols, 0, 0);
        if (!rms) add(w->in, &w->nin, "mean", KB_FP32, 1, rows, 0, 0, 0);
        add(w->in, &w->nin, "rstd", KB_FP32, 1, rows, 0, 0, 0);
        add(w->out, &w->nout, "dx", dt, 2, rows, cols, 0, 0);
        if (aff) add(w->out, &w->nout, "dgamma", KB_FP32, 1, cols, 0, 0, 0);
        if (aff && !rms) add(w->out, &w->nout, "dbeta", KB_FP32, 1, cols, 0, 0, 0);
    } else {
        add(w->out, &w->nout, "y", dt, 2, rows, cols, 0, 0);
        if (!rms) add(w->out, &w->nout, "mean", KB_FP32, 1, rows, 0, 0, 0);
        add(w->out, &w->nout, "rstd", KB_FP32, 1, rows, 0, 0, 0);
    }
}

/* MLP: x, G, U, D (nn.Linear's out x in) and y; not the stacked [G; U] nor
 * the g/u and h workspaces kb_mlp_args also carries. */
static void mlp_wants(const kb_case *c, wants *w)
{
    memset(w, 0, sizeof *w);
    kb_dtype dt = kb_case_dtype(c);
    long T = kb_case_int(c, "tokens"), H = kb_case_int(c, "hidden"), In = kb_case_int(c, "inter");
    add(w->in, &w->nin, "x", dt, 2, T, H, 0, 0);
    add(w->in, &w->nin, "G", dt, 2, In, H, 0, 0);
    add(w->in, &w->nin, "U", dt, 2, In, H, 0, 0);
    add(w->in, &w->nin, "D", dt, 2, H, In, 0, 0);
    add(w->out, &w->nout, "y", dt, 2, T, H, 0, 0);
}

static void wants_of(const kb_case *c, wants *w)
{
    if (!strcmp(c->op->name, "rope")) rope_wants(c, w);
    else if (!strcmp(c->op->name, "mlp")) mlp_wants(c, w);
    else norm_wants(c, w);
}

static size_t numel(int ndim, const int64_t *shape)
{
    size_t n = 1;
    for (int i = 0; i < ndim; i++) n *= (size_t)shape[i];
    return n;
}

/* a fake device address, distinct for each buffer, 256-aligned like cudaMalloc's */
#define FAKE(k) ((void *)(uintptr_t)(0x100000u + 0x1000u * (unsigned)(k)))

/* The kb_state setup would leave, with fake device pointers: st's buffers
 * are the wants that are not extras. */
static void fake_state(const wants *w, kb_state *st)
{
    memset(st, 0, sizeof *st);
    int k = 0;
    for (int i = 0; i < w->nin; i++) {
        if (w->in[i].extra) continue;
        st->in[st->nin++] = (kb_buf){w->in[i].name, w->in[i].dtype, numel(w->in[i].ndim, w->in[i].shape), FAKE(k++), NULL, NULL};
    }
    for (int i = 0; i < w->nout; i++)
        st->out[st->nout++] = (kb_buf){w->out[i].name, w->out[i].dtype, numel(w->out[i].ndim, w->out[i].shape), FAKE(k++), NULL, NULL};
}

/* ---- the checks ----------------------------------------------------------- */

static const kbp_tensor *find(const kbp_tensor *t, int n, const char *name)
{
    const kbp_tensor *f = NULL;
    for (int i = 0; i < n; i++)
        if (t[i].name && !strcmp(t[i].name, name)) {
            if (f) fail_msg("tensor %s is there twice", name);
            f = &t[i];
        }
    return f;
}

/* t is w: dtype, shape, row-major strides */
static void check_tensor(const kb_case *c, const kbp_tensor *t, const want *w)
{
    const char *l = label(c);
    if (t->is_int32 != w->is_int32) fail_msg("%s: %s is_int32 %d, want %d", l, w->name, t->is_int32, w->is_int32);
    if (!w->is_int32 && (int)t->dtype != (int)w->dtype) fail_msg("%s: %s dtype %d, want %d", l, w->name, (int)t->dtype, (int)w->dtype);
    if (t->ndim != w->ndim) fail_msg("%s: %s has %d dimensions, want %d", l, w->name, t->ndim, w->ndim);
    for (int i = 0; i < w->ndim; i++)
        if (t->shape[i] != w->shape[i])
            fail_msg("%s: %s shape[%d] = %lld, want %lld", l, w->name, i, (long long)t->shape[i], (long long)w->shape[i]);
    int64_t stride = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->stride[i] != stride)
            fail_msg("%s: %s stride[%d] = %lld, want %lld (row-major)", l, w->name, i, (long long)t->stride[i], (long long)stride);
        stride *= t->shape[i];
    }
    assert_non_null(t->data);
}

/* in[]/out[] against the table: every declaration whose `when` holds for c
 * is there once in its direction, and nothing else */
static void check_table(const kb_case *c, const kbp_tensor *in, int nin, const kbp_tensor *out, int nout)
{
    const kb_op *op = c->op;
    int seen_in = 0, seen_out = 0;
    for (int i = 0; i < op->ntensors; i++) {
        const kb_tensor_decl *d = &op->tensors[i];
        int w = kb_tensor_when(c, d->when);
        if (w < 0) fail_msg("%s: %s's condition '%s' is malformed", op->name, d->name, d->when);
        const kbp_tensor *t = d->output ? find(out, nout, d->name) : find(in, nin, d->name);
        if (w && !t) fail_msg("%s: %s %s (%s) is missing", label(c), d->output ? "output" : "input", d->name, d->when);
        if (!w && t && !kb_tensor_decl_find(c, d->name, d->output))
            fail_msg("%s: %s is there though its condition '%s' does not hold", label(c), d->name, d->when);
        if (w && d->output) seen_out++;
        else if (w) seen_in++;
    }
    if (seen_in != nin || seen_out != nout)
        fail_msg("%s: %d inputs and %d outputs, the table declares %d and %d", label(c), nin, nout, seen_in, seen_out);
}

/* plugin_tensors for c on st (RoPE's thd: with cu_seqlens given), checked
 * against this file's wants, st's buffers and the table */
static void check_case(const kb_case *c, const kb_state *st, const int *cu_seqlens)
{
    const char *l = label(c);
    wants w;
    wants_of(c, &w);
    kbp_tensor in[KB_MAX_PLUGIN_INPUTS], out[KB_MAX_OUTPUTS];
    memset(in, 0xab, sizeof in);
    memset(out, 0xab, sizeof out);
    int nin = -1, nout = -1;
    kb_last_error[0] = 0;
    int rc = !strcmp(c->op->name, "rope") ? kb_rope_plugin_tensors(c, st, cu_seqlens, in, &nin, out, &nout)
                                          : c->op->plugin_tensors(c, st, in, &nin, out, &nout);
    if (rc) fail_msg("%s: plugin_tensors failed: %s", l, kb_last_error);
    if (nin != w.nin) fail_msg("%s: %d inputs, want %d", l, nin, w.nin);
    if (nout != w.nout) fail_msg("%s: %d outputs, want %d", l, nout, w.nout);
    /* every input the kernels read, as this file knows them */
    for (int i = 0; i < w.nin; i++) {
        const kbp_tensor *t = find(in, nin, w.in[i].name);
        if (!t) fail_msg("%s: input %s is missing", l, w.in[i].name);
        check_tensor(c, t, &w.in[i]);
        if (w.in[i].extra && t->data != cu_seqlens) fail_msg("%s: %s is not the given pointer", l, w.in[i].name);
    }
    /* out[i] is st->out[i]: the pointer and the element count kbench verifies */
    for (int i = 0; i < w.nout; i++) {
        if (!out[i].name || strcmp(out[i].name, w.out[i].name))
            fail_msg("%s: out[%d] is %s, want %s", l, i, out[i].name ? out[i].name : "(null)", w.out[i].name);
        check_tensor(c, &out[i], &w.out[i]);
    }
    assert_int_equal(nout, st->nout);
    for (int i = 0; i < st->nout; i++) {
        if (out[i].data != st->out[i].dev) fail_msg("%s: out[%d] (%s) is not st->out[%d]'s memory", l, i, out[i].name, i);
        if (numel(out[i].ndim, out[i].shape) != st->out[i].n)
            fail_msg("%s: out[%d] (%s) has %zu elements, st->out[%d] %zu", l, i, out[i].name, numel(out[i].ndim, out[i].shape), i,
                     st->out[i].n);
        if ((int)out[i].dtype != (int)st->out[i].dtype) fail_msg("%s: out[%d] dtype differs from st's", l, i);
        assert_string_equal(out[i].name, st->out[i].name);
    }
    /* every buffer of st is an input under its own name, its memory and size */
    for (int k = 0; k < st->nin; k++) {
        const kbp_tensor *t = find(in, nin, st->in[k].name);
        if (!t) fail_msg("%s: st->in[%d] (%s) is not handed out", l, k, st->in[k].name);
        if (t->data != st->in[k].dev) fail_msg("%s: %s is not st->in[%d]'s memory", l, t->name, k);
        if (numel(t->ndim, t->shape) != st->in[k].n) fail_msg("%s: %s's shape is not st->in[%d]'s %zu elements", l, t->name, k, st->in[k].n);
        if ((int)t->dtype != (int)st->in[k].dtype) fail_msg("%s: %s dtype differs from st's", l, t->name);
    }
    check_table(c, in, nin, out, nout);
    assert_int_equal(kb_plugin_tensors_check(c, in, nin, out, nout), 0);
    /* and kbp_input/kbp_output (the header's look-ups) find them by name */
    kbp_case kc = {.op = c->op->name, .ninputs = nin, .noutputs = nout, .inputs = in, .outputs = out};
    for (int i = 0; i < w.nin; i++) assert_non_null(kbp_input(&kc, w.in[i].name));
    for (int i = 0; i < w.nout; i++) assert_ptr_equal(kbp_output(&kc, w.out[i].name), &out[i]);
}

static void check_sweep(const char *op, const char *const *kv)
{
    int n = 0;
    kb_case *cases = expand(op, kv, &n);
    for (int i = 0; i < n; i++) {
        const kb_case *c = &cases[i];
        wants w;
        wants_of(c, &w);
        kb_state st;
        fake_state(&w, &st);
        check_case(c, &st, (const int *)FAKE(99));
        if (!strcmp(op, "rope")) {
            /* through the op's own entry point: no priv needed but for thd */
            kbp_tensor in[KB_MAX_PLUGIN_INPUTS], out[KB_MAX_OUTPUTS];
            int nin = 0, nout = 0;
            int rc = c->op->plugin_tensors(c, &st, in, &nin, out, &nout);
            if (is(c, "layout", "thd")) {
                if (!rc) fail_msg("%s: thd without setup's cu_seqlens was accepted", label(c));
                assert_non_null(strstr(kb_last_error, "cu_seqlens"));
            } else if (rc) {
                fail_msg("%s: %s", label(c), kb_last_error);
            } else {
                assert_int_equal(nin, w.nin);
                assert_ptr_equal(out[0].data, st.out[0].dev);
            }
        }
    }
    kb_cases_free(cases, n);
}

/* ---- every op, every combination ------------------------------------------ */

static void test_rope(void **state)
{
    (void)state;
    /* sbhd, bshd: odd sizes, whole and partial rotary, an odd dim */
    const char *a[] = {"pass", "fwd,bwd", "dtype", "fp32,fp16,bf16", "style", "neox,gptj", "layout", "sbhd,bshd",
                       "seq", "1,7", "batch", "3", "heads", "5", "dim", "6,130", NULL};
    check_sweep("rope", a);
    const char *b[] = {"pass", "fwd,bwd", "dtype", "fp32,fp16,bf16", "style", "neox,gptj", "layout", "sbhd,bshd",
                       "seq", "19", "batch", "2", "heads", "3", "dim", "7", "rotary_dim", "2,4,6", NULL};
    check_sweep("rope", b);
    /* thd: given lengths (the angle table as long as the longest), and drawn ones */
    const char *t[] = {"pass", "fwd,bwd", "dtype", "fp32,fp16,bf16", "style", "neox,gptj", "layout", "thd",
                       "seq", "50", "heads", "3", "dim", "64,18", "seqlens", "1/5,50,17/50,1,1,33", NULL};
    check_sweep("rope", t);
    const char *d[] = {"pass", "fwd,bwd", "dtype", "fp32,fp16,bf16", "layout", "thd", "seq", "33", "batch", "1,4,9",
                       "heads", "2", "dim", "8", "rotary_dim", "0,4", NULL};
    check_sweep("rope", d);
}

static void test_norms(void **state)
{
    (void)state;
    const char *kv[] = {"pass", "fwd,bwd", "dtype", "fp32,fp16,bf16", "affine", "on,none", "rows", "1,7", "cols",
                        "1,127,4097", NULL};
    check_sweep("layernorm", kv);
    check_sweep("rmsnorm", kv);
    /* the tunables change nothing a plugin sees */
    const char *tun[] = {"pass", "fwd,bwd", "vec", "auto,4", "stages", "auto,3", "rows", "3", "cols", "1000", NULL};
    check_sweep("layernorm", tun);
}

static void test_mlp(void **state)
{
    (void)state;
    const char *kv[] = {"dtype", "fp32,fp16,bf16", "tf32", "off", "tokens", "1,31", "hidden", "5,520", "inter", "7,1400", NULL};
    check_sweep("mlp", kv);
    const char *tf[] = {"dtype", "fp32", "tf32", "on", "tokens", "3,130", "hidden", "257", "inter", "513", NULL};
    check_sweep("mlp", tf);
}

/* every op has a table and a plugin_tensors; its conditions are well formed
 * and no two declarations of one name and direction hold at once */
static void test_tables(void **state)
{
    (void)state;
    for (int o = 0; o < kb_nops; o++) {
        const kb_op *op = kb_ops[o];
        assert_non_null(op->tensors);
        assert_true(op->ntensors > 0);
        assert_non_null(op->plugin_tensors);
        int has_out = 0;
        for (int i = 0; i < op->ntensors; i++) {
            const kb_tensor_decl *d = &op->tensors[i];
            assert_non_null(d->name);
            assert_non_null(d->shape);
            if (!d->help || strlen(d->help) < 10) fail_msg("%s: %s has no help", op->name, d->name);
            has_out |= d->output;
        }
        assert_true(has_out);
        /* every combination of the op's enums (not the tunables) */
        const char *kv[2 * KB_MAX_PARAMS + 1];
        int k = 0;
        for (int p = 0; p < op->nparams; p++)
            if (op->params[p].type == KB_P_ENUM && !op->params[p].tunable && strcmp(op->params[p].name, "tf32"))
                kv[k++] = op->params[p].name, kv[k++] = op->params[p].choices;
        kv[k] = NULL;
        int n = 0;
        kb_case *cases = expand(op->name, kv, &n);
        for (int c = 0; c < n; c++) {
            for (int i = 0; i < op->ntensors; i++) {
                const kb_tensor_decl *d = &op->tensors[i];
                if (kb_tensor_when(&cases[c], d->when) < 0) fail_msg("%s: %s: malformed '%s'", op->name, d->name, d->when);
                for (int j = i + 1; j < op->ntensors; j++) {
                    const kb_tensor_decl *e = &op->tensors[j];
                    if (!strcmp(d->name, e->name) && d->output == e->output && kb_tensor_when(&cases[c], d->when) &&
                        kb_tensor_when(&cases[c], e->when))
                        fail_msg("%s: two declarations of %s hold for %s", op->name, d->name, label(&cases[c]));
                }
            }
        }
        kb_cases_free(cases, n);
    }
}

static void test_when(void **state)
{
    (void)state;
    const char *kv[] = {"pass", "bwd", "affine", "on", "rows", "7", NULL};
    int n = 0;
    kb_case *cs = expand("layernorm", kv, &n);
    assert_int_equal(n, 1);
    const kb_case *c = &cs[0];
    assert_int_equal(kb_tensor_when(c, NULL), 1);
    assert_int_equal(kb_tensor_when(c, ""), 1);
    assert_int_equal(kb_tensor_when(c, "pass=bwd"), 1);
    assert_int_equal(kb_tensor_when(c, "pass=fwd"), 0);
    assert_int_equal(kb_tensor_when(c, "pass=bwd affine=on"), 1);
    assert_int_equal(kb_tensor_when(c, "  pass=bwd   affine=on "), 1);
    assert_int_equal(kb_tensor_when(c, "pass=bwd affine=none"), 0);
    assert_int_equal(kb_tensor_when(c, "affine=none pass=bwd"), 0);
    assert_int_equal(kb_tensor_when(c, "rows=7"), 1);
    assert_int_equal(kb_tensor_when(c, "rows=8"), 0);
    assert_int_equal(kb_tensor_when(c, "pass"), -1);
    assert_int_equal(kb_tensor_when(c, "pass="), -1);
    assert_int_equal(kb_tensor_when(c, "=bwd"), -1);
    assert_int_equal(kb_tensor_when(c, "layout=thd"), -1);  /* not a layernorm parameter */
    assert_int_equal(kb_tensor_when(c, "pass=back"), -1);   /* not a choice: a typo, not "false" */
    assert_int_equal(kb_tensor_when(c, "pass=fwd pass"), -1); /* malformed even after a false term */
    kb_cases_free(cs, n);
}

/* ---- refusals: a state that does not match the case ---------------------- */

/* plugin_tensors refuses st with a message containing has */
static void expect_refused(const kb_case *c, const kb_state *st, const char *has, const char *what)
{
    kbp_tensor in[KB_MAX_PLUGIN_INPUTS], out[KB_MAX_OUTPUTS];
    int nin = 0, nout = 0;
    kb_last_error[0] = 0;
    if (!c->op->plugin_tensors(c, st, in, &nin, out, &nout)) fail_msg("%s: %s was accepted", label(c), what);
    if (!strstr(kb_last_error, has)) fail_msg("%s: %s: message lacks '%s': %s", label(c), what, has, kb_last_error);
    assert_int_equal(nin, 0);
    assert_int_equal(nout, 0);
}

static void test_refusals(void **state)
{
    (void)state;
    const char *kv[] = {"pass", "bwd", "affine", "on", "rows", "7", "cols", "127", NULL};
    int n = 0;
    kb_case *cs = expand("layernorm", kv, &n);
    const kb_case *c = &cs[0];
    wants w;
    norm_wants(c, &w);
    kb_state ok, st;
    fake_state(&w, &ok);
    check_case(c, &ok, NULL);

    st = ok;
    st.out[0].n--; /* dx one element short */
    expect_refused(c, &st, "dx", "a short output");
    st = ok;
    st.in[0].n *= 2;
    expect_refused(c, &st, "x holds", "a long input");
    st = ok;
    st.nin--; /* rstd left out */
    expect_refused(c, &st, "rstd", "a missing input");
    st = ok;
    st.nout--; /* dbeta left out */
    expect_refused(c, &st, "dbeta", "a missing output");
    st = ok;
    st.in[1].name = "bogus";
    expect_refused(c, &st, "bogus", "an unknown input");
    st = ok;
    st.in[st.nin++] = (kb_buf){"beta", KB_BF16, 127, FAKE(50), NULL, NULL}; /* the backward has no beta */
    expect_refused(c, &st, "beta", "an input of the forward");
    st = ok;
    st.in[st.nin++] = st.in[0]; /* x twice */
    expect_refused(c, &st, "x", "an input twice");
    st = ok;
    st.out[1].dev = NULL;
    expect_refused(c, &st, "dgamma", "an output without memory");
    st = ok;
    st.out[0].name = "y"; /* the forward's output in the backward */
    expect_refused(c, &st, "y", "the forward's output");

    /* a table that disagrees with setup is caught when the tensors are made */
    kb_op bad = *c->op;
    kb_tensor_decl t[32];
    assert_true(bad.ntensors <= 32);
    memcpy(t, c->op->tensors, (size_t)bad.ntensors * sizeof *t);
    bad.tensors = t;
    kb_case bc = *c;
    bc.op = &bad;
    for (int i = 0; i < bad.ntensors; i++)
        if (!strcmp(t[i].name, "dbeta")) t[i].when = "pass=fwd affine=on";
    expect_refused(&bc, &ok, "dbeta", "a table without the backward's dbeta");
    memcpy(t, c->op->tensors, (size_t)bad.ntensors * sizeof *t);
    for (int i = 0; i < bad.ntensors; i++)
        if (!strcmp(t[i].name, "beta")) t[i].when = "affine=on"; /* beta in the backward too */
    expect_refused(&bc, &ok, "beta", "a table that wants beta in the backward");
    memcpy(t, c->op->tensors, (size_t)bad.ntensors * sizeof *t);
    for (int i = 0; i < bad.ntensors; i++)
        if (!strcmp(t[i].name, "gamma")) t[i].when = "affine=yes";
    expect_refused(&bc, &ok, "gamma", "a malformed condition");
    kb_cases_free(cs, n);

    /* RoPE: thd's cu_seqlens must be there; the angle table must match */
    const char *r[] = {"layout", "thd", "seq", "50", "heads", "2", "dim", "8", "seqlens", "5,50,17", NULL};
    cs = expand("rope", r, &n);
    c = &cs[0];
    wants rw;
    rope_wants(c, &rw);
    fake_state(&rw, &ok);
    kbp_tensor in[KB_MAX_PLUGIN_INPUTS], out[KB_MAX_OUTPUTS];
    int nin, nout;
    assert_int_equal(kb_rope_plugin_tensors(c, &ok, (const int *)FAKE(9), in, &nin, out, &nout), 0);
    const kbp_tensor *cu = find(in, nin, "cu_seqlens");
    assert_non_null(cu);
    assert_int_equal(cu->shape[0], 4);
    assert_int_equal(find(in, nin, "angles")->shape[0], 50); /* the longest sequence */
    assert_int_equal(find(in, nin, "t")->shape[0], 72);
    assert_int_not_equal(kb_rope_plugin_tensors(c, &ok, NULL, in, &nin, out, &nout), 0);
    assert_non_null(strstr(kb_last_error, "cu_seqlens"));
    st = ok;
    st.in[1].n += 4; /* an angle table one position longer */
    assert_int_not_equal(kb_rope_plugin_tensors(c, &st, (const int *)FAKE(9), in, &nin, out, &nout), 0);
    assert_non_null(strstr(kb_last_error, "angles"));
    kb_cases_free(cs, n);
}

/* kb_plugin_tensor on its own: strides, and what it refuses */
static void test_plugin_tensor(void **state)
{
    (void)state;
    int n = 0;
    const char *kv[] = {NULL};
    kb_case *cs = expand("mlp", kv, &n);
    kb_tensor_decl d = {"w", 0, NULL, "[a, b, c, d]", "a test"};
    kbp_tensor t;
    int64_t s4[] = {2, 3, 5, 7};
    assert_int_equal(kb_plugin_tensor(&t, &cs[0], &d, FAKE(1), KB_BF16, 0, 210, 4, s4), 0);
    assert_int_equal(t.stride[0], 105);
    assert_int_equal(t.stride[1], 35);
    assert_int_equal(t.stride[2], 7);
    assert_int_equal(t.stride[3], 1);
    assert_int_equal(t.dtype, KBP_BF16);
    assert_int_equal(t.is_int32, 0);
    assert_string_equal(t.name, "w");
    assert_int_equal(kb_plugin_tensor(&t, &cs[0], &d, FAKE(1), KB_FP16, 1, 210, 4, s4), 0);
    assert_int_equal(t.is_int32, 1);
    assert_int_equal(kb_plugin_tensor(&t, &cs[0], &d, FAKE(1), KB_BF16, 0, 211, 4, s4), -1);
    assert_non_null(strstr(kb_last_error, "211"));
    assert_int_equal(kb_plugin_tensor(&t, &cs[0], &d, NULL, KB_BF16, 0, 210, 4, s4), -1);
    assert_int_equal(kb_plugin_tensor(&t, &cs[0], &d, FAKE(1), KB_BF16, 0, 210, 0, s4), -1);
    assert_int_equal(kb_plugin_tensor(&t, &cs[0], &d, FAKE(1), KB_BF16, 0, 210, KBP_MAX_DIMS + 1, s4), -1);
    int64_t neg[] = {-2, -105};
    assert_int_equal(kb_plugin_tensor(&t, &cs[0], &d, FAKE(1), KB_BF16, 0, 210, 2, neg), -1);
    int64_t zero[] = {0, 5};
    assert_int_equal(kb_plugin_tensor(&t, &cs[0], &d, FAKE(1), KB_BF16, 0, 0, 2, zero), 0);
    kb_cases_free(cs, n);
}

/* ---- the printed table ---------------------------------------------------- */

/* s with every run of white space one space */
static void squeeze(char *s)
{
    char *o = s;
    int sp = 0;
    for (char *p = s; *p; p++) {
        if (*p == ' ' || *p == '\n') {
            if (!sp && o != s) *o++ = ' ';
            sp = 1;
        } else {
            *o++ = *p;
            sp = 0;
        }
    }
    *o = 0;
}

static void test_print(void **state)
{
    (void)state;
    for (int o = 0; o < kb_nops; o++) {
        const kb_op *op = kb_ops[o];
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        kb_op_print_tensors(f, op);
        fclose(f);
        /* no line past 100 columns */
        for (char *line = buf; *line;) {
            size_t l = strcspn(line, "\n");
            if (l > 100) fail_msg("%s: a line of %zu columns: %.*s", op->name, l, (int)l, line);
            line += l + (line[l] == '\n');
        }
        /* each tensor on a line of its own: name, direction, condition */
        for (int i = 0; i < op->ntensors; i++) {
            const kb_tensor_decl *d = &op->tensors[i];
            char head[128];
            snprintf(head, sizeof head, "\n    %s ", d->name);
            const char *at = strstr(buf, head);
            if (!at) fail_msg("%s: no line for %s", op->name, d->name);
            /* the declaration's own line (a name may be there twice: in and out) */
            int found = 0;
            for (; at && !found; at = strstr(at + 1, head)) {
                size_t l = strcspn(at + 1, "\n");
                char line[256];
                snprintf(line, sizeof line, "%.*s", (int)l, at + 1);
                found = strstr(line, d->output ? " out " : " in ") && strstr(line, d->when ? d->when : "always");
            }
            if (!found) fail_msg("%s: %s's line lacks its direction or condition", op->name, d->name);
        }
        /* the shapes and the help lines whole, wherever they were wrapped */
        squeeze(buf);
        for (int i = 0; i < op->ntensors; i++) {
            char want[1024];
            snprintf(want, sizeof want, "%s", op->tensors[i].help);
            squeeze(want);
            if (!strstr(buf, want)) fail_msg("%s: %s's help is not there whole", op->name, op->tensors[i].name);
            snprintf(want, sizeof want, "%s", op->tensors[i].shape);
            squeeze(want);
            if (!strstr(buf, want)) fail_msg("%s: %s's shape is not there whole", op->name, op->tensors[i].name);
        }
        free(buf);
    }
    /* an op without a table says so */
    kb_op none = *kb_find_op("rope");
    none.tensors = NULL;
    none.ntensors = 0;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    kb_op_print_tensors(f, &none);
    fclose(f);
    assert_non_null(strstr(buf, "none"));
    free(buf);
}

/* ---- on the GPU: after the ops' own setup() ------------------------------- */


static void check_setup_sweep(const char *op, const char *const *kv)
{
    int n = 0;
    kb_case *cases = expand(op, kv, &n);
    for (int i = 0; i < n; i++) {
        const kb_case *c = &cases[i];
        kb_state st;
        memset(&st, 0, sizeof st);
        kb_last_error[0] = 0;
        int rc = c->op->setup(c, &st);
        if (rc) fail_msg("%s: setup: %d %s", label(c), rc, kb_last_error);
        kbp_tensor in[KB_MAX_PLUGIN_INPUTS], out[KB_MAX_OUTPUTS];
        int nin = 0, nout = 0;
        if (c->op->plugin_tensors(c, &st, in, &nin, out, &nout)) fail_msg("%s: %s", label(c), kb_last_error);
        const kbp_tensor *cu = find(in, nin, "cu_seqlens");
        check_case(c, &st, cu ? (const int *)cu->data : NULL);
        if (cu) { /* setup's prefix sums: 0, increasing, the last the tokens */
            int *h = malloc((size_t)cu->shape[0] * sizeof *h);
            assert_int_equal(cudaMemcpy(h, cu->data, (size_t)cu->shape[0] * sizeof *h, cudaMemcpyDeviceToHost), cudaSuccess);
            assert_int_equal(h[0], 0);
            for (int64_t k = 1; k < cu->shape[0]; k++) assert_true(h[k] > h[k - 1]);
            assert_int_equal(h[cu->shape[0] - 1], out[0].shape[0]);
            free(h);
        }
        if (c->op->teardown) c->op->teardown(c, &st);
        for (int k = 0; k < st.nin; k++) { cudaFree(st.in[k].dev); free(st.in[k].host); }
        for (int k = 0; k < st.nout; k++) { cudaFree(st.out[k].dev); free(st.out[k].ref); free(st.out[k].rows); }
    }
    kb_cases_free(cases, n);
}

static void test_after_setup(void **state)
{
    (void)state;
    if (!have_gpu()) skip();
    const char *r[] = {"pass", "fwd,bwd", "dtype", "fp32,bf16", "layout", "sbhd,bshd", "seq", "7", "batch", "3",
                       "heads", "5", "dim", "6,130", "rotary_dim", "0,6", NULL};
    check_setup_sweep("rope", r);
    const char *t[] = {"pass", "fwd,bwd", "dtype", "fp16", "layout", "thd", "seq", "50", "heads", "3", "dim", "18",
                       "seqlens", "1/5,50,17", NULL};
    check_setup_sweep("rope", t);
    const char *td[] = {"layout", "thd", "seq", "33", "batch", "4", "heads", "2", "dim", "8", NULL};
    check_setup_sweep("rope", td);
    const char *nm[] = {"pass", "fwd,bwd", "dtype", "fp32,fp16,bf16", "affine", "on,none", "rows", "7", "cols", "127", NULL};
    check_setup_sweep("layernorm", nm);
    check_setup_sweep("rmsnorm", nm);
    const char *m[] = {"dtype", "fp32,fp16,bf16", "tokens", "3", "hidden", "5", "inter", "7", NULL};
    check_setup_sweep("mlp", m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tables),
        cmocka_unit_test(test_when),
        cmocka_unit_test(test_plugin_tensor),
        cmocka_unit_test(test_rope),
        cmocka_unit_test(test_norms),
        cmocka_unit_test(test_mlp),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_print),
        cmocka_unit_test(test_after_setup),
    };
    return cmocka_run_group_tests_name("tensors", tests, NULL, NULL);
}
