/* One process at a time: a token in a pipe made before the fork (gate.h).
 * The --devices workers open their GPUs in turn (devices.c says why). */
#include "gate.h"
#include "../core/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>
#include <time.h>
struct kb_gate {
    int rd, wr;    /* the pipe that holds the token (rd non-blocking: every waiter polls, one reads it) */
    double wait_s; /* the longest wait for it */
};

kb_gate *kb_gate_new(double wait_s)
{
    kb_gate *g = calloc(1, sizeof *g);
    int fd[2];
    if (!g || pipe(fd)) {
        free(g);
        return NULL;
    }
    g->rd = fd[0];
    g->wr = fd[1];
    g->wait_s = wait_s;
    if (fcntl(g->rd, F_SETFL, O_NONBLOCK) || write(g->wr, "t", 1) != 1) {
        kb_gate_free(g);
        return NULL;
    }
    return g;
}




void kb_gate_free(kb_gate *g)
{
    if (!g) return;
    close(g->rd);
    close(g->wr);
    free(g);
}

int kb_gate_enter(kb_gate *g)
{
    if (!g) return 0;
    const double end = kb_now_s() + g->wait_s;
    for (;;) {
        char t;
        const ssize_t r = read(g->rd, &t, 1);
        if (r == 1) return 1;
        if (r < 0 && errno != EAGAIN && errno != EINTR) return 0; /* no pipe to wait on */
        const double left = end - kb_now_s();
        if (left <= 0) return 0;
        struct pollfd p = {g->rd, POLLIN, 0};
        poll(&p, 1, (int)(left * 1000) + 1);
    }
}

void kb_gate_leave(kb_gate *g, int taken)
{
    if (g && taken && write(g->wr, "t", 1) != 1) {} /* a full pipe cannot be: one token */
}
