/* The copy ceiling's kernels (kernels/ceiling/): the host model of what a
 * candidate computes, against cases worked by hand and the plain vector rule;
 * the launchers' argument checks (no GPU needed); and, where a GPU is, every
 * variant against the model on sizes from 1 byte to 9 MiB and read:write
 * ratios 3:1 to 1:2, odd tails included, with the bytes around the
 * destination untouched; the spin and empty kernels. Without a GPU the GPU
 * tests skip. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <cuda_runtime_api.h>

#include "have_gpu.h"
#include <stdlib.h>
#include <string.h>

#include "../cli/core/op.h"
#include "../cli/harness/copy.h"
#include "../cli/harness/gemm.h"
#include "../kernels/kernels.h"

/* What kb_copy_variant_launch computes (kernels/ceiling/copy.cu), byte by
 * byte: R = ceil(rbytes/16), W = ceil(wbytes/16) vectors, a partial last
 * vector reading as its bytes then zeros and storing only its own bytes;
 * R >= W: vector i of dst is the XOR of the source vectors j with
 * j % W == i; R < W: vector i of dst is source vector i % R. */
static void ref_copy(unsigned char *dst, const unsigned char *src, size_t rbytes, size_t wbytes)
{
    size_t R = (rbytes + 15) / 16, W = (wbytes + 15) / 16;
    memset(dst, 0, wbytes);
    if (R >= W) {
        for (size_t j = 0; j < rbytes; j++) {
            size_t b = (j / 16) % W * 16 + j % 16;
            if (b < wbytes) dst[b] ^= src[j];
        }
    } else {
        for (size_t b = 0; b < wbytes; b++) {
            size_t s = (b / 16) % R * 16 + b % 16;
            dst[b] = s < rbytes ? src[s] : 0;
        }
    }
}

static uint64_t xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void fill_random(unsigned char *p, size_t n, uint64_t seed)
{
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(xorshift(&s) >> 32);
}

/* ---- no GPU ---------------------------------------------------------------- */

/* small cases by hand, source byte k = k + 1 */
static void test_ref_by_hand(void **state)
{
    (void)state;
    unsigned char src[64], dst[64];
    for (int k = 0; k < 64; k++) src[k] = (unsigned char)(k + 1);

    ref_copy(dst, src, 48, 16); /* 3:1: dst = s0 ^ s1 ^ s2 */
    for (int k = 0; k < 16; k++) assert_int_equal(dst[k], src[k] ^ src[16 + k] ^ src[32 + k]);

    ref_copy(dst, src, 16, 48); /* 1:3: s0 three times */
    for (int k = 0; k < 48; k++) assert_int_equal(dst[k], src[k % 16]);

    ref_copy(dst, src, 21, 21); /* 1:1, odd: a copy */
    assert_memory_equal(dst, src, 21);

    ref_copy(dst, src, 5, 3); /* one partial vector each: the first 3 bytes */
    assert_memory_equal(dst, src, 3);

    ref_copy(dst, src, 3, 5); /* the 3 bytes, then zeros */
    assert_memory_equal(dst, src, 3);
    assert_int_equal(dst[3], 0);
    assert_int_equal(dst[4], 0);

    /* 40:17: R 3, W 2: dst vector 0 = s0 ^ (s2's 8 bytes, zeros); dst's
     * partial vector 1 = s1's first byte */
    ref_copy(dst, src, 40, 17);
    for (int k = 0; k < 16; k++) assert_int_equal(dst[k], src[k] ^ (k < 8 ? src[32 + k] : 0));
    assert_int_equal(dst[16], src[16]);

    /* 25:37: R 2 < W 3: s0, s1's 9 bytes and 7 zeros, s0's first 5 bytes */
    ref_copy(dst, src, 25, 37);
    assert_memory_equal(dst, src, 25);
    for (int k = 25; k < 32; k++) assert_int_equal(dst[k], 0);
    assert_memory_equal(dst + 32, src, 5);

    ref_copy(dst, src, 33, 1); /* R 3, W 1: every vector's byte 0 */
    assert_int_equal(dst[0], src[0] ^ src[16] ^ src[32]);
}

/* sizes that are multiples of 16: the vector rule as the brief states it */
static void test_ref_vector_rule(void **state)
{
    (void)state;
    const size_t pairs[][2] = {{16, 16}, {64, 32}, {96, 32}, {80, 48}, {32, 64}, {48, 160}, {16 * 97, 16 * 31}};
    for (size_t c = 0; c < sizeof pairs / sizeof pairs[0]; c++) {
        size_t rb = pairs[c][0], wb = pairs[c][1], R = rb / 16, W = wb / 16;
        unsigned char *src = malloc(rb), *dst = malloc(wb), *want = calloc(wb, 1);
        fill_random(src, rb, c + 1);
        for (size_t i = 0; i < W; i++)
            for (int k = 0; k < 16; k++) {
                if (R >= W)
                    for (size_t j = i; j < R; j += W) want[i * 16 + k] ^= src[j * 16 + k];
                else
                    want[i * 16 + k] = src[(i % R) * 16 + k];
            }
        ref_copy(dst, src, rb, wb);
        assert_memory_equal(dst, want, wb);
        free(src);
        free(dst);
        free(want);
    }
}

static void test_variant_names(void **state)
{
    (void)state;
    int n = kb_copy_nvariants();
    assert_true(n >= 4 && n <= 16);
    for (int v = 0; v < n; v++) {
        const char *name = kb_copy_variant_name(v);
        assert_non_null(name);
        assert_true(strncmp(name, "vec16x", 6) == 0);
        assert_true(strstr(name, " full") || strstr(name, " persistent"));
        for (int u = 0; u < v; u++) assert_string_not_equal(name, kb_copy_variant_name(u));
    }
    assert_null(kb_copy_variant_name(-1));
    assert_null(kb_copy_variant_name(n));
}

/* bad arguments are refused before any CUDA call (these pointers are never
 * touched) */
static void test_launch_argument_checks(void **state)
{
    (void)state;
    void *d = (void *)(uintptr_t)0x10000, *s = (void *)(uintptr_t)0x20000;
    const int inval = (int)cudaErrorInvalidValue;
    int n = kb_copy_nvariants();
    assert_int_equal(kb_copy_variant_launch(-1, d, s, 16, 16, 132, NULL), inval);
    assert_int_equal(kb_copy_variant_launch(n, d, s, 16, 16, 132, NULL), inval);
    assert_int_equal(kb_copy_variant_launch(0, d, s, 0, 16, 132, NULL), inval);
    assert_int_equal(kb_copy_variant_launch(0, d, s, 16, 0, 132, NULL), inval);
    assert_int_equal(kb_copy_variant_launch(0, NULL, s, 16, 16, 132, NULL), inval);
    assert_int_equal(kb_copy_variant_launch(0, d, NULL, 16, 16, 132, NULL), inval);
    assert_int_equal(kb_copy_variant_launch(0, (char *)d + 8, s, 16, 16, 132, NULL), inval);
    assert_int_equal(kb_copy_variant_launch(0, d, (char *)s + 4, 16, 16, 132, NULL), inval);
    assert_int_equal(kb_spin_launch(-1, NULL), inval);
}

/* ---- on the GPU ----------------------------------------------------------- */


#define CUDA_OK(call)                                                                                        \
    do {                                                                                                     \
        cudaError_t e_ = (call);                                                                             \
        if (e_ != cudaSuccess) fail_msg("%s: %s", #call, cudaGetErrorString(e_));                            \
    } while (0)

enum { GUARD = 256 };

/* read:write as rbytes = a*s + b, wbytes = c*s + d */
static const struct {
    size_t a, b, c, d;
} kForms[] = {
    {1, 0, 1, 0}, {2, 0, 1, 0}, {3, 0, 1, 0}, {1, 0, 2, 0}, /* 1:1, 2:1, 3:1, 1:2 */
    {1, 7, 1, 3}, {1, 3, 1, 7},                             /* 1:1 with odd tails of their own */
    {2, 5, 1, 9}, {1, 9, 2, 5},                             /* 2:1 and 1:2 with odd tails */
};
static const size_t kSizes[] = {16, 17, 4096, 1 << 20, 3 * (1 << 20) + 5};
/* tiny and odd, on their own */
static const size_t kTiny[][2] = {{1, 1}, {5, 3}, {3, 5}, {15, 15}, {16, 1}, {1, 16}, {33, 1}, {1, 33}, {31, 17}, {17, 31}};

typedef struct {
    unsigned char *d_src, *d_dst; /* d_dst: GUARD bytes, the destination, GUARD bytes */
    unsigned char *h_src, *h_dst, *h_ref;
    size_t max_r, max_w;
    int sm_count;
    int ncases, nlaunches;
} rig;

/* every variant on one (rbytes, wbytes), source at d_src + src_off */
static void check_case(rig *g, size_t rb, size_t wb, size_t src_off)
{
    assert_true(rb + src_off <= g->max_r && wb <= g->max_w);
    ref_copy(g->h_ref, g->h_src + src_off, rb, wb);
    g->ncases++;
    for (int v = 0; v < kb_copy_nvariants(); v++) {
        const char *name = kb_copy_variant_name(v);
        /* persistent grids also with one SM's worth of blocks: many strides */
        int persistent = strstr(name, "persistent") != NULL;
        for (int pass = 0; pass < 1 + persistent; pass++) {
            int sms = pass ? 1 : g->sm_count;
            CUDA_OK(cudaMemset(g->d_dst, 0xAB, wb + 2 * GUARD));
            int rc = kb_copy_variant_launch(v, g->d_dst + GUARD, g->d_src + src_off, rb, wb, sms, NULL);
            if (rc) fail_msg("%s r %zu w %zu: launch: %s", name, rb, wb, cudaGetErrorString((cudaError_t)rc));
            CUDA_OK(cudaDeviceSynchronize());
            CUDA_OK(cudaMemcpy(g->h_dst, g->d_dst, wb + 2 * GUARD, cudaMemcpyDeviceToHost));
            g->nlaunches++;
            for (size_t k = 0; k < GUARD; k++) {
                if (g->h_dst[k] != 0xAB)
                    fail_msg("%s sm %d r %zu w %zu: byte %zd before dst written", name, sms, rb, wb, (ptrdiff_t)k - GUARD);
                if (g->h_dst[GUARD + wb + k] != 0xAB)
                    fail_msg("%s sm %d r %zu w %zu: byte wbytes + %zu written", name, sms, rb, wb, k);
            }
            if (memcmp(g->h_dst + GUARD, g->h_ref, wb)) {
                size_t k = 0;
                while (g->h_dst[GUARD + k] == g->h_ref[k]) k++;
                fail_msg("%s sm %d r %zu w %zu (src + %zu): dst[%zu] = 0x%02x, want 0x%02x", name, sms, rb, wb, src_off,
                         k, g->h_dst[GUARD + k], g->h_ref[k]);
            }
        }
    }
}

/* what the ceilings allocate beside a case (its late measurement asks for
 * that much room): the copy's two buffers, each at least cudaMemcpy's half
 * of the bytes moved (a 256-byte multiple; from 1 MiB the nearest 4 KiB
 * multiple), and the largest of each GEMM operand */
static void test_ceiling_bytes(void **state)
{
    (void)state;
    assert_int_equal(kb_copy_bufs_bytes(1000, 100), 1000 + 768); /* w: 256 at least; half (1256 / 2 -> 768) */
    assert_int_equal(kb_copy_bufs_bytes(4096, 4096), 8192);
    assert_int_equal(kb_copy_bufs_bytes(20000, 300), 20000 + 10240);         /* half 10150 -> 10240 */
    assert_int_equal(kb_copy_bufs_bytes(3000000, 300), 3000000 + 1499136);   /* half 1500150 -> 1499136 (nearest) */
    assert_int_equal(kb_copy_bufs_bytes(3008000, 300), 3008000 + 1503232);   /* half 1504150 -> 1503232 */
    /* a decode MLP's 1 x 1024 x 11008 (bf16): half 33818624, 2 KiB past a 4 KiB multiple, -> 33820672 */
    assert_int_equal(kb_copy_bufs_bytes(67635200, 2048), (size_t)67635200 + 33820672);
    const int mnk[2][3] = {{2, 3, 4}, {5, 1, 2}}; /* A: max(8, 10), B: max(12, 2), C: max(6, 5) */
    assert_int_equal(kb_gemm_bench_shapes_bytes(2, mnk, 2), (10 + 12 + 6) * 2);
    assert_int_equal(kb_gemm_bench_shapes_bytes(0, mnk, 2), (10 + 12 + 6) * 4);
    assert_int_equal(kb_gemm_shapes_bytes(KB_GEMM_TF32, mnk, 2), (10 + 12 + 6) * 4);
    assert_int_equal(kb_gemm_shapes_bytes(KB_GEMM_BF16, mnk, 1), (8 + 12 + 6) * 2);
    assert_int_equal(kb_gemm_shapes_bytes(KB_GEMM_NONE, mnk, 2), 0);
    const int bad[1][3] = {{2, 0, 4}};
    assert_int_equal(kb_gemm_bench_shapes_bytes(2, bad, 1), 0);
}

static void test_copy_variants_gpu(void **state)
{
    (void)state;
    if (!have_gpu()) skip();
    rig g = {0};
    size_t smax = kSizes[sizeof kSizes / sizeof kSizes[0] - 1];
    g.max_r = 3 * smax + 64;
    g.max_w = 2 * smax + 64;
    CUDA_OK(cudaDeviceGetAttribute(&g.sm_count, cudaDevAttrMultiProcessorCount, 0));
    CUDA_OK(cudaMalloc((void **)&g.d_src, g.max_r));
    CUDA_OK(cudaMalloc((void **)&g.d_dst, g.max_w + 2 * GUARD));
    g.h_src = malloc(g.max_r);
    g.h_dst = malloc(g.max_w + 2 * GUARD);
    g.h_ref = malloc(g.max_w);
    assert_non_null(g.h_src);
    assert_non_null(g.h_dst);
    assert_non_null(g.h_ref);
    /* random everywhere, past rbytes too: a kernel that reads too far gets it wrong */
    fill_random(g.h_src, g.max_r, 19);
    CUDA_OK(cudaMemcpy(g.d_src, g.h_src, g.max_r, cudaMemcpyHostToDevice));

    for (size_t f = 0; f < sizeof kForms / sizeof kForms[0]; f++)
        for (size_t z = 0; z < sizeof kSizes / sizeof kSizes[0]; z++) {
            size_t s = kSizes[z];
            /* the source 16 bytes into its buffer every other case: aligned, not to 256 */
            check_case(&g, kForms[f].a * s + kForms[f].b, kForms[f].c * s + kForms[f].d, (f + z) % 2 ? 16 : 0);
        }
    for (size_t t = 0; t < sizeof kTiny / sizeof kTiny[0]; t++) check_case(&g, kTiny[t][0], kTiny[t][1], 0);
    print_message("%d variants, %d cases, %d launches checked\n", kb_copy_nvariants(), g.ncases, g.nlaunches);

    cudaFree(g.d_src);
    cudaFree(g.d_dst);
    free(g.h_src);
    free(g.h_dst);
    free(g.h_ref);
}

/* spin 1e6 cycles: it ends, and lasts at least 1e6 cycles of the highest SM clock */
static void test_spin_gpu(void **state)
{
    (void)state;
    if (!have_gpu()) skip();
    const long long cycles = 1000000;
    cudaEvent_t e0, e1;
    CUDA_OK(cudaEventCreate(&e0));
    CUDA_OK(cudaEventCreate(&e1));
    assert_int_equal(kb_spin_launch(0, NULL), 0); /* warm: module loaded */
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaEventRecord(e0, NULL));
    assert_int_equal(kb_spin_launch(cycles, NULL), 0);
    CUDA_OK(cudaEventRecord(e1, NULL));
    CUDA_OK(cudaDeviceSynchronize());
    float ms = 0;
    CUDA_OK(cudaEventElapsedTime(&ms, e0, e1));
    int khz = 0;
    if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0) == cudaSuccess && khz > 0) {
        double floor_ms = (double)cycles / khz;
        print_message("spin %lld cycles: %.3f ms (at most %d MHz: at least %.3f ms)\n", cycles, ms, khz / 1000, floor_ms);
        assert_true(ms >= 0.99 * floor_ms);
    } else {
        cudaGetLastError();
        print_message("spin %lld cycles: %.3f ms (no clock rate to check against)\n", cycles, ms);
    }
    assert_true(ms < 1000);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
}

static void test_empty_gpu(void **state)
{
    (void)state;
    if (!have_gpu()) skip();
    for (int i = 0; i < 3; i++) assert_int_equal(kb_empty_launch(NULL), 0);
    CUDA_OK(cudaDeviceSynchronize());
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ref_by_hand),
        cmocka_unit_test(test_ref_vector_rule),
        cmocka_unit_test(test_variant_names),
        cmocka_unit_test(test_launch_argument_checks),
        cmocka_unit_test(test_ceiling_bytes),
        cmocka_unit_test(test_copy_variants_gpu),
        cmocka_unit_test(test_spin_gpu),
        cmocka_unit_test(test_empty_gpu),
    };
    return cmocka_run_group_tests_name("copy_kernels", tests, NULL, NULL);
}
