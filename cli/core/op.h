/* The op contract: an op is described once (kb_op, in cli/ops/<op>.c); its
 * parameter table drives flags, JSON keys, validation, `list` and `--help`;
 * its byte/FLOP model, setup, reference and implementations drive the harness. */
#ifndef KB_CORE_OP_H
#define KB_CORE_OP_H

#include "../../include/kb_devattr.h"
#include "../../include/kb_dtype.h"
#include "../../include/kbench_plugin.h"
#include <stddef.h>
#include <stdint.h>

/* ---- parameters (params.c) -------------------------------------------- */
typedef enum { KB_P_INT, KB_P_FLOAT, KB_P_ENUM, KB_P_INTLIST } kb_ptype;

typedef struct {
    const char *name;    /* JSON key; the flag is --name with '-' for '_' */
    kb_ptype type;
    const char *def;     /* default, written as on the command line */
    double min, max;     /* bounds (ints, floats, each element of a list) */
    const char *choices; /* enums: "a,b,c"; the value is the index */
    const char *help;
    /* A tunable of some implementations (an enum whose first choice is
     * "auto": the planner's choice). Implementations name the tunables they
     * take (kb_impl.tunables); a case that fixes one (not auto) is n/a for
     * the others. `kbench check` leaves tunables at auto unless its sweeps
     * name them. */
    int tunable;
} kb_param;

/* One value of one parameter in one case. */
typedef struct {
    double num;   /* ints, floats, enum index */
    int *list;    /* int lists: shared by an axis's value and its cases, freed by the last (params.c) */
    int nlist;
} kb_val;

#define KB_MAX_PARAMS 16
#define KB_MAX_IMPLS 16
#define KB_COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define KB_MAX_OUTPUTS 4
#define KB_MAX_SCRATCH 2 /* kb_state.scratch: device intermediates poisoned before verified runs */
#define KB_MAX_INPUTS 8

struct kb_op;

typedef struct {
    const struct kb_op *op;
    kb_val v[KB_MAX_PARAMS];
    int index;     /* position in its sweep, 0-based */
    uint64_t seed; /* this case's inputs (kb_plan_seed) */
} kb_case;

/* ---- an op's state for one case --------------------------------------- */
/* A device buffer. Outputs carry the reference (double, one per element)
 * that the harness compares them with; inputs carry nothing else. */
typedef struct {
    const char *name;
    kb_dtype dtype;
    size_t n;      /* elements */
    void *dev;     /* device memory */
    void *host;    /* host copy of inputs (dtype layout) */
    double *ref;   /* outputs: the CPU reference (every element, or the rows below) */
    /* Outputs made of rows (0: not row-structured). With `rows` (sorted row
     * indices, nrows of them), the reference holds only those rows, packed
     * (ref[i * row_len + k] is element k of row rows[i]), and only they are
     * compared: large shapes verify a sample (kb_sample_rows). */
    /* outputs: the L2 norm of the terms the result is a sum of, where they can
     * cancel (a gradient that is nearly 0): fp32 arithmetic errs relative to
     * the terms, so rel_l2 divides by max(||ref||, scale). 0: ||ref||. */
    double scale;
    size_t row_len;
    long *rows;
    long nrows;
} kb_buf;

/* A seeded sample of `want` of the rows 0..n-1 into out (sorted), always the
 * first and the last; every row when want >= n. Returns the count. */
long kb_sample_rows(long n, long want, uint64_t seed, long *out);

typedef struct {
    kb_buf in[KB_MAX_INPUTS];
    int nin;
    kb_buf out[KB_MAX_OUTPUTS];
    int nout;
    /* device intermediates an implementation writes and a later kernel of it
     * reads (the MLP's h): poisoned with the outputs before each verified
     * run, so a kernel that leaves part of one unwritten fails, rather than
     * passing on what an earlier run or implementation left there */
    struct {
        void *dev;
        size_t bytes;
    } scratch[KB_MAX_SCRATCH];
    void *priv; /* op-specific (e.g. device cu_seqlens), freed by op->teardown */
} kb_state;

/* One implementation's state for one case: what its prepare planned. */
#define KB_KERNEL_LEN 160
typedef struct {
    const struct kb_impl_s *impl; /* which implementation (set by the run loop before prepare) */
    void *priv;                 /* the implementation's own (plan, workspace); release frees it */
    char kernel[KB_KERNEL_LEN]; /* what runs, variant and tunables ("warp_row v=2 stages=3") */
    char why[KB_KERNEL_LEN];    /* prepare's reason when it returns KB_NA */
    void *stream;               /* the case's (set by the run loop; synchronised after prepare) */
    int device;                 /* the CUDA device it runs on, current (set by the run loop) */
    /* What the harness does, untimed, before each launch it verifies or times
     * (harness/presample.c); prepare sets it. out[out] is written in place
     * over an input (bytes at in): the input is restored before each launch,
     * and the result verified from there. */
    struct {
        int out;
        void *in;
        size_t bytes;
        void *pristine; /* the harness's copy of the input */
    } inplace[KB_MAX_OUTPUTS];
    int ninplace;
    unsigned accumulate; /* bit i: out[i] is added into: zeroed before each launch, its read counted in bytes */
    /* bit i: out[i] is not written by this implementation (a Python
     * implementation's writes): neither verified nor counted in bytes */
    unsigned unwritten;
    int verifying; /* set by the harness around a verified launch (a Python launch's returned outputs are taken then) */
} kb_impl_run;

/* prepare's answer when the case cannot run after all (the row is n/a) */
#define KB_NA (-1)

typedef struct kb_impl_s {
    const char *name;
    const char *help;
    /* Whether it can take this case on this device: 0, or non-zero with a
     * one-line reason in why (the row is n/a, not an error). Host code only,
     * no GPU call. NULL: every case. */
    int (*supports)(const kb_case *c, const kb_devattr *d, char *why, size_t n);
    /* Untimed, once per case after the op's setup: plans, allocates its own
     * workspace into r->priv, names the kernel in r->kernel. 0, KB_NA (with
     * r->why) or a cudaError_t. NULL: nothing to plan (r->kernel = name). */
    int (*prepare)(const kb_case *c, kb_state *st, const kb_devattr *d, kb_impl_run *r);
    /* One run on stream: 0 or a cudaError_t; timed, so no allocation, no
     * planning, no synchronisation. */
    int (*launch)(const kb_case *c, kb_state *st, kb_impl_run *r, void *stream);
    void (*release)(const kb_case *c, kb_state *st, kb_impl_run *r); /* frees r->priv; may be NULL */
    /* Its launch goes through an interpreter (a Python implementation): tens
     * to hundreds of microseconds of host time a launch, which the L2 flush
     * does not always hide. --timing auto times it under graphs; under
     * events its rows record that host time (kb_row.launch_host_ms). */
    int interpreted;
    /* The tunable parameters (kb_param.tunable) it takes, comma list; NULL: none. */
    const char *tunables;
    /* `kbench check` runs every implementation twice and requires the same
     * output bits; one that may differ run to run (floating-point atomics)
     * says so here, and its rows skip that test. */
    int nondeterministic;
    /* An external implementation (plugin.c): its record there (the
     * library's kbp_impl, the library); NULL for kbench's own. */
    const void *plugin;
} kb_impl;


typedef struct {
    double rel_l2;  /* ||out - ref|| / ||ref|| */
    double max_abs; /* max |out - ref| / max(1, max |ref|) */
} kb_tol;

typedef enum { KB_MEMORY_BOUND, KB_COMPUTE_BOUND } kb_bound;

/* The GEMM ceilings: the device's dense cuBLAS GEMM throughput per element
 * type (tf32: fp32 data on TF32 tensor cores), measured once per run on demand. */
typedef enum { KB_GEMM_NONE = -1, KB_GEMM_FP32 = 0, KB_GEMM_FP16, KB_GEMM_BF16, KB_GEMM_TF32, KB_NGEMM } kb_gemm_key;
const char *kb_gemm_key_name(kb_gemm_key k); /* "fp32", "fp16", "bf16", "tf32" */
/* a GEMM ceiling's operand layout (kernels.h's kb_gemm_layout): "TN", "NN", "NT" */
const char *kb_gemm_layout_name(int layout);

/* A tensor an op hands to external implementations (plugins), under its
 * own name: for `kbench list OP`, `kbench plugin info` and the plugin ABI
 * (include/kbench_plugin.h). */
typedef struct {
    const char *name;  /* "x", "gamma", "dy", "cu_seqlens", ... */
    int output;        /* 0 input, 1 output (written by the implementation, verified) */
    /* the cases that have it: NULL, every case; else terms PARAM=VALUE
     * separated by spaces, all of which hold ("pass=bwd affine=on") */
    const char *when;
    const char *shape; /* for people: "[rows, cols]", dtype noted where it is not the case's */
    const char *help;
} kb_tensor_decl;

typedef struct kb_op {
    const char *name;
    const char *summary;
    const kb_param *params;
    int nparams;
    const kb_impl *impls; /* impls[0] is the baseline for speedups */
    int nimpls;
    kb_bound bound;
    /* Checks beyond each parameter's bounds; 0 or -1 with err filled. */
    int (*validate)(const kb_case *c, char *err, size_t errlen);
    double (*bytes)(const kb_case *c);        /* fewest bytes a perfect kernel moves */
    double (*bytes_written)(const kb_case *c); /* the share of them written (the copy ceiling matches it); NULL: half */
    double (*flops)(const kb_case *c);
    size_t (*device_bytes)(const kb_case *c); /* device memory the case allocates */
    /* Fill st: host inputs (from c->seed, quantised), device buffers; 0 or a
     * cudaError. The harness frees every kb_buf (dev, host, ref) afterwards. */
    int (*setup)(const kb_case *c, kb_state *st);
    void (*reference)(const kb_case *c, kb_state *st); /* fills out[].ref */
    /* Its core-seconds, roughly (the --devices queue's order: shard.c's
     * kb_case_ref_cost); NULL: in proportion to the case's bytes. */
    double (*ref_cost)(const kb_case *c);
    void (*teardown)(const kb_case *c, kb_state *st);  /* st->priv only; may be NULL */
    kb_tol (*tolerance)(const kb_case *c, int out); /* for out[out] */
    /* `kbench check` sweeps, as JSON sweep objects; enum parameters they leave
     * out are swept over every choice. */
    const char *const *check_sweeps;
    int ncheck;
    /* The GEMM ceiling a case's TFLOP/s is compared with (pct_of_gemm), or
     * KB_GEMM_NONE; NULL: none for any case. */
    kb_gemm_key (*gemm_ceiling)(const kb_case *c);
    /* The GEMMs a case's work amounts to (M x N x K each, row-major, the op's
     * dtype), timed with cuBLAS alone for the row's reference rate
     * (cublas_shape_tflops); the count, at most max; NULL: none. */
    int (*gemm_shapes)(const kb_case *c, int (*mnk)[3], int max);
    /* The tensors external implementations see (every one this op can have). */
    const kb_tensor_decl *tensors;
    int ntensors;
    /* This case's tensors after setup, as the plugin ABI passes them (in[]
     * up to KB_MAX_INPUTS + 2, out[] up to KB_MAX_OUTPUTS): device pointers,
     * dtype, shape and strides, named as in tensors; out[i] is st->out[i]
     * (what kbench verifies). 0, or -1 with kb_last_error. */
    int (*plugin_tensors)(const kb_case *c, const kb_state *st, kbp_tensor *in, int *nin, kbp_tensor *out, int *nout);
} kb_op;

#endif
