/* The fused SwiGLU gate/up planner: which kernel computes
 * h = silu(x G^T) * (x U^T) for `fused` (and checks what `fused_wgmma` and
 * `fused_mma` are asked to run), and the wgmma kernel's tile. Host C with
 * no GPU in it: the device comes in as a kb_devattr, the clusters that fit
 * as a model of it or, in prepare, as the runtime's occupancy query
 * (kb_mlp_occupancy_fn). Every choice is a row of kb_mlp_plan_rows (plan.c)
 * with its measured reason; tests/test_mlp_plan.c pins the choices for the
 * H100, A100 and L40S presets. kernels/mlp/DESIGN.md explains the rows. */
#ifndef KB_MLP_PLAN_H
#define KB_MLP_PLAN_H

#include <stddef.h>

#include "../../include/kb_devattr.h"

#ifdef __cplusplus
extern "C" {
#endif

/* fused_wgmma's shared memory (Shape<> in fused_wgmma.cu is made of these):
 * BM = 64 wg rows of x and 2 BN rows of G and U (G's BN, then U's) a stage,
 * 64 columns (128 bytes) deep; as many stages as fit in 220 KiB (of the 227
 * a block may have), 12 at most; + 1024 to align the ring to 1024 bytes.
 * wg 2: BN 128 4 stages of 48 KiB, 112 5 of 44, 96 5 of 40, 64 6 of 32;
 * wg 1: BN 64 9 stages of 24 KiB, 96 6 of 32, 112 6 of 36, 128 5 of 40. */
#define KB_MLP_WG_STAGE(wg, bn) (64 * (wg) * 128 + 2 * (bn) * 128)
#define KB_MLP_WG_STAGES(wg, bn) \
    (220 * 1024 / KB_MLP_WG_STAGE(wg, bn) < 12 ? 220 * 1024 / KB_MLP_WG_STAGE(wg, bn) : 12)
#define KB_MLP_WG_SMEM(wg, bn) (KB_MLP_WG_STAGES(wg, bn) * KB_MLP_WG_STAGE(wg, bn) + 1024)
/* x's TMA box (rows) for `tokens` tokens and BM-row m-blocks: BM, or the
 * tokens rounded up to 8 where fewer (the A tile's other rows keep stale
 * bytes, whose products land in rows of h past the tokens, never stored);
 * the host's tensor map (fused.cu) and the kernel's expect_tx both use it */
#define KB_MLP_WG_XROWS(tokens, bm) ((tokens) < (bm) ? ((tokens) + 7) & ~7 : (bm))
/* The swapped kernel's (gate_up_swap.cu, two consumer warpgroups): 128 rows
 * of G and of U and bn rows (tokens) of x a stage, 64 columns deep; bn 104:
 * 4 stages of 45 KiB. Its token tiles: KB_MLP_SW_BNS. */
#define KB_MLP_SW_STAGE(bn) (2 * 128 * 128 + (bn) * 128)
#define KB_MLP_SW_STAGES(bn) (220 * 1024 / KB_MLP_SW_STAGE(bn) < 12 ? 220 * 1024 / KB_MLP_SW_STAGE(bn) : 12)
#define KB_MLP_SW_SMEM(bn) (KB_MLP_SW_STAGES(bn) * KB_MLP_SW_STAGE(bn) + 1024)
#define KB_MLP_SW_BNS {128, 112, 104, 96, 80}
/* down_splitk's K splits at most (KB_MLP_ROW_DOWN's search; the kernel's
 * last block holds every split's partial of its units in registers): 8, or
 * 16 where 8 splits of every row block fill fewer blocks than there are SMs
 * (hidden <= 1024 on the H100), each split then of at least
 * KB_MLP_DOWN_WIDE_KB k-blocks */
#define KB_MLP_DOWN_SPLITS 8
#define KB_MLP_DOWN_MAX_SPLITS 16
#define KB_MLP_DOWN_WIDE_KB 11

typedef enum {
    KB_MLP_AUTO = 0, /* the planner's choice (`fused`) */
    KB_MLP_WGMMA,    /* Hopper TMA + wgmma, warp-specialised, persistent */
    KB_MLP_MMA,      /* mma.sync m16n8k16 + cp.async (sm_80+) */
    KB_MLP_F32,      /* CUDA cores, fp32 */
    KB_MLP_CUBLAS_CAT /* `fused` only: cuBLAS's GEMM over the stacked [G; U] and the silu(g) * u kernel
                       * (cublas_cat's path), where it is measured to beat the wgmma kernel */
} kb_mlp_variant;

/* What is asked: the shape, the dtype, which variant (AUTO for `fused`),
 * and the tunables (0: auto). */
typedef struct {
    int tokens, hidden, inter;
    int dtype; /* 0 fp32, 1 fp16, 2 bf16 (kb_dtype) */
    kb_mlp_variant want;
    int bn, cluster, warpgroups; /* wgmma's tile width, cluster size, consumer warpgroups; 0 = auto */
    int sched;                   /* wgmma's tile scheduler: 0 auto (KB_MLP_ROW_SCHED), 1 static, 2 dynamic */
    int down;                    /* the down GEMM: 0 auto (KB_MLP_ROW_DOWN, _DOWN_LT), 1 cuBLAS, 2 down_splitk,
                                  * 3 cuBLASLt with K split in two */
    int swap;                    /* wgmma's operands: 0 auto, 1 off (x's rows the A operand), 2 on (the weights'
                                  * rows A, tokens the N: gate_up_swap.cu; bn is then the tokens a tile) */
} kb_mlp_req;

/* Clusters of cl CTAs of the wgmma kernel <dtype, wg, bn> that fit on the
 * device at once (cudaOccupancyMaxActiveClusters in prepare), or with swap
 * CTAs of the swapped kernel <dtype, bn> (wg 2, cl 1); 0: none. */
typedef int (*kb_mlp_occupancy_fn)(void *ctx, int dtype, int wg, int bn, int cl, int swap);

/* The rows of the planner table (bits of kb_mlp_plan.rows). */
typedef enum {
    KB_MLP_ROW_F32,         /* fp32 -> the CUDA-core kernel */
    KB_MLP_ROW_HOPPER,      /* sm_90, 16-bit -> wgmma, else mma */
    KB_MLP_ROW_TMA_PITCH,   /* hidden % 8 != 0 -> mma */
    KB_MLP_ROW_OCCUPANCY,   /* the wgmma kernel fits nowhere -> mma */
    KB_MLP_ROW_WARPGROUPS,  /* tokens <= 64 -> 1 warpgroup (BM 64), else 2 (BM 128) */
    KB_MLP_ROW_WG1_BN,      /* 1 warpgroup -> BN by rounds, as BN_WAVE */
    KB_MLP_ROW_CLUSTER,     /* 2 warpgroups, > 128 tokens, even m-blocks (any count: SECTOR) -> clusters of 2 */
    KB_MLP_ROW_BN_WAVE,     /* 2 warpgroups -> BN by the wave model */
    KB_MLP_ROW_STAGES,      /* the ring: up to 220 KiB */
    KB_MLP_ROW_GROUP,       /* 16 m-blocks walk the n-blocks together */
    KB_MLP_ROW_TMA_STORE,   /* inter % 8 == 0 -> h by TMA stores, else register stores */
    KB_MLP_ROW_MMA_VEC,     /* mma: hidden % 8 == 0 -> 16-byte cp.async, else element loads */
    KB_MLP_ROW_CUBLAS_MID,  /* fused, in boxes of tokens x hidden x inter where cuBLAS was measured ahead
                             * (plan.c: cublas_mid) -> cublas_cat's path */
    KB_MLP_ROW_SCHED,       /* 2 warpgroups, clusters of 1 -> the dynamic tile scheduler, else static */
    KB_MLP_ROW_DOWN,        /* after wgmma, 1-16 tokens, inter % 8 == 0, where it was measured ahead of cuBLAS's
                             * (plan.c: the row's text) -> down_splitk */
    KB_MLP_ROW_DOWN_LT,     /* cublas_cat's path 257-352 x 4096-5119, swapped 257-400 x 4096-8191 x > 8192, wgmma 768-1024 x <= 1024 x >= 11008
                             * -> cuBLASLt split-K 2 down */
    KB_MLP_ROW_SWAP,        /* 129-1024 tokens, inter % 8 == 0, its rounds no more work than the tile's -> swapped kernel */
    KB_MLP_ROW_SECTOR,      /* rows 16 bytes past a 32-byte sector (hidden % 16 == 8), > 128 tokens -> clusters of 2, no
                             * swapped kernel; fused: cublas_cat's path at 128-384 (hidden >= 2048), 576-640, 641-768
                             * (hidden <= 1024) and 1000-1536 tokens (hidden <= 1024 or >= 4096) */
    KB_MLP_ROW_SECTOR_FAST, /* SECTOR's fused boxes on devices of 4 TB/s or more (H200): cublas_cat's path at 128-384
                             * tokens (any hidden), 576-640, 641-768 (hidden <= 1024); the tile at 1000-1536 */
    KB_MLP_ROW_DOWN_LT_FAST, /* DOWN_LT's swapped box on devices of 4 TB/s or more (H200): cuBLASLt's split-K 2 down
                              * from inter 14336 only, else cuBLAS's */
    KB_MLP_ROW_CUBLAS_MID_FAST, /* fused on devices of 4 TB/s or more (H200), where the swapped kernel was measured
                                 * behind cuBLAS at 385-432 tokens (plan.c: mid_fast) -> cublas_cat's path */
    KB_MLP_NROWS
} kb_mlp_row_id;

/* The rows that plan a wgmma kernel's tile: a plan that leaves that kernel
 * (the swapped kernel, fused_mma's fallback) no longer takes them. */
#define KB_MLP_TILE_ROWS                                                                                          \
    (1u << KB_MLP_ROW_WG1_BN | 1u << KB_MLP_ROW_CLUSTER | 1u << KB_MLP_ROW_BN_WAVE | 1u << KB_MLP_ROW_STAGES |  \
     1u << KB_MLP_ROW_GROUP | 1u << KB_MLP_ROW_TMA_STORE | 1u << KB_MLP_ROW_SCHED)

typedef struct {
    const char *rule;   /* when, and what it chooses */
    const char *reason; /* the measurement (or the constraint) behind it */
} kb_mlp_plan_row;

extern const kb_mlp_plan_row kb_mlp_plan_rows[KB_MLP_NROWS];

typedef struct {
    kb_mlp_variant variant; /* WGMMA, MMA, F32 or CUBLAS_CAT */
    /* WGMMA */
    int wg, bn, cl;      /* consumer warpgroups, tile width, cluster size */
    int bm, stages, smem; /* BM = 64 wg; KB_MLP_WG_STAGES / _SMEM */
    int clusters;        /* that fit at once (the occupancy used) */
    long tiles;          /* cluster tiles: m-groups x n-blocks */
    int grid;            /* CTAs launched: cl x min(tiles, clusters) */
    int group;           /* m-groups walking the n-blocks together (kernel argument) */
    int tma_store;       /* h by TMA stores from shared memory (else register stores) */
    int dyn;             /* tiles handed out in order by a global counter (else tile t on CTA t mod grid) */
    int swap;            /* the swapped kernel: 128 columns of h by bn tokens a tile (bm 128, cl 1 or 2, static, TMA stores) */
    /* MMA */
    int vec;             /* 16-byte cp.async rows */
    /* the down GEMM: cuBLAS (0); down_splitk (1, after WGMMA or MMA) over
     * ceil(hidden / 64) row blocks x dsplit.splits K ranges of dsplit.kchunk
     * columns, dsplit.grid blocks, dsplit.per_sm an SM (1: 200 KiB rings,
     * 2: 100 KiB); or cuBLASLt (2, any 16-bit variant) with K split in
     * dsplit.splits. One struct: a fallback keeps it, a row clears it whole. */
    int down;
    struct {
        int splits, kchunk, grid, per_sm;
    } dsplit;
    unsigned rows;       /* the table rows that decided it: 1u << kb_mlp_row_id */
} kb_mlp_plan;

/* 1: r fixes a wgmma tunable (bn, cluster, warpgroups, sched or swap), so
 * the planner's rows that choose them stand aside. */
int kb_mlp_fixed(const kb_mlp_req *r);

/* Plan r on device d. occ NULL: the clusters that fit from d
 * (kb_mlp_clusters_model). 0, or non-zero with a one-line reason in why:
 * the case is n/a for the variant asked (a tunable it cannot take, a
 * non-Hopper device for wgmma, fp32 for wgmma/mma, ...). */
int kb_mlp_plan_make(const kb_mlp_req *r, const kb_devattr *d, kb_mlp_occupancy_fn occ, void *ctx, kb_mlp_plan *p,
                     char *why, size_t n);

/* The model of the occupancy: CTAs of the wgmma kernel <wg, bn> an SM holds
 * (by its shared memory, KB_MLP_WG_SMEM + 1 KiB the runtime reserves a
 * block, within smem_per_sm, and none past smem_per_block_optin; by its
 * 128 (wg + 1) threads), times the SMs, over cl. Every tile takes over 190
 * KiB, so one CTA an SM: on the H100 132 clusters of 1 and 66 of 2 (a TPC is
 * 2 SMs, so every GPC holds clusters of 2 without a spare SM). */
int kb_mlp_clusters_model(const kb_devattr *d, int wg, int bn, int cl);
/* The same for the swapped kernel <bn> (KB_MLP_SW_SMEM, 384 threads): clusters
 * of cl CTAs (CTAs for cl 1). */
int kb_mlp_swap_model(const kb_devattr *d, int bn, int cl);

/* What runs, for the kernel column: "fused_wgmma wg=2 bn=112 cl=2 tma-store",
 * "fused_mma vec", "fused_f32 cuda-cores" (without the down GEMM), or
 * "cublas_cat (planner: cuBLAS measured ahead)" (CUBLAS_MID; or "rows past a 32-byte
 * sector", the SECTOR row's). */
void kb_mlp_plan_describe(const kb_mlp_plan *p, char *buf, size_t n);

#ifdef __cplusplus
}
#endif
#endif
