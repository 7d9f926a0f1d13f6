// The copy ceiling's own candidates: device-to-device copies that read
// rbytes and write wbytes, in 16-byte vectors (the harness times these and
// cudaMemcpy, and keeps the best).
//
// What is computed, with R = ceil(rbytes / 16) source vectors and
// W = ceil(wbytes / 16) destination vectors, the last of each partial when
// its size is not a multiple of 16 (a partial vector reads as its bytes
// followed by zeros and stores only its own bytes):
//   R >= W: dst[i] = XOR of src[j] over all j < R with j % W == i
//           (every source byte read once, every destination byte written once);
//   R <  W: dst[i] = src[i % R] (every destination byte written once; the
//           source is read once from DRAM, its re-reads may hit L2).
// With sizes that are multiples of 16 this is exactly the vector rule; the
// host model is ref_copy in tests/test_copy_kernels.c.
//
// Shape: 256 threads a block; a block's tile is VPT * 256 consecutive
// destination vectors, thread t taking vectors t, t + 256, ... of it (each
// load and store instruction of a warp is one contiguous 512 bytes). "full":
// one tile a block, as many blocks as tiles; "persistentK": sm_count *
// min(K, the blocks an SM holds) blocks (one wave; at most one a tile)
// striding over the tiles. The partial vectors are taken by the few threads
// whose vectors meet them (a byte path, outside the main loop); every other
// thread runs the vector path. Its parallelism is W / VPT threads: with a
// large R / W and a small W (a reduction's shape) the few threads each fold
// a long run, correct but slow.
//
// Cache hints ("noalloc"): loads ld.global.nc.L1::no_allocate.L2::256B;
// "+cs": stores st.global.cs (evict-first). The others: __ldg, plain stores.
#include <cstdint>

#include <cuda_runtime.h>

#include "../kernels.h"

namespace {

constexpr int kThreads = 256;

struct Args {
    uint4 *dst;
    const uint4 *src;
    size_t R, W;         // vectors, the last one partial when rt / wt > 0
    size_t Rfull, Wfull; // full vectors
    size_t p;            // (R - 1) % W: the first source vector of the run that meets the partial source vector
    unsigned rt, wt;     // bytes in the partial last vector (0: none)
};

// HINT 0: ld.global.nc (__ldg), plain stores. 1: loads with
// L1::no_allocate and a 256-byte L2 prefetch. 2: as 1, with evict-first
// (.cs) stores.
template <int HINT> __device__ __forceinline__ uint4 ldv(const uint4 *p)
{
    if constexpr (HINT == 0) {
        return __ldg(p);
    } else {
        uint4 v;
        asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
            : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
            : "l"(p));
        return v;
    }
}

template <int HINT> __device__ __forceinline__ void stv(uint4 *p, uint4 v)
{
    if constexpr (HINT == 2) __stcs(p, v);
    else *p = v;
}

__device__ __forceinline__ void xor_into(uint4 &a, uint4 b)
{
    a.x ^= b.x;
    a.y ^= b.y;
    a.z ^= b.z;
    a.w ^= b.w;
}

// any source vector: full, or the partial last one byte by byte, zero-padded
template <int HINT> __device__ uint4 ld_any(const Args &a, size_t j)
{
    if (j < a.Rfull) return ldv<HINT>(a.src + j);
    const unsigned char *s = (const unsigned char *)(a.src + j);
    unsigned w[4] = {0, 0, 0, 0};
#pragma unroll
    for (unsigned k = 0; k < 16; k++)
        if (k < a.rt) w[k >> 2] |= (unsigned)s[k] << (8 * (k & 3));
    return make_uint4(w[0], w[1], w[2], w[3]);
}

// any destination vector: full, or the partial last one byte by byte
template <int HINT> __device__ void st_any(const Args &a, size_t i, uint4 v)
{
    if (i < a.Wfull) {
        stv<HINT>(a.dst + i, v);
        return;
    }
    unsigned char *d = (unsigned char *)(a.dst + i);
    const unsigned w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (unsigned k = 0; k < 16; k++)
        if (k < a.wt) d[k] = (unsigned char)(w[k >> 2] >> (8 * (k & 3)));
}

// the first source vector of destination vector i (i < W)
__device__ __forceinline__ size_t first_src(const Args &a, size_t i)
{
    if (i >= a.R) { // R < W only
        i -= a.R;
        if (i >= a.R) i %= a.R;
    }
    return i;
}

template <int VPT, int HINT> __global__ void __launch_bounds__(kThreads) copy_kernel(const Args a)
{
    constexpr size_t tile = (size_t)VPT * kThreads;
    const size_t stride = (size_t)gridDim.x * tile;
    const bool fold = a.R >= a.W;
    for (size_t t0 = (size_t)blockIdx.x * tile; t0 < a.W; t0 += stride) {
        const size_t i0 = t0 + threadIdx.x;
        // fast: all VPT destination vectors exist and are full, and no
        // source vector of theirs is the partial one
        bool fast = i0 + (size_t)(VPT - 1) * kThreads < a.Wfull;
        uint4 acc[VPT];
        if (fold) {
            const size_t d = a.p - i0; // wraps when p < i0
            if (a.rt && d < tile && d % kThreads == 0) fast = false;
            if (fast) {
                const uint4 *s = a.src + i0;
#pragma unroll
                for (int k = 0; k < VPT; k++) acc[k] = ldv<HINT>(s + k * kThreads);
                for (size_t off = a.W; off < a.R; off += a.W) { // uniform trip count: ceil(R / W) - 1
                    // all VPT loads first, then the XORs (a load inside the
                    // branch that uses it would wait for it alone)
                    uint4 t[VPT];
#pragma unroll
                    for (int k = 0; k < VPT; k++)
                        t[k] = i0 + k * kThreads + off < a.R ? ldv<HINT>(s + off + k * kThreads) : make_uint4(0, 0, 0, 0);
#pragma unroll
                    for (int k = 0; k < VPT; k++) xor_into(acc[k], t[k]);
                }
#pragma unroll
                for (int k = 0; k < VPT; k++) stv<HINT>(a.dst + i0 + k * kThreads, acc[k]);
                continue;
            }
        } else if (fast) {
            size_t j[VPT];
#pragma unroll
            for (int k = 0; k < VPT; k++) {
                j[k] = first_src(a, i0 + k * kThreads);
                if (a.rt && j[k] == a.p) fast = false;
            }
            if (fast) {
#pragma unroll
                for (int k = 0; k < VPT; k++) acc[k] = ldv<HINT>(a.src + j[k]);
#pragma unroll
                for (int k = 0; k < VPT; k++) stv<HINT>(a.dst + i0 + k * kThreads, acc[k]);
                continue;
            }
        }
        // the edges: past W, the partial vectors
        for (int k = 0; k < VPT; k++) {
            const size_t i = i0 + (size_t)k * kThreads;
            if (i >= a.W) break;
            const size_t j = first_src(a, i);
            uint4 v = ld_any<HINT>(a, j);
            for (size_t jj = j + a.W; fold && jj < a.R; jj += a.W) xor_into(v, ld_any<HINT>(a, jj));
            st_any<HINT>(a, i, v);
        }
    }
}

struct Variant {
    const char *name;
    void (*kernel)(const Args);
    int vpt;
    int persist; // 0: full grid; K: sm_count * min(K, the blocks an SM holds) blocks
};

const Variant kVariants[] = {
    {"vec16x1 full", copy_kernel<1, 0>, 1, 0},
    {"vec16x2 full", copy_kernel<2, 0>, 2, 0},
    {"vec16x4 full", copy_kernel<4, 0>, 4, 0},
    {"vec16x8 full", copy_kernel<8, 0>, 8, 0},
    {"vec16x2 persistent8", copy_kernel<2, 0>, 2, 8},
    {"vec16x4 persistent4", copy_kernel<4, 0>, 4, 4},
    {"vec16x4 persistent8", copy_kernel<4, 0>, 4, 8},
    {"vec16x8 persistent2", copy_kernel<8, 0>, 8, 2},
    {"vec16x8 persistent4", copy_kernel<8, 0>, 8, 4},
    {"vec16x4 full noalloc", copy_kernel<4, 1>, 4, 0},
    {"vec16x4 full noalloc+cs", copy_kernel<4, 2>, 4, 0},
    {"vec16x4 persistent4 noalloc", copy_kernel<4, 1>, 4, 4},
};
constexpr int kNVariants = (int)(sizeof kVariants / sizeof kVariants[0]);

// the blocks of variant v an SM holds at once (the registers decide: VPT 4
// and 8 take about 46 and 80 on sm_90a), asked once a variant and kept (the
// process's first device); 0 when the query fails
int resident_blocks(int v)
{
    static int cached[kNVariants];
    if (!cached[v]) {
        int n = 0;
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kVariants[v].kernel, kThreads, 0) != cudaSuccess || n < 1)
            return 0;
        cached[v] = n;
    }
    return cached[v];
}

} // namespace

extern "C" int kb_copy_nvariants(void) { return kNVariants; }

extern "C" const char *kb_copy_variant_name(int v) { return v >= 0 && v < kNVariants ? kVariants[v].name : NULL; }

extern "C" int kb_copy_variant_launch(int v, void *dst, const void *src, size_t rbytes, size_t wbytes, int sm_count,
                                      void *stream)
{
    if (v < 0 || v >= kNVariants || !dst || !src || rbytes == 0 || wbytes == 0 ||
        (((uintptr_t)dst | (uintptr_t)src) & 15))
        return (int)cudaErrorInvalidValue;
    const Variant &var = kVariants[v];
    Args a;
    a.dst = (uint4 *)dst;
    a.src = (const uint4 *)src;
    a.Rfull = rbytes / 16;
    a.Wfull = wbytes / 16;
    a.rt = (unsigned)(rbytes % 16);
    a.wt = (unsigned)(wbytes % 16);
    a.R = a.Rfull + (a.rt != 0);
    a.W = a.Wfull + (a.wt != 0);
    a.p = (a.R - 1) % a.W;
    const size_t tile = (size_t)var.vpt * kThreads, tiles = (a.W + tile - 1) / tile;
    size_t blocks = tiles;
    if (var.persist) {
        // one wave: K blocks an SM, or as many as fit if fewer
        const int fit = resident_blocks(v); // 0: unknown (the launch will say why)
        const size_t want = (size_t)(sm_count > 0 ? sm_count : 132) * (size_t)(fit && fit < var.persist ? fit : var.persist);
        if (want < blocks) blocks = want;
    }
    if (blocks > 0x7fffffff) blocks = 0x7fffffff; // grid-stride covers the rest
    var.kernel<<<(unsigned)blocks, kThreads, 0, (cudaStream_t)stream>>>(a);
    return (int)cudaGetLastError();
}
