/* LayerNorm's and RMSNorm's x, as every case draws it (cli/ops/norm.c):
 * seeded uniform in [-1, 3) (a mean away from 0, so the variance is not the
 * mean square), and in one row of four (row % 4 == 3) one massive
 * activation, the ~1000x outliers LLM residual streams carry in a few fixed
 * channels: +1000 in the row's first column, +1000 in its middle, -1000 in
 * its last, in turn. A variance taken from sums shifted by one of the row's
 * own values cancels on such rows (a bug kbench's own kernels had: the
 * outlier first, 22-26x past fp32's tolerance; tests/test_norm_outliers.c),
 * which rows of one uniform range never show. */
#ifndef KB_OPS_NORM_INPUTS_H
#define KB_OPS_NORM_INPUTS_H

#define KB_NORM_X_LO (-1.0)
#define KB_NORM_X_HI 3.0
#define KB_NORM_OUTLIER 1000.0

/* Row `row`'s outlier: its column (its value in *value), or -1 for none. */
long kb_norm_outlier(long row, long cols, double *value);

#endif
