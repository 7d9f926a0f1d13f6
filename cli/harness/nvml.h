/* NVML: the GPU's static facts once, and polls during a measurement summed up
 * into a row's conditions (report/conditions.h); loaded at run time (nvml.c). */
#ifndef KB_HARNESS_NVML_H
#define KB_HARNESS_NVML_H

#include "../report/conditions.h"
#include <stddef.h>

/* 0, or -1 with info->why (and info->ok 0); then every poll is a no-op.
 * Opens once a process: later calls give the first call's result (and -1 for
 * another cuda_device). kb_nvml_open_bus takes the PCI bus id itself. */
int kb_nvml_open(int cuda_device, kb_gpu_info *info);
int kb_nvml_open_bus(const char *pci_bus_id, kb_gpu_info *info);

/* The GPUs as CUDA would list them, from NVML alone (no CUDA: 0.06 s where
 * CUDA's count took 0.9 s on a host of four H200s), where NVML's order is
 * CUDA's: CUDA_VISIBLE_DEVICES unset, every GPU of one name (CUDA lists the
 * fastest first, ties in PCI bus order, which is NVML's), no MIG. How many,
 * and the first max names into models[i] (len bytes each); -1 where that
 * does not hold or NVML cannot say: ask CUDA. */
int kb_nvml_models(char *models, size_t len, int max);

/* The current SM and memory clocks (0 each where unknown); -1 without NVML. */
int kb_nvml_clocks(int *sm_mhz, int *mem_mhz);

void kb_cond_begin(kb_cond_acc *a);
/* One NVML read of the SM and memory clocks, power, temperature and the
 * clocks-event reasons: five calls into the driver, some microseconds.
 * No-op without NVML. Clocks read while the GPU reported idle are kept apart:
 * they count for the medians and minima only if every poll was idle. */
void kb_cond_poll(kb_cond_acc *a);
/* Sums a up into out, and out->throttled by kb_cond_throttled. */
void kb_cond_end(const kb_cond_acc *a, const kb_gpu_info *info, double throttle_threshold, kb_cond *out);

/* 1 when the polls saw a throttling reason (KB_REASONS_THROTTLE), or when the
 * minimum SM clock of the polls that were not idle is below throttle_threshold
 * (a fraction; <= 0 turns this check off) times info->max_sm_mhz (NVML's
 * maximum SM clock; nvbench compares against cudaDeviceProp::clockRate, which
 * a caller can put in max_sm_mhz where NVML leaves it 0). 0 otherwise, and
 * when nothing was read. */
int kb_cond_throttled(const kb_cond *c, const kb_gpu_info *info, double throttle_threshold);


/* ---- for tests ------------------------------------------------------- */
/* The NVML functions kbench uses, with NVML's signatures (nvmlReturn_t is
 * an int, 0 NVML_SUCCESS; nvmlDevice_t a pointer; nvmlEnableState_t and the
 * enums ints). A NULL member: missing, its value unknown. */
typedef struct {
    int (*init)(void);                                       /* nvmlInit_v2 */
    int (*handle_by_bus)(const char *bus, void **dev);       /* nvmlDeviceGetHandleByPciBusId_v2 */
    int (*clock)(void *dev, int type, unsigned *mhz);        /* nvmlDeviceGetClockInfo */
    int (*max_clock)(void *dev, int type, unsigned *mhz);    /* nvmlDeviceGetMaxClockInfo */
    int (*app_clock)(void *dev, int type, unsigned *mhz);    /* nvmlDeviceGetApplicationsClock */
    int (*power)(void *dev, unsigned *mw);                   /* nvmlDeviceGetPowerUsage */
    int (*power_limit)(void *dev, unsigned *mw);             /* nvmlDeviceGetEnforcedPowerLimit */
    int (*temperature)(void *dev, int sensor, unsigned *c);  /* nvmlDeviceGetTemperature */
    int (*reasons)(void *dev, unsigned long long *r);        /* nvmlDeviceGetCurrentClocksEventReasons,
                                                                else ...ClocksThrottleReasons */
    int (*uuid)(void *dev, char *buf, unsigned n);           /* nvmlDeviceGetUUID */
    int (*persistence)(void *dev, int *state);               /* nvmlDeviceGetPersistenceMode */
    int (*ecc)(void *dev, int *current, int *pending);       /* nvmlDeviceGetEccMode */
    int (*count)(unsigned *n);                               /* nvmlDeviceGetCount_v2 */
    int (*handle_by_index)(unsigned i, void **dev);          /* nvmlDeviceGetHandleByIndex_v2 */
    int (*name)(void *dev, char *buf, unsigned n);           /* nvmlDeviceGetName */
    int (*mig_mode)(void *dev, unsigned *current, unsigned *pending); /* nvmlDeviceGetMigMode */
} kb_nvml_fns;

#ifdef KB_NVML_TEST
/* Forget any open NVML. fake: use these functions instead of the library;
 * NULL: dlopen lib (NULL: libnvidia-ml.so.1) at the next open. */
void kb_nvml_use(const kb_nvml_fns *fake, const char *lib);
/* Fill f through sym(name) as the loader does with dlsym (the fallback for
 * the reasons included). */
void kb_nvml_resolve(void *(*sym)(void *ctx, const char *name), void *ctx, kb_nvml_fns *f);
#endif

#endif
