// The kernel a plan names, from the translation unit that instantiates it
// (one kernel family, or one dtype of one, a file: the build parallelises).
// exec.cu launches it; every lookup returns nullptr for a plan it has no
// kernel for (the planner never makes one).
#pragma once
#include "plan.h"

namespace kb::norm {

template <typename T> const void *wr_fwd_kernel(const kb_norm_plan &p);    // warp_row_fwd.cu
template <typename T> const void *wr_bwd_kernel(const kb_norm_plan &p);    // warp_row_bwd_f32.cu, warp_row_bwd_16.cu
template <typename T> const void *block_fwd_kernel(const kb_norm_plan &p); // block_fwd.cu
template <typename T> const void *block_bwd_kernel(const kb_norm_plan &p); // block_bwd.cu
template <typename T> const void *bulk_fwd_kernel(const kb_norm_plan &p);  // bulk_sm90.cu
template <typename T> const void *bulk_bwd_kernel(const kb_norm_plan &p);  // bulk_sm90.cu
template <typename T> const void *cl_fwd_kernel(const kb_norm_plan &p);    // cluster_fwd.cu
template <typename T> const void *rr_fwd_kernel(const kb_norm_plan &p, int aff, bool rms); // reread_fwd.cu: aff 0 none, 1 gamma, 2 and beta

} // namespace kb::norm
