/* Whole reads and writes on a pipe (pipeio.h). */
#include "pipeio.h"
#include "watch.h"
#include "../core/clock.h"

#include <errno.h>
#include <poll.h>
#include <unistd.h>

int kb_write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

int kb_read_all(int fd, void *buf, size_t n, double deadline, int *late)
{
    char *p = buf;
    while (n) {
        if (deadline > 0) {
            const double left = deadline - kb_now_s();
            if (left <= 0) {
                if (late) *late = 1;
                return -1;
            }
            if (kb_stop_signal) return -1; /* SIGINT or SIGTERM: the caller ends the writer */
            struct pollfd pf = {fd, POLLIN, 0};
            int r = poll(&pf, 1, left > 0.2 ? 200 : (int)(left * 1000) + 1);
            if (r <= 0) continue; /* EINTR, the deadline or a signal: looked at again above */
        }
        ssize_t k = read(fd, p, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}
