/* A measurement's statistics and the rules on them (stats.c). */
#ifndef KB_HARNESS_STATS_H
#define KB_HARNESS_STATS_H

#include "../report/row.h"
#include <stddef.h>

void kb_stats_compute(const double *ms, int n, kb_stats *st);
/* Sampling may stop, however noisy the samples, once the median is known: its
 * 95% interval within +-KB_MEDIAN_CI_PCT of it, or within +-KB_MEDIAN_CI_MS
 * (a fifth of the 0.5 us that compare calls a change at; event times come in
 * steps of 32 ns), from KB_MEDIAN_CI_MIN samples on. */
#define KB_MEDIAN_CI_PCT 0.5
#define KB_MEDIAN_CI_MS 0.0001
#define KB_MEDIAN_CI_MIN 100
int kb_median_known(const kb_stats *st);
/* The stopping rule (docs/timing.md): 1 once sampling may stop. ms: the n
 * samples so far (st their statistics, sum_ms their sum); wall_s: the seconds
 * this measurement has sampled. Stops once min_samples and min_time are met
 * and the noise is under max_noise or the median is known, or, past twice
 * both minimums, the later half of the samples is as noisy as the whole
 * (within 10%); or at timeout, or 10^7 samples. */
int kb_enough_samples(const double *ms, int n, double sum_ms, double wall_s, double min_time, int min_samples,
                      double max_noise, double timeout, const kb_stats *st);
/* The index of the best (largest finite, positive) rate; -1: none. */
int kb_best_rate(const double *rates, int n);
/* A row's share of a ceiling above 100% says why: "l2" when its bytes fit in
 * the L2 (or under --hot, where they stay there), "ceiling?" otherwise (the
 * ceiling is beaten: it is not one); "" when no share is above 100. */
const char *kb_row_note(double pct_of_copy, double pct_of_gemm, double bytes, size_t l2_bytes, int hot);

#endif
