/* The GPU's conditions through NVML (issue 19, "Conditions"): its static
 * facts once (UUID, persistence, power limit, ECC, application and maximum
 * clocks), and polls during a measurement (SM and memory clock, power,
 * temperature, clocks-event reasons) summed up into what a row carries.
 *
 * NVML is loaded at run time (dlopen of libnvidia-ml.so.1, dlsym of each
 * function): no header and no link dependency. A missing library makes
 * kb_nvml_open fail with a reason and every later call a no-op; a function
 * missing from the library, or one that returns an error, leaves its value
 * unknown. This file needs no CUDA header; the CUDA device's PCI bus id comes
 * from device.c (kb_device_pci_bus_id). One GPU a process. Not thread-safe:
 * open and poll from one thread. */
#ifndef KB_NVML_H
#define KB_NVML_H

#include <stddef.h>

/* nvmlClocksEventReasons (NVML API reference, "NvmlClocksEventReasons";
 * docs.nvidia.com/deploy/nvml-api/group__nvmlClocksEventReasons.html; the
 * older names nvmlClocksThrottleReason* carry the same values, R525 and
 * earlier group__nvmlClocksThrottleReasons.html). */
#define KB_REASON_GPU_IDLE       0x0000000000000001ULL /* GpuIdle: nothing runs, clocks drop to idle */
#define KB_REASON_APP_CLOCKS     0x0000000000000002ULL /* ApplicationsClocksSetting */
#define KB_REASON_SW_POWER_CAP   0x0000000000000004ULL /* SwPowerCap: clocks lowered to stay under the power limit */
#define KB_REASON_HW_SLOWDOWN    0x0000000000000008ULL /* HwSlowdown: core clocks cut by 2x or more */
#define KB_REASON_SYNC_BOOST     0x0000000000000010ULL /* SyncBoost: held to the slowest GPU of a sync-boost group */
#define KB_REASON_SW_THERMAL     0x0000000000000020ULL /* SwThermalSlowdown */
#define KB_REASON_HW_THERMAL     0x0000000000000040ULL /* HwThermalSlowdown */
#define KB_REASON_HW_POWER_BRAKE 0x0000000000000080ULL /* HwPowerBrakeSlowdown */
#define KB_REASON_DISPLAY_CLOCKS 0x0000000000000100ULL /* DisplayClockSetting */
/* Newer drivers (the current NVML reference lists them without values; the
 * values are those of cuda-python's cuda.bindings.nvml.ClocksEventReasons:
 * EVENT_REASON_BOARD_LIMIT 512, EVENT_REASON_RELIABILITY 1024). */
#define KB_REASON_BOARD_LIMIT    0x0000000000000200ULL
#define KB_REASON_RELIABILITY    0x0000000000000400ULL

/* The reasons that count as throttling: the GPU lowered its clocks below
 * what it would otherwise run at, for power or heat. Not counted: GpuIdle
 * (nothing ran), ApplicationsClocksSetting, DisplayClockSetting and SyncBoost
 * (clocks set by configuration, not by the load), BoardLimit and Reliability
 * (documented in one word each; Reliability is the voltage-reliability cap
 * that boost clocks reach routinely). Whatever lowers the clocks without a
 * counted reason is still caught by the clock threshold. */
#define KB_REASONS_THROTTLE                                                                        \
    (KB_REASON_SW_POWER_CAP | KB_REASON_HW_SLOWDOWN | KB_REASON_SW_THERMAL | KB_REASON_HW_THERMAL | \
     KB_REASON_HW_POWER_BRAKE)

/* nvbench's --throttle-threshold default, 75 (percent of the device's default
 * SM clock rate; nvbench docs/cli_help.md), as a fraction. */
#define KB_THROTTLE_THRESHOLD_DEFAULT 0.75

typedef struct { /* static facts of the GPU, read once */
    int ok;                      /* NVML loaded and this CUDA device found */
    char why[128];               /* when !ok: why */
    char uuid[96];               /* "" unknown (NVML_DEVICE_UUID_V2_BUFFER_SIZE is 96) */
    char bus_id[32];             /* the PCI bus id NVML was asked for */
    int persistence;             /* 1 on, 0 off, -1 unknown */
    double power_limit_w;        /* enforced power limit; 0 unknown */
    int ecc;                     /* current ECC mode: 1 on, 0 off, -1 unknown */
    int app_sm_mhz, app_mem_mhz; /* application clocks; 0 unknown */
    int max_sm_mhz, max_mem_mhz; /* NVML's maximum clocks; 0 unknown */
} kb_gpu_info;

/* One measurement's polls. Up to KB_COND_MAX polls are all kept; past that
 * the kept polls are thinned to every other one and the stride doubles, so
 * s[] always holds an evenly spaced subsample (polls 0, stride, 2 stride, ...)
 * of at least KB_COND_MAX / 2 polls, deterministic. The minimum clocks, the
 * maximum power and temperature and the reasons stay exact over every poll;
 * only the medians come from the subsample. */
#define KB_COND_MAX 512

enum { /* kb_cond_sample.flags */
    KB_COND_HAVE_SM = 1,
    KB_COND_HAVE_MEM = 2,
    KB_COND_HAVE_POWER = 4,
    KB_COND_HAVE_TEMP = 8,
    KB_COND_IDLE = 16, /* the poll reported GpuIdle */
};

typedef struct {
    unsigned sm_mhz, mem_mhz, power_mw;
    int temp_c;
    unsigned flags;
} kb_cond_sample;

typedef struct {                 /* one measurement's conditions, accumulated from polls */
    int n;                       /* polls that read anything */
    int idle;                    /* of them, those that reported GpuIdle */
    int kept, stride;            /* s[0 .. kept): every stride-th poll */
    kb_cond_sample s[KB_COND_MAX];
    unsigned sm_min, mem_min;    /* exact, over the polls that were not idle; 0 none */
    unsigned sm_min_any, mem_min_any; /* exact, over every poll; 0 none */
    unsigned power_max_mw;       /* exact; 0 none */
    int temp_max_c;              /* exact; 0 none */
    unsigned long long reasons;  /* OR of every clocks-event reason seen */
} kb_cond_acc;

typedef struct {                 /* the summary: what goes into a row */
    int n;                       /* polls; 0: nothing read (NVML missing): the columns stay empty */
    int idle;                    /* of them, those that reported GpuIdle */
    int sm_min_mhz, sm_med_mhz, mem_min_mhz, mem_med_mhz; /* 0 unknown */
    double power_med_w, power_max_w; /* 0 unknown */
    int temp_max_c;              /* 0 unknown */
    unsigned long long reasons;  /* OR over the polls */
    int throttled;               /* kb_cond_throttled */
} kb_cond;

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

/* The reasons by name, comma-separated, in bit order ("sw_power_cap,hw_slowdown");
 * "" when none; idle is left out; bits without a name as one "0x..." token.
 * Truncated to fit n; returns buf. */
const char *kb_throttle_names(unsigned long long reasons, char *buf, size_t n);

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
