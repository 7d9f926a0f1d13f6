/* kbench: the host-side types every module shares.
 *
 * An op is described once (kb_op, in cli/ops/<op>.c): its parameter table
 * drives flags, JSON keys, validation, `list` and `--help`; its byte/FLOP
 * model, setup, reference and implementations drive the harness.
 */
#ifndef KBENCH_H
#define KBENCH_H

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../include/kb_devattr.h"
#include "../include/kb_dtype.h"
#include "../include/kbench_plugin.h"
#include "kb_nvml.h"

#define KB_VERSION "0.1.0"

/* Exit codes (README documents them). */
enum { KB_EXIT_OK = 0, KB_EXIT_VERIFY = 1, KB_EXIT_USAGE = 2, KB_EXIT_CUDA = 3, KB_EXIT_REGRESSION = 4 };

#define KB_ERRLEN 512

/* ---- dtypes: include/kb_dtype.h (cli/dtype.c) ------------------------ */

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
    int *list;    /* int lists: a sweep's axis owns its values', a case its own copy */
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

/* Elements of b that are compared with the reference (the sampled rows or all). */
size_t kb_buf_checked(const kb_buf *b);
/* Rows of b that are compared: nrows, or n / row_len; 0 if b has no rows. */
long kb_buf_checked_rows(const kb_buf *b);
/* The compared elements of an output (host copy in b's dtype) to double, in
 * the reference's order: got[kb_buf_checked(b)]. */
void kb_buf_gather(const kb_buf *b, const void *host, double *got);
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

/* 0 when impl can run case c on device d (its supports, and the tunables c
 * fixes are all its own); else non-zero with the reason in why. */
int kb_impl_supports(const kb_impl *impl, const kb_case *c, const kb_devattr *d, char *why, size_t n);

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

/* ---- tensors.c: the ops' tensors for plugins ---------------------------- */
#define KB_MAX_PLUGIN_INPUTS (KB_MAX_INPUTS + 2) /* in[] of plugin_tensors */
/* Whether case c has a tensor declared with this `when`: 1, 0, or -1 when
 * the text is malformed (a term that is not PARAM=VALUE, a parameter c's op
 * lacks, a value that is not one of an enum's choices). */
int kb_tensor_when(const kb_case *c, const char *when);
/* The declaration of c's input (output 0) or output (1) of that name whose
 * `when` holds for c; NULL if none. */
const kb_tensor_decl *kb_tensor_decl_find(const kb_case *c, const char *name, int output);
/* t = a tensor named d->name over data: dtype dt (is_int32: int32, dtype
 * KBP_FP32 unused), ndim dims of shape, row-major strides. 0, or -1 with
 * kb_last_error when data is NULL, ndim is out of 1..KBP_MAX_DIMS, a dimension
 * is negative or the shape's elements are not n (the buffer's). */
int kb_plugin_tensor(kbp_tensor *t, const kb_case *c, const kb_tensor_decl *d, void *data, kb_dtype dt,
                     int is_int32, size_t n, int ndim, const int64_t *shape);
/* plugin_tensors' common part: st's inputs, then its outputs (out[i] from
 * st->out[i]), each under the declaration of its name (kb_tensor_decl_find)
 * with the shape shape(c, name, output, dims) gives (its ndim; <= 0: the op
 * has no such tensor). 0, or -1 with kb_last_error (a buffer the table does
 * not declare for c, a shape that does not match the buffer). */
int kb_plugin_tensors_from_state(const kb_case *c, const kb_state *st,
                                 int (*shape)(const kb_case *c, const char *name, int64_t *dims),
                                 kbp_tensor *in, int *nin, kbp_tensor *out, int *nout);
/* Whether in[] and out[] are exactly the tensors c's op declares for c (each
 * declaration whose `when` holds once, in its direction, nothing else): 0, or
 * -1 with kb_last_error naming the first difference. */
int kb_plugin_tensors_check(const kb_case *c, const kbp_tensor *in, int nin, const kbp_tensor *out, int nout);
/* kb_plugin_tensors_check, and on failure no tensors (*nin = *nout = 0): the
 * last step of every op's plugin_tensors. 0 or -1. */
int kb_plugin_tensors_finish(const kb_case *c, const kbp_tensor *in, int *nin, const kbp_tensor *out, int *nout);
/* kb_op_print_tensors: below, with plugin.c's. */
/* RoPE's plugin_tensors with thd's cu_seqlens (device memory) given rather
 * than read from st->priv: no GPU call, nothing read through the pointers
 * (tests call it with fake ones). */
int kb_rope_plugin_tensors(const kb_case *c, const kb_state *st, const int *cu_seqlens, kbp_tensor *in, int *nin,
                           kbp_tensor *out, int *nout);

/* registry.c */
extern const kb_op *const kb_ops[];
extern const int kb_nops;
const kb_op *kb_find_op(const char *name);

/* ---- external implementations (plugin.c) ---------------------------- */
/* An op's implementations: its own, then those of the loaded plugins. */
int kb_op_nimpls(const kb_op *op);
const kb_impl *kb_op_impl(const kb_op *op, int k);
/* Load a plugin library (alias NULL: its implementations keep their names;
 * else an implementation is named alias, or alias.NAME where the library has
 * several of its op). Refused, with one line in err and nothing loaded: not a
 * shared library, no entry point, another ABI version, an unknown op, no
 * launch, a bad or clashing name. No GPU. 0 or -1. */
int kb_plugin_load(const char *alias, const char *path, char *err, size_t n);
int kb_plugin_load_spec(const char *spec, char *err, size_t n);  /* "NAME=PATH" or "PATH" */
int kb_plugin_name_ok(const char *name); /* letters, digits, '_', '-', '.'; under 64 */
int kb_plugin_load_list(const char *list, char *err, size_t n);  /* comma list of specs */
/* --impl's NAME=PATH entries: load each, leave NAME in the list. 0 or -1. */
int kb_plugin_take_impls(char *impl, size_t size, char *err, size_t n);
int kb_plugin_supports(const kb_impl *impl, const kb_case *c, char *why, size_t n);
const char *kb_plugin_path(const kb_impl *impl); /* NULL: kbench's own */
void kb_plugins_unload(void);
/* kbench plugin info: the checks of kb_plugin_load, then the table and the
 * tensors of its ops. 0, or -1 with err. */
int kb_plugin_info(const char *path, FILE *f, char *err, size_t n);
/* The tensors an op hands to plugins, for people (tensors.c). */
void kb_op_print_tensors(FILE *f, const kb_op *op);


/* params.c */
int kb_param_index(const kb_op *op, const char *name);
const char *kb_case_enum(const kb_case *c, const char *name); /* NULL if absent */
long kb_case_int(const kb_case *c, const char *name);
double kb_case_float(const kb_case *c, const char *name);
const kb_val *kb_case_val(const kb_case *c, const char *name);
kb_dtype kb_case_dtype(const kb_case *c);
const char *kb_choice(const kb_param *p, int idx, char *buf, size_t n);
int kb_choice_count(const kb_param *p);
/* Parse one textual axis ("512,1024", "512:8192:x2", "fwd,bwd", "all") into
 * values; returns count or -1 with err. */
int kb_parse_axis(const kb_param *p, const char *text, kb_val **vals, char *err, size_t errlen);
int kb_check_value(const kb_param *p, const kb_val *v, char *err, size_t errlen);
/* An int list's values joined by sep, whole: the length it needs (as
 * snprintf; buf holds it when that is under n, else what fitted). */
size_t kb_format_list(const kb_val *v, char sep, char *buf, size_t n);
void kb_format_value(const kb_param *p, const kb_val *v, char *buf, size_t n);
/* "seq=2048 batch=16 ..." (all parameters) */
void kb_case_label(const kb_case *c, char *buf, size_t n);
/* s[0..len) is a decimal number: [+-]digits[.digits][e[+-]digits] (no hex, inf, nan) */
int kb_decimal_syntax(const char *s, size_t len);
/* name is one of the comma-separated names of list (NULL or "": none) */
int kb_list_has(const char *list, const char *name);
/* in with control characters spelled out (\n, \t, \x1b) into out[n]; the length written */
size_t kb_escape_controls(const char *in, char *out, size_t n);
/* snprintf into an error buffer, control characters escaped: one line (params.c) */
void kb_errf(char *err, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void kb_verrf(char *err, size_t n, const char *fmt, va_list ap); /* kb_errf's body */
/* "kbench CMD: MESSAGE" on stderr ("kbench: MESSAGE" with cmd NULL), one
 * line (control characters escaped, as kb_errf); returns KB_EXIT_USAGE */
int kb_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
struct cJSON;
/* cJSON_ParseWithOpts of a whole text (config.c); on a syntax error NULL,
 * with where it stopped (*at) and that place's 1-based line and column */
struct cJSON *kb_json_parse(const char *text, const char **at, int *line, int *col);
const char *kb_nearest(const char *word, const char *const *cands, int n); /* or NULL */

/* A sweep: axes per parameter, expanded to cases. */
typedef struct {
    const kb_op *op;
    kb_val *axis[KB_MAX_PARAMS];
    int naxis[KB_MAX_PARAMS];
} kb_sweep;

void kb_sweep_init(kb_sweep *s, const kb_op *op); /* every axis = its default */
int kb_sweep_set(kb_sweep *s, const char *param, const char *text, char *err, size_t errlen);
#ifndef KB_MAX_CASES /* the fuzz build (make fuzz) lowers it: a worst-case sweep stays quick */
#define KB_MAX_CASES 1000000 /* cases in one plan: more is surely a mistake */
#endif
long kb_sweep_count(const kb_sweep *s); /* saturates at KB_MAX_CASES + 1 */
void kb_sweep_free(kb_sweep *s); /* its axes; the cases expanded from it keep their own lists */
void kb_case_free_lists(kb_case *c);
void kb_cases_free(kb_case *cases, int n); /* every case's lists, then the array */
/* Append the sweep's cases (validated) to *cases; -1 with err on the first bad one. */
int kb_sweep_expand(const kb_sweep *s, kb_case **cases, int *ncases, char *err, size_t errlen);

/* ---- harness options (settings.c) ------------------------------------- */
typedef struct {
    char impl[256];     /* comma list of implementations, "" = all */
    char csv[1024], json[1024], out_dir[1024];
    uint64_t seed;
    int hot, no_verify, quiet;
    int min_samples;
    double min_time, max_noise, timeout;
    int warmup;
    char plugin[1024];         /* plugins to load: "NAME=PATH,..." (--plugin, a sweep file's "plugins") */
    int save_samples;          /* every sample into the JSON (samples_ms) */
    char timing[8];            /* "events" (default) or "graph" */
    double throttle_threshold; /* a row is throttled below this share of the max SM clock */
    char shard[32];            /* "K/N": only shard K of N of the cases (shard.c); "" all */
    char devices[256];         /* "all" or "0,2,3": a worker process per GPU (devices.c); "" device 0 */
} kb_opts;

typedef enum { KB_S_STR, KB_S_INT, KB_S_U64, KB_S_FLOAT, KB_S_BOOL } kb_stype;
typedef struct {
    const char *name; /* JSON key; the flag is --name with '-' for '_' */
    kb_stype type;
    size_t offset, size;
    const char *def;
    double min, max;
    const char *help;
    const char *choices; /* strings: the values it takes, comma list; NULL: any */
} kb_setting;

extern const kb_setting kb_settings[];
extern const int kb_nsettings;
void kb_opts_default(kb_opts *o);
int kb_opts_set(kb_opts *o, const char *name, const char *text, char *err, size_t errlen);

/* ---- config.c: JSON sweeps -------------------------------------------- */
#define KB_MAX_SET_AXES 8
typedef struct {
    kb_case *cases;
    int ncases;
    kb_opts opts;        /* settings from the file, then flags override */
    /* axes given on the command line (kbench sweep --set NAME=VALUES), set
     * before parsing: in every sweep whose op has the parameter NAME, its
     * axis becomes VALUES (read like a flag value); a NAME no sweep's op has
     * is an error */
    int nset;
    const char *set_name[KB_MAX_SET_AXES], *set_val[KB_MAX_SET_AXES];
    /* set by kb_plan_shard: the whole sweep's identity, size and ops, and the
     * shard this plan holds (shard_n 0: all of it) */
    char sweep_id[17];
    int sweep_cases, shard_k, shard_n;
    const struct kb_op *ops_all[32];
    int nops_all;
} kb_plan;

/* Give every case its own seed from the run's seed (after flags are applied). */
void kb_plan_seed(kb_plan *plan);
/* Parse a sweep file's text; name is for messages. 0 or -1 with err. */
int kb_config_parse(const char *text, const char *name, kb_plan *plan, char *err, size_t errlen);
int kb_config_load(const char *path, kb_plan *plan, char *err, size_t errlen);
/* A JSON file's whole text (malloc'd, NUL-terminated): refused with one line
 * in err when missing, a directory, not a regular file (a FIFO would block),
 * larger than max_bytes, unreadable or holding a NUL byte. kind names it in
 * messages ("sweep file"). 0 or -1. */
int kb_read_text(const char *path, const char *kind, long max_bytes, char **text, char *err, size_t errlen);
/* One sweep object to cases; all_enums sweeps enum parameters it omits over every choice. */
int kb_config_sweep(const struct cJSON *sw, const char *where, int all_enums, kb_case **cases, int *ncases,
                    char *err, size_t errlen);
extern const char kb_default_config[]; /* configs/default.json, embedded */

/* ---- device.c --------------------------------------------------------- */
typedef struct {
    int ok;
    char name[256];
    int sm_count, cc_major, cc_minor;
    size_t l2_bytes, mem_bytes;
    int sm_clock_mhz, mem_clock_mhz; /* maximum, from the runtime */
    int cur_sm_clock_mhz, cur_mem_clock_mhz; /* NVML, 0 if unavailable */
    int driver, runtime;
    int mem_bus_bits;
    kb_devattr attr; /* what planners use */
    double copy_gbps; /* measured, 1 GiB */
    double gemm_tflops[KB_NGEMM]; /* measured GEMM ceilings by kb_gemm_key; 0: not measured */
    int gemm_n[KB_NGEMM];         /* the square size each was measured at */
    int gemm_layout[KB_NGEMM];    /* and its operand layout (kb_gemm_layout) */
    int gemm_shared[KB_NGEMM];    /* the GPUs whose --devices workers searched its ladder together, 1: alone */
    kb_gpu_info nvml;             /* UUID, persistence, power limit, ECC, clocks; nvml.ok == 0: no NVML */
} kb_device;

/* 0, or prints one line and returns KB_EXIT_CUDA. */
int kb_device_open(kb_device *d);
void kb_device_clocks(kb_device *d); /* refresh NVML current clocks (nvml.c) */
/* The CUDA device's PCI bus id ("0000:1B:00.0"), for NVML; 0 or -1. */
int kb_device_pci_bus_id(int cuda_device, char *buf, size_t n);
int kb_device_free_mem(size_t *free_b, size_t *total_b);

/* ---- harness.c -------------------------------------------------------- */
#define KB_V_NA (-2)

typedef struct {
    double median, min, max, mean, stddev, noise_pct;
    double p25, p75; /* quartiles (linear interpolation between order statistics) */
    /* a 95% confidence interval of the median, distribution-free: the order
     * statistics of ranks n/2 - 0.98 sqrt(n) and 1 + n/2 + 0.98 sqrt(n) */
    double med_lo, med_hi;
    int samples;
} kb_stats;

/* ---- bg.c (the task beside the caller, the shared cores: bg.h) -------- */
double kb_now_s(void); /* a monotonic clock, seconds */

/* ---- hostmem.c ------------------------------------------------------------ */
/* Large host blocks stay in the process once freed, for the next rows to
 * reuse (hostmem.c says why); main calls it first. */
void kb_host_recycle(void);

/* Where a sweep's wall time goes (kb_row.wall, seconds; JSON "wall_s"): the
 * case's ceilings (copy and cuBLAS-shape timing), setup (inputs, uploads),
 * CPU reference (on its own thread, beside verify and time) and wait (the
 * part of the reference nothing else hid) on the case's first row, verify
 * and time on every row, so a sum over the rows counts each once. */
typedef enum {
    KB_WALL_CEILINGS,
    KB_WALL_SETUP,
    KB_WALL_REFERENCE,
    KB_WALL_WAIT,
    KB_WALL_VERIFY,
    KB_WALL_TIME,
    KB_WALL_N
} kb_wall_phase;
extern const char *const kb_wall_names[KB_WALL_N]; /* "ceilings", "setup", "reference", "wait", "verify", "time" */

typedef struct {
    const kb_case *c;
    const char *impl;
    kb_stats st;
    double bytes, flops, gbps, pct_of_copy, copy_gbps, tflops;
    double pct_of_gemm, gemm_tflops; /* the op's GEMM ceiling; 0 when none */
    double cublas_shape_tflops, pct_of_cublas_shape; /* cuBLAS alone on the case's GEMM shapes; 0 when none */
    char note[32];      /* why a share of a ceiling is above 100% (kb_row_note) */
    const char *timing; /* "events" or "graph" */
    double *samples;    /* every sample (ms), kept for --save-samples (owned by the run loop) */
    kb_cond cond;       /* the conditions of the samples (NVML); cond.n == 0: unknown */
    double rel_err, max_abs_err;
    char kernel[KB_KERNEL_LEN]; /* what ran: the variant and its tunables */
    int verified;       /* 1 passed, 0 failed, -1 not checked, KB_V_NA: the implementation cannot take the case */
    char reason[256];   /* n/a: why */
    long verified_rows; /* rows compared (outputs made of rows); 0: not row-structured or not checked */
    double speedup;     /* vs the baseline; 0 when unknown */
    char error[256];    /* non-empty when the row failed */
    double wall[KB_WALL_N]; /* seconds (kb_wall_phase); 0: not spent on this row */
    /* the GPU a row names itself (the error rows of a --devices worker that
     * ended: they are written by the parent, not in that worker's part);
     * a worker's own rows get theirs from kbench merge */
    int gpu_known, gpu;
} kb_row;

void kb_stats_compute(const double *ms, int n, kb_stats *st);
/* Sampling may stop, however noisy the samples, once the median is known: its
 * 95% interval within +-KB_MEDIAN_CI_PCT of it, or within +-KB_MEDIAN_CI_MS
 * (a fifth of the 0.5 us that compare calls a change at; event times come in
 * steps of 32 ns), from KB_MEDIAN_CI_MIN samples on. */
#define KB_MEDIAN_CI_PCT 0.5
#define KB_MEDIAN_CI_MS 0.0001
#define KB_MEDIAN_CI_MIN 100
int kb_median_known(const kb_stats *st);
/* The index of the best (largest finite, positive) rate; -1: none. */
int kb_best_rate(const double *rates, int n);
/* A row's share of a ceiling above 100% says why: "l2" when its bytes fit in
 * the L2 (or under --hot, where they stay there), "ceiling?" otherwise (the
 * ceiling is beaten: it is not one); "" when no share is above 100. */
const char *kb_row_note(double pct_of_copy, double pct_of_gemm, double bytes, size_t l2_bytes, int hot);
int kb_compare(const kb_buf *b, const double *got, kb_tol tol, double *rel, double *maxabs);

/* ---- report.c --------------------------------------------------------- */
/* A CSV field: quoted where it holds a comma, a quote or a line break (each
 * line break written as a space, so a row stays one line). */
void kb_csv_str(FILE *f, const char *s);
typedef struct kb_report kb_report;
kb_report *kb_report_open(const char *csv, const char *json, const kb_op *const *ops, int nops,
                          const kb_device *dev, int argc, char **argv, int quiet, char *err,
                          size_t errlen);
/* Whether a run could write path (what: "--csv", "--json"), without writing:
 * 0, or -1 with err ("--json results is a directory"). */
int kb_output_check(const char *path, const char *what, char *err, size_t errlen);
/* text and a newline as the whole of path: a regular file replaced whole
 * (path.tmp, then rename, so the file on disk is always a complete
 * version), anything else (/dev/stdout, a pipe) written in place. 0, or -1
 * with err ("cannot write PATH: why"), the temporary removed (report.c). */
int kb_write_whole(const char *path, const char *text, char *err, size_t errlen);
/* the directories above path, created where missing (report.c). 0, or -1 with err */
int kb_ensure_dir_of(const char *path, char *err, size_t errlen);
/* X.json -> X.TAG.EXT beside it (TAG NULL: X.EXT); a path without .json keeps
 * its whole name as the stem: a part's files (--devices, merge) */
void kb_sibling_path(const char *json, const char *tag, const char *ext, char *buf, size_t n);
/* Write a row: the table, the CSV (flushed) and the JSON (rewritten whole,
 * unless rewrites would take more than a twentieth of the run: then at
 * kb_report_sync, the next row after that, or close). 0, or -1 at the first
 * failed write (a full disk, a file size limit): then kb_report_error says
 * "cannot write PATH: REASON", every row written before stays readable (the
 * JSON file is the last complete version, no temporary left), and later rows
 * are refused. */
int kb_report_row(kb_report *r, const kb_row *row);
/* the JSON rewritten if a row is not in it yet (before a plugin runs, before
 * a --devices worker says a case is done); 0, or -1 as above */
int kb_report_sync(kb_report *r);
/* kb_report_sync within the rewrites' share of the run (as after a row):
 * 0, every row in the JSON (rewritten now, or already); 1, not yet (the
 * last rewrite too recent for what it cost); -1 as above */
int kb_report_sync_soon(kb_report *r);
/* the rule: a rewrite is due once the last one ended KB_JSON_SHARE times
 * its cost ago (since_s, cost_s: seconds) */
int kb_json_due(double since_s, double cost_s);
/* the JSON rewritten at a sync and close only, not after a row (a --devices
 * worker's part: it is rewritten when the worker says cases done, rows_sync) */
void kb_report_by_sync(kb_report *r);
const char *kb_report_error(const kb_report *r); /* NULL while every write succeeded */
/* The sweep the rows belong to, into the JSON's "kbench" object: sweep_id,
 * sweep_cases and, for a shard (shard_n > 0), "shard": "K/N"; for a
 * --devices worker (worker >= 0), "worker": its GPU. */
void kb_report_sweep(kb_report *r, const char *sweep_id, int sweep_cases, int shard_k, int shard_n, int worker);
/* A case the run had no implementation to run for (--impl): its index into
 * the JSON's kbench.skipped_cases, so that kbench merge does not miss its rows. */
void kb_report_skip(kb_report *r, int case_index);
/* kbench.start_s: the seconds before the first case is timed (the device
 * opened, its copy ceiling measured, the first case set up and, where it
 * compares with a GEMM ceiling, the sweep's GEMM ladders measured while its
 * reference runs): what every GPU of a --devices run pays whatever their
 * number */
#define KB_START_NPARTS 4
extern const char *const kb_start_parts[KB_START_NPARTS]; /* "device", "copy", "first_case", "ladders" */
/* and where they went (kbench.start_parts_s): the device and the timer
 * opened, the copy ceiling, the first case taken and set up (its reference
 * started, its own ceilings measured), the GEMM ladders (0 where they came
 * at a later case: then in that case's ceilings phase) */
void kb_report_start(kb_report *r, double seconds, const double parts[KB_START_NPARTS]);
/* kbench.ladder_wait_s (where > 0): the time the GEMM ladders of a
 * --devices worker waited for the parent's queue of rungs, whenever they ran
 * (on disk with the next write: kb_report_gemm's, a row's, a sync's) */
void kb_report_ladder_wait(kb_report *r, double seconds);
/* the device's GEMM ceilings, measured after the report was opened */
void kb_report_gemm(kb_report *r, const kb_device *dev);
/* Close (the JSON written a last time); 0, or -1 with the first failed write in err. */
int kb_report_close(kb_report *r, char *err, size_t errlen);
void kb_csv_header(FILE *f, const kb_op *const *ops, int nops);
void kb_csv_row(FILE *f, const kb_row *row, const kb_op *const *ops, int nops);
void kb_table_header(FILE *f);
void kb_table_row(FILE *f, const kb_row *row);

/* ---- run.c: a plan on the device -------------------------------------- */
typedef struct {
    int argc;
    char **argv;
    const char *name; /* default output base name */
    int check_mode;   /* kbench check: small cases, no timing */
    /* --devices workers (devices.c): the next case to run (its index in the
     * plan; -1: none left), asked each time the last one is done; NULL: the
     * plan's cases in order. worker: the GPU this process runs on, -1 none.
     * case_done (NULL: none): every row of a case is in the JSON on disk
     * (cases finish in the order they were handed out, maybe after the
     * next was asked for: their rows wait for their references, and the
     * JSON's rewrite may wait for a later case: rows_sync). */
    int (*next_case)(void *ctx);
    void (*case_done)(void *ctx);
    void *next_ctx;
    int worker;
    int workers; /* processes sharing the host (--devices), 0 or 1: alone */
    const struct kb_ladder_share *ladder; /* the GEMM ladders' search split with other workers (harness.h); NULL: alone */
    struct kb_cores *cores; /* the host's cores shared by the workers' references (kb_cores); NULL: its own team */
    struct kb_gate *open_gate; /* taken while the GPU is opened (the workers in turn: kb_gate); NULL: at once */
} kb_run_info;
/* cases at most whose rows wait for their references while the GPU goes on
 * (rows.h: inflight) */
#define KB_MAX_INFLIGHT 8
/* The result files a run writes: the flags', else DIR/NAME.{csv,json}
 * (kbench check: only those asked for). */
void kb_output_paths(const kb_plan *plan, const kb_run_info *info, char *csv, char *json, size_t n);
int kb_run_plan(kb_plan *plan, const kb_run_info *info);
/* The plan on a worker process per GPU of opts.devices (devices.c); dry: the
 * queue's assignment printed, no GPU touched. The exit code. */
int kb_run_devices(kb_plan *plan, const kb_run_info *info, int dry);
/* What can be refused before the GPU is touched: the plugins loaded, the
 * --impl names, the output paths. 0, or -1 with err. */
int kb_plan_check(kb_plan *plan, const kb_run_info *info, char *err, size_t errlen);
/* Expand and validate (the implementations named, the output paths) without a GPU. */
int kb_dry_run(kb_plan *plan, const kb_run_info *info, FILE *out);
int kb_device_copy_report(kb_device *d); /* kbench device: copy rates at 64 MiB .. 1 GiB, GEMM ceilings */

/* Every CUDA call is checked: KB_CK(call) records "file:line: call: error"
 * in kb_last_error and returns the error code from the enclosing function. */
extern char kb_last_error[512];
void kb_cuda_fail(int err, const char *what, const char *file, int line);
#define KB_CK(call)                                                   \
    do {                                                              \
        int e_ = (int)(call);                                         \
        if (e_ != 0) { kb_cuda_fail(e_, #call, __FILE__, __LINE__); return e_; } \
    } while (0)
int kb_cuda_sticky(int err); /* the context is unusable after this error */

/* ---- compare.c: kbench compare BASE.json NEW.json ---------------------- */
/* One row of a result file (pointers into the file's JSON tree). */
typedef struct {
    const char *op, *impl;
    const struct cJSON *params; /* the case's parameters */
    char *key;         /* op, impl and every parameter, canonical: rows match when keys are equal */
    char *label;       /* "pass=fwd dtype=bf16 seq=2048 ...", as the sweep tables print a case */
    double median_ms;  /* NAN: not timed */
    double noise_pct;  /* NAN: not recorded */
    double p25_ms, p75_ms; /* quartiles; NAN: not recorded */
    double *samples_ms; /* "samples_ms": every timed sample, in measurement order (owned; NULL: none) */
    int nsamples;      /* entries of samples_ms */
    const char *verified, *error; /* "" when absent */
    const char *kernel; /* what ran ("" when absent: a file from before kbench said) */
    int ok;            /* not "verified": "fail", and no error */
    int index;         /* position in results[] */
} kb_cmp_row;

typedef struct {
    struct cJSON *root;
    kb_cmp_row *rows;
    int nrows;
    char name[1024];  /* the path, for messages */
    const char *version, *git, *device, *started; /* "" when absent */
} kb_cmp_file;

/* 0, or -1 with err "NAME: not found | not JSON (...) | not a kbench result file (...)". */
int kb_cmp_parse(const char *text, const char *name, kb_cmp_file *f, char *err, size_t errlen);
int kb_cmp_load(const char *path, kb_cmp_file *f, char *err, size_t errlen);
void kb_cmp_free(kb_cmp_file *f);

#define KB_CMP_MAX_SAMPLES 1000000 /* "samples_ms" entries a row may hold */
#define KB_CMP_MIN_SAMPLES 10       /* both rows this many samples or more: the Mann-Whitney rule */
#define KB_CMP_ALPHA 0.001          /* its significance level (two-sided) */
/* The default --min-effect: the smallest change of median the Mann-Whitney
 * rule calls. Two runs of one build, in two processes, moved the medians of
 * configs/rope.json's 79 opt rows (8-720 us) by up to 3.65% (12 rows over
 * 1.8%, each p < 1e-80 on its thousands of samples; H100, 2026-11-25; the
 * session before: up to 2.9%): the samples of one process share its clocks and
 * the placement of its buffers, so a test on them cannot see what changes
 * between processes. 5% stays above that (tests/data/compare/twin-*.json). */
#define KB_CMP_MIN_EFFECT_PCT 5.0
/* The smallest change of median either rule calls, in ms: the resolution of
 * cudaEventElapsedTime ("around 0.5 microseconds", the CUDA Runtime API). Two
 * runs of the same build moved the medians of 8-50 us RoPE rows by up to
 * 0.42 us (1-3%, p < 1e-90 on thousands of samples; H100, 2026-11-25). */
#define KB_CMP_MIN_DELTA_MS 0.0005

typedef enum { KB_CMP_SAME, KB_CMP_FASTER, KB_CMP_SLOWER, KB_CMP_FAILED, KB_CMP_NA, KB_CMP_ONLY_BASE, KB_CMP_ONLY_NEW } kb_cmp_verdict;
/* Which rule decided a verdict: none (FAILED, n/a, only in one file), the
 * threshold on the medians, or the Mann-Whitney U test on the samples. */
typedef enum { KB_CMP_RULE_NONE, KB_CMP_RULE_THRESHOLD, KB_CMP_RULE_MANN_WHITNEY } kb_cmp_rule;
const char *kb_cmp_rule_name(kb_cmp_rule r); /* "-", "threshold", "mann-whitney" */
const char *kb_cmp_verdict_name(kb_cmp_verdict v); /* "same", "faster", "slower", "FAILED", "n/a", "only in base", ... */
/* speedup = base/new median (NAN unless both timed); bound_pct = the change that
 * counts: threshold_pct, or both rows' noise_pct added when that is larger.
 * FAILED: base ok and new not; n/a: new failed too, or one of them untimed. */
kb_cmp_verdict kb_cmp_judge(const kb_cmp_row *base, const kb_cmp_row *cur, double threshold_pct, double *speedup,
                            double *bound_pct);

typedef struct {
    const kb_cmp_row *base, *cur; /* NULL for a case only in the other file */
    kb_cmp_verdict verdict;
    double speedup, bound_pct; /* bound_pct: the change that counts (the Mann-Whitney rule: min_effect_pct) */
    kb_cmp_rule rule;
    double p_value;     /* the Mann-Whitney rule's two-sided p; NAN under the others */
    int kernel_differs; /* both files say what ran, and it differs */
    int under_resolution; /* the rule called it, but the medians are under KB_CMP_MIN_DELTA_MS apart: same */
} kb_cmp_pair;

/* The two-sided p-value of the Mann-Whitney U test of a against b: normal
 * approximation with the tie correction and the continuity correction (as
 * scipy.stats.mannwhitneyu(method="asymptotic")), ranks exact (the pooled
 * samples sorted, ties at their mean rank). 1 when every value is equal; NAN
 * when a side is empty or a value is not finite. */
double kb_mann_whitney_p(const double *a, int na, const double *b, int nb);
/* The verdict on a matched case, into out (verdict, speedup, bound_pct, rule,
 * p_value; base/cur and kernel_differs are left alone). FAILED and n/a as
 * kb_cmp_judge. Both rows with KB_CMP_MIN_SAMPLES samples or more: the
 * Mann-Whitney rule: slower when p < KB_CMP_ALPHA and new median > base median
 * * (1 + min_effect_pct/100), faster the other way round, else same. Otherwise
 * kb_cmp_judge's threshold rule. Under either, medians less than
 * KB_CMP_MIN_DELTA_MS apart are same (under_resolution set). */
kb_cmp_verdict kb_cmp_decide(const kb_cmp_row *base, const kb_cmp_row *cur, double threshold_pct,
                             double min_effect_pct, kb_cmp_pair *out);

typedef struct {
    kb_cmp_pair *pairs; /* base rows in order (matched or only in base), then those only in new */
    int npairs;
    int cases, faster, slower, same, failed, na, only_base, only_new; /* cases: matched */
    int kernel_differs; /* matched cases whose kernels differ */
    int by_threshold, by_mann_whitney; /* faster/slower/same verdicts each rule decided */
    double min_effect_pct; /* the Mann-Whitney rule's minimum effect it was matched with */
    char base_run[512], new_run[512]; /* "kbench VERSION (GIT), DEVICE, STARTED" of each file */
} kb_cmp_result;

/* Match cur's rows to base's (impls: comma list, "" = all); -1 with err when a
 * name in impls is in neither file. The result points into both files. */
int kb_cmp_match(const kb_cmp_file *base, const kb_cmp_file *cur, const char *impls, double threshold_pct,
                 kb_cmp_result *res, char *err, size_t errlen);
/* kb_cmp_match with the Mann-Whitney rule's minimum effect (kb_cmp_match: KB_CMP_MIN_EFFECT_PCT) */
int kb_cmp_match_effect(const kb_cmp_file *base, const kb_cmp_file *cur, const char *impls, double threshold_pct,
                        double min_effect_pct, kb_cmp_result *res, char *err, size_t errlen);
void kb_cmp_result_free(kb_cmp_result *r);
int kb_cmp_regressions(const kb_cmp_result *r); /* slower + FAILED */
void kb_cmp_print(FILE *f, const kb_cmp_file *base, const kb_cmp_file *cur, const kb_cmp_result *r,
                  double threshold_pct, int quiet);
int kb_cmp_write_csv(const char *path, const kb_cmp_result *r, double threshold_pct, char *err, size_t errlen);
int kb_compare_main(int argc, char **argv); /* argv[0] = "compare"; returns the exit code */
int kb_merge_main(int argc, char **argv);   /* merge.c: argv[0] = "merge"; returns the exit code */
/* kbench merge's work: the parts into out (and csv, from each part's CSV
 * beside it; NULL: none). Parts of --devices workers (kbench.worker) are
 * complementary, their rows get "gpu" and "gpu_uuid". The exit code: 0, 1
 * shards or cases missing, 2 a refused part (said on stderr). */
int kb_merge_files(const char *const *paths, int np, const char *out, const char *csv, int quiet,
                   const char *expected);
/* (expected: the cases to look for, expected[case] != 0, the parts being one
 * run's; NULL: every case of the sweep, the parts its shards) */

/* ---- main.c: the command line ------------------------------------------ */
/* kbench ARGS: argv[0] is the program, argv[1] the command. Returns the exit
 * code (KB_EXIT_*) and never exits; it frees what it allocates, keeps no state
 * between calls and resets getopt, so one process may call it many times
 * (main() is kb_main; tests/fuzz/fuzz_cmdline.c). getopt_long may permute argv. */
int kb_main(int argc, char **argv);

/* util */
int kb_levenshtein(const char *a, const char *b);

#endif
