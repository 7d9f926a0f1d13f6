/* The device a run measured, as its rows and the JSON describe it (filled by harness/device.c). */
#ifndef KB_REPORT_DEVICE_H
#define KB_REPORT_DEVICE_H

#include "conditions.h"
#include "../core/op.h"
#include "../../include/kb_devattr.h"

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

#endif
