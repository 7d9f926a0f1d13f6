/* A measurement's statistics, the rule that the median is known, and what
 * a share of a ceiling above 100% means (stats.h). */
#include "stats.h"
#include "../report/row.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void kb_stats_compute(const double *ms, int n, kb_stats *st)
{
    memset(st, 0, sizeof *st);
    st->samples = n;
    if (n <= 0) return;
    double *s = malloc((size_t)n * sizeof *s);
    memcpy(s, ms, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    st->min = s[0];
    st->max = s[n - 1];
    st->median = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    /* quartiles: linear between the order statistics at (n-1)q (numpy's default) */
    for (int k = 0; k < 2; k++) {
        double pos = (n - 1) * (k ? 0.75 : 0.25), lo = floor(pos);
        int i = (int)lo, j = i + 1 < n ? i + 1 : i;
        (k ? &st->p75 : &st->p25)[0] = s[i] + (pos - lo) * (s[j] - s[i]);
    }
    double h = 0.98 * sqrt((double)n); /* 1.96 sqrt(n) / 2 */
    int lo = (int)floor(n / 2.0 - h), hi = (int)ceil(1 + n / 2.0 + h); /* 1-based ranks */
    st->med_lo = s[lo < 1 ? 0 : lo - 1];
    st->med_hi = s[hi > n ? n - 1 : hi - 1];
    double sum = 0;
    for (int i = 0; i < n; i++) sum += s[i];
    st->mean = sum / n;
    double var = 0;
    for (int i = 0; i < n; i++) var += (s[i] - st->mean) * (s[i] - st->mean);
    st->stddev = n > 1 ? sqrt(var / (n - 1)) : 0;
    st->noise_pct = st->mean > 0 ? 100.0 * st->stddev / st->mean : 0;
    free(s);
}

int kb_median_known(const kb_stats *st)
{
    if (st->samples < KB_MEDIAN_CI_MIN || !(st->median > 0)) return 0;
    double half = (st->med_hi - st->med_lo) / 2, pct = KB_MEDIAN_CI_PCT / 100 * st->median;
    return half <= (pct > KB_MEDIAN_CI_MS ? pct : KB_MEDIAN_CI_MS);
}

int kb_enough_samples(const double *ms, int n, double sum_ms, double wall_s, double min_time, int min_samples,
                      double max_noise, double timeout, const kb_stats *st)
{
    if (n >= min_samples && sum_ms * 1e-3 >= min_time) {
        if (st->noise_pct <= max_noise) return 1;
        /* noisy (a kernel of a few us: launch jitter, outliers), but its median,
         * the figure reported, is known to +-0.5% (or 0.1 us) */
        if (kb_median_known(st)) return 1;
        /* Noise above the bar but converged: once twice the minimum time is in,
         * if the later half of the samples is as noisy as the whole (within
         * 10%), more samples will not lower it; stop, and the row says so. */
        if (sum_ms * 1e-3 >= 2 * min_time && n >= 2 * min_samples) {
            kb_stats late;
            kb_stats_compute(ms + n / 2, n - n / 2, &late);
            if (fabs(late.noise_pct - st->noise_pct) <= 0.1 * st->noise_pct) return 1;
        }
    }
    return wall_s >= timeout || n >= 10000000;
}

int kb_best_rate(const double *rates, int n)
{
    int best = -1;
    for (int i = 0; i < n; i++)
        if (isfinite(rates[i]) && rates[i] > 0 && (best < 0 || rates[i] > rates[best])) best = i;
    return best;
}

const char *kb_row_note(double pct_of_copy, double pct_of_gemm, double bytes, size_t l2_bytes, int hot)
{
    if (pct_of_copy > 100 && (hot || (l2_bytes && bytes <= (double)l2_bytes))) return "l2";
    if (pct_of_copy > 100 || pct_of_gemm > 100) return "ceiling?";
    return "";
}
