/* usage: openbench N MODE   (N processes, one GPU each, N <= 16; MODE: full | nonvml | serial)
 *
 * issue 24 diagnostic: what a --devices worker's start and end cost with
 * 1 and with 4 processes at once: cuInit, the context, NVML's init, cuBLAS
 * and a GEMM, a 40 GiB allocation, the teardown. full: all open at once;
 * nonvml: the same without NVML; serial: one opens at a time (a token in a
 * pipe, as kb_gate does). One line per process, then the total.
 *
 * Build and run on a GPU machine (not by make; tests do not run it):
 *   gcc -O2 scripts/ab/openbench.c -o /tmp/openbench -I/usr/local/cuda/include \
 *       -L/usr/local/cuda/lib64 -lcublas -lcudart -ldl -Wl,-rpath,/usr/local/cuda/lib64
 *   for m in full serial; do /tmp/openbench 1 $m; /tmp/openbench 4 $m; done
 * Records: results/curated/2026-11-26-h200x4-devices/d2b7553/openbench.txt,
 * .../gate-ab/openbench.txt */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <cublas_v2.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
int main(int argc, char **argv)
{
    if (argc < 3 || atoi(argv[1]) < 1 || atoi(argv[1]) > 16) {
        fprintf(stderr, "usage: openbench N full|nonvml|serial   (1 <= N <= 16 processes, one GPU each)\n");
        return 2;
    }
    int n = atoi(argv[1]), nvml = strcmp(argv[2], "nonvml"), serial = !strcmp(argv[2], "serial");
    int tok[2]; pipe(tok); if (write(tok[1], "t", 1) != 1) return 1;
    double T0 = now();
    pid_t pid[16];
    int fd[16][2];
    for (int w = 0; w < n; w++) {
        pipe(fd[w]);
        if (!(pid[w] = fork())) {
            char d[8]; snprintf(d, 8, "%d", w); setenv("CUDA_VISIBLE_DEVICES", d, 1);
            char t; if (serial && read(tok[0], &t, 1) != 1) _exit(1);
            double s[8]; int k = 0; s[k++] = now();
            int c; cudaGetDeviceCount(&c); s[k++] = now();
            cudaSetDevice(0); cudaFree(0); s[k++] = now();
            if (nvml) {
                void *l = dlopen("libnvidia-ml.so.1", RTLD_NOW);
                int (*init)(void) = l ? (int (*)(void))dlsym(l, "nvmlInit_v2") : NULL;
                if (init) init();
            }
            s[k++] = now();
            if (serial && write(tok[1], "t", 1) != 1) _exit(1);
            cublasHandle_t h; cublasCreate(&h);
            void *a; cudaMalloc(&a, 3u << 27); cudaMemset(a, 0, 3u << 27);
            float one = 1, zero = 0;
            cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 4096, 4096, 4096, &one, a, CUDA_R_16BF, 4096, a, CUDA_R_16BF, 4096, &zero,
                         (char *)a + (1u << 27), CUDA_R_16BF, 4096, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
            cudaDeviceSynchronize(); s[k++] = now();
            void *big; cudaMalloc(&big, 40ull << 30); cudaMemset(big, 1, 40ull << 30); cudaDeviceSynchronize();
            cudaFree(big); s[k++] = now();
            cublasDestroy(h); cudaFree(a); s[k++] = now();
            dprintf(fd[w][1], "%d cuInit %.3f ctx %.3f nvml %.3f cublas+gemm %.3f alloc40G %.3f free %.3f (from T0: ready %.3f end %.3f)\n",
                    w, s[1] - s[0], s[2] - s[1], s[3] - s[2], s[4] - s[3], s[5] - s[4], s[6] - s[5], s[4] - T0, s[6] - T0);
            _exit(0);
        }
        close(fd[w][1]);
    }
    for (int w = 0; w < n; w++) {
        char b[512]; int m = read(fd[w][0], b, sizeof b - 1); b[m > 0 ? m : 0] = 0;
        double t = now();
        waitpid(pid[w], NULL, 0);
        printf("%s   reaped %.3f s after its line\n", strtok(b, "\n"), now() - t);
    }
    printf("%s n=%d total %.3f s\n", argv[2], n, now() - T0);
    return 0;
}
