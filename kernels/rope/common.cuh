// RoPE's device helpers shared by its kernels: a row's position.
//
// out = t*cos(theta) + rotate(t)*sin(theta) over the first `rot` dims of each
// head, the rest copied. neox rotates halves (i, i + rot/2); gptj rotates
// adjacent pairs (2i, 2i+1). theta for pair i at position p is
// angles[p][i]. Backward applies the transpose rotation: sin -> -sin.
#pragma once
#include <cuda_runtime.h>

#include "../common.cuh"
#include "../kernels.h"

namespace kb::rope {

// Sequence of token t in a thd batch: the last i with cu[i] <= t.
__device__ __forceinline__ int thd_sequence(const int *__restrict__ cu, int batch, long t)
{
    int lo = 0, hi = batch - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) >> 1;
        if (__ldg(cu + mid) <= t) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

// Position of a row (one head vector of `dim` elements).
__device__ __forceinline__ int row_position(const kb_rope_args &a, long row)
{
    if (a.layout == KB_ROPE_SBHD) return (int)(row / ((long)a.batch * a.heads));
    long token = row / a.heads;
    if (a.layout == KB_ROPE_BSHD) return (int)(token % a.seq);
    return (int)(token - __ldg(a.cu_seqlens + thd_sequence(a.cu_seqlens, a.batch, token)));
}

// The arguments every launcher checks.
inline bool args_ok(const kb_rope_args *a)
{
    return a->rot >= 2 && a->rot % 2 == 0 && a->rot <= a->dim && a->dim <= 8192 && a->heads > 0 &&
           (a->layout != KB_ROPE_THD || a->cu_seqlens);
}

} // namespace kb::rope
