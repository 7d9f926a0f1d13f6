// The harness's L2 flush: read a buffer of at least twice the L2 size, so
// nothing of a case's inputs stays cached and L2 holds only clean lines (a
// memset would leave dirty lines whose write-back lands in the timed kernel).
#include <cuda_runtime.h>

#include "kernels.h"

namespace {
__global__ void l2_flush_kernel(const float4 *__restrict__ p, size_t n, float *sink)
{
    float acc = 0.f;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        // Normal-priority L2 loads (ld.global.cg). Not __ldcs: its lines are
        // evicted first, so what the previous sample left (its inputs, its
        // dirty outputs) outlived a flush of twice the L2 (H100, 2026-11-26:
        // the size-matched copy of 24 MiB ran 7.6 us after it, 11.2 us after
        // this; kbench selftest's flush check tells the two apart).
        float4 v = __ldcg(p + i);
        acc += v.x + v.y + v.z + v.w;
    }
    if (acc == 1234.5f) *sink = acc; // never true for the harness's bytes; keeps the loads
}
} // namespace

extern "C" int kb_l2_flush(const void *buf, size_t bytes, int sm_count, void *stream)
{
    size_t n = bytes / sizeof(float4);
    l2_flush_kernel<<<(sm_count > 0 ? sm_count : 132) * 4, 512, 0, (cudaStream_t)stream>>>((const float4 *)buf, n,
                                                                                          (float *)buf);
    return (int)cudaGetLastError();
}
