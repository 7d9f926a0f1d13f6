/* Host memory (hostmem.c). */
#ifndef KB_CORE_HOSTMEM_H
#define KB_CORE_HOSTMEM_H

/* Large host blocks stay in the process once freed, for the next rows to
 * reuse (hostmem.c says why); main calls it first. */
void kb_host_recycle(void);

#endif
