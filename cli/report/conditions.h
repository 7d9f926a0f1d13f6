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
#ifndef KB_REPORT_CONDITIONS_H
#define KB_REPORT_CONDITIONS_H

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

/* The reasons by name, comma-separated, in bit order ("sw_power_cap,hw_slowdown");
 * "" when none; idle is left out; bits without a name as one "0x..." token.
 * Truncated to fit n; returns buf. */
const char *kb_throttle_names(unsigned long long reasons, char *buf, size_t n);

#endif
