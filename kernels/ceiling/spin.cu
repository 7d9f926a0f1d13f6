// Calibration kernels for kbench selftest: one that spins a known number of
// SM clock cycles, and an empty one (the launch floor).
#include <cuda_runtime.h>

#include "../kernels.h"

namespace {

__device__ long long spin_sink; // the cycles the last spin counted: keeps the loop

// one thread: clock64() is the SM's own cycle counter, so the kernel lasts
// `cycles` SM clocks (plus the few the loop's last turn and the store take)
__global__ void spin_kernel(long long cycles)
{
    const long long t0 = clock64();
    long long t;
    do {
        t = clock64();
    } while (t - t0 < cycles);
    spin_sink = t - t0;
}

__global__ void empty_kernel() {}

} // namespace

extern "C" int kb_spin_launch(long long cycles, void *stream)
{
    if (cycles < 0) return (int)cudaErrorInvalidValue;
    spin_kernel<<<1, 1, 0, (cudaStream_t)stream>>>(cycles);
    return (int)cudaGetLastError();
}

extern "C" int kb_empty_launch(void *stream)
{
    empty_kernel<<<1, 1, 0, (cudaStream_t)stream>>>();
    return (int)cudaGetLastError();
}
