/* The CUDA device's PCI bus id, for NVML (pci.c): nvml.c needs no CUDA
 * header and asks this file. */
#ifndef KB_HARNESS_PCI_H
#define KB_HARNESS_PCI_H

#include <stddef.h>

/* The CUDA device's PCI bus id ("0000:1B:00.0"); 0 or -1. */
int kb_device_pci_bus_id(int cuda_device, char *buf, size_t n);

#endif
