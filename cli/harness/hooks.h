/* What a run is given (hooks.h): its command line and mode, and the hooks
 * through which whatever drives it from outside (a --devices worker's
 * parent) hands out cases and shares the GEMM ladders' search. The harness
 * calls them and knows nothing behind them. */
#ifndef KB_HARNESS_HOOKS_H
#define KB_HARNESS_HOOKS_H

#include "ladder.h"

/* What drives a run from outside (a --devices worker's parent): one table
 * of hooks, all optional, that the harness calls and knows nothing behind.
 * NULL (kb_run_info.hooks): a run alone, the plan's cases in order. */
typedef struct {
    void *ctx; /* every hook's first argument */
    /* the next case to run (its index in the plan; -1: none left), asked
     * each time the last one is done; NULL: the plan's cases in order */
    int (*next_case)(void *ctx);
    /* every row of a case is in the JSON on disk (cases finish in the order
     * they were handed out, maybe after the next was asked for: their rows
     * wait for their references); NULL: nobody asks */
    void (*case_done)(void *ctx);
    /* the GEMM ladders' search split with other workers (ladder.h); NULL: alone */
    const kb_ladder_share *ladder;
    int worker;  /* the GPU this process runs on (the JSON's kbench.worker), -1 none */
    int workers; /* processes sharing the host, 0 or 1: alone */
} kb_run_hooks;

typedef struct {
    int argc;
    char **argv;
    const char *name; /* default output base name */
    int check_mode;   /* kbench check: small cases, no timing */
    const kb_run_hooks *hooks; /* NULL: alone */
} kb_run_info;

#endif
