/* usage: hostbench N [mallopt]   (N processes at once, one GPU each, N <= 16)
 *
 * issue 24 diagnostic: per-case host and driver work, one process against
 * four at once (one GPU each): cudaMalloc/cudaFree, pageable copies into
 * reused, fresh, and fresh-but-touched memory, page faults. `mallopt` sets
 * M_MMAP_MAX=0 in each process (new blocks come from the heap). Prints one
 * line per process and pass (2 passes), seconds per phase.
 *
 * Build and run on a GPU machine (not by make; tests do not run it):
 *   gcc -O2 scripts/ab/hostbench.c -o /tmp/hostbench -I/usr/local/cuda/include \
 *       -L/usr/local/cuda/lib64 -lcudart -Wl,-rpath,/usr/local/cuda/lib64
 *   for a in 1 4 "4 mallopt"; do echo "== hostbench $a"; /tmp/hostbench $a; done
 * A record: results/curated/2026-11-26-h200x4-devices/recycle-ab/hostbench.txt */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static int bar[2], go[16][2];
static void sync_all(int w) { char c = 'x'; if (write(bar[1], &c, 1) != 1) _exit(1); if (read(go[w][0], &c, 1) != 1) _exit(1); }
#define NPH 7
int main(int argc, char **argv)
{
    if (argc < 2 || atoi(argv[1]) < 1 || atoi(argv[1]) > 16) {
        fprintf(stderr, "usage: hostbench N [mallopt]   (1 <= N <= 16 processes, one GPU each)\n");
        return 2;
    }
    int n = atoi(argv[1]), mo = argc > 2 && !strcmp(argv[2], "mallopt");
    if (pipe(bar)) return 1;
    pid_t pid[16]; int fd[16][2];
    for (int w = 0; w < n; w++) {
        if (pipe(fd[w]) || pipe(go[w])) return 1;
        if (!(pid[w] = fork())) {
            if (mo) { mallopt(M_MMAP_MAX, 0); mallopt(M_TRIM_THRESHOLD, 0x7fffffff); }
            char d[8]; snprintf(d, 8, "%d", w); setenv("CUDA_VISIBLE_DEVICES", d, 1);
            cudaSetDevice(0); cudaFree(0);
            char out[4096]; int o = 0;
            const size_t G = 1ull << 30;
            void *dv; cudaMalloc(&dv, G);
            char *keep = malloc(G / 2); memset(keep, 1, G / 2);
            volatile char sink = 0;
            double t;
            for (int rep = 0; rep < 2; rep++) {
                sync_all(w); t = now();
                size_t sz[3] = {64u << 20, 256u << 20, G};
                for (int i = 0; i < 10; i++) for (int k = 0; k < 3; k++) { void *p; cudaMalloc(&p, sz[k]); cudaFree(p); }
                o += snprintf(out + o, sizeof out - o, "%d.%d%s malloc/free 30x %.3f", w, rep, mo ? "m" : "", now() - t);
                sync_all(w); t = now();
                for (int i = 0; i < 5; i++) cudaMemcpy(dv, keep, G / 2, cudaMemcpyHostToDevice);
                o += snprintf(out + o, sizeof out - o, " | H2D 5x512M %.3f", now() - t);
                sync_all(w); t = now();
                for (int i = 0; i < 5; i++) cudaMemcpy(keep, dv, G / 2, cudaMemcpyDeviceToHost);
                o += snprintf(out + o, sizeof out - o, " | D2H reused %.3f", now() - t);
                sync_all(w); t = now();
                for (int i = 0; i < 5; i++) { char *h = malloc(G / 2); cudaMemcpy(h, dv, G / 2, cudaMemcpyDeviceToHost); sink += h[12345]; free(h); }
                o += snprintf(out + o, sizeof out - o, " | D2H fresh %.3f", now() - t);
                sync_all(w); t = now();
                for (int i = 0; i < 5; i++) { char *h = malloc(G / 2); memset(h, 0, G / 2); cudaMemcpy(h, dv, G / 2, cudaMemcpyDeviceToHost); sink += h[12345]; free(h); }
                o += snprintf(out + o, sizeof out - o, " | D2H fresh+memset %.3f", now() - t);
                sync_all(w); t = now();
                for (int i = 0; i < 5; i++) { char *h = malloc(G / 2); memset(h, i, G / 2); sink += h[777]; free(h); }
                o += snprintf(out + o, sizeof out - o, " | memset fresh 5x512M %.3f", now() - t);
                sync_all(w); t = now();
                for (int i = 0; i < 5; i++) memset(keep, i, G / 2);
                o += snprintf(out + o, sizeof out - o, " | memset reused %.3f\n", now() - t);
            }
            (void)sink;
            if (write(fd[w][1], out, o) != o) _exit(1);
            _exit(0);
        }
        close(fd[w][1]);
    }
    for (int r = 0; r < 2 * NPH; r++) { /* barrier: all n arrive, then each goes */
        char c; for (int w = 0; w < n; w++) if (read(bar[0], &c, 1) != 1) return 1;
        for (int w = 0; w < n; w++) if (write(go[w][1], "g", 1) != 1) return 1;
    }
    for (int w = 0; w < n; w++) {
        char b[4096]; int m = read(fd[w][0], b, sizeof b - 1); b[m > 0 ? m : 0] = 0;
        waitpid(pid[w], NULL, 0); fputs(b, stdout);
    }
    return 0;
}
