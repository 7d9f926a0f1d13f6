// stmatrix (sm_90): a warp stores 8 x 8 matrices of 16-bit values from the
// mma/wgmma accumulator layout to shared memory, each thread giving one row's
// address. .trans stores each matrix transposed: the fragment's column k
// (the value pair a lane holds sits in row lane / 4, columns 2 (lane % 4)
// and + 1) becomes the 16 bytes at the address of matrix row k. Lanes 8i to
// 8i + 7 give the rows of matrix i; register i holds this lane's pair of
// matrix i (the first value in the low half). sm_90 code paths only.
#pragma once
#include <stdint.h>

namespace kb::ptx {

__device__ __forceinline__ void stmatrix_x4_trans(uint32_t addr, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3)
{
    asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(r0),
                 "r"(r1), "r"(r2), "r"(r3)
                 : "memory");
}
// two matrices: lanes 0-15 give the rows (the other lanes' addresses are unused)
__device__ __forceinline__ void stmatrix_x2_trans(uint32_t addr, uint32_t r0, uint32_t r1)
{
    asm volatile("stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [%0], {%1, %2};" ::"r"(addr), "r"(r0), "r"(r1)
                 : "memory");
}

} // namespace kb::ptx
