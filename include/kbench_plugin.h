/* kbench_plugin.h: bring your own kernel to kbench.
 *
 * A plugin is a shared library (built with `nvcc -shared -Xcompiler -fPIC`,
 * or a C compiler) that exports one function,
 *
 *     const kbp_table *kbench_plugin(void);
 *
 * returning a table of implementations of kbench's ops (rope, layernorm,
 * rmsnorm, mlp: `kbench list` shows each op's parameters and `kbench list OP`
 * its tensors). kbench loads it with `--impl NAME=./lib.so` (or `--plugin
 * NAME=./lib.so`, or "plugins" in a sweep file's "settings"), and runs each
 * implementation like its own: inputs from the op's seeded generator, outputs
 * poisoned with NaN, verified against the op's double-precision reference
 * with each output's tolerance, timed by the same harness (L2 flushed,
 * medians), with GB/s, TFLOP/s, % of the ceilings, a speedup over the
 * baseline, and rows that `kbench compare` matches across runs.
 *
 * The contract:
 * - A launch must write every element of every output the op declares for
 *   the case (the tensors passed in c->outputs): kbench poisons them, and an
 *   element left unwritten fails verification.
 * - Deterministic: two launches on the same inputs write the same bits
 *   (kbench check runs every implementation twice and compares). An
 *   implementation that cannot promise it (floating-point atomics) sets
 *   KBP_NONDETERMINISTIC in its flags, and its rows skip that comparison.
 * - launch only launches: no allocation, no synchronisation, no host work
 *   that depends on the data. It is timed, called many times per prepare,
 *   and under `--timing graph` captured into a CUDA graph and replayed (so
 *   cuBLAS needs a workspace of its own, set after cublasSetStream). Allocate
 *   in prepare.
 * - Everything on the stream it is given (timing and the L2 flush use it).
 * - launch returns 0 or a cudaError_t: check cudaGetLastError() after your
 *   launches (a statically linked runtime's errors are invisible to kbench
 *   otherwise); kbench prints the error's name with the plugin, the
 *   implementation and the case. A library status (cuBLAS) maps to a
 *   cudaError_t of your choice.
 * - prepare(c, &state, stream, ...) is untimed and called once per case,
 *   before any launch, on the case's device (c->device, current) with the
 *   case's stream: the inputs are filled by then, so it may build what the
 *   kernel reads from them (a cos/sin cache in the case's dtype, positions
 *   per token), compile, autotune, warm up. kbench synchronises the stream
 *   after it returns. It returns 0, an error (with why), or KBP_NA: the case
 *   cannot run after all (what only prepare learns: memory, alignment), and
 *   the row is n/a with why. The tensors it sees are the ones every launch
 *   of the case gets (descriptors built on them stay valid). It must not
 *   change the inputs.
 * - release is called once after every prepare, whatever prepare returned,
 *   with the state as prepare left it (NULL if it set none).
 * - supports must refuse what the implementation does not handle: a dtype,
 *   a layout, a style. A kbench with a new dtype changes the ABI version.
 * - The case's parameters include every parameter `kbench list OP` shows,
 *   kbench's own tunables too (at "auto" unless a sweep fixes them).
 * - The plugin may be C or CUDA C++, call cuBLAS, CUTLASS or anything else:
 *   it is the user's library. kbench calls it from one thread.
 * - Names: letters, digits, '_', '-' and '.'. `--impl NAME=PATH` renames:
 *   the library's implementation of an op is NAME where it has one of that
 *   op, NAME.its_name where it has several; without NAME= the names stay.
 *   A name that a built-in implementation of the op has is refused.
 *
 * - In place: an implementation that writes an output over an input (an
 *   inference server's RoPE) says so in inplace, "OUT=IN" (comma list):
 *   kbench hands it IN's buffer as OUT (the same data pointer), restores IN
 *   untimed before every launch it times or verifies, and verifies what the
 *   launch left there. OUT and IN have the same dtype and shape.
 * - Accumulating outputs: one that adds into an output (a training
 *   backward's dx += ..., dgamma += ...) names it in accumulates (comma
 *   list): kbench zeroes it untimed before every launch instead of filling
 *   it with NaN, and the row's bytes count the kernel's read of it.
 * - Tunables: an implementation's own parameters (a block size, rows per
 *   block) in tunables[ntunables], each with a name, its values and a
 *   default. Each becomes a parameter of the op while the plugin is loaded: a
 *   flag (--NAME 128,256), a sweep file's key, a column of `kbench list OP`,
 *   part of the case that `compare` matches. Its value is "auto" unless a
 *   sweep fixes it; the plugin sees the default then (kbp_param(c, NAME)),
 *   and the row's kernel column names the value that ran. A case that
 *   fixes it is n/a for every other implementation, and kbench's own
 *   tunables (vec, stages, bn, ...) fixed are n/a for the plugin. Two
 *   plugins may share a tunable of the same name and values.
 * - RoPE's thd layout: the sequence count and offsets are data: the input
 *   cu_seqlens ([nseqs + 1] int32, device) carries a host copy in its
 *   `host` field (kbp_seqlens below), for prepare's planning.
 *
 * Versions: kbench refuses a table whose abi is not KBP_ABI_VERSION, with
 * one line saying both versions and what changed. Additions that keep old
 * plugins working (new ops, new optional fields at the end of kbp_impl) do
 * not change the version; anything else does. From ABI 1 to 2: prepare
 * takes the stream (its third argument), and kbp_impl, kbp_case and
 * kbp_tensor have fields at their ends; a plugin rebuilt with prepare's
 * stream added loads as before.
 */
#ifndef KBENCH_PLUGIN_H
#define KBENCH_PLUGIN_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KBP_ABI_VERSION 2

/* element types, as kbench names them (--dtype); KBP_INT32 only for index
 * tensors (RoPE's cu_seqlens) */
typedef enum { KBP_FP32 = 0, KBP_FP16 = 1, KBP_BF16 = 2, KBP_INT32 = 3 } kbp_dtype;

#define KBP_MAX_DIMS 4

/* One tensor of the op, under the op's own name ("x", "gamma", "y", ...):
 * device memory (cudaMalloc'd: 256-byte aligned) on the current CUDA device
 * when prepare and launch are called (the one kbench runs the case on),
 * row-major and packed: stride[i] (in elements) is the product of
 * shape[i+1..ndim-1], the last one 1; no tensor of any op is padded. Integer tensors (RoPE's cu_seqlens) have dtype
 * KBP_INT32 and is_int32 set. Where a parameter could mislead (RoPE thd's
 * batch, rotary_dim 0 for all of dim), the shapes are authoritative:
 * `kbench list OP` says what each tensor holds. */
typedef struct {
    const char *name;
    void *data;
    kbp_dtype dtype;
    int is_int32;
    int ndim;
    int64_t shape[KBP_MAX_DIMS];
    int64_t stride[KBP_MAX_DIMS];
    /* index tensors (RoPE thd's cu_seqlens): a host copy of the values, the
     * same as data holds, for prepare's planning; NULL otherwise */
    const void *host;
} kbp_tensor;

/* One case: the op, its parameters by the names `kbench list OP` shows (the
 * value as the command line writes it: "2048", "fwd", "bf16", "neox"; an
 * integer list such as RoPE's seqlens as "5,50,17"), and,
 * for launch and prepare, the tensors (NULL in supports: no GPU memory yet). */
typedef struct {
    const char *op;
    kbp_dtype dtype;
    int nparams;
    const char *const *names;
    const char *const *values;
    int ninputs, noutputs;
    const kbp_tensor *inputs, *outputs;
    int device; /* the CUDA device the case runs on (current in prepare and launch); -1 in supports */
} kbp_case;

/* A parameter's value as text, or NULL when the op has no such parameter. */
static inline const char *kbp_param(const kbp_case *c, const char *name)
{
    for (int i = 0; i < c->nparams; i++)
        if (!strcmp(c->names[i], name)) return c->values[i];
    return NULL;
}
/* An integer parameter (rows, cols, seq, ...); def when absent. */
static inline long kbp_param_int(const kbp_case *c, const char *name, long def)
{
    const char *v = kbp_param(c, name);
    return v ? strtol(v, NULL, 10) : def;
}
/* A float parameter (eps, base); def when absent. */
static inline double kbp_param_float(const kbp_case *c, const char *name, double def)
{
    const char *v = kbp_param(c, name);
    return v ? strtod(v, NULL) : def;
}
/* Whether a parameter has this value ("pass" "bwd"). */
static inline int kbp_param_is(const kbp_case *c, const char *name, const char *value)
{
    const char *v = kbp_param(c, name);
    return v && !strcmp(v, value);
}
/* RoPE thd: the sequences' offsets (cu_seqlens on the host, *nseqs + 1 of
 * them, the first 0), or NULL when the case has none (other layouts, supports). */
static inline const int32_t *kbp_seqlens(const kbp_case *c, int *nseqs)
{
    for (int i = 0; i < c->ninputs; i++)
        if (!strcmp(c->inputs[i].name, "cu_seqlens") && c->inputs[i].host) {
            *nseqs = (int)c->inputs[i].shape[0] - 1;
            return (const int32_t *)c->inputs[i].host;
        }
    *nseqs = 0;
    return NULL;
}
/* Elements of a tensor. */
static inline int64_t kbp_numel(const kbp_tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}
/* The input or output of that name, or NULL. */
static inline const kbp_tensor *kbp_input(const kbp_case *c, const char *name)
{
    for (int i = 0; i < c->ninputs; i++)
        if (!strcmp(c->inputs[i].name, name)) return &c->inputs[i];
    return NULL;
}
static inline const kbp_tensor *kbp_output(const kbp_case *c, const char *name)
{
    for (int i = 0; i < c->noutputs; i++)
        if (!strcmp(c->outputs[i].name, name)) return &c->outputs[i];
    return NULL;
}

#define KBP_NONDETERMINISTIC 1 /* kbp_impl.flags: outputs may differ run to run */
#define KBP_NA (-1)            /* prepare: this case cannot run after all (the row is n/a) */

/* A parameter of the implementation's own, swept like the op's (see above). */
typedef struct {
    const char *name;   /* letters, digits, '_'; not a parameter the op has */
    const char *values; /* its values, a comma list: "128,256,512" */
    const char *def;    /* one of values: what "auto" passes */
    const char *help;   /* one line for kbench list */
} kbp_tunable;

#define KBP_MAX_TUNABLES 4 /* of one implementation */

typedef struct {
    const char *op;   /* "rope", "layernorm", "rmsnorm" or "mlp" */
    const char *name; /* its name on the command line: letters, digits, '_', '-', '.'; not a built-in's */
    const char *help; /* one line for kbench list and plugin info */
    /* Whether it takes this case: 0, or nonzero with a one-line reason in why
     * (the row is n/a, not an error). Host code only: no tensors yet. NULL:
     * every case. */
    int (*supports)(const kbp_case *c, char *why, size_t n);
    /* Untimed, once per case, with the tensors (the inputs filled) and the
     * case's stream (a cudaStream_t; kbench synchronises it afterwards):
     * plan, allocate workspace into *state, build caches from the inputs,
     * and optionally name what will run in kernel (n bytes; the row's
     * "kernel" column, e.g. "mine v=4 blocks=264"). 0, KBP_NA or an error
     * (a reason in why either way). NULL: nothing to prepare. */
    int (*prepare)(const kbp_case *c, void **state, void *stream, char *kernel, size_t n, char *why, size_t wn);
    /* Timed: launch on stream (a cudaStream_t). 0 or an error. Required. */
    int (*launch)(const kbp_case *c, void *state, void *stream);
    /* Frees what prepare allocated. NULL: nothing. */
    void (*release)(const kbp_case *c, void *state);
    unsigned flags; /* KBP_NONDETERMINISTIC */
    const char *inplace;     /* "OUT=IN,...": outputs written over inputs; NULL: none */
    const char *accumulates; /* "dx,dgamma,...": outputs it adds into (zeroed first); NULL: none */
    const kbp_tunable *tunables; /* its own parameters, ntunables (at most KBP_MAX_TUNABLES) */
    int ntunables;
} kbp_impl;

typedef struct {
    int abi; /* KBP_ABI_VERSION */
    int nimpls;
    const kbp_impl *impls;
} kbp_table;

#define KBP_ENTRY "kbench_plugin"
typedef const kbp_table *(*kbp_entry_fn)(void);

#ifdef __cplusplus
}
#endif
#endif
