/* A plan on one GPU (run.c), and what can be checked before the GPU is
 * touched (dryrun.c). */
#ifndef KB_HARNESS_RUN_H
#define KB_HARNESS_RUN_H

#include "hooks.h"
#include "../core/config.h"
#include "../report/device.h"
#include <stdio.h>

/* The result files a run writes: the flags', else DIR/NAME.{csv,json}
 * (kbench check: only those asked for), into csv[n] and json[n] (n:
 * PATH_MAX). 0, or -1 with err where one is too long (kb_path_fits): a
 * path is never cut. */
int kb_output_paths(const kb_plan *plan, const kb_run_info *info, char *csv, char *json, size_t n, char *err,
                    size_t errlen);
int kb_run_plan(kb_plan *plan, const kb_run_info *info);
/* What can be refused before the GPU is touched: the plugins loaded, the
 * --impl names, the output paths. 0, or -1 with err. */
int kb_plan_check(kb_plan *plan, const kb_run_info *info, char *err, size_t errlen);
/* Expand and validate (the implementations named, the output paths) without a GPU. */
int kb_dry_run(kb_plan *plan, const kb_run_info *info, FILE *out);
/* kbench device: copy rates at 64 MiB .. 1 GiB, GEMM ceilings (inventory.c) */
int kb_device_copy_report(kb_device *d);

#endif
