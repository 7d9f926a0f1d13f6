/* The GPU: properties, clocks (NVML, loaded at run time when present). */
#include "kbench.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <string.h>

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
    kb_device_clocks(d);
    return 0;
}

/* NVML through dlopen: no header or link dependency, and a missing library
 * only means the current clocks stay unknown. */
typedef int (*nvml_fn0)(void);
typedef int (*nvml_handle_fn)(const char *, void **);
typedef int (*nvml_clock_fn)(void *, int, unsigned *);

void kb_device_clocks(kb_device *d)
{
    static void *lib;
    static nvml_handle_fn get_handle;
    static nvml_clock_fn get_clock;
    static void *dev;
    static int tried;
    if (!tried) {
        tried = 1;
        lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!lib) return;
        nvml_fn0 init = (nvml_fn0)dlsym(lib, "nvmlInit_v2");
        get_handle = (nvml_handle_fn)dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2");
        get_clock = (nvml_clock_fn)dlsym(lib, "nvmlDeviceGetClockInfo");
        char bus[64]; /* the CUDA device's own NVML handle, whatever the ordering */
        if (cudaDeviceGetPCIBusId(bus, sizeof bus, 0) != cudaSuccess || !init || !get_handle || !get_clock ||
            init() != 0 || get_handle(bus, &dev) != 0)
            dev = NULL;
    }
    if (!dev) return;
    unsigned mhz;
    /* NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2 */
    if (get_clock(dev, 1, &mhz) == 0) d->cur_sm_clock_mhz = (int)mhz;
    if (get_clock(dev, 2, &mhz) == 0) d->cur_mem_clock_mhz = (int)mhz;
}

int kb_device_free_mem(size_t *free_b, size_t *total_b)
{
    return cudaMemGetInfo(free_b, total_b) == cudaSuccess ? 0 : -1;
}
