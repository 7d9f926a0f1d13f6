// Barriers below the block: named barriers (bar.sync id, threads) that only
// the warps naming them wait on; id 0 is __syncthreads'.
#pragma once

namespace kb::ptx {

__device__ __forceinline__ void named_barrier(int id, int threads)
{
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

} // namespace kb::ptx
