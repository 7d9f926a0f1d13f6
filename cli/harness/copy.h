/* The copy ceiling and its candidates (copy.c). */
#ifndef KB_HARNESS_COPY_H
#define KB_HARNESS_COPY_H

#include "timer.h"
#include "../core/settings.h"

/* The copy ceiling (GB/s, bytes read + written) at a row's bytes read and
 * written: the best of cudaMemcpy and kbench's copy kernels, L2 flushed,
 * median; cached. cand: the candidate that gave it (-1: none measured). */
#define KB_COPY_MAX_CAND 64 /* copy-ceiling candidates at most */
int kb_copy_gbps(kb_timer *t, double rbytes, double wbytes, const kb_opts *o, double *gbps, int *cand);
/* Each candidate's rate (GB/s; 0: not measured) at these bytes: rates[0]
 * cudaMemcpy, rates[1 + v] copy kernel v; kb_copy_ncandidates() of them;
 * all: every variant, else the ceiling's candidates only. */
int kb_copy_rates(kb_timer *t, double rbytes, double wbytes, const kb_opts *o, double *rates, int all);
/* whether candidate cand is one of the ceiling's (all: kbench device measures every one) */
int kb_copy_in_ceiling(int cand);
int kb_copy_ncandidates(void);
/* the device bytes a copy ceiling of rbytes read and wbytes written allocates */
size_t kb_copy_bufs_bytes(double rbytes, double wbytes);
/* Candidate cand's rate timed by the host clock around iters back-to-back
 * launches (no events, no flush): for selftest's cross-check. */
int kb_copy_wall_gbps(kb_timer *t, int cand, double rbytes, double wbytes, int iters, double *gbps);
/* selftest's flush check: the median of a cudaMemcpy of bytes/2 each way, L2
 * flushed, timed on the same buffers every sample (same_ms) and on a ring of
 * KB_FLUSH_RING buffer pairs, each untouched for the KB_FLUSH_RING - 1 samples
 * before its own (ring_ms): a flush that leaves nothing of the previous sample
 * makes the two equal. */
#define KB_FLUSH_RING 8
int kb_copy_flush_check(kb_timer *t, double bytes, const kb_opts *o, double *same_ms, double *ring_ms);
const char *kb_copy_candidate_name(int i); /* "cudaMemcpy", then the kernels' names */

#endif
