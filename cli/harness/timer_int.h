/* The timer's state, for the files that time with it (timer.c, copy.c,
 * gemm.c) and nothing else. */
#ifndef KB_HARNESS_TIMER_INT_H
#define KB_HARNESS_TIMER_INT_H

#include "ladder.h"
#include "timer.h"
#include "../core/op.h"
#include "../report/conditions.h"
#include "../../kernels/kernels.h"

#include <cuda_runtime_api.h>

#define KB_MAX_BATCH 64

struct kb_timer {
    void *scratch;
    size_t scratch_bytes;
    cudaStream_t stream;
    cudaEvent_t start[KB_MAX_BATCH], stop[KB_MAX_BATCH];
    unsigned flushes;
    int sm_count;
    /* copy ceilings measured so far, by byte count */
    struct { double r, w, gbps; int cand; } copies[256];
    int ncopies;
    /* GEMM ceilings measured so far (0: not yet), and the size used */
    double gemm[KB_NGEMM];
    int gemm_n[KB_NGEMM], gemm_layout[KB_NGEMM], gemm_shared[KB_NGEMM];
    double gemm_wait_s; /* the shared searches' wait for the parent's queue, summed */
    kb_ladder_share share; /* the ladder's search split over workers (fn NULL: alone) */
    /* cuBLAS on rows' own GEMM shapes, measured so far */
    struct { int k, n, mnk[KB_GEMM_BENCH_SHAPES][3]; double tflops; } shapes[64];
    int nshapes;
    kb_gpu_info nvml; /* the device's, for the conditions of the samples */
};

#endif
