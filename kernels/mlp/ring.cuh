// The consumer side of the wgmma kernels' TMA ring (fused_wgmma.cu,
// gate_up_swap.cu): one tile's k-blocks over STAGES stages. Each k-block's
// wgmmas are issued once its bytes landed (issue(kb), which reads the same
// stage and phase); after the first, the previous tile's stores of h are
// drained (drain()), so they overlap this tile's first wgmmas; from the
// second, the previous stage goes back to the producer once its wgmmas are
// done (wait_group 1, release(s)). Returns the tile's last stage, which the
// caller hands back after its epilogue. drain_stores hands back the stage a
// tile's h left from by TMA stores, once they have read it. sm_90a code
// paths only.
#pragma once
#include <stdint.h>

#include "../ptx/barrier.cuh"
#include "../ptx/mbarrier.cuh"
#include "../ptx/wgmma.cuh"

namespace kb::mlp {

#ifdef KB_PTX_SM90A
template <int STAGES, typename Issue, typename Drain, typename Release>
__device__ __forceinline__ int consume_tile(int nk, int &stage, uint32_t &phase, Issue &&issue, Drain &&drain,
                                            Release &&release)
{
    int prev = 0;
    for (int kb = 0; kb < nk; kb++) {
        issue(kb);
        if (kb == 0) drain();
        if (kb > 0) {
            kb::ptx::wgmma_wait<1>();
            release(prev);
        }
        prev = stage;
        if (++stage == STAGES) {
            stage = 0;
            phase ^= 1;
        }
    }
    return prev;
}

// pending: the stage the warpgroup's TMA stores of h read from (-1: none);
// its store thread (tid 0) waits for the reads, the warpgroup meets at
// named barrier `bar`, and the stage goes back to the producer
template <typename Release>
__device__ __forceinline__ void drain_stores(int &pending, int tid, int bar, Release &&release)
{
    if (pending < 0) return;
    if (tid == 0) kb::ptx::bulk_wait_read();
    kb::ptx::named_barrier(bar, 128);
    release(pending);
    pending = -1;
}
#endif

} // namespace kb::mlp
