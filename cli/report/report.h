/* A run's report: the table, the CSV and the JSON, row by row (report.c). */
#ifndef KB_REPORT_REPORT_H
#define KB_REPORT_REPORT_H

#include "device.h"
#include "row.h"
#include "../core/op.h"

typedef struct kb_report kb_report;
kb_report *kb_report_open(const char *csv, const char *json, const kb_op *const *ops, int nops,
                          const kb_device *dev, int argc, char **argv, int quiet, char *err,
                          size_t errlen);
/* Write a row: the table, the CSV (flushed) and the JSON (the row appended:
 * json.h; on disk once this returns, whatever the row's number). 0, or -1 at
 * the first failed write (a full disk, a file size limit): then
 * kb_report_error says "cannot write PATH: REASON", every row written
 * before stays readable, and later rows are refused. */
int kb_report_row(kb_report *r, const kb_row *row);
const char *kb_report_error(const kb_report *r); /* NULL while every write succeeded */
/* The sweep the rows belong to, into the JSON's "kbench" object: sweep_id,
 * sweep_cases and, for a shard (shard_n > 0), "shard": "K/N"; for a
 * --devices worker (worker >= 0), "worker": its GPU. */
void kb_report_sweep(kb_report *r, const char *sweep_id, int sweep_cases, int shard_k, int shard_n, int worker);
/* How a case's implementations were timed (--order: turns or sequence), in the JSON's head. */
void kb_report_order(kb_report *r, const char *order);
/* A case the run had no implementation to run for (--impl): its index into
 * the JSON's kbench.skipped_cases, so that kbench merge does not miss its rows. */
int kb_report_skip(kb_report *r, int case_index); /* 0, or -1 (kb_report_error says why) */
/* kbench.start_s: the seconds before the first case is timed (the device
 * opened, its copy ceiling measured, the first case set up and, where it
 * compares with a GEMM ceiling, the sweep's GEMM ladders measured while its
 * reference runs): what every GPU of a --devices run pays whatever their
 * number */
#define KB_START_NPARTS 4
extern const char *const kb_start_parts[KB_START_NPARTS]; /* "device", "copy", "first_case", "ladders" */
/* and where they went (kbench.start_parts_s): the device and the timer
 * opened, the copy ceiling, the first case taken and set up (its reference
 * started, its own ceilings measured), the GEMM ladders (0 where they came
 * at a later case: then in that case's ceilings phase) */
void kb_report_start(kb_report *r, double seconds, const double parts[KB_START_NPARTS]);
/* kbench.ladder_wait_s (where > 0): the time the GEMM ladders of a
 * --devices worker waited for the parent's queue of rungs, whenever they ran
 * (on disk at once) */
void kb_report_ladder_wait(kb_report *r, double seconds);
/* the device's GEMM ceilings, measured after the report was opened */
void kb_report_gemm(kb_report *r, const kb_device *dev);
/* Close (the JSON written a last time); 0, or -1 with the first failed write in err. */
int kb_report_close(kb_report *r, char *err, size_t errlen);

#endif
