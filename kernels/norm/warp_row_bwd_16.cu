// The warp_row backward kernels, fp16 and bf16 (warp_row_bwd.cuh).
#include "warp_row_bwd.cuh"

template const void *kb::norm::wr_bwd_kernel<__half>(const kb_norm_plan &);
template const void *kb::norm::wr_bwd_kernel<__nv_bfloat16>(const kb_norm_plan &);
