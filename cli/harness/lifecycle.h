/* A case's state and one implementation's run of it, from start to end, as
 * kbench's process (impl.c, turns.c) and a plugin helper (helper.c) both do it
 * (lifecycle.c). */
#ifndef KB_HARNESS_LIFECYCLE_H
#define KB_HARNESS_LIFECYCLE_H

#include "../core/op.h"
#include "../../include/kb_devattr.h"

/* The op's setup, its uploads landed (a pageable cudaMemcpy may return
 * before its DMA does, and the timer's stream does not wait for the legacy
 * one): 0 or the CUDA error (said in kb_last_error by setup, or here). */
int kb_case_setup(const kb_case *c, kb_state *st);
/* The op's teardown, every buffer freed. */
void kb_case_free(const kb_case *c, kb_state *st);
/* impl prepared on c (untimed, on stream, synchronised after), the copies
 * its in-place inputs need taken, the kernel named (impl's name by
 * default): 0, a CUDA error, or KB_NA (run->why says why; released). */
int kb_impl_begin(const kb_impl *impl, const kb_case *c, kb_state *st, const kb_devattr *d, void *stream,
                  kb_impl_run *run);
/* After impl's last launch: its in-place inputs restored (not where the
 * context is lost: lost), then released. 0, or the restore's CUDA error. */
int kb_impl_end(const kb_impl *impl, const kb_case *c, kb_state *st, kb_impl_run *run, int lost);

#endif
