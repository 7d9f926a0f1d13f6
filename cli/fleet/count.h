/* The GPUs CUDA sees, counted in a child process (count.c). */
#ifndef KB_FLEET_COUNT_H
#define KB_FLEET_COUNT_H

/* the most GPUs a run takes (--devices) */
#define KB_MAX_DEVICES 64
/* The GPUs CUDA sees, counted in a child (the caller stays CUDA-free): how
 * many (-1 unknown), and the model of the first max ("NAME, S SMs, M MiB";
 * "" unknown): workers on GPUs of one model share the GEMM ladders' search
 * (device.c) */
#define KB_MODEL_LEN 256
int kb_devices_count_child(char (*models)[KB_MODEL_LEN], int max);

#endif
