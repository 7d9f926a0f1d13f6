/* Plugin implementations in a helper process (--isolate auto, the default):
 * a kernel of someone else's that faults poisons the CUDA context of the
 * process it runs in, and one that hangs holds it; in a helper, either costs
 * the rows it was running, and kbench goes on with the next implementation
 * and case.
 *
 * One helper per kbench process (the run's, or a --devices worker's), this
 * same executable run as `kbench __helper`, with the run's plugins loaded in
 * the same order (the same names and parameters). For each plugin row kbench
 * sends the case (op, parameters, seed) and the implementation's name; the
 * helper makes the case's inputs itself (the op's setup from the same seed:
 * the same bits), prepares, runs the poisoned verify launch (and check's
 * second), times with the same timer (L2 flush, events or graph, the same
 * stopping rule) and sends back the statistics, the samples, the conditions
 * and the outputs; kbench compares those with its own reference. No device
 * memory is shared: the helper's context is its own, so a fault there leaves
 * kbench's untouched. A helper that dies (a fault, a crash, its watchdog on a
 * hang) is started again for the next row.
 *
 * isolate.c is kbench's side, helper.c the helper's; the messages below are
 * what they exchange over two pipes (the same executable on both ends: the
 * structs go as they are). */
#ifndef KB_HARNESS_ISOLATE_H
#define KB_HARNESS_ISOLATE_H

#include "../core/op.h"
#include "../core/settings.h"
#include "../report/conditions.h"
#include "../report/row.h"

#include <stdint.h>

#define KB_ISO_MAGIC 0x6b62697au /* "kbiz" */
#define KB_ISO_REQ_FD 3          /* the helper reads requests here */
#define KB_ISO_REP_FD 4          /* and answers here */

/* kbench -> helper: one implementation on one case, then nlist ints for
 * each int-list parameter, in parameter order */
typedef struct {
    uint32_t magic;
    int32_t check_mode, nparams, index;
    uint64_t seed;
    char op[32], impl[96];
    kb_opts opts;
    double num[KB_MAX_PARAMS];
    int32_t nlist[KB_MAX_PARAMS];
} kb_iso_req;

/* helper -> kbench: then nsamples doubles, then each output's out_bytes */
typedef struct {
    uint32_t magic;
    int32_t e;      /* 0, or the CUDA error of setup, prepare, the verify run or the timing */
    int32_t na;     /* prepare said KB_NA: the row is n/a, why in reason */
    int32_t ran;    /* the verify run ran: the outputs follow */
    int32_t sticky; /* e lost the helper's context: it ends after this answer */
    int32_t nout, nsamples;
    double extra_bytes; /* the accumulating outputs' reads, less the unwritten (presample.h) */
    uint32_t unwritten; /* kb_impl_run.unwritten */
    double host_ms; /* kb_time_extra.host_ms */
    double wall_verify, wall_time;
    kb_stats st;
    kb_cond cond;
    char kernel[KB_KERNEL_LEN], reason[256], error[512], nondet[256];
    char fallback[200]; /* kb_time_extra.fallback: graph capture failed, timed with events */
    uint64_t out_bytes[KB_MAX_OUTPUTS];
} kb_iso_rep;

/* What a row gets from the helper. */
typedef struct {
    kb_iso_rep rep;
    double *samples;          /* malloc'd (rep.nsamples), or NULL */
    void *h[KB_MAX_OUTPUTS];  /* the verify run's outputs, malloc'd, or NULL */
    char error[700];          /* e's words, or the helper's end ("died of SIGSEGV") */
} kb_iso_result;

/* The executable the helper runs (kbench's main: /proc/self/exe); none set
 * (a test binary that links kb_main), plugins run in process. */
void kb_isolate_exe(const char *path);
/* Whether impl runs in the helper under o (a plugin's, --isolate auto). */
int kb_isolated(const kb_opts *o, const kb_impl *impl);
/* Runs impl on c in the helper (started first if none is running); the
 * result in r. 0: an answer came (r->rep.e may still be an error); -1: the
 * helper ended or hung without one (killed; r->rep zero, r->error says
 * which), and the next call starts another. */
int kb_isolate_run(const kb_case *c, const kb_impl *impl, const kb_opts *o, int check_mode, kb_iso_result *r);
/* The helper ended (at the run's end). */
void kb_isolate_stop(void);
/* `kbench __helper PLUGINS`: the helper's loop (helper.c); its exit code. */
int kb_helper_main(int argc, char **argv);

#endif
