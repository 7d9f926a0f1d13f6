/* nvml.c: the conditions of a measurement through NVML, with NVML absent and
 * with fake NVML functions (no GPU needed); and, where the real library and
 * a GPU are, one smoke test of the real path. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KB_NVML_TEST
#include "../cli/harness/nvml.h"
#include "../cli/report/conditions.h"

/* ---- the fake NVML ------------------------------------------------------- */

#define FAKE_DEV ((void *)0x5eed)
#define FAKE_BUS "00000000:1B:00.0"
#define NOT_SUPPORTED 3 /* NVML_ERROR_NOT_SUPPORTED */

static struct {
    int init_rc, handle_rc;
    char bus_seen[64];
    int dev_ok; /* every call came with FAKE_DEV */
    unsigned sm, mem, power_mw, temp;
    unsigned long long reasons;
    int clock_rc, power_rc, temp_rc, reasons_rc;
    int calls;  /* per-poll calls into the fake */
} fk;

static void fake_reset(void)
{
    memset(&fk, 0, sizeof fk);
    fk.dev_ok = 1;
    fk.sm = 1980, fk.mem = 2619, fk.power_mw = 350000, fk.temp = 40;
}

static void check_dev(void *d) { if (d != FAKE_DEV) fk.dev_ok = 0; }
static int f_init(void) { return fk.init_rc; }
static int f_handle(const char *bus, void **dev)
{
    snprintf(fk.bus_seen, sizeof fk.bus_seen, "%s", bus);
    if (fk.handle_rc) return fk.handle_rc;
    *dev = FAKE_DEV;
    return 0;
}
static int f_clock(void *d, int type, unsigned *mhz)
{
    check_dev(d);
    fk.calls++;
    if (fk.clock_rc) return fk.clock_rc;
    if (type == 1) *mhz = fk.sm;
    else if (type == 2) *mhz = fk.mem;
    else return NOT_SUPPORTED;
    return 0;
}
static int f_max_clock(void *d, int type, unsigned *mhz)
{
    check_dev(d);
    *mhz = type == 1 ? 1980 : type == 2 ? 2619 : 0;
    return type == 1 || type == 2 ? 0 : NOT_SUPPORTED;
}
static int f_app_clock(void *d, int type, unsigned *mhz)
{
    check_dev(d);
    *mhz = type == 1 ? 1755 : type == 2 ? 2619 : 0;
    return type == 1 || type == 2 ? 0 : NOT_SUPPORTED;
}
static int f_power(void *d, unsigned *mw) { check_dev(d); fk.calls++; *mw = fk.power_mw; return fk.power_rc; }
static int f_power_limit(void *d, unsigned *mw) { check_dev(d); *mw = 700000; return 0; }
static int f_temp(void *d, int sensor, unsigned *c)
{
    check_dev(d);
    fk.calls++;
    if (sensor != 0) return NOT_SUPPORTED; /* NVML_TEMPERATURE_GPU only */
    *c = fk.temp;
    return fk.temp_rc;
}
static int f_reasons(void *d, unsigned long long *r) { check_dev(d); fk.calls++; *r = fk.reasons; return fk.reasons_rc; }
static int f_uuid(void *d, char *buf, unsigned n)
{
    check_dev(d);
    snprintf(buf, n, "GPU-12345678-abcd-ef01-2345-6789abcdef01");
    return 0;
}
static int f_persistence(void *d, int *s) { check_dev(d); *s = 1; return 0; }
static int f_ecc(void *d, int *cur, int *pend) { check_dev(d); *cur = 1; *pend = 0; return 0; }

static const kb_nvml_fns fake_all = {
    .init = f_init,
    .handle_by_bus = f_handle,
    .clock = f_clock,
    .max_clock = f_max_clock,
    .app_clock = f_app_clock,
    .power = f_power,
    .power_limit = f_power_limit,
    .temperature = f_temp,
    .reasons = f_reasons,
    .uuid = f_uuid,
    .persistence = f_persistence,
    .ecc = f_ecc,
};

static kb_gpu_info fake_open(const kb_nvml_fns *fns)
{
    kb_gpu_info info;
    kb_nvml_use(fns, NULL);
    assert_int_equal(kb_nvml_open_bus(FAKE_BUS, &info), 0);
    assert_true(info.ok);
    return info;
}

static int setup(void **state)
{
    (void)state;
    fake_reset();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    kb_nvml_use(NULL, NULL);
    return 0;
}

/* one poll with the given SM clock and reasons (other values as they are) */
static void poll_sm(kb_cond_acc *a, unsigned sm, unsigned long long reasons)
{
    fk.sm = sm;
    fk.reasons = reasons;
    kb_cond_poll(a);
}

/* ---- NVML absent ---------------------------------------------------------- */

static void absent_checks(const kb_gpu_info *info, const char *lib)
{
    assert_false(info->ok);
    assert_non_null(strstr(info->why, lib));
    assert_non_null(strstr(info->why, "not found"));
    assert_int_equal(info->persistence, -1);
    assert_int_equal(info->ecc, -1);
    assert_string_equal(info->uuid, "");

    static kb_cond_acc a; /* static: a poll must not touch it, not even its memory */
    memset(&a, 0xab, sizeof a);
    kb_cond_begin(&a);
    for (int i = 0; i < 10; i++) kb_cond_poll(&a);
    assert_int_equal(a.n, 0);
    assert_int_equal(a.kept, 0);
    kb_cond c;
    memset(&c, 0x5a, sizeof c);
    kb_cond_end(&a, info, KB_THROTTLE_THRESHOLD_DEFAULT, &c);
    assert_int_equal(c.n, 0);
    assert_int_equal(c.sm_min_mhz, 0);
    assert_int_equal(c.sm_med_mhz, 0);
    assert_int_equal(c.temp_max_c, 0);
    assert_true(c.power_max_w == 0.0);
    assert_int_equal(c.reasons, 0);
    assert_int_equal(c.throttled, 0);
    assert_int_equal(kb_cond_throttled(&c, info, KB_THROTTLE_THRESHOLD_DEFAULT), 0);
    int sm = -1, mem = -1;
    assert_int_equal(kb_nvml_clocks(&sm, &mem), -1);
    assert_int_equal(sm, 0);
    assert_int_equal(mem, 0);
}

/* a library name that exists nowhere: the same on every machine */
static void test_absent_library(void **state)
{
    (void)state;
    const char *lib = "libkbench-no-such-nvml.so.1";
    kb_nvml_use(NULL, lib);
    kb_gpu_info info;
    memset(&info, 0x77, sizeof info);
    assert_int_equal(kb_nvml_open(0, &info), -1);
    absent_checks(&info, lib);
    /* a second open says the same, and does not retry */
    kb_gpu_info again;
    assert_int_equal(kb_nvml_open(0, &again), -1);
    assert_string_equal(again.why, info.why);
    assert_int_equal(kb_nvml_open_bus(FAKE_BUS, &again), -1); /* open already, for device 0 */
    absent_checks(&info, lib);
}

/* the real libnvidia-ml.so.1: absent here (no GPU machine), say so; where it
 * is, the real path must work (or say why not) */
static void test_real_library(void **state)
{
    (void)state;
    kb_nvml_use(NULL, NULL);
    void *probe = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    kb_gpu_info info;
    int rc = kb_nvml_open(0, &info);
    if (!probe) {
        assert_int_equal(rc, -1);
        assert_string_equal(info.why, "libnvidia-ml.so.1 not found");
        absent_checks(&info, "libnvidia-ml.so.1");
        return;
    }
    dlclose(probe);
    if (rc != 0) { /* a library without a usable GPU: a reason, and nothing read */
        assert_false(info.ok);
        assert_true(info.why[0] != 0);
        print_message("NVML present, not usable: %s\n", info.why);
        kb_cond_acc a;
        kb_cond_begin(&a);
        kb_cond_poll(&a);
        assert_int_equal(a.n, 0);
        return;
    }
    static kb_cond_acc a;
    kb_cond_begin(&a);
    for (int i = 0; i < 5; i++) kb_cond_poll(&a);
    kb_cond c;
    kb_cond_end(&a, &info, KB_THROTTLE_THRESHOLD_DEFAULT, &c);
    char names[128];
    print_message("NVML: %s bus %s persistence %d limit %.0f W ecc %d app %d/%d max %d/%d MHz; "
                  "polls %d (idle %d) sm %d/%d mem %d/%d MHz power %.1f/%.1f W temp %d C reasons 0x%llx [%s] "
                  "throttled %d\n",
                  info.uuid, info.bus_id, info.persistence, info.power_limit_w, info.ecc, info.app_sm_mhz,
                  info.app_mem_mhz, info.max_sm_mhz, info.max_mem_mhz, c.n, c.idle, c.sm_min_mhz, c.sm_med_mhz,
                  c.mem_min_mhz, c.mem_med_mhz, c.power_med_w, c.power_max_w, c.temp_max_c, c.reasons,
                  kb_throttle_names(c.reasons, names, sizeof names), c.throttled);
    assert_int_equal(c.n, 5);
    assert_true(c.sm_min_mhz > 0);
    assert_true(c.sm_med_mhz >= c.sm_min_mhz);
    assert_true(info.max_sm_mhz > 0);
    assert_true(strncmp(info.uuid, "GPU-", 4) == 0);
}

/* ---- with fakes ----------------------------------------------------------- */

static void test_open_reads_static_facts(void **state)
{
    (void)state;
    kb_gpu_info info = fake_open(&fake_all);
    assert_string_equal(fk.bus_seen, FAKE_BUS);
    assert_string_equal(info.bus_id, FAKE_BUS);
    assert_string_equal(info.uuid, "GPU-12345678-abcd-ef01-2345-6789abcdef01");
    assert_string_equal(info.why, "");
    assert_int_equal(info.persistence, 1);
    assert_int_equal(info.ecc, 1);
    assert_true(fabs(info.power_limit_w - 700.0) < 1e-9); /* milliwatts to watts */
    assert_int_equal(info.app_sm_mhz, 1755);
    assert_int_equal(info.app_mem_mhz, 2619);
    assert_int_equal(info.max_sm_mhz, 1980);
    assert_int_equal(info.max_mem_mhz, 2619);
    assert_true(fk.dev_ok);
    int sm, mem;
    fk.sm = 1410;
    assert_int_equal(kb_nvml_clocks(&sm, &mem), 0);
    assert_int_equal(sm, 1410);
    assert_int_equal(mem, 2619);
    /* open once: a later open gives the same without asking again */
    fk.bus_seen[0] = 0;
    kb_gpu_info again;
    assert_int_equal(kb_nvml_open_bus(FAKE_BUS, &again), 0);
    assert_string_equal(fk.bus_seen, "");
    assert_string_equal(again.uuid, info.uuid);
}

static void test_open_failures(void **state)
{
    (void)state;
    kb_gpu_info info;
    fk.init_rc = 9; /* NVML_ERROR_DRIVER_NOT_LOADED */
    kb_nvml_use(&fake_all, NULL);
    assert_int_equal(kb_nvml_open_bus(FAKE_BUS, &info), -1);
    assert_non_null(strstr(info.why, "nvmlInit_v2"));
    assert_non_null(strstr(info.why, "9"));

    fake_reset();
    fk.handle_rc = 6; /* NVML_ERROR_NOT_FOUND */
    kb_nvml_use(&fake_all, NULL);
    assert_int_equal(kb_nvml_open_bus(FAKE_BUS, &info), -1);
    assert_non_null(strstr(info.why, FAKE_BUS));
    kb_cond_acc a;
    kb_cond_begin(&a);
    kb_cond_poll(&a);
    assert_int_equal(a.n, 0);
    assert_int_equal(fk.calls, 0); /* no-op: not a single call */

    kb_nvml_fns no_init = fake_all;
    no_init.init = NULL;
    kb_nvml_use(&no_init, NULL);
    assert_int_equal(kb_nvml_open_bus(FAKE_BUS, &info), -1);
    assert_non_null(strstr(info.why, "nvmlInit_v2"));

    kb_nvml_use(&fake_all, NULL);
    assert_int_equal(kb_nvml_open_bus("", &info), -1);
    assert_non_null(strstr(info.why, "bus id"));
}

/* functions missing from the library, or failing: unknown, not an error */
static void test_missing_functions_unknown(void **state)
{
    (void)state;
    kb_nvml_fns f = {.init = f_init, .handle_by_bus = f_handle, .clock = f_clock};
    kb_gpu_info info = fake_open(&f);
    assert_int_equal(info.persistence, -1);
    assert_int_equal(info.ecc, -1);
    assert_string_equal(info.uuid, "");
    assert_true(info.power_limit_w == 0.0);
    assert_int_equal(info.max_sm_mhz, 0);
    assert_int_equal(info.app_sm_mhz, 0);

    kb_cond_acc a;
    kb_cond_begin(&a);
    poll_sm(&a, 1800, 0);
    poll_sm(&a, 1900, 0);
    kb_cond c;
    kb_cond_end(&a, &info, KB_THROTTLE_THRESHOLD_DEFAULT, &c);
    assert_int_equal(c.n, 2);
    assert_int_equal(c.sm_min_mhz, 1800);
    assert_int_equal(c.sm_med_mhz, 1850);
    assert_true(c.power_med_w == 0.0 && c.power_max_w == 0.0);
    assert_int_equal(c.temp_max_c, 0);
    /* no maximum clock known: the clock check cannot flag */
    poll_sm(&a, 100, 0);
    kb_cond_end(&a, &info, KB_THROTTLE_THRESHOLD_DEFAULT, &c);
    assert_int_equal(c.sm_min_mhz, 100);
    assert_int_equal(c.throttled, 0);

    /* every read failing: nothing read, n stays 0 */
    fake_reset();
    fk.clock_rc = fk.power_rc = fk.temp_rc = fk.reasons_rc = NOT_SUPPORTED;
    fake_open(&fake_all);
    kb_cond_begin(&a);
    kb_cond_poll(&a);
    kb_cond_end(&a, &info, KB_THROTTLE_THRESHOLD_DEFAULT, &c);
    assert_int_equal(c.n, 0);
}

static void test_min_median_power_temp_reasons(void **state)
{
    (void)state;
    kb_gpu_info info = fake_open(&fake_all);
    kb_cond_acc a;
    kb_cond_begin(&a);
    const unsigned sm[] = {1980, 1755, 1980, 1410, 1980};
    const unsigned mem[] = {2619, 2619, 1593, 2619, 2619};
    const unsigned pw[] = {300000, 650000, 410000, 120000, 500000};
    const unsigned t[] = {41, 55, 63, 48, 50};
    const unsigned long long r[] = {0, KB_REASON_SW_POWER_CAP, 0, KB_REASON_HW_SLOWDOWN, KB_REASON_APP_CLOCKS};
    for (int i = 0; i < 5; i++) {
        fk.mem = mem[i], fk.power_mw = pw[i], fk.temp = t[i];
        poll_sm(&a, sm[i], r[i]);
    }
    assert_true(fk.dev_ok);
    kb_cond c;
    kb_cond_end(&a, &info, KB_THROTTLE_THRESHOLD_DEFAULT, &c);
    assert_int_equal(c.n, 5);
    assert_int_equal(c.idle, 0);
    assert_int_equal(c.sm_min_mhz, 1410);
    assert_int_equal(c.sm_med_mhz, 1980);
    assert_int_equal(c.mem_min_mhz, 1593);
    assert_int_equal(c.mem_med_mhz, 2619);
    assert_true(fabs(c.power_med_w - 410.0) < 1e-9);
    assert_true(fabs(c.power_max_w - 650.0) < 1e-9);
    assert_int_equal(c.temp_max_c, 63);
    assert_int_equal(c.reasons, KB_REASON_SW_POWER_CAP | KB_REASON_HW_SLOWDOWN | KB_REASON_APP_CLOCKS);
    assert_int_equal(c.throttled, 1);

    /* an even count: the mean of the two middle values */
    kb_cond_begin(&a);
    const unsigned sm4[] = {1700, 1500, 1980, 1755};
    for (int i = 0; i < 4; i++) {
        fk.power_mw = 100000u * (unsigned)(i + 1);
        poll_sm(&a, sm4[i], 0);
    }
    kb_cond_end(&a, &info, KB_THROTTLE_THRESHOLD_DEFAULT, &c);
    assert_int_equal(c.sm_min_mhz, 1500);
    assert_int_equal(c.sm_med_mhz, 1728); /* (1700 + 1755) / 2 = 1727.5, rounded */
    assert_true(fabs(c.power_med_w - 250.0) < 1e-9);
    assert_int_equal(c.reasons, 0);
    assert_int_equal(c.throttled, 0);

    /* begin starts afresh */
    kb_cond_begin(&a);
    kb_cond_end(&a, &info, KB_THROTTLE_THRESHOLD_DEFAULT, &c);
    assert_int_equal(c.n, 0);
}

static void test_throttle_names(void **state)
{
    (void)state;
    char buf[256];
    assert_string_equal(kb_throttle_names(0, buf, sizeof buf), "");
    assert_string_equal(kb_throttle_names(KB_REASON_GPU_IDLE, buf, sizeof buf), "");
    assert_string_equal(kb_throttle_names(0x4 | 0x8, buf, sizeof buf), "sw_power_cap,hw_slowdown");
    assert_string_equal(kb_throttle_names(0x1 | 0x40 | 0x2, buf, sizeof buf), "app_clocks,hw_thermal");
    assert_string_equal(kb_throttle_names(0x7ffULL, buf, sizeof buf),
                        "app_clocks,sw_power_cap,hw_slowdown,sync_boost,sw_thermal,hw_thermal,hw_power_brake,"
                        "display_clocks,board_limit,reliability");
    assert_string_equal(kb_throttle_names(0x20 | 0x1000 | 0x8000, buf, sizeof buf), "sw_thermal,0x9000");
    /* truncated: whole names only */
    char small[20];
    assert_string_equal(kb_throttle_names(0x4 | 0x8, small, sizeof small), "sw_power_cap");
    char tiny[4];
    assert_string_equal(kb_throttle_names(0x4, tiny, sizeof tiny), "");
}

static kb_cond cond_of(unsigned long long reasons, int sm_min, int n, int idle)
{
    kb_cond c;
    memset(&c, 0, sizeof c);
    c.n = n;
    c.idle = idle;
    c.reasons = reasons;
    c.sm_min_mhz = c.sm_med_mhz = sm_min;
    return c;
}

static void test_throttled_rule(void **state)
{
    (void)state;
    kb_gpu_info info;
    memset(&info, 0, sizeof info);
    info.max_sm_mhz = 1980; /* 0.75 of it: 1485 */
    const double th = KB_THROTTLE_THRESHOLD_DEFAULT;
    /* by reason: each counted bit alone */
    const unsigned long long counted[] = {KB_REASON_SW_POWER_CAP, KB_REASON_HW_SLOWDOWN, KB_REASON_SW_THERMAL,
                                          KB_REASON_HW_THERMAL, KB_REASON_HW_POWER_BRAKE};
    for (size_t i = 0; i < sizeof counted / sizeof counted[0]; i++) {
        kb_cond c = cond_of(counted[i], 1980, 3, 0);
        assert_int_equal(kb_cond_throttled(&c, &info, th), 1);
    }
    /* informational bits alone do not flag */
    const unsigned long long not_counted[] = {KB_REASON_GPU_IDLE,      KB_REASON_APP_CLOCKS,  KB_REASON_SYNC_BOOST,
                                              KB_REASON_DISPLAY_CLOCKS, KB_REASON_BOARD_LIMIT, KB_REASON_RELIABILITY};
    for (size_t i = 0; i < sizeof not_counted / sizeof not_counted[0]; i++) {
        kb_cond c = cond_of(not_counted[i], 1980, 3, 0);
        assert_int_equal(kb_cond_throttled(&c, &info, th), 0);
    }
    kb_cond c = cond_of(KB_REASON_GPU_IDLE | KB_REASON_SW_POWER_CAP, 1980, 3, 1);
    assert_int_equal(kb_cond_throttled(&c, &info, th), 1);
    /* by clock: below 0.75 x 1980 = 1485 flags, at or above does not */
    c = cond_of(0, 1484, 3, 0);
    assert_int_equal(kb_cond_throttled(&c, &info, th), 1);
    c = cond_of(0, 1485, 3, 0);
    assert_int_equal(kb_cond_throttled(&c, &info, th), 0);
    c = cond_of(0, 1600, 3, 0);
    assert_int_equal(kb_cond_throttled(&c, &info, 0.9), 1); /* 0.9 x 1980 = 1782 */
    assert_int_equal(kb_cond_throttled(&c, &info, 0), 0);   /* threshold 0: clock check off */
    c = cond_of(0, 300, 3, 0);
    assert_int_equal(kb_cond_throttled(&c, NULL, th), 0);   /* no maximum known */
    c = cond_of(0, 300, 3, 3);                              /* every poll idle: clocks don't count */
    assert_int_equal(kb_cond_throttled(&c, &info, th), 0);
    c = cond_of(KB_REASON_HW_SLOWDOWN, 300, 0, 0);          /* nothing read */
    assert_int_equal(kb_cond_throttled(&c, &info, th), 0);
}

/* through polls: idle alone does not flag, idle clocks don't count, reasons and clocks do */
static void test_throttled_through_polls(void **state)
{
    (void)state;
    kb_gpu_info info = fake_open(&fake_all);
    kb_cond_acc a;
    kb_cond c;

    /* only idle set, clocks high */
    kb_cond_begin(&a);
    for (int i = 0; i < 4; i++) poll_sm(&a, 1980, KB_REASON_GPU_IDLE);
    kb_cond_end(&a, &info, KB_THROTTLE_THRESHOLD_DEFAULT, &c);
    assert_int_equal(c.n, 4);
    assert_int_equal(c.idle, 4);
    assert_int_equal(c.reasons, KB_REASON_GPU_IDLE);
    assert_int_equal(c.throttled, 0);

    /* an idle poll at idle clocks among busy ones: left out of the clocks */
    kb_cond_begin(&a);
    poll_sm(&a, 345, KB_REASON_GPU_IDLE);
    poll_sm(&a, 1980, 0);
    poll_sm(&a, 1965, 0);
    kb_cond_end(&a, &info, KB_THROTTLE_THRESHOLD_DEFAULT, &c);
    assert_int_equal(c.idle, 1);
    assert_int_equal(c.sm_min_mhz, 1965);
    assert_int_equal(c.sm_med_mhz, 1973); /* (1980 + 1965) / 2 = 1972.5, rounded */
    assert_int_equal(c.throttled, 0);

    /* every poll idle: the clocks are reported, and do not flag */
    kb_cond_begin(&a);
    poll_sm(&a, 345, KB_REASON_GPU_IDLE);
    poll_sm(&a, 405, KB_REASON_GPU_IDLE);
    kb_cond_end(&a, &info, KB_THROTTLE_THRESHOLD_DEFAULT, &c);
    assert_int_equal(c.sm_min_mhz, 345);
    assert_int_equal(c.sm_med_mhz, 375);
    assert_int_equal(c.throttled, 0);

    /* by clock, no reason: one busy poll under 0.75 x 1980 */
    kb_cond_begin(&a);
    poll_sm(&a, 1980, 0);
    poll_sm(&a, 1200, 0);
    poll_sm(&a, 1980, 0);
    kb_cond_end(&a, &info, KB_THROTTLE_THRESHOLD_DEFAULT, &c);
    assert_int_equal(c.sm_min_mhz, 1200);
    assert_int_equal(c.sm_med_mhz, 1980);
    assert_int_equal(c.reasons, 0);
    assert_int_equal(c.throttled, 1);
    kb_cond_end(&a, &info, 0.5, &c); /* 990: not under */
    assert_int_equal(c.throttled, 0);

    /* by reason, clocks high */
    kb_cond_begin(&a);
    poll_sm(&a, 1980, 0);
    poll_sm(&a, 1980, KB_REASON_SW_THERMAL);
    poll_sm(&a, 1980, 0);
    kb_cond_end(&a, &info, KB_THROTTLE_THRESHOLD_DEFAULT, &c);
    assert_int_equal(c.reasons, KB_REASON_SW_THERMAL);
    assert_int_equal(c.throttled, 1);
}

/* past KB_COND_MAX polls: min/max exact, medians from the subsample */
static void test_overflow(void **state)
{
    (void)state;
    kb_gpu_info info = fake_open(&fake_all);
    static kb_cond_acc a;
    kb_cond_begin(&a);
    const int N = 5 * KB_COND_MAX + 37;
    for (int k = 0; k < N; k++) {
        unsigned sm = 1800 + (unsigned)(k % 101);         /* 1800 .. 1900, median 1850 */
        fk.power_mw = 400000 + 1000u * (unsigned)(k % 51); /* 400 .. 450 W, median 425 */
        fk.temp = 50;
        unsigned long long r = 0;
        if (k == 2 * KB_COND_MAX + 1) sm = 1234;                    /* odd polls are not kept */
        if (k == 3 * KB_COND_MAX + 3) fk.power_mw = 690000, fk.temp = 77;
        if (k == N - 1) r = KB_REASON_HW_POWER_BRAKE;               /* the last one */
        poll_sm(&a, sm, r);
    }
    assert_int_equal(a.n, N);
    assert_true(a.kept <= KB_COND_MAX);
    assert_true(a.kept >= KB_COND_MAX / 2);
    assert_true(a.stride >= 2);
    /* the kept polls are every stride-th: 0, stride, 2 stride, ... */
    assert_int_equal(a.kept, (N - 1) / a.stride + 1);
    for (int i = 0; i < a.kept; i++) {
        int k = i * a.stride;
        assert_int_equal(a.s[i].sm_mhz, k == 2 * KB_COND_MAX + 1 ? 1234u : 1800u + (unsigned)(k % 101));
    }
    kb_cond c;
    kb_cond_end(&a, &info, KB_THROTTLE_THRESHOLD_DEFAULT, &c);
    assert_int_equal(c.n, N);
    assert_int_equal(c.sm_min_mhz, 1234); /* exact though not kept */
    assert_true(fabs(c.power_max_w - 690.0) < 1e-9);
    assert_int_equal(c.temp_max_c, 77);
    assert_int_equal(c.reasons, KB_REASON_HW_POWER_BRAKE);
    assert_int_equal(c.throttled, 1);
    assert_true(abs(c.sm_med_mhz - 1850) <= 3);
    assert_true(fabs(c.power_med_w - 425.0) <= 3.0);

    /* just at the edge: KB_COND_MAX polls all kept, one more thins */
    kb_cond_begin(&a);
    for (int k = 0; k < KB_COND_MAX; k++) poll_sm(&a, 1000 + (unsigned)k, 0);
    assert_int_equal(a.kept, KB_COND_MAX);
    assert_int_equal(a.stride, 1);
    kb_cond_end(&a, &info, 0, &c);
    assert_int_equal(c.sm_med_mhz, 1000 + KB_COND_MAX / 2); /* mean of 1255 and 1256 = 1255.5, rounded */
    poll_sm(&a, 5000, 0);
    assert_int_equal(a.kept, KB_COND_MAX / 2 + 1);
    assert_int_equal(a.stride, 2);
    assert_int_equal(a.s[1].sm_mhz, 1002u);
    assert_int_equal(a.s[KB_COND_MAX / 2].sm_mhz, 5000u);
}

/* the loader's names, and the fallback to the older reasons function */
static const char *const all_names[] = {
    "nvmlInit_v2", "nvmlDeviceGetHandleByPciBusId_v2", "nvmlDeviceGetClockInfo", "nvmlDeviceGetMaxClockInfo",
    "nvmlDeviceGetApplicationsClock", "nvmlDeviceGetPowerUsage", "nvmlDeviceGetEnforcedPowerLimit",
    "nvmlDeviceGetTemperature", "nvmlDeviceGetCurrentClocksEventReasons",
    "nvmlDeviceGetCurrentClocksThrottleReasons", "nvmlDeviceGetUUID", "nvmlDeviceGetPersistenceMode",
    "nvmlDeviceGetEccMode", "nvmlDeviceGetCount_v2", "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetName",
    "nvmlDeviceGetMigMode",
};
static char sym_marks[sizeof all_names / sizeof all_names[0]];

static void *fake_sym(void *ctx, const char *name)
{
    const char *skip = ctx;
    if (skip && strcmp(name, skip) == 0) return NULL;
    for (size_t i = 0; i < sizeof all_names / sizeof all_names[0]; i++)
        if (strcmp(name, all_names[i]) == 0) return &sym_marks[i];
    fail_msg("the loader asked for an unknown name %s", name);
    return NULL;
}

static void *mark(const char *name)
{
    for (size_t i = 0; i < sizeof all_names / sizeof all_names[0]; i++)
        if (strcmp(name, all_names[i]) == 0) return &sym_marks[i];
    return NULL;
}

static void *as_ptr(const void *fn_member)
{
    void *p;
    memcpy(&p, fn_member, sizeof p);
    return p;
}

static void test_resolve_names(void **state)
{
    (void)state;
    kb_nvml_fns f;
    kb_nvml_resolve(fake_sym, NULL, &f);
    assert_ptr_equal(as_ptr(&f.init), mark("nvmlInit_v2"));
    assert_ptr_equal(as_ptr(&f.handle_by_bus), mark("nvmlDeviceGetHandleByPciBusId_v2"));
    assert_ptr_equal(as_ptr(&f.clock), mark("nvmlDeviceGetClockInfo"));
    assert_ptr_equal(as_ptr(&f.max_clock), mark("nvmlDeviceGetMaxClockInfo"));
    assert_ptr_equal(as_ptr(&f.app_clock), mark("nvmlDeviceGetApplicationsClock"));
    assert_ptr_equal(as_ptr(&f.power), mark("nvmlDeviceGetPowerUsage"));
    assert_ptr_equal(as_ptr(&f.power_limit), mark("nvmlDeviceGetEnforcedPowerLimit"));
    assert_ptr_equal(as_ptr(&f.temperature), mark("nvmlDeviceGetTemperature"));
    assert_ptr_equal(as_ptr(&f.reasons), mark("nvmlDeviceGetCurrentClocksEventReasons"));
    assert_ptr_equal(as_ptr(&f.uuid), mark("nvmlDeviceGetUUID"));
    assert_ptr_equal(as_ptr(&f.persistence), mark("nvmlDeviceGetPersistenceMode"));
    assert_ptr_equal(as_ptr(&f.ecc), mark("nvmlDeviceGetEccMode"));
    assert_ptr_equal(as_ptr(&f.count), mark("nvmlDeviceGetCount_v2"));
    assert_ptr_equal(as_ptr(&f.handle_by_index), mark("nvmlDeviceGetHandleByIndex_v2"));
    assert_ptr_equal(as_ptr(&f.name), mark("nvmlDeviceGetName"));
    assert_ptr_equal(as_ptr(&f.mig_mode), mark("nvmlDeviceGetMigMode"));
    /* an older driver: the throttle-reasons name */
    kb_nvml_resolve(fake_sym, (void *)"nvmlDeviceGetCurrentClocksEventReasons", &f);
    assert_ptr_equal(as_ptr(&f.reasons), mark("nvmlDeviceGetCurrentClocksThrottleReasons"));
    /* a missing function stays NULL */
    kb_nvml_resolve(fake_sym, (void *)"nvmlDeviceGetPowerUsage", &f);
    assert_null(as_ptr(&f.power));
    assert_non_null(as_ptr(&f.temperature));
}

/* ---- the GPUs listed from NVML (kb_nvml_models) ---- */
static struct {
    unsigned n;
    const char *names[4];
    unsigned mig[4];
    int count_rc;
} lm;

static int l_count(unsigned *n) { *n = lm.n; return lm.count_rc; }
static int l_handle(unsigned i, void **dev)
{
    if (i >= lm.n) return 2; /* NVML_ERROR_INVALID_ARGUMENT */
    *dev = (void *)(uintptr_t)(i + 1);
    return 0;
}
static int l_name(void *dev, char *buf, unsigned n)
{
    snprintf(buf, n, "%s", lm.names[(uintptr_t)dev - 1]);
    return 0;
}
static int l_mig(void *dev, unsigned *cur, unsigned *pend)
{
    *cur = lm.mig[(uintptr_t)dev - 1];
    *pend = 0;
    return *cur ? 0 : NOT_SUPPORTED;
}

static void test_models(void **state)
{
    (void)state;
    kb_nvml_fns f = fake_all;
    f.count = l_count, f.handle_by_index = l_handle, f.name = l_name, f.mig_mode = l_mig;
    kb_nvml_use(&f, NULL);
    unsetenv("CUDA_VISIBLE_DEVICES");
    char m[4][64];
    memset(&lm, 0, sizeof lm);
    lm.n = 3;
    lm.names[0] = lm.names[1] = lm.names[2] = "NVIDIA H200";
    assert_int_equal(kb_nvml_models(m[0], sizeof m[0], 4), 3);
    for (int i = 0; i < 3; i++) assert_string_equal(m[i], "NVIDIA H200");
    assert_int_equal(kb_nvml_models(m[0], sizeof m[0], 2), 3); /* more than asked for: counted, two named */
    /* CUDA would list them otherwise, or NVML cannot say: -1, ask CUDA */
    lm.names[1] = "NVIDIA H100 80GB HBM3"; /* two models: CUDA puts the fastest first */
    assert_int_equal(kb_nvml_models(m[0], sizeof m[0], 4), -1);
    lm.names[1] = "NVIDIA H200";
    lm.mig[2] = 1; /* MIG on: CUDA's devices are its instances */
    assert_int_equal(kb_nvml_models(m[0], sizeof m[0], 4), -1);
    lm.mig[2] = 0;
    setenv("CUDA_VISIBLE_DEVICES", "1,0", 1); /* CUDA's own list and order */
    assert_int_equal(kb_nvml_models(m[0], sizeof m[0], 4), -1);
    setenv("CUDA_VISIBLE_DEVICES", "", 1);
    assert_int_equal(kb_nvml_models(m[0], sizeof m[0], 4), -1);
    unsetenv("CUDA_VISIBLE_DEVICES");
    lm.n = 0; /* none */
    assert_int_equal(kb_nvml_models(m[0], sizeof m[0], 4), -1);
    lm.n = 3;
    lm.count_rc = 999;
    assert_int_equal(kb_nvml_models(m[0], sizeof m[0], 4), -1);
    lm.count_rc = 0;
    fk.init_rc = 1; /* nvmlInit fails */
    assert_int_equal(kb_nvml_models(m[0], sizeof m[0], 4), -1);
    fk.init_rc = 0;
    f.count = NULL; /* an NVML without the function */
    kb_nvml_use(&f, NULL);
    assert_int_equal(kb_nvml_models(m[0], sizeof m[0], 4), -1);
    kb_nvml_use(NULL, "/nonexistent/libnvidia-ml.so.1"); /* no NVML */
    assert_int_equal(kb_nvml_models(m[0], sizeof m[0], 4), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_absent_library, setup, teardown),
        cmocka_unit_test_setup_teardown(test_real_library, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_reads_static_facts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_failures, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_functions_unknown, setup, teardown),
        cmocka_unit_test_setup_teardown(test_min_median_power_temp_reasons, setup, teardown),
        cmocka_unit_test_setup_teardown(test_throttle_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_throttled_rule, setup, teardown),
        cmocka_unit_test_setup_teardown(test_throttled_through_polls, setup, teardown),
        cmocka_unit_test_setup_teardown(test_overflow, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resolve_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_models, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
