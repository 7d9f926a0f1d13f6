/* A row: one implementation on one case, as the table, the CSV and the JSON write it. */
#ifndef KB_REPORT_ROW_H
#define KB_REPORT_ROW_H

#include "conditions.h"
#include "../core/op.h"

#define KB_V_NA (-2)

typedef struct {
    double median, min, max, mean, stddev, noise_pct;
    double p25, p75; /* quartiles (linear interpolation between order statistics) */
    /* a 95% confidence interval of the median, distribution-free: the order
     * statistics of ranks n/2 - 0.98 sqrt(n) and 1 + n/2 + 0.98 sqrt(n) */
    double med_lo, med_hi;
    int samples;
} kb_stats;

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
    double launch_host_ms;  /* events timing of an interpreted implementation: the host's mean time in a launch (0: none) */
    char error[256];    /* non-empty when the row failed */
    double wall[KB_WALL_N]; /* seconds (kb_wall_phase); 0: not spent on this row */
    /* the GPU a row names itself (the error rows of a --devices worker that
     * ended: they are written by the parent, not in that worker's part);
     * a worker's own rows get theirs from kbench merge */
    int gpu_known, gpu;
} kb_row;

/* a row's verified as the CSV and JSON write it: "pass", "fail", "n/a", "skipped" */
const char *kb_verdict_name(int v);

#endif
