/* The op contract's helpers (op.h): the GEMM ceilings' names, and the rows
 * a large output verifies. */
#include "op.h"
#include "../../include/kb_dtype.h"
#include "../../kernels/kernels.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
/* Knuth's selection sampling (Algorithm S) over the interior rows: each row
 * is taken with probability (still needed) / (still left), which yields
 * exactly the count asked for, in order, from one pass and the seed alone. */
long kb_sample_rows(long n, long want, uint64_t seed, long *out)
{
    if (n <= 0) return 0;
    if (want >= n) {
        for (long i = 0; i < n; i++) out[i] = i;
        return n;
    }
    if (want < 2) want = 2; /* n >= 3 here */
    kb_rng r;
    kb_rng_seed(&r, seed);
    long k = 0, need = want - 2, left = n - 2;
    out[k++] = 0;
    for (long i = 1; i < n - 1 && need > 0; i++, left--)
        if ((double)(kb_rng_next(&r) >> 11) * 0x1.0p-53 * (double)left < (double)need) {
            out[k++] = i;
            need--;
        }
    out[k++] = n - 1;
    return k;
}

const char *kb_gemm_key_name(kb_gemm_key k)
{
    static const char *const names[KB_NGEMM] = {"fp32", "fp16", "bf16", "tf32"};
    return k >= 0 && k < KB_NGEMM ? names[k] : "none";
}

const char *kb_gemm_layout_name(int layout)
{
    static const char *const names[KB_GEMM_NLAYOUTS] = {"TN", "NN", "NT"};
    return layout >= 0 && layout < KB_GEMM_NLAYOUTS ? names[layout] : "?";
}
