/* The timer: CUDA events per sample, an L2 flush before each (unless --hot),
 * batches of samples between host checks, the stopping rule of kb_opts. */
#ifndef KB_HARNESS_H
#define KB_HARNESS_H
#include "kbench.h"
#include <signal.h>

/* SIGINT or SIGTERM during a run (run.c): 0, or the signal. The timer stops
 * sampling at the next batch, and the run writes no row for the case under way. */
extern volatile sig_atomic_t kb_stop_signal;

typedef struct kb_timer kb_timer;
/* One sample's work, launched on stream; 0 or a CUDA error (kb_last_error set). */
typedef int (*kb_sample_fn)(void *ctx, void *stream);

int kb_timer_create(kb_timer **t, const kb_device *d);
void kb_timer_destroy(kb_timer *t);
void *kb_timer_stream(kb_timer *t);
size_t kb_timer_scratch_bytes(const kb_timer *t);
/* Warm up, then sample until min_samples and min_time are met and the noise
 * (stddev/mean) is under max_noise, or, past twice min_time, the noise has
 * converged above it (the later half of the samples as noisy as the whole,
 * within 10%), or timeout; the whole inside an NVTX range `label`. */
int kb_time(kb_timer *t, kb_sample_fn fn, void *ctx, const kb_opts *o, const char *label, kb_stats *st);
/* Device-to-device copy rate (bytes read + written) at this byte count, cached. */
int kb_copy_gbps(kb_timer *t, double bytes, const kb_opts *o, double *gbps);
/* Dense GEMM throughput for key k (a square cuBLAS GEMM, median), cached;
 * 0 TFLOP/s when it does not fit in the free memory. size: n of the n^3 GEMM. */
int kb_gemm_tflops(kb_timer *t, kb_gemm_key k, const kb_opts *o, double *tflops, int *size);
#endif
