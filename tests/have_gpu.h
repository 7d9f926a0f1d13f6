/* The GPU tests' guard: whether a CUDA device is there (any sticky error of
 * the question cleared). Included by the tests that skip without one. */
#ifndef KB_TEST_HAVE_GPU_H
#define KB_TEST_HAVE_GPU_H
#include <cuda_runtime_api.h>

static int have_gpu(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) {
        cudaGetLastError();
        return 0;
    }
    return 1;
}
#endif
