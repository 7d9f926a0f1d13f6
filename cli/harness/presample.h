/* What the harness does untimed before each launch it verifies or times, for
 * implementations that declare it (kb_impl_run's inplace and accumulate):
 * an input written in place restored, an accumulating output zeroed
 * (presample.c). Implementations that declare neither see nothing of it. */
#ifndef KB_HARNESS_PRESAMPLE_H
#define KB_HARNESS_PRESAMPLE_H

#include "../core/op.h"
#include <stddef.h>

/* whether r declares anything to do before a launch */
int kb_presample_any(const kb_impl_run *r);
/* After prepare: a device copy of each input written in place. 0 or a CUDA error. */
int kb_presample_begin(kb_impl_run *r);
/* Before a launch, on stream (graph-capturable): each in-place input
 * restored, each accumulating output zeroed. 0 or a CUDA error. */
int kb_presample(const kb_state *st, const kb_impl_run *r, void *stream);
/* After a verified launch: each in-place result copied into its output
 * buffer, where verification reads it. 0 or a CUDA error. */
int kb_presample_collect(kb_state *st, const kb_impl_run *r, void *stream);
/* After the implementation's last launch: the inputs as they were (the next
 * implementation reads them), the copies freed. 0 or a CUDA error. */
int kb_presample_end(kb_impl_run *r, void *stream);
/* The bytes the byte model adds for r: each accumulating output read once;
 * less each output r does not write (kb_impl_run.unwritten). */
double kb_presample_read_bytes(const kb_state *st, const kb_impl_run *r);

#endif
