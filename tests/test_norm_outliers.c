/* LayerNorm's row statistics on the GPU, every variant, on rows with one
 * outlier (the massive activations of LLMs: one value ~1000 times the rest)
 * first, in the middle or last, every row of the case (`kbench check`'s
 * cases hold one in four: cli/ops/norm_inputs.h). On rows of one uniform
 * range a variance taken from sums shifted by a value K of the row (x - K,
 * (x - K)^2) passes; with the outlier first such sums cancel
 * (the error grows with (mean - K)^2 / variance) and failed the op's own
 * tolerance by up to 22x (block) and 26x (bulk; fp32, H200, 2026-11-28),
 * while a two-pass or merged (Chan) variance holds it. Skips without a GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "have_gpu.h"
#include "../cli/core/config.h"
#include "../cli/core/errors.h"
#include "../cli/core/op.h"
#include "../cli/core/params.h"
#include "../cli/core/registry.h"
#include "../cli/harness/device.h"
#include "../cli/harness/verify.h"
#include "../include/kb_dtype.h"
#include "../kernels/norm/norm.h"
#include "../refs/refs.h"
#include "norm_case.h"

/* Row r of kind r % 3: the outlier first, in the middle, last (the others
 * uniform in [-1, 3), as check draws them). */
static void rows_hard(double *x, long rows, long cols, uint64_t seed)
{
    kb_rng g;
    kb_rng_seed(&g, seed);
    for (long r = 0; r < rows; r++) {
        double *row = x + r * cols;
        for (long j = 0; j < cols; j++) row[j] = kb_rng_uniform(&g, -1.0, 3.0);
        row[r % 3 == 0 ? 0 : r % 3 == 1 ? cols / 2 : cols - 1] = r % 3 == 2 ? -1000.0 : 1000.0;
    }
}

/* One variant (or opt) on one shape: 0 where it ran and every output held
 * its tolerance, 1 where the variant cannot take the case (n/a), -1 where an
 * output failed (said on stderr). rr: 0 the variant's plan for LayerNorm; 1
 * that plan, which must be the reread kernel's; 2 the reread plan of
 * RMSNorm's shape, run with LayerNorm's arguments (rows where the planner
 * gives LayerNorm the clusters). */
static int run_variant(int variant, kb_dtype dt, long rows, long cols, const kb_devattr *attr, const char *dname,
                       int rr)
{
    const int code = dt == KB_FP32 ? 0 : dt == KB_FP16 ? 1 : 2;
    kb_norm_shape s = {.dtype = code, .rms = rr == 2, .backward = 0, .affine = 0, .rows = rows, .cols = cols};
    kb_norm_plan p;
    char why[256];
    if (kb_norm_plan_make(&s, attr, variant, NULL, &p, why, sizeof why) || (rr && !p.rr)) return 1;
    const size_t n = (size_t)(rows * cols), es = kb_dtype_size(dt);
    double *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), mean[64], rstd[64];
    assert_true(rows <= 64);
    rows_hard(x, rows, cols, 7);
    void *hx = malloc(n * es), *hy = malloc(n * es);
    for (size_t i = 0; i < n; i++) x[i] = kb_store(hx, i, x[i], dt); /* the reference sees the stored values */
    ref_norm_fwd(0, rows, cols, 1e-5, x, NULL, NULL, y, mean, rstd);
    void *dx, *dy;
    float *dm, *dr;
    assert_int_equal(cudaMalloc(&dx, n * es), 0);
    assert_int_equal(cudaMalloc(&dy, n * es), 0);
    assert_int_equal(cudaMalloc((void **)&dm, (size_t)rows * 4), 0);
    assert_int_equal(cudaMalloc((void **)&dr, (size_t)rows * 4), 0);
    assert_int_equal(cudaMemcpy(dx, hx, n * es, cudaMemcpyHostToDevice), 0);
    assert_int_equal(cudaMemset(dy, 0xff, n * es), 0); /* NaN in every type: an unwritten value fails */
    kb_norm_args a = {.x = dx, .y = dy, .mean = dm, .rstd = dr, .dtype = code, .rows = rows, .cols = cols, .eps = 1e-5f};
    kb_norm_exec ex;
    assert_int_equal(kb_norm_exec_prepare(&a, &p, attr, &ex), 0);
    assert_int_equal(kb_norm_exec_launch(&a, &ex, NULL), 0);
    assert_int_equal(cudaDeviceSynchronize(), 0);
    float hm[64], hr[64];
    assert_int_equal(cudaMemcpy(hy, dy, n * es, cudaMemcpyDeviceToHost), 0);
    assert_int_equal(cudaMemcpy(hm, dm, (size_t)rows * 4, cudaMemcpyDeviceToHost), 0);
    assert_int_equal(cudaMemcpy(hr, dr, (size_t)rows * 4, cudaMemcpyDeviceToHost), 0);
    char rs[32], cs[32];
    snprintf(rs, sizeof rs, "%ld", rows);
    snprintf(cs, sizeof cs, "%ld", cols);
    const char *kv[] = {"rows", rs, "cols", cs, "dtype", kb_dtype_name(dt), "affine", "none", NULL};
    const kb_case c = one_case("layernorm", kv);
    double *got = malloc(n * sizeof *got), gm[64], gr[64];
    kb_load_all(hy, n, dt, got);
    for (long r = 0; r < rows; r++) gm[r] = hm[r], gr[r] = hr[r];
    const kb_buf by = {.dtype = dt, .n = n, .ref = y}, bm = {.dtype = KB_FP32, .n = (size_t)rows, .ref = mean},
                 br = {.dtype = KB_FP32, .n = (size_t)rows, .ref = rstd};
    const kb_buf *b[3] = {&by, &bm, &br};
    const double *g3[3] = {got, gm, gr};
    const char *names[3] = {"y", "mean", "rstd"};
    char desc[128];
    kb_norm_plan_describe(&p, desc, sizeof desc);
    int fails = 0;
    for (int o = 0; o < 3; o++) {
        double rel, mx;
        const kb_tol tol = c.op->tolerance(&c, o);
        if (!kb_compare(b[o], g3[o], tol, &rel, &mx)) {
            fprintf(stderr, "%s %s %ld x %ld (%s): %s rel_l2 %.3g (tolerance %.3g), max %.3g\n", dname,
                    kb_dtype_name(dt), rows, cols, desc, names[o], rel, tol.rel_l2, mx);
            fails++;
        }
    }
    cudaFree(dx), cudaFree(dy), cudaFree(dm), cudaFree(dr);
    free(x), free(y), free(hx), free(hy), free(got);
    return fails ? -1 : 0;
}

/* Every variant that takes the shape: 1023, 4095 and 8191 columns (not a
 * 16-byte multiple: the block kernels, one element a vector), rows of 1-16
 * warps, 1000 and 5000 (warps passed at run time), 12288 and 40000 (bulk
 * and the block's loop). */
static void test_hard_rows(void **state)
{
    (void)state;
    if (!have_gpu()) skip();
    kb_device d;
    assert_int_equal(kb_device_open(&d), 0);
    const long cols[] = {1023, 4095, 8191, 1000, 1024, 4096, 5000, 8192, 12288, 16384, 40000};
    const kb_dtype dts[] = {KB_FP32, KB_BF16};
    const int variants[] = {KB_NORM_AUTO, KB_NORM_WARP_ROW, KB_NORM_BLOCK, KB_NORM_BULK};
    int ran = 0, failed = 0;
    for (size_t t = 0; t < 2; t++)
        for (size_t i = 0; i < sizeof cols / sizeof *cols; i++)
            for (size_t v = 0; v < 4; v++) {
                const int rc = run_variant(variants[v], dts[t], 37, cols[i], &d.attr, kb_norm_variant_name(variants[v]), 0);
                ran += rc != 1;
                failed += rc < 0;
            }
    assert_int_equal(failed, 0);
    assert_true(ran >= 2 * 11 * 2); /* opt and block take every shape */
}

/* The reread kernels for LayerNorm (block.reread_ln: their statistics
 * merged by block_merge): fp32 rows of 72-128 KiB, whole and with a last
 * vector part-used by the block, on sm_90; below 72 KiB (16400, 16404: 5
 * vectors a thread, the fifth nearly empty) through RMSNorm's plan. */
static void test_reread_layernorm(void **state)
{
    (void)state;
    if (!have_gpu()) skip();
    kb_device d;
    assert_int_equal(kb_device_open(&d), 0);
    if (d.attr.cc_major != 9 || d.attr.cc_minor != 0) skip();
    const long cols[] = {16400, 16404, 18432, 18436, 20480, 22528, 24576, 28676, 30000, 32768};
    for (size_t i = 0; i < sizeof cols / sizeof *cols; i++)
        assert_int_equal(
            run_variant(KB_NORM_AUTO, KB_FP32, 37, cols[i], &d.attr, "opt (block reread)", cols[i] < 18432 ? 2 : 1), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hard_rows),
        cmocka_unit_test(test_reread_layernorm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
