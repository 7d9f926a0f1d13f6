/* The sweep's place as its cases begin (progress.c): on a terminal one
 * line rewritten in place; elsewhere (a log file, Slurm's output, CI) a
 * line of its own every KB_PROGRESS_LOG_S seconds, so that a run cut short
 * (a timeout, a lost allocation) says how far it got. Nothing under
 * --quiet (the caller's test). */
#ifndef KB_HARNESS_PROGRESS_H
#define KB_HARNESS_PROGRESS_H
#include <stdio.h>

#define KB_PROGRESS_LOG_S 30.0

/* Whether a case's line is shown now: on a terminal always; elsewhere once
 * KB_PROGRESS_LOG_S seconds have passed since *last, which then moves to now. */
int kb_progress_due(int tty, double now, double *last);
/* Case i (from 0) of n begins, elapsed seconds into the sweep: on a
 * terminal "\r\033[K[i+1/n Ts] op label" (cleared by the next line or the
 * end), elsewhere "kbench: case i+1 of n, T s in: op label\n". */
void kb_progress_print(FILE *f, int tty, int i, int n, double elapsed, const char *op, const char *label);
/* --devices off a terminal, as the workers' cases end: "kbench: done of n
 * cases done, T s in\n" (on a terminal the fleet's own line names each
 * GPU's case). */
void kb_progress_print_done(FILE *f, int done, int n, double elapsed);

#endif
