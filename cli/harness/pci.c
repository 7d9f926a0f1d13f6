/* The CUDA device's PCI bus id, the key NVML finds it by (pci.h). */
#include "pci.h"

#include <cuda_runtime_api.h>
int kb_device_pci_bus_id(int cuda_device, char *buf, size_t n)
{
    if (!buf || n == 0 || n > 0x7fffffff) return -1;
    return cudaDeviceGetPCIBusId(buf, (int)n, cuda_device) == cudaSuccess ? 0 : -1;
}
