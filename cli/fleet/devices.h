/* --devices: a worker process per GPU, fed by a queue in the parent
 * (devices.c), and the queue's order (shard.c). */
#ifndef KB_FLEET_DEVICES_H
#define KB_FLEET_DEVICES_H

#include "../core/config.h"
#include "../harness/hooks.h"

/* "all" (count GPUs; count < 0: unknown, refused) or a list of distinct
 * indices below count (count < 0: not checked): how many, or -1 with err */
int kb_devices_parse(const char *s, int count, int *ids, char *err, size_t errlen);
/* The plan on a worker process per GPU of opts.devices; dry: the queue's
 * assignment printed, no GPU touched. The exit code. */
int kb_run_devices(kb_plan *plan, const kb_run_info *info, int dry);

#endif
