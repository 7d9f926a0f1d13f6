// rope_gptj.cu: rotary position embedding in the GPT-J style (adjacent pairs
// rotate), forward and backward, as a kbench plugin: implementation
// "example_gptj" of op "rope". Build it with `make examples`, then run
//   kbench rope --style gptj --impl naive,opt,example_gptj=build/examples/libkb_rope_gptj.so
//
// What kbench passes (`kbench list rope`): the parameters pass (fwd|bwd),
// layout (sbhd|bshd|thd), style (neox|gptj), seq, batch, heads, dim,
// rotary_dim (0: all of dim), base; the dtype in c->dtype; and by name:
//   fwd: input "t", output "out"; bwd: input "dy", output "dt"   (the dtype)
//        sbhd [seq, batch, heads, dim], bshd [batch, seq, heads, dim],
//        thd [tokens, heads, dim]: the sequences packed one after another
//   "angles" [positions, rot / 2] (fp32): theta = p * base^(-2i/rot)
//   "cu_seqlens" [nseq + 1] (int32, thd only): where each sequence starts
// Each row is one head vector of dim elements at position p: its index in its
// sequence (sbhd, bshd: the s coordinate). kbench's reference (refs/rope.c):
//   for each pair i < rot/2:  c = cos(angles[p][i]), s = sin(angles[p][i])
//     out[2i]   = t[2i] * c - t[2i+1] * s
//     out[2i+1] = t[2i+1] * c + t[2i] * s
//   out[j] = t[j] for rot <= j < dim (partial rotary: copied as they are)
// The backward rotates by -theta (s -> -s). We compute in fp32 and round once.
// Every element of the output is checked (NaN before the launch): write all.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#include "kbench_plugin.h"

__device__ float to_f(float v) { return v; }
__device__ float to_f(__half v) { return __half2float(v); }
__device__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ T from_f(float v);
template <> __device__ float from_f<float>(float v) { return v; }
template <> __device__ __half from_f<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __nv_bfloat16 from_f<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

enum Layout { SBHD, BSHD, THD };

// The shape of the case, as the kernel needs it.
struct Shape {
    long rows;         // head vectors in the tensor
    int dim, rot;      // elements a row, of which the first rot rotate
    Layout layout;
    long seq, batch, heads; // seq: bshd only; batch: sbhd only
    const int *cu;     // thd: cu_seqlens (device), nseq + 1 entries
    int nseq;
};

// The position of row r (one head vector).
__device__ long position(const Shape &a, long r)
{
    const long token = r / a.heads;
    if (a.layout == SBHD) return r / (a.batch * a.heads); // [s, b, h]: s outermost
    if (a.layout == BSHD) return token % a.seq;           // [b, s, h]
    int lo = 0, hi = a.nseq - 1; // thd: the last sequence that starts at or before token
    while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (a.cu[mid] <= token) lo = mid;
        else hi = mid - 1;
    }
    return token - a.cu[lo];
}

// One thread a pair of elements (2i, 2i+1) of a row: rotated where 2i < rot,
// copied past it (the last pair of an odd dim has one element).
template <typename T>
__global__ void rope_gptj(const T *in, T *out, const float *angles, Shape a, float sign)
{
    const int pairs = (a.dim + 1) / 2;
    const long k = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= a.rows * pairs) return;
    const long r = k / pairs;
    const int i = (int)(k - r * pairs), j = 2 * i;
    const T *x = in + r * a.dim;
    T *y = out + r * a.dim;
    if (j >= a.rot) { // not rotated: copied bit for bit
        y[j] = x[j];
        if (j + 1 < a.dim) y[j + 1] = x[j + 1];
        return;
    }
    float s, c;
    sincosf(angles[position(a, r) * (a.rot / 2) + i], &s, &c);
    s *= sign; // backward: the inverse rotation
    const float x0 = to_f(x[j]), x1 = to_f(x[j + 1]);
    y[j] = from_f<T>(x0 * c - x1 * s);
    y[j + 1] = from_f<T>(x1 * c + x0 * s);
}

// ---- the plugin: what kbench calls --------------------------------------
// Host only, no tensors yet: refuse what this file does not do, with a reason.
static int supports(const kbp_case *c, char *why, size_t n)
{
    const char *style = kbp_param(c, "style"), *layout = kbp_param(c, "layout");
    if (!style || strcmp(style, "gptj")) {
        snprintf(why, n, "style %s: this example rotates adjacent pairs only (style gptj)", style ? style : "?");
        return 1;
    }
    if (!layout || (strcmp(layout, "sbhd") && strcmp(layout, "bshd") && strcmp(layout, "thd"))) {
        snprintf(why, n, "layout %s: this example knows sbhd, bshd and thd", layout ? layout : "?");
        return 1;
    }
    if (c->dtype != KBP_FP32 && c->dtype != KBP_FP16 && c->dtype != KBP_BF16) {
        snprintf(why, n, "dtype %d: this example knows fp32, fp16 and bf16", (int)c->dtype);
        return 1;
    }
    return 0;
}

// Timed: one kernel on kbench's stream. No prepare: nothing to allocate.
template <typename T> static int run(const kbp_case *c, cudaStream_t stream)
{
    const bool bwd = kbp_param_is(c, "pass", "bwd");
    const kbp_tensor *in = kbp_input(c, bwd ? "dy" : "t"), *out = kbp_output(c, bwd ? "dt" : "out");
    const kbp_tensor *angles = kbp_input(c, "angles"), *cu = kbp_input(c, "cu_seqlens");
    Shape a = {};
    a.layout = kbp_param_is(c, "layout", "sbhd") ? SBHD : kbp_param_is(c, "layout", "bshd") ? BSHD : THD;
    if (!in || !out || !angles || in->ndim < 3 || angles->ndim != 2 || (a.layout == THD && !cu))
        return (int)cudaErrorInvalidValue;
    // The sizes from the tensors' shapes, which kbench makes authoritative
    // (rotary_dim 0 means all of dim; with --seqlens, thd's batch is not the
    // number of sequences): dim and heads are t's last two dimensions.
    a.dim = (int)in->shape[in->ndim - 1];
    a.heads = in->shape[in->ndim - 2];
    a.rot = 2 * (int)angles->shape[1];
    a.rows = kbp_numel(in) / a.dim;
    if (a.layout == SBHD) a.batch = in->shape[1]; // [seq, batch, heads, dim]
    if (a.layout == BSHD) a.seq = in->shape[1];   // [batch, seq, heads, dim]
    if (a.layout == THD) {
        a.cu = (const int *)cu->data;
        a.nseq = (int)kbp_numel(cu) - 1;
    }
    const long threads = a.rows * ((a.dim + 1) / 2);
    if (threads == 0) return 0;
    rope_gptj<T><<<(unsigned)((threads + 255) / 256), 256, 0, stream>>>(
        (const T *)in->data, (T *)out->data, (const float *)angles->data, a, bwd ? -1.f : 1.f);
    return (int)cudaGetLastError();
}
static int launch(const kbp_case *c, void *state, void *stream)
{
    (void)state;
    switch (c->dtype) {
    case KBP_FP32: return run<float>(c, (cudaStream_t)stream);
    case KBP_FP16: return run<__half>(c, (cudaStream_t)stream);
    case KBP_BF16: return run<__nv_bfloat16>(c, (cudaStream_t)stream);
    default: return (int)cudaErrorInvalidValue; // supports() refused it
    }
}

extern "C" const kbp_table *kbench_plugin(void)
{
    static const kbp_impl impls[] = {{"rope", "example_gptj", // op, name (--impl example_gptj=...)
        "GPT-J RoPE (adjacent pairs), one thread a pair, sincosf per pair; sbhd, bshd, thd; partial rotary",
        supports, NULL /* prepare */, launch, NULL /* release */, 0 /* flags: deterministic */,
        NULL /* inplace */, NULL /* accumulates */, NULL, 0 /* tunables */}};
    static const kbp_table table = {KBP_ABI_VERSION, 1, impls};
    return &table;
}
