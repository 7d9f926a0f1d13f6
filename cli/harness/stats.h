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
/* The index of the best (largest finite, positive) rate; -1: none. */
int kb_best_rate(const double *rates, int n);
/* A row's share of a ceiling above 100% says why: "l2" when its bytes fit in
 * the L2 (or under --hot, where they stay there), "ceiling?" otherwise (the
 * ceiling is beaten: it is not one); "" when no share is above 100. */
const char *kb_row_note(double pct_of_copy, double pct_of_gemm, double bytes, size_t l2_bytes, int hot);

#endif
