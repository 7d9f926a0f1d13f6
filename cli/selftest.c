/* kbench selftest: the harness against known truths (issue 19's calibration).
 *   spin   a kernel that spins a known number of SM cycles (clock64): its
 *          measured time must be cycles / SM clock (NVML's median over the
 *          samples) within 1%, under events and under graph timing;
 *   empty  an empty kernel: its time is the launch floor of each timing mode
 *          (reported, not judged);
 *   copy   the copy ceiling at 1 GiB against the same candidate timed by the
 *          host clock over back-to-back launches, within 3%;
 *   flush  a 32 MiB copy (under the L2) after the flush, on the buffers the
 *          previous sample copied, against a ring of buffers untouched for 7
 *          samples (KB_FLUSH_RING - 1): no more than 5% faster if the flush leaves nothing behind
 *          (H100: an evict-first flush gave -17.6%, this one +3.3%).
 * Exit 0 all passed, 1 one failed, 3 a CUDA error. */
#include "core/errors.h"
#include "core/settings.h"
#include "harness/copy.h"
#include "harness/device.h"
#include "harness/timer.h"
#include "report/device.h"
#include "report/row.h"
#include "selftest.h"
#include "../kernels/kernels.h"


#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define SPIN_LIMIT_PCT 1.0
#define COPY_LIMIT_PCT 3.0
#define FLUSH_LIMIT_PCT 5.0
#define FLUSH_BYTES (32.0 * 1024 * 1024)

int kb_selftest_judge(double measured, double expected, double limit_pct, double *dev_pct)
{
    *dev_pct = expected > 0 && isfinite(measured) ? 100.0 * (measured - expected) / expected : NAN;
    return isfinite(*dev_pct) && fabs(*dev_pct) <= limit_pct;
}

int kb_selftest_judge_flush(double same_ms, double ring_ms, double limit_pct, double *dev_pct)
{
    return kb_selftest_judge(same_ms, ring_ms, limit_pct, dev_pct) || *dev_pct > 0; /* NaN > 0 is false */
}

static int spin_fn(void *ctx, void *stream) { return kb_spin_launch(*(const long long *)ctx, stream); }
static int empty_fn(void *ctx, void *stream)
{
    (void)ctx;
    return kb_empty_launch(stream);
}

static int cuda_error(kb_timer *t)
{
    fprintf(stderr, "kbench: selftest: %s\n", kb_last_error);
    kb_timer_destroy(t);
    return KB_EXIT_CUDA;
}

int kb_selftest(const kb_opts *base)
{
    kb_device dev;
    int rc = kb_device_open(&dev);
    if (rc) return rc;
    kb_timer *t = NULL;
    if (kb_timer_create(&t, &dev)) return cuda_error(t);
    int npass = 0, nfail = 0;
    printf("selftest on %s, %d SMs\n", dev.name, dev.sm_count);
    if (!dev.nvml.ok) printf("  (%s: the spin test uses the runtime's maximum SM clock)\n", dev.nvml.why);

    /* spin: about 10 ms at 2 GHz, so that the launch (microseconds) is far under 1% */
    const long long cycles = 20000000;
    static const char *const modes[] = {"events", "graph"};
    for (int m = 0; m < 2; m++) {
        kb_opts o = *base;
        snprintf(o.timing, sizeof o.timing, "%s", modes[m]);
        o.hot = 1; /* nothing to flush: the kernel touches no memory */
        kb_stats st;
        kb_time_extra x = {0};
        char label[64];
        snprintf(label, sizeof label, "selftest spin %s", modes[m]);
        if (kb_time(t, spin_fn, (void *)&cycles, &o, label, &st, &x)) return cuda_error(t);
        double mhz = x.cond.sm_med_mhz > 0 ? x.cond.sm_med_mhz : dev.sm_clock_mhz;
        double expect = (double)cycles / (mhz * 1e6) * 1e3, dev_pct;
        int ok = kb_selftest_judge(st.median, expect, SPIN_LIMIT_PCT, &dev_pct);
        printf("  spin %lld cycles (%s): %.4f ms measured, %.4f ms at the %s SM clock %.0f MHz: %+.2f%% (limit %g%%)  %s\n",
               cycles, modes[m], st.median, expect, x.cond.sm_med_mhz > 0 ? "median" : "maximum", mhz, dev_pct,
               SPIN_LIMIT_PCT, ok ? "PASS" : "FAIL");
        if (x.cond.n > 0 && x.cond.sm_min_mhz != x.cond.sm_med_mhz)
            printf("    (the SM clock moved during the samples: %d to %d MHz)\n", x.cond.sm_min_mhz, x.cond.sm_med_mhz);
        ok ? npass++ : nfail++;
    }

    /* empty: the launch floor */
    double floor_ms[2] = {0, 0};
    for (int m = 0; m < 2; m++) {
        kb_opts o = *base;
        snprintf(o.timing, sizeof o.timing, "%s", modes[m]);
        o.hot = 1;
        kb_stats st;
        if (kb_time(t, empty_fn, NULL, &o, "selftest empty", &st, NULL)) return cuda_error(t);
        floor_ms[m] = st.median;
    }
    printf("  empty kernel: %.4f ms between events around its launch, %.4f ms replayed from a graph (the launch floor;"
           " not judged)\n",
           floor_ms[0], floor_ms[1]);

    /* copy: the ceiling at 1 GiB moved, against its best candidate timed by
     * the host clock (no events, no flush: 1 GiB does not fit in L2) */
    double half = (double)(1u << 29), gbps = 0;
    int cand = -1;
    if (kb_copy_gbps(t, half, half, base, &gbps, &cand)) return cuda_error(t);
    const char *by = cand >= 0 ? kb_copy_candidate_name(cand) : "none";
    double wall_gbps = 0;
    if (cand >= 0 && kb_copy_wall_gbps(t, cand, half, half, 100, &wall_gbps)) return cuda_error(t);
    double dev_pct = NAN;
    int ok = gbps > 0 && kb_selftest_judge(gbps, wall_gbps, COPY_LIMIT_PCT, &dev_pct);
    printf("  copy ceiling at 1 GiB: %.0f GB/s (%s, events, L2 flushed, median); the same copy by the host clock over"
           " 100 launches: %.0f GB/s: %+.2f%% (limit %g%%)  %s\n",
           gbps, by, wall_gbps, dev_pct, COPY_LIMIT_PCT, ok ? "PASS" : "FAIL");
    ok ? npass++ : nfail++;

    double same_ms = 0, ring_ms = 0;
    if (kb_copy_flush_check(t, FLUSH_BYTES, base, &same_ms, &ring_ms)) return cuda_error(t);
    ok = kb_selftest_judge_flush(same_ms, ring_ms, FLUSH_LIMIT_PCT, &dev_pct);
    printf("  L2 flush: a %.0f MiB copy on the buffers the sample before it copied %.4f ms, on buffers untouched for"
           " %d samples %.4f ms: %+.2f%% (limit -%g%%: a leak makes the first faster)  %s\n",
           FLUSH_BYTES / (1 << 20), same_ms, KB_FLUSH_RING - 1, ring_ms, dev_pct, FLUSH_LIMIT_PCT, ok ? "PASS" : "FAIL");
    ok ? npass++ : nfail++;
    kb_timer_destroy(t);
    printf("selftest: %d passed, %d failed\n", npass, nfail);
    return nfail ? KB_EXIT_VERIFY : KB_EXIT_OK;
}
