/* For scripts/gpu-faults.sh: hold all but KEEP_MIB of the GPU's free memory
 * for SECONDS, so that a running sweep's next allocation fails.
 *   gpu-hog KEEP_MIB SECONDS */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    size_t keep = (argc > 1 ? strtoull(argv[1], NULL, 10) : 256) << 20;
    double secs = argc > 2 ? atof(argv[2]) : 10;
    size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) return fprintf(stderr, "gpu-hog: no GPU\n"), 1;
    size_t n = free_b > keep ? free_b - keep : 0;
    void *p = NULL;
    if (n && cudaMalloc(&p, n) != cudaSuccess) return fprintf(stderr, "gpu-hog: cannot take %zu MiB\n", n >> 20), 1;
    printf("gpu-hog: holding %zu MiB for %.0f s, %zu MiB left free\n", n >> 20, secs, (free_b - n) >> 20);
    fflush(stdout);
    usleep((useconds_t)(secs * 1e6));
    cudaFree(p);
    return 0;
}
