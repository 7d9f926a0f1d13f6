/* NVML at run time: the GPU's static facts and the conditions of a
 * measurement (see nvml.h). No NVML header: the few enum values used are
 * written here, with where they come from. */
#define KB_NVML_TEST /* the test hooks are defined here: check them against their declarations */
#include "nvml.h"
#include "pci.h"
#include "../report/conditions.h"

#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NVML_SO "libnvidia-ml.so.1"

/* nvmlReturn_t: NVML_SUCCESS = 0. nvmlClockType_t: NVML_CLOCK_GRAPHICS = 0,
 * NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2, NVML_CLOCK_VIDEO = 3.
 * nvmlTemperatureSensors_t: NVML_TEMPERATURE_GPU = 0. nvmlEnableState_t:
 * NVML_FEATURE_DISABLED = 0, NVML_FEATURE_ENABLED = 1. Power in milliwatts
 * (nvmlDeviceGetPowerUsage, nvmlDeviceGetEnforcedPowerLimit). UUID buffer:
 * NVML_DEVICE_UUID_V2_BUFFER_SIZE = 96. (NVML API reference.) */
enum { NVML_OK = 0, CLOCK_SM = 1, CLOCK_MEM = 2, TEMP_GPU = 0 };

static struct {
    int opened;        /* kb_nvml_open ran (its result is in info) */
    int cuda_device;   /* what it was asked for; -1: by bus id */
    kb_gpu_info info;
    kb_nvml_fns f;
    void *dev;         /* NULL unless info.ok */
    const kb_nvml_fns *fake;
    const char *lib;   /* NULL: NVML_SO */
} g = {.cuda_device = -1};

/* ---- loading ------------------------------------------------------------ */

static void sym_into(void *member, void *p) { memcpy(member, &p, sizeof p); }
#define SYM(member, name) sym_into(&f->member, sym(ctx, name))

void kb_nvml_resolve(void *(*sym)(void *ctx, const char *name), void *ctx, kb_nvml_fns *f)
{
    memset(f, 0, sizeof *f);
    SYM(init, "nvmlInit_v2");
    SYM(handle_by_bus, "nvmlDeviceGetHandleByPciBusId_v2");
    SYM(clock, "nvmlDeviceGetClockInfo");
    SYM(max_clock, "nvmlDeviceGetMaxClockInfo");
    SYM(app_clock, "nvmlDeviceGetApplicationsClock");
    SYM(power, "nvmlDeviceGetPowerUsage");
    SYM(power_limit, "nvmlDeviceGetEnforcedPowerLimit");
    SYM(temperature, "nvmlDeviceGetTemperature");
    /* the newer name (in the R550 NVML reference, not in R525's); older drivers
     * have only the throttle name, which newer ones keep as a deprecated alias */
    SYM(reasons, "nvmlDeviceGetCurrentClocksEventReasons");
    if (!f->reasons) SYM(reasons, "nvmlDeviceGetCurrentClocksThrottleReasons");
    SYM(uuid, "nvmlDeviceGetUUID");
    SYM(persistence, "nvmlDeviceGetPersistenceMode");
    SYM(ecc, "nvmlDeviceGetEccMode");
    SYM(count, "nvmlDeviceGetCount_v2");
    SYM(handle_by_index, "nvmlDeviceGetHandleByIndex_v2");
    SYM(name, "nvmlDeviceGetName");
    SYM(mig_mode, "nvmlDeviceGetMigMode");
}

static void *dl_sym(void *lib, const char *name) { return dlsym(lib, name); }

static void info_unknown(kb_gpu_info *info)
{
    memset(info, 0, sizeof *info);
    info->persistence = info->ecc = -1;
}

__attribute__((format(printf, 2, 3))) static int fail(kb_gpu_info *info, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    info->ok = 0;
    vsnprintf(info->why, sizeof info->why, fmt, ap);
    va_end(ap);
    return -1;
}

/* g.f from the fake or the library; -1 with info->why */
static int load(kb_gpu_info *info)
{
    if (g.fake) {
        g.f = *g.fake;
        return 0;
    }
    const char *so = g.lib ? g.lib : NVML_SO;
    void *lib = dlopen(so, RTLD_NOW | RTLD_LOCAL); /* stays loaded for the process */
    if (!lib) return fail(info, "%s not found", so);
    kb_nvml_resolve(dl_sym, lib, &g.f);
    return 0;
}

/* The static facts: each unknown where its function is missing or fails. */
static void read_info(kb_gpu_info *info)
{
    const kb_nvml_fns *f = &g.f;
    void *d = g.dev;
    unsigned u;
    int cur, pend;
    if (f->uuid && f->uuid(d, info->uuid, sizeof info->uuid) == NVML_OK)
        info->uuid[sizeof info->uuid - 1] = 0;
    else
        info->uuid[0] = 0;
    if (f->persistence && f->persistence(d, &cur) == NVML_OK) info->persistence = cur != 0;
    if (f->power_limit && f->power_limit(d, &u) == NVML_OK) info->power_limit_w = u / 1000.0;
    if (f->ecc && f->ecc(d, &cur, &pend) == NVML_OK) info->ecc = cur != 0;
    if (f->app_clock && f->app_clock(d, CLOCK_SM, &u) == NVML_OK) info->app_sm_mhz = (int)u;
    if (f->app_clock && f->app_clock(d, CLOCK_MEM, &u) == NVML_OK) info->app_mem_mhz = (int)u;
    if (f->max_clock && f->max_clock(d, CLOCK_SM, &u) == NVML_OK) info->max_sm_mhz = (int)u;
    if (f->max_clock && f->max_clock(d, CLOCK_MEM, &u) == NVML_OK) info->max_mem_mhz = (int)u;
}

/* NVML initialised and the device at bus found; -1 with info->why */
static int attach(const char *bus, kb_gpu_info *info)
{
    if (!bus || !*bus) return fail(info, "no PCI bus id");
    snprintf(info->bus_id, sizeof info->bus_id, "%s", bus);
    if (!g.f.init) return fail(info, "NVML has no nvmlInit_v2");
    if (!g.f.handle_by_bus) return fail(info, "NVML has no nvmlDeviceGetHandleByPciBusId_v2");
    int e = g.f.init();
    if (e != NVML_OK) return fail(info, "nvmlInit_v2 failed (NVML error %d)", e);
    void *dev = NULL;
    e = g.f.handle_by_bus(bus, &dev);
    if (e != NVML_OK || !dev) return fail(info, "NVML has no GPU at PCI bus id %s (NVML error %d)", bus, e);
    g.dev = dev;
    info->ok = 1;
    read_info(info);
    return 0;
}

/* cuda_device -1: by bus id (bus given); otherwise bus from device.c */
static int open_once(int cuda_device, const char *bus, kb_gpu_info *info)
{
    if (g.opened) {
        if (g.cuda_device != cuda_device) {
            info_unknown(info);
            return fail(info, "NVML is open for another device already");
        }
        *info = g.info;
        return g.info.ok ? 0 : -1;
    }
    g.opened = 1;
    g.cuda_device = cuda_device;
    info_unknown(&g.info);
    int rc = load(&g.info); /* the library first: without it the CUDA runtime is never asked */
    char id[64] = "";
    if (!rc && cuda_device >= 0) {
        if (kb_device_pci_bus_id(cuda_device, id, sizeof id) == 0)
            bus = id;
        else
            rc = fail(&g.info, "no PCI bus id for CUDA device %d", cuda_device);
    }
    if (!rc) rc = attach(bus, &g.info);
    if (rc) g.dev = NULL;
    *info = g.info;
    return rc;
}

int kb_nvml_models(char *models, size_t len, int max)
{
    kb_gpu_info tmp;
    info_unknown(&tmp);
    const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
    if (cvd || load(&tmp)) return -1; /* CUDA_VISIBLE_DEVICES set, even empty: CUDA's own list */
    const kb_nvml_fns *f = &g.f;
    unsigned n = 0;
    if (!f->init || !f->count || !f->handle_by_index || !f->name || f->init() != NVML_OK || f->count(&n) != NVML_OK ||
        n == 0)
        return -1;
    char first[96] = "";
    for (unsigned i = 0; i < n; i++) {
        void *d = NULL;
        char name[96] = "";
        unsigned cur = 0, pend = 0;
        if (f->handle_by_index(i, &d) != NVML_OK || f->name(d, name, sizeof name) != NVML_OK) return -1;
        name[sizeof name - 1] = 0;
        if (f->mig_mode && f->mig_mode(d, &cur, &pend) == NVML_OK && cur) return -1; /* CUDA sees its instances */
        if (i == 0) snprintf(first, sizeof first, "%s", name);
        else if (strcmp(name, first)) return -1; /* other models: CUDA's order may not be NVML's */
        if ((int)i < max && len) snprintf(models + i * len, len, "%s", name);
    }
    return (int)n;
}

int kb_nvml_open(int cuda_device, kb_gpu_info *info)
{
    return open_once(cuda_device < 0 ? 0 : cuda_device, NULL, info);
}

int kb_nvml_open_bus(const char *pci_bus_id, kb_gpu_info *info)
{
    return open_once(-1, pci_bus_id, info);
}

void kb_nvml_use(const kb_nvml_fns *fake, const char *lib)
{
    info_unknown(&g.info);
    memset(&g.f, 0, sizeof g.f);
    g.opened = 0;
    g.cuda_device = -1;
    g.dev = NULL;
    g.fake = fake;
    g.lib = lib;
}

int kb_nvml_clocks(int *sm_mhz, int *mem_mhz)
{
    *sm_mhz = *mem_mhz = 0;
    if (!g.dev) return -1;
    unsigned u;
    if (g.f.clock && g.f.clock(g.dev, CLOCK_SM, &u) == NVML_OK) *sm_mhz = (int)u;
    if (g.f.clock && g.f.clock(g.dev, CLOCK_MEM, &u) == NVML_OK) *mem_mhz = (int)u;
    return 0;
}

/* ---- polls -------------------------------------------------------------- */

void kb_cond_begin(kb_cond_acc *a)
{
    a->n = a->idle = a->kept = 0;
    a->stride = 1;
    a->sm_min = a->mem_min = a->sm_min_any = a->mem_min_any = 0;
    a->power_max_mw = 0;
    a->temp_max_c = 0;
    a->reasons = 0;
}

static void keep_min(unsigned *m, unsigned v)
{
    if (*m == 0 || v < *m) *m = v;
}

void kb_cond_poll(kb_cond_acc *a)
{
    if (!g.dev) return;
    const kb_nvml_fns *f = &g.f;
    kb_cond_sample s = {0};
    unsigned long long r;
    unsigned u;
    int got = 0; /* anything read */
    if (f->reasons && f->reasons(g.dev, &r) == NVML_OK) {
        got = 1;
        a->reasons |= r;
        if (r & KB_REASON_GPU_IDLE) s.flags |= KB_COND_IDLE;
    }
    if (f->clock && f->clock(g.dev, CLOCK_SM, &u) == NVML_OK) s.sm_mhz = u, s.flags |= KB_COND_HAVE_SM;
    if (f->clock && f->clock(g.dev, CLOCK_MEM, &u) == NVML_OK) s.mem_mhz = u, s.flags |= KB_COND_HAVE_MEM;
    if (f->power && f->power(g.dev, &u) == NVML_OK) s.power_mw = u, s.flags |= KB_COND_HAVE_POWER;
    if (f->temperature && f->temperature(g.dev, TEMP_GPU, &u) == NVML_OK)
        s.temp_c = (int)u, s.flags |= KB_COND_HAVE_TEMP;
    if (!got && !s.flags) return;

    int k = a->n++; /* this poll's index */
    int idle = (s.flags & KB_COND_IDLE) != 0;
    a->idle += idle;
    if (s.flags & KB_COND_HAVE_SM) {
        keep_min(&a->sm_min_any, s.sm_mhz);
        if (!idle) keep_min(&a->sm_min, s.sm_mhz);
    }
    if (s.flags & KB_COND_HAVE_MEM) {
        keep_min(&a->mem_min_any, s.mem_mhz);
        if (!idle) keep_min(&a->mem_min, s.mem_mhz);
    }
    if ((s.flags & KB_COND_HAVE_POWER) && s.power_mw > a->power_max_mw) a->power_max_mw = s.power_mw;
    if ((s.flags & KB_COND_HAVE_TEMP) && s.temp_c > a->temp_max_c) a->temp_max_c = s.temp_c;

    if (k % a->stride) return;
    if (a->kept == KB_COND_MAX) { /* thin to every other kept poll, double the stride */
        for (int i = 0; i < KB_COND_MAX / 2; i++) a->s[i] = a->s[2 * i];
        a->kept = KB_COND_MAX / 2;
        a->stride *= 2;
        if (k % a->stride) return; /* never: k = KB_COND_MAX * old stride */
    }
    a->s[a->kept++] = s;
}

/* ---- the summary -------------------------------------------------------- */

static int cmp_u(const void *x, const void *y)
{
    unsigned a = *(const unsigned *)x, b = *(const unsigned *)y;
    return (a > b) - (a < b);
}

/* The median of the kept samples that have `have`, skipping idle ones
 * unless busy_only is 0; 0 when there are none. Even counts: the mean of
 * the two middle values. */
static double median(const kb_cond_acc *a, unsigned have, int busy_only, int which)
{
    unsigned v[KB_COND_MAX];
    int m = 0;
    for (int i = 0; i < a->kept; i++) {
        const kb_cond_sample *s = &a->s[i];
        if (!(s->flags & have) || (busy_only && (s->flags & KB_COND_IDLE))) continue;
        v[m++] = which == 0 ? s->sm_mhz : which == 1 ? s->mem_mhz : s->power_mw;
    }
    if (!m) return 0;
    qsort(v, (size_t)m, sizeof v[0], cmp_u);
    return m % 2 ? v[m / 2] : ((double)v[m / 2 - 1] + v[m / 2]) / 2;
}

void kb_cond_end(const kb_cond_acc *a, const kb_gpu_info *info, double throttle_threshold, kb_cond *out)
{
    memset(out, 0, sizeof *out);
    if (!a || a->n == 0) return;
    out->n = a->n;
    out->idle = a->idle;
    /* clocks from the polls that were not idle; from all if every one was */
    int busy = a->idle < a->n;
    out->sm_min_mhz = (int)(busy ? a->sm_min : a->sm_min_any);
    out->mem_min_mhz = (int)(busy ? a->mem_min : a->mem_min_any);
    out->sm_med_mhz = (int)lround(median(a, KB_COND_HAVE_SM, busy, 0));
    out->mem_med_mhz = (int)lround(median(a, KB_COND_HAVE_MEM, busy, 1));
    out->power_med_w = median(a, KB_COND_HAVE_POWER, 0, 2) / 1000.0;
    out->power_max_w = a->power_max_mw / 1000.0;
    out->temp_max_c = a->temp_max_c;
    out->reasons = a->reasons;
    out->throttled = kb_cond_throttled(out, info, throttle_threshold);
}

int kb_cond_throttled(const kb_cond *c, const kb_gpu_info *info, double throttle_threshold)
{
    if (!c || c->n == 0) return 0;
    if (c->reasons & KB_REASONS_THROTTLE) return 1;
    /* the clock check needs polls that were not idle (their minimum) */
    if (throttle_threshold > 0 && info && info->max_sm_mhz > 0 && c->idle < c->n && c->sm_min_mhz > 0 &&
        c->sm_min_mhz < throttle_threshold * info->max_sm_mhz)
        return 1;
    return 0;
}
