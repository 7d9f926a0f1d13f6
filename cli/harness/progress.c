/* The progress line (progress.h). */
#include "progress.h"

int kb_progress_due(int tty, double now, double *last)
{
    if (tty) return 1;
    if (now - *last < KB_PROGRESS_LOG_S) return 0;
    *last = now;
    return 1;
}

void kb_progress_print(FILE *f, int tty, int i, int n, double elapsed, const char *op, const char *label)
{
    if (tty)
        fprintf(f, "\r\033[K[%d/%d %.0fs] %s %.150s", i + 1, n, elapsed, op, label);
    else
        fprintf(f, "kbench: case %d of %d, %.0f s in: %s %.150s\n", i + 1, n, elapsed, op, label);
    fflush(f);
}

void kb_progress_print_done(FILE *f, int done, int n, double elapsed)
{
    fprintf(f, "kbench: %d of %d cases done, %.0f s in\n", done, n, elapsed);
    fflush(f);
}
