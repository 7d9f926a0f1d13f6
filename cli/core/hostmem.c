/* hostmem.c: how kbench's process keeps its host memory.
 *
 * A case's large host buffers (its inputs, the outputs copied back for
 * verification, their double-precision copies) come and go with every row.
 * glibc maps each one of over 32 MiB on its own and unmaps it on free, so
 * every row's buffers sit at addresses the process has not used before. A
 * device-to-host cudaMemcpy of 512 MiB into such a buffer took 0.31-0.36 s,
 * touched first or not, against 0.03-0.04 s into a buffer copied to before
 * (H200 host, 2026-11-26), and those copies were most of a large row's
 * verification: make run's sweep verified in 8.1 s, now 2.9 s. So large
 * blocks come from the heap and stay there when freed (up to 2 GiB free at
 * its top), and later rows reuse them. The process's resident size stays at
 * its peak. */
#include "hostmem.h"

#include <stdlib.h> /* and with it __GLIBC__ */

#ifdef __GLIBC__
#include <malloc.h>
#endif

void kb_host_recycle(void)
{
#ifdef __GLIBC__
    mallopt(M_MMAP_MAX, 0);                 /* no block mapped on its own (a thread's arena may still map) */
    mallopt(M_TRIM_THRESHOLD, 0x7fffffff); /* the heap's free top kept, up to 2 GiB */
#endif
}
