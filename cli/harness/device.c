/* The GPU: properties, clocks (NVML, loaded at run time when present). */
#include "device.h"
#include "nvml.h"
#include "../core/errors.h"
#include "../report/device.h"
#include "../../include/kb_devattr.h"

#include <stdio.h>
#include <stdlib.h>
#include <cuda_runtime_api.h>
#include <string.h>

size_t kb_device_why(int err, int ndev, int driver, char *buf, size_t n)
{
    const int rt = CUDART_VERSION;
    char dv[32];
    snprintf(dv, sizeof dv, "%d.%d", driver / 1000, driver % 1000 / 10);
    if (err == cudaErrorInsufficientDriver && driver == 0) /* the runtime found no libcuda.so.1 */
        return (size_t)snprintf(buf, n, "no NVIDIA GPU or driver found: no NVIDIA driver is installed (libcuda.so.1 "
                                        "not found); --dry-run, list, compare, merge and plugin info need none");
    if (err == cudaErrorInsufficientDriver || err == cudaErrorCallRequiresNewerDriver)
        return (size_t)snprintf(buf, n, "no NVIDIA GPU or driver found: the NVIDIA driver (CUDA %s) is older than this "
                                        "CUDA %d.%d runtime needs; update the driver", dv, rt / 1000, rt % 1000 / 10);
    if (err == cudaErrorStubLibrary)
        return (size_t)snprintf(buf, n, "no NVIDIA GPU or driver found: libcuda.so is the CUDA toolkit's stub, not a "
                                        "driver (LD_LIBRARY_PATH names its stubs directory?)");
    if (err == cudaErrorNoDevice || (err == cudaSuccess && ndev == 0))
        return (size_t)snprintf(buf, n, "no NVIDIA GPU or driver found: the NVIDIA driver (CUDA %s) sees no GPU%s", dv,
                                getenv("CUDA_VISIBLE_DEVICES") ? " (CUDA_VISIBLE_DEVICES hides them?)" : "");
    if (err == cudaErrorSystemDriverMismatch)
        return (size_t)snprintf(buf, n, "cannot use the GPU: the NVIDIA kernel module and its user-space driver "
                                        "differ in version (reload the module or reboot)");
    return (size_t)snprintf(buf, n, "cannot use the GPU: %s (%s)", cudaGetErrorString((cudaError_t)err),
                            cudaGetErrorName((cudaError_t)err));
}

int kb_device_open(kb_device *d)
{
    memset(d, 0, sizeof *d);
    int n = 0, driver = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        char why[512];
        cudaDriverGetVersion(&driver); /* 0: no driver installed */
        kb_device_why((int)e, n, driver, why, sizeof why);
        fprintf(stderr, "kbench: %s\n", why);
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
    a->dram_gbps = (int)((double)d->mem_clock_mhz * d->mem_bus_bits / 4000); /* 2 transfers a clock, bits / 8 */
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
