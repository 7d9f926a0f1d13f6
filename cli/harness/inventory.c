/* kbench device: every copy-ceiling candidate at 64 MiB to 1 GiB, and the
 * GEMM ceilings (run.h). */
#include "copy.h"
#include "gemm.h"
#include "run.h"
#include "stats.h"
#include "timer.h"
#include "../core/errors.h"
#include "../core/op.h"
#include "../core/settings.h"
#include "../report/conditions.h"
#include "../report/device.h"

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int kb_device_copy_report(kb_device *d)
{
    kb_timer *t = NULL;
    kb_opts o;
    kb_opts_default(&o);
    if (kb_timer_create(&t, d)) {
        fprintf(stderr, "kbench: %s\n", kb_last_error);
        kb_timer_destroy(t);
        return KB_EXIT_CUDA;
    }
    const kb_gpu_info *nv = &d->nvml;
    if (nv->ok) {
        printf("NVML          %s, persistence %s, power limit %.0f W, ECC %s\n", nv->uuid,
               nv->persistence < 0 ? "?" : nv->persistence ? "on" : "off", nv->power_limit_w,
               nv->ecc < 0 ? "?" : nv->ecc ? "on" : "off");
        printf("              application clocks SM %d / memory %d MHz, max SM %d / memory %d MHz\n", nv->app_sm_mhz,
               nv->app_mem_mhz, nv->max_sm_mhz, nv->max_mem_mhz);
    } else {
        printf("NVML          %s: clocks, power and throttling are not recorded\n", nv->why);
    }
    /* the copy ceiling's candidates at three sizes and the read:write ratios
     * of the ops' rows (1:1 RoPE, 2:1 norm forward, 3:1 norm backward) */
    static const double sizes[] = {16.0 * (1 << 20), 256.0 * (1 << 20), 1024.0 * (1 << 20)};
    static const int ratio[] = {1, 2, 3};
    int nc = kb_copy_ncandidates();
    double rates[9][KB_COPY_MAX_CAND];
    printf("copy          GB/s (bytes read + written), median, L2 flushed; columns: MiB moved, read:write\n");
    printf("  %-22s", "candidate");
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) printf(" %5.0f %d:1", sizes[i] / (1 << 20), ratio[j]);
    printf("\n");
    fflush(stdout);
    for (int i = 0; i < 9; i++) {
        double total = sizes[i / 3], w = total / (1 + ratio[i % 3]);
        if (kb_copy_rates(t, total - w, w, &o, rates[i], 1)) {
            fprintf(stderr, "kbench: %s\n", kb_last_error);
            kb_timer_destroy(t);
            return KB_EXIT_CUDA;
        }
    }
    for (int c = 0; c < nc; c++) {
        printf("%c %-22s", kb_copy_in_ceiling(c) ? '+' : ' ', kb_copy_candidate_name(c));
        for (int i = 0; i < 9; i++) {
            int best = kb_best_rate(rates[i], nc) == c;
            printf("  %6.0f%s", rates[i][c], best ? "*" : " ");
        }
        printf("\n");
    }
    printf("  (+ a candidate of the rows' copy ceiling; * the best at that size and ratio)\n");
    int best = kb_best_rate(rates[6], nc); /* 1 GiB, 1:1 */
    d->copy_gbps = best < 0 ? 0 : rates[6][best];
    printf("GEMM          dense cuBLAS n^3, fp32 accumulation, median, L2 flushed, best of n = 2048 to 16384\n"
           "              (cuBLAS layout TN; NN and NT at the best n and its neighbours):\n");
    for (int k = 0; k < KB_NGEMM; k++) {
        fflush(stdout);
        if (kb_gemm_tflops(t, (kb_gemm_key)k, &o, &d->gemm_tflops[k], &d->gemm_n[k], &d->gemm_layout[k], NULL)) {
            fprintf(stderr, "kbench: %s\n", kb_last_error);
            kb_timer_destroy(t);
            return KB_EXIT_CUDA;
        }
        if (d->gemm_tflops[k] <= 0) printf("              %-4s: not enough free memory\n", kb_gemm_key_name((kb_gemm_key)k));
        else
            printf("              %-4s: %7.1f TFLOP/s (%d^3 %s)\n", kb_gemm_key_name((kb_gemm_key)k), d->gemm_tflops[k],
                   d->gemm_n[k], kb_gemm_layout_name(d->gemm_layout[k]));
    }
    kb_timer_destroy(t);
    return KB_EXIT_OK;
}
