/* Whole reads and writes on a pipe (pipeio.c): the helper process's
 * messages (isolate.h) go through these on both ends. */
#ifndef KB_HARNESS_PIPEIO_H
#define KB_HARNESS_PIPEIO_H

#include <stddef.h>

/* n bytes written (EINTR retried): 0, or -1 (the reader gone: EPIPE) */
int kb_write_all(int fd, const void *buf, size_t n);
/* n bytes read: 0, or -1 at end of file, an error, past deadline (a
 * kb_now_s time in seconds; 0: none: it blocks), which sets *late,
 * or, with a deadline, once SIGINT or SIGTERM came (kb_stop_signal) */
int kb_read_all(int fd, void *buf, size_t n, double deadline, int *late);

#endif
