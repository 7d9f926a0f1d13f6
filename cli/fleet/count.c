/* The GPUs CUDA sees, counted in a child process so that the parent of the
 * --devices workers never touches CUDA (count.h). */
#include "count.h"
#include "../harness/nvml.h"
#include "../harness/pipeio.h"

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
int kb_devices_count_child(char (*models)[KB_MODEL_LEN], int max)
{
    int fd[2];
    for (int i = 0; i < max; i++) models[i][0] = 0;
    if (pipe(fd)) return -1;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) { close(fd[0]); close(fd[1]); return -1; }
    if (pid == 0) { /* NVML or CUDA initialised here, in a child that exits: the caller stays free to fork workers */
        close(fd[0]);
        int n = kb_nvml_models(models[0], KB_MODEL_LEN, max); /* NVML's names, where its list is CUDA's */
        if (n <= 0) {
            n = 0;
            const cudaError_t e = cudaGetDeviceCount(&n);
            if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) n = 0; /* none usable here */
            else if (e != cudaSuccess) n = -1; /* a GPU there, but CUDA failed: not "no GPU" */
            for (int i = 0; i < n && i < max; i++) { /* each GPU's model: name, SMs, memory */
                struct cudaDeviceProp p;
                if (cudaGetDeviceProperties(&p, i) == cudaSuccess)
                    snprintf(models[i], KB_MODEL_LEN, "%.200s, %d SMs, %zu MiB", p.name, p.multiProcessorCount,
                             p.totalGlobalMem >> 20);
            }
        }
        int ok = !kb_write_all(fd[1], &n, sizeof n);
        for (int i = 0; i < n && i < max && ok; i++) ok = !kb_write_all(fd[1], models[i], KB_MODEL_LEN);
        _exit(ok ? 0 : 1);
    }
    close(fd[1]);
    int n = -1;
    if (kb_read_all(fd[0], &n, sizeof n, 0, NULL)) n = -1;
    for (int i = 0; i < n && i < max; i++) {
        if (kb_read_all(fd[0], models[i], KB_MODEL_LEN, 0, NULL)) { models[i][0] = 0; break; }
        models[i][KB_MODEL_LEN - 1] = 0;
    }
    close(fd[0]);
    waitpid(pid, NULL, 0);
    return n;
}
