// The consumer side of the wgmma kernels' TMA ring (fused_wgmma.cu,
// gate_up_swap.cu): one tile's k-blocks over STAGES stages. Each k-block's
// wgmmas are issued once its bytes landed (issue(kb), which reads the same
// stage and phase); after the first, the previous tile's stores of h are
// drained (drain()), so they overlap this tile's first wgmmas; from the
// second, the previous stage goes back to the producer once its wgmmas are
// done (wait_group 1, release(s)). Returns the tile's last stage, which the
// caller hands back after its epilogue. sm_90a code paths only.
#pragma once
#include <stdint.h>

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
#endif

} // namespace kb::mlp
