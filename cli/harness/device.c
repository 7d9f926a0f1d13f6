/* The GPU: properties, clocks (NVML, loaded at run time when present). */
#include "device.h"
#include "nvml.h"
#include "../core/errors.h"
#include "../report/device.h"
#include "../../include/kb_devattr.h"

#include <stdio.h>
#include <cuda_runtime_api.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int kb_device_open(kb_device *d)
{
    memset(d, 0, sizeof *d);
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e == cudaErrorInsufficientDriver) {
        fprintf(stderr, "kbench: no usable CUDA driver (not installed, or older than this CUDA %d.%d runtime needs)\n",
                CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10);
        return KB_EXIT_CUDA;
    }
    if (e == cudaErrorNoDevice || (e == cudaSuccess && n == 0)) {
        fprintf(stderr, "kbench: no CUDA device found\n");
        return KB_EXIT_CUDA;
    }
    if (e != cudaSuccess) {
        fprintf(stderr, "kbench: cannot use the GPU: %s (%s)\n", cudaGetErrorString(e), cudaGetErrorName(e));
        return KB_EXIT_CUDA;
    }
    struct cudaDeviceProp p;
    if ((e = cudaGetDeviceProperties(&p, 0)) != cudaSuccess || (e = cudaSetDevice(0)) != cudaSuccess ||
        (e = cudaFree(0)) != cudaSuccess) {
        fprintf(stderr, "kbench: cannot use the GPU: %s (%s)\n", cudaGetErrorString(e), cudaGetErrorName(e));
        return KB_EXIT_CUDA;
    }
    snprintf(d->name, sizeof d->name, "%s", p.name);
    d->sm_count = p.multiProcessorCount;
    d->cc_major = p.major;
    d->cc_minor = p.minor;
    d->l2_bytes = (size_t)p.l2CacheSize;
    d->mem_bytes = p.totalGlobalMem;
    d->mem_bus_bits = p.memoryBusWidth;
    int khz = 0;
    if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0) == cudaSuccess) d->sm_clock_mhz = khz / 1000;
    if (cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, 0) == cudaSuccess) d->mem_clock_mhz = khz / 1000;
    cudaDriverGetVersion(&d->driver);
    cudaRuntimeGetVersion(&d->runtime);
    kb_devattr *a = &d->attr; /* the attributes plans use, asked once here */
    a->cc_major = p.major;
    a->cc_minor = p.minor;
    a->sm_count = p.multiProcessorCount;
    a->max_threads_per_sm = p.maxThreadsPerMultiProcessor;
    a->regs_per_sm = p.regsPerMultiprocessor;
    a->smem_per_sm = (int)p.sharedMemPerMultiprocessor;
    a->smem_per_block_optin = (int)p.sharedMemPerBlockOptin;
    a->l2_bytes = p.l2CacheSize;
    d->ok = 1;
    kb_nvml_open(0, &d->nvml); /* without NVML: d->nvml.ok == 0 and .why says why */
    if (d->nvml.ok && !d->nvml.max_sm_mhz) d->nvml.max_sm_mhz = d->sm_clock_mhz; /* the throttle test's reference */
    kb_device_clocks(d);
    return 0;
}

/* The current clocks through NVML (nvml.c: loaded at run time; a missing
 * library only means they stay unknown). */
void kb_device_clocks(kb_device *d)
{
    int sm, mem;
    if (kb_nvml_clocks(&sm, &mem) != 0) return; /* NVML missing (kb_device_open opened it) */
    if (sm > 0) d->cur_sm_clock_mhz = sm;
    if (mem > 0) d->cur_mem_clock_mhz = mem;
}

int kb_device_free_mem(size_t *free_b, size_t *total_b)
{
    return cudaMemGetInfo(free_b, total_b) == cudaSuccess ? 0 : -1;
}
