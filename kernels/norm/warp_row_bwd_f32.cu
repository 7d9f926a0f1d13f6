// The warp_row backward kernels, fp32 (warp_row_bwd.cuh).
#include "warp_row_bwd.cuh"

template const void *kb::norm::wr_bwd_kernel<float>(const kb_norm_plan &);
