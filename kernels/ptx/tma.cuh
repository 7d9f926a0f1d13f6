// TMA (the Hopper tensor memory accelerator, sm_90): 2-D tensor-map loads
// into shared memory (completing on an mbarrier, optionally multicast to
// the CTAs of a cluster), stores from shared memory in bulk groups, and the
// tensor-map prefetch. Every shared-memory operand is a 32-bit shared-memory
// address (smem_u32), as in mbarrier.cuh. Only compiled into sm_90 code
// paths: callers guard with __CUDA_ARCH__ >= 900 where a file is also built
// for older targets. The maps (CUtensorMap) are encoded on the host
// (cuTensorMapEncodeTiled) and passed as __grid_constant__ kernel parameters.
#pragma once
#include <cuda.h> // CUtensorMap
#include <stdint.h>

#include "mbarrier.cuh" // smem_u32, bulk_commit / bulk_wait

namespace kb::ptx {

// the map's descriptor into the cache ahead of the first copy that uses it
__device__ __forceinline__ void prefetch_tensormap(const CUtensorMap *map)
{
    asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)map) : "memory");
}
// a 2-D box at (c0 = column, c1 = row) into shared memory at dst, completing
// on bar (whose phase expects the box's bytes: mbar_expect_tx); parts past
// the tensor's edges are filled as the map says (zeros)
__device__ __forceinline__ void tma_load(uint32_t dst, const CUtensorMap *map, int c0, int c1, uint32_t bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 ::"r"(dst), "l"((uint64_t)map), "r"(c0), "r"(c1), "r"(bar)
                 : "memory");
}
// the same box written to every CTA of `mask` in the cluster (same offsets), each CTA's barrier told
__device__ __forceinline__ void tma_load_multicast(uint32_t dst, const CUtensorMap *map, int c0, int c1, uint32_t bar,
                                                   uint16_t mask)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%2, %3}], [%4], %5;"
                 ::"r"(dst), "l"((uint64_t)map), "r"(c0), "r"(c1), "r"(bar), "h"(mask)
                 : "memory");
}
// a 2-D box from shared memory at src to global memory at (c0 = column,
// c1 = row), in this thread's bulk group (bulk_commit, bulk_wait_read /
// bulk_wait); TMA writes only the part inside the tensor. The shared-memory
// writes it reads must be made visible to the async proxy first
// (fence_proxy_async, then a barrier over the writers).
__device__ __forceinline__ void tma_store(const CUtensorMap *map, uint32_t src, int c0, int c1)
{
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];" ::"l"((uint64_t)map),
                 "r"(src), "r"(c0), "r"(c1)
                 : "memory");
}
// a 32-bit store to shared memory by address (staging a TMA store's box)
__device__ __forceinline__ void st_shared_u32(uint32_t addr, uint32_t v)
{
    asm volatile("st.shared.u32 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
}

} // namespace kb::ptx
