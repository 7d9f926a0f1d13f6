/* The GPU: opened, its facts and clocks (device.c). */
#ifndef KB_HARNESS_DEVICE_H
#define KB_HARNESS_DEVICE_H

#include "../report/device.h"
#include <stddef.h>

/* 0, or prints one line and returns KB_EXIT_CUDA. */
int kb_device_open(kb_device *d);
void kb_device_clocks(kb_device *d); /* refresh NVML current clocks (nvml.c) */
int kb_device_free_mem(size_t *free_b, size_t *total_b);

#endif
