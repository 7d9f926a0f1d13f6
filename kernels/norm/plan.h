/* LayerNorm / RMSNorm launch plans: host code with no GPU in it (plan.c), so
 * tests pin the planner's choices on the CPU for any device's attributes.
 * The CUDA side (exec.cu) runs what a plan says; DESIGN.md describes the
 * variants and the table that picks among them. Plain C. */
#ifndef KB_NORM_PLAN_H
#define KB_NORM_PLAN_H
#include <stddef.h>

#include "../../include/kb_devattr.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The kernel families. AUTO: the planner's choice (the table in plan.c). */
typedef enum { KB_NORM_AUTO = 0, KB_NORM_WARP_ROW, KB_NORM_BLOCK, KB_NORM_BULK, KB_NORM_NVARIANTS } kb_norm_variant;
const char *kb_norm_variant_name(int variant); /* "warp_row", "block", "bulk"; "auto" */

/* What a plan depends on. dtype: 0 fp32, 1 fp16, 2 bf16. */
typedef struct {
    int dtype, rms, backward, affine;
    long rows, cols;
    int unaligned; /* some tensor is not 16-byte aligned: only the block kernels (w=1) */
} kb_norm_shape;

/* Tunables (the op's tunable parameters); KB_NORM_TUNE_AUTO: the planner's. */
#define KB_NORM_TUNE_AUTO (-1)
typedef struct {
    int vec;    /* warp_row, bulk: 16-byte vectors a lane (1, 2, 4, 8) */
    int stages; /* warp_row backward: rows staged ahead by cp.async (0, 2 or 3) */
    int slots;  /* bulk: slots of the ring (1-4) */
} kb_norm_tune;

/* Shared memory the kernels lay out by themselves (exec.cu static_asserts them). */
enum {
    KB_NORM_RED_BYTES = 1024,    /* block: red[2][32] float4 ahead of the dynamic area */
    KB_NORM_WR_RED_BYTES = 512,  /* warp_row: static red[2][32] float2 */
    KB_NORM_RING_OFF = 1088,     /* bulk: barriers, reductions, statistics, then the ring */
    KB_NORM_STATS_ROWS = 32,     /* bulk backward: statistics in shared memory for chunks of at most 32 rows */
    KB_NORM_COLSUM_BYTES = 16,   /* column_sums' slices: bytes a thread */
    KB_NORM_BWD_BLOCK = 512,     /* the block backward's threads (launch bound) */
    KB_NORM_CL_BLOCK = 512,      /* the cluster forward's launch bound: two blocks an SM (cluster_fwd.cu) */
    KB_NORM_CL3_BLOCK = 384,     /* ... and its second, three blocks an SM (block.cluster3; lb) */
    KB_NORM_RR_BLOCK = 1024,     /* the reread forward's threads a block (reread_fwd.cu; block.reread's value) */
    KB_NORM_WORK_HEAD = 128      /* the backward's workspace: the grid barrier's counter, a line of its own */
};

/* The backward's workspace for a grid of `grid` blocks: the head (sums.cuh:
 * grid_barrier's counter), then a partial row a block of 2 x cols floats.
 * Zeroed once, before the first launch. */
static inline size_t kb_norm_work_bytes(unsigned grid, long cols)
{
    return KB_NORM_WORK_HEAD + (size_t)grid * 2 * (size_t)cols * sizeof(float);
}

typedef struct {
    int variant;      /* KB_NORM_WARP_ROW, KB_NORM_BLOCK or KB_NORM_BULK */
    int dtype, backward;
    int w;            /* elements a vector (16 bytes, or 1: block on rows that are not 16-byte multiples) */
    int nv;           /* vectors a lane; block: 0 = the loop kernels (rows too long for registers) */
    int tpr;          /* threads a row (warp_row: 32 x warps) */
    int block;        /* threads a block */
    int stages;       /* warp_row backward: rows staged ahead (0, 2, 3); bulk: slots of the ring */
    int lb;           /* warp_row backward: launch bound (512, or 320 / 640 capped at 96 registers); forward:
                       * 1024 where 16 warps of 8 vectors run two blocks of 512 an SM (wr.fwd2); a cluster's
                       * blocks: 384 where they run three an SM (block.cluster3); else 0 */
    int gsm;          /* bulk backward: gamma in shared memory past the ring */
    int sst;          /* bulk backward: the saved statistics by cp.async into shared memory */
    int pipe;         /* bulk backward: the piped ring (one slot refilled a vector-part at a time: bulk.pipe) */
    int rr;           /* block forward: 1 = a row a block of 1024, x read again through L2 (block.reread, _ln), else 0 */
    int cl;           /* block forward: blocks of a cluster sharing a row (2-8; block.cluster), else 0 */
    int pf;           /* the clusters, and the reread rows with the affine from 2000 rows: each block prefetches its part
                       * of the row kb_norm_plan_ahead rows on into L2 (block.cluster_pf, block.reread_ln_pf, _rms_pf:
                       * sixteenths of the rows resident at once), else 0 */
    long cols;        /* the columns it was made for: prepare refuses others (shared memory and coverage follow them) */
    size_t smem;      /* dynamic shared memory a block */
    size_t smem_static; /* the kernel's static shared memory (counted against the device) */
    int rule;         /* the table row that chose the variant (KB_NORM_AUTO), else -1 */
} kb_norm_plan;

/* The plan of `variant` (or the automatic choice) for shape s on device d
 * with tunables t (NULL: all auto). 0, or -1 with a one-line reason in why
 * when the variant cannot take the case (the row is n/a). */
int kb_norm_plan_make(const kb_norm_shape *s, const kb_devattr *d, int variant, const kb_norm_tune *t,
                      kb_norm_plan *p, char *why, size_t n);
/* What runs: "warp_row v=2 warps=4 stages=3 lb=320", "bulk v=1 rows=1 slots=2
 * gamma=smem stats=smem" (" pipe": the piped ring), "block tpr=256 v=2 w=8", "block reread v=8 w=4" (" pf=4": block.reread_ln_pf, _rms_pf),
 * "block cluster=2 tpr=288 v=8 w=4 pf=4" (" lb=384": block.cluster3), "block loop". */
void kb_norm_plan_describe(const kb_norm_plan *p, char *buf, size_t n);

/* Rows ahead that a plan's blocks prefetch, `resident` rows running at once
 * (exec.cu: the device's active clusters, or blocks): pf sixteenths of them,
 * at least 1; 0 without pf. */
long kb_norm_plan_ahead(const kb_norm_plan *p, long resident);

/* The planner's table: each row a decision with the measurement behind it. */
typedef struct {
    const char *key;  /* the decision: "try" (variants in order), "wr.nv", "wr.stages", ... */
    int pass;         /* -1 both, 0 forward, 1 backward */
    int dtypes;       /* mask of dtype codes (1 fp32, 2 fp16, 4 bf16; 7 all) */
    long lo, hi;      /* the key's measure in [lo, hi] (plan.c says which measure) */
    int value;
    const char *why;  /* the measured reason */
} kb_norm_rule;
extern const kb_norm_rule kb_norm_rules[];
extern const int kb_norm_nrules;

#ifdef __cplusplus
}
#endif
#endif
