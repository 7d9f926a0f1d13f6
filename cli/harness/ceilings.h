/* A case's ceilings (ceilings.c). */
#ifndef KB_HARNESS_CEILINGS_H
#define KB_HARNESS_CEILINGS_H

#include "timer.h"
#include "../core/config.h"
#include "../core/op.h"
#include "../core/settings.h"

/* ceilings.c: a case's copy ceiling at its bytes and cuBLAS on its own GEMMs
 * (0 each where unknown); 1 when the GPU context is lost */
int kb_case_ceilings(kb_timer *t, const kb_case *c, const kb_opts *o, double *copy, double *shape_tf);
/* the device bytes those allocate while measured (the case's beside them) */
size_t kb_case_ceilings_bytes(const kb_case *c);
/* the GEMM ceiling a case compares with (KB_GEMM_NONE: none), and the
 * distinct ones of a plan's cases, in the order they first appear: how many */
kb_gemm_key kb_case_gemm_key(const kb_case *c);
int kb_plan_gemm_keys(const kb_plan *plan, kb_gemm_key keys[KB_NGEMM]);
/* the copy ceiling a case's rows are measured against is keyed by the bytes
 * it reads and writes (a timer measures each key once): cases with the same
 * key share their ceilings, and kb_shard_assign and the --devices queue keep
 * them on one GPU (split, each GPU measured the same ceiling) */
void kb_case_copy_key(const kb_case *c, double *rbytes, double *wbytes);

#endif
