/* kbench selftest (selftest.c). */
#ifndef KB_SELFTEST_H
#define KB_SELFTEST_H

#include "core/settings.h"

/* kbench selftest (selftest.c): 0 all passed, KB_EXIT_VERIFY one failed, KB_EXIT_CUDA */
int kb_selftest(const kb_opts *o);
/* |measured - expected| within limit_pct of expected; dev_pct the signed deviation */
int kb_selftest_judge(double measured, double expected, double limit_pct, double *dev_pct);
/* the flush check: a leak can only make the copy on the buffers the sample
 * before touched (same) faster than on untouched ones (ring), so it passes
 * unless same is more than limit_pct under ring; dev_pct the signed deviation */
int kb_selftest_judge_flush(double same_ms, double ring_ms, double limit_pct, double *dev_pct);

#endif
