/* The GPU: opened, its facts and clocks (device.c). */
#ifndef KB_HARNESS_DEVICE_H
#define KB_HARNESS_DEVICE_H

#include "../report/device.h"
#include <stddef.h>

/* 0, or prints one line and returns KB_EXIT_CUDA: "no NVIDIA GPU or driver
 * found: ..." where the driver or the GPU is missing (kb_device_why). */
int kb_device_open(kb_device *d);
/* Why the GPU cannot be used, from cudaGetDeviceCount's error, the devices it
 * counted and cudaDriverGetVersion's version (0: no driver): no driver, a
 * driver too old, the toolkit's stub, no GPU, or CUDA's own words. Into buf
 * (as snprintf). */
size_t kb_device_why(int err, int ndev, int driver, char *buf, size_t n);
void kb_device_clocks(kb_device *d); /* refresh NVML current clocks (nvml.c) */
int kb_device_free_mem(size_t *free_b, size_t *total_b);

#endif
