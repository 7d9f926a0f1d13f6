// RoPE's optimized kernel and its launcher; the plan it runs is host code
// (plan.c). See DESIGN.md.
#include <stdint.h>

#include <type_traits>

#include "../ptx/cp_async.cuh"
#include "common.cuh"
#include "plan.h"

namespace {

using kb::from_f;
using kb::to_f;
using kb::Vec;
using kb::rope::row_position;

// ---- opt -------------------------------------------------------------------
// Rows (head vectors of `dim` elements) come in "groups" that share a position:
// sbhd: the b*h heads at one s; bshd: the h heads of one (b, s); thd: the h
// heads of one token. A block takes `gpb` whole groups (small groups), or one
// of a group's `nchunks` slices (large groups), computes cos/sin once per
// position into shared memory, and reuses them over every row it owns.
//
// Work unit: two vectors of V elements, t[uV..] and t[rot/2 + uV..] (neox:
// V pairs split across the halves; gptj: V/2 whole pairs in each vector;
// gptj with V = 1: the pair t[2u], t[2u+1]), or V pass-through elements. V is the widest vector (<= 16 bytes) that keeps
// every access aligned: dim % V == 0 and rot % 2V == 0. Each thread loads all
// of its UNROLL units before the cos/sin table is built, so the table's
// latency hides behind the loads.
// (The constants and the plan, with their measured reasons: plan.c.)
constexpr int THREADS = KB_ROPE_THREADS;

// Two adjacent elements as float2, and back; packed conversions for 16-bit types.
template <typename T, int V> __device__ __forceinline__ float2 get2(const Vec<T, V> &x, int m)
{
    if constexpr (sizeof(T) == 2) {
        uint32_t w = reinterpret_cast<const uint32_t *>(x.v)[m];
        if constexpr (std::is_same<T, __half>::value) return __half22float2(*reinterpret_cast<__half2 *>(&w));
        else return make_float2(__uint_as_float(w << 16), __uint_as_float(w & 0xffff0000u)); // exact
    } else {
        return make_float2(x.v[2 * m], x.v[2 * m + 1]);
    }
}

template <typename T, int V> __device__ __forceinline__ void put2(Vec<T, V> &x, int m, float2 f)
{
    if constexpr (std::is_same<T, __half>::value) {
        __half2 h = __float22half2_rn(f);
        reinterpret_cast<uint32_t *>(x.v)[m] = *reinterpret_cast<uint32_t *>(&h);
    } else if constexpr (std::is_same<T, __nv_bfloat16>::value) {
        __nv_bfloat162 h = __float22bfloat162_rn(f);
        reinterpret_cast<uint32_t *>(x.v)[m] = *reinterpret_cast<uint32_t *>(&h);
    } else {
        x.v[2 * m] = f.x;
        x.v[2 * m + 1] = f.y;
    }
}

__device__ __forceinline__ float2 rot_a(float2 p, float2 q, float2 c0, float2 c1)
{ // first elements of two pairs: p*cos - q*sin
    return make_float2(p.x * c0.x - q.x * c0.y, p.y * c1.x - q.y * c1.y);
}
__device__ __forceinline__ float2 rot_b(float2 p, float2 q, float2 c0, float2 c1)
{ // second elements: q*cos + p*sin
    return make_float2(q.x * c0.x + p.x * c0.y, q.y * c1.x + p.y * c1.y);
}

// Global -> shared copy that holds no register while in flight (sm_80+).
template <int BYTES> __device__ __forceinline__ void cp_async(void *smem, const void *gmem)
{
    if constexpr (BYTES == 16) kb::ptx::cp_async16(smem, gmem);
    else kb::ptx::cp_async_ca<BYTES>(smem, gmem);
}
using kb::ptx::cp_async_wait_all;

template <typename T, int V, bool GPTJ> struct RopeTile {
    static constexpr int UNROLL = KB_ROPE_UNITS;
    // Stage the loads in shared memory (cp.async) rather than registers, so the
    // bytes in flight are bounded by shared memory, not by the register file.
    static constexpr bool ASYNC = V * sizeof(T) >= 4; // plan.c: kb_rope_plan.async
    static constexpr bool PAIRED = GPTJ && V == 1; // x1, x2 hold the two elements of one pair
    // The cos/sin table is stored transposed, so that the threads of a warp, one
    // vector each, read consecutive entries (no bank conflicts): pair P sits in
    // vector w = P / L at lane m = P % L, and is stored at m * (half / L) + w.
    static constexpr int L = V == 1 ? 1 : GPTJ ? V / 2 : V; // pairs per vector
    __device__ __forceinline__ static int slot(int pair, int half) { return pair % L * (half / L) + pair / L; }
    static constexpr size_t STAGE_BYTES = ASYNC ? 2 * UNROLL * THREADS * sizeof(Vec<T, V>) : 0;
    Vec<T, V> x1[UNROLL], x2[UNROLL];
    Vec<T, V> *sx1, *sx2; // this block's staging area: [UNROLL][THREADS] each
    int unit[UNROLL]; // unit within its row, -1: none
    int grp[UNROLL];  // group within the block's table
    unsigned off[UNROLL]; // element offset of the unit's row from the block's first row

    // in: the block's first row
    __device__ __forceinline__ void load(const T *__restrict__ in, const kb_rope_args &a, unsigned first,
                                         unsigned total, int upr, int nrot, int rpg, int half)
    {
#pragma unroll
        for (int k = 0; k < UNROLL; k++) {
            unsigned u = first + k * THREADS;
            unit[k] = -1;
            if (u < total) {
                unsigned r = u / upr;
                int un = (int)(u - r * upr);
                unit[k] = un;
                grp[k] = (int)(r / rpg);
                off[k] = r * (unsigned)a.dim;
                const T *p = in + off[k];
                const T *p1, *p2 = nullptr;
                if (un < nrot) {
                    // neox, and gptj with V >= 2 (whole pairs in each vector): vectors un
                    // and un + nrot, so a warp's accesses stay contiguous; gptj with V = 1:
                    // the pair's two elements
                    p1 = p + (PAIRED ? 2 * un : un * V);
                    p2 = p + (PAIRED ? 2 * un + 1 : half + un * V);
                } else {
                    p1 = p + a.rot + (un - nrot) * V;
                }
                if constexpr (ASYNC) {
                    cp_async<V * sizeof(T)>(&sx1[k * THREADS + threadIdx.x], p1);
                    if (p2) cp_async<V * sizeof(T)>(&sx2[k * THREADS + threadIdx.x], p2);
                } else {
                    x1[k] = *reinterpret_cast<const Vec<T, V> *>(p1);
                    if (p2) x2[k] = *reinterpret_cast<const Vec<T, V> *>(p2);
                }
            }
        }
    }

    // out: the block's first row
    __device__ __forceinline__ void store(T *__restrict__ out, const float2 *cs_all, const kb_rope_args &a, int nrot,
                                          int half)
    {
#pragma unroll
        for (int k = 0; k < UNROLL; k++) {
            int un = unit[k];
            if (un < 0) continue;
            T *op = out + off[k];
            if constexpr (ASYNC) {
                x1[k] = sx1[k * THREADS + threadIdx.x];
                if (un < nrot) x2[k] = sx2[k * THREADS + threadIdx.x];
            }
            if (un >= nrot) {
                *reinterpret_cast<Vec<T, V> *>(op + a.rot + (un - nrot) * V) = x1[k];
                continue;
            }
            const float2 *cs = cs_all + grp[k] * half; // this unit's group's table
            Vec<T, V> y1, y2;
            if constexpr (V == 1) { // neox: (t[un], t[un + half]); gptj: (t[2un], t[2un + 1])
                float p = to_f(x1[k].v[0]), q = to_f(x2[k].v[0]);
                float2 c = cs[un]; // L = 1: the table is in pair order
                y1.v[0] = from_f<T>(p * c.x - q * c.y);
                y2.v[0] = from_f<T>(q * c.x + p * c.y);
            } else if constexpr (GPTJ) {
                // each vector holds V/2 whole pairs: x1's are pairs un*V/2 + m, x2's
                // (un + nrot)*V/2 + m = un*V/2 + half/2 + m
#pragma unroll
                for (int m = 0; m < V / 2; m++) {
                    const int W = half / L; // vectors of pairs: x1 is vector un, x2 vector un + nrot
                    float2 c1 = cs[m * W + un], c2 = cs[m * W + un + nrot];
                    float2 e1 = get2(x1[k], m), e2 = get2(x2[k], m);
                    put2(y1, m, make_float2(e1.x * c1.x - e1.y * c1.y, e1.y * c1.x + e1.x * c1.y));
                    put2(y2, m, make_float2(e2.x * c2.x - e2.y * c2.y, e2.y * c2.x + e2.x * c2.y));
                }
            } else {
                // neox: pair i = un*V + m is (x1[m], x2[m])
#pragma unroll
                for (int m = 0; m < V / 2; m++) {
                    float2 p = get2(x1[k], m), q = get2(x2[k], m);
                    float2 c0 = cs[(2 * m) * nrot + un], c1 = cs[(2 * m + 1) * nrot + un]; // W = nrot
                    put2(y1, m, rot_a(p, q, c0, c1));
                    put2(y2, m, rot_b(p, q, c0, c1));
                }
            }
            *reinterpret_cast<Vec<T, V> *>(op + (PAIRED ? 2 * un : un * V)) = y1;
            *reinterpret_cast<Vec<T, V> *>(op + (PAIRED ? 2 * un + 1 : half + un * V)) = y2;
        }
    }
};

template <typename T, int V, bool GPTJ>
__global__ void __launch_bounds__(THREADS, 1) rope_opt_kernel(const T *__restrict__ in, T *__restrict__ out,
                                                           kb_rope_args a, long groups, int rpg, int gpb,
                                                           unsigned nchunks)
{
    extern __shared__ float2 cs[]; // [gpb][half] (cos, +-sin), then the load staging area
    __shared__ int spos[THREADS];
    const int half = a.rot / 2;
    const int nrot = half / V;                  // rotary units per row
    const int upr = nrot + (a.dim - a.rot) / V; // units per row
    // blocks walk the tensor in memory order: a group's slices are neighbours
    const long g0 = (long)(blockIdx.x / nchunks) * gpb;
    const unsigned chunk = blockIdx.x % nchunks;
    const int ng = (int)min((long)gpb, groups - g0);
    const unsigned total = (unsigned)ng * (unsigned)rpg * (unsigned)upr;
    const long row0 = g0 * rpg;
    using Tile = RopeTile<T, V, GPTJ>;
    const unsigned step = THREADS * Tile::UNROLL;

    Tile tile;
    tile.sx1 = reinterpret_cast<Vec<T, V> *>(cs + (gpb * half + 1) / 2 * 2);
    tile.sx2 = tile.sx1 + Tile::UNROLL * THREADS;
    tile.load(in + row0 * a.dim, a, chunk * step + threadIdx.x, total, upr, nrot, rpg, half);
    // positions of the block's groups, then their cos/sin, while the loads fly
    if (threadIdx.x < ng) spos[threadIdx.x] = row_position(a, (g0 + threadIdx.x) * rpg);
    __syncthreads();
    for (int i = threadIdx.x; i < ng * half; i += THREADS) {
        int g = i / half, j = i - g * half;
        float s, c;
        sincosf(__ldg(a.angles + (long)spos[g] * half + j), &s, &c);
        cs[g * half + Tile::slot(j, half)] = make_float2(c, a.backward ? -s : s);
    }
    if constexpr (Tile::ASYNC) cp_async_wait_all(); // each thread reads back only its own copies
    __syncthreads();
    tile.store(out + row0 * a.dim, cs, a, nrot, half);
}


// The kernel of a plan: element type, vector width, style.
// and the staging bytes it needs (plan.c computes the same: prepare checks)
template <typename T, bool GPTJ>
void (*pick(int v, size_t *stage))(const T *, T *, kb_rope_args, long, int, int, unsigned)
{
    switch (v) {
    case 8:
        if constexpr (sizeof(T) == 2) {
            *stage = RopeTile<T, 8, GPTJ>::STAGE_BYTES;
            return rope_opt_kernel<T, 8, GPTJ>;
        } else {
            return nullptr;
        }
    case 4: *stage = RopeTile<T, 4, GPTJ>::STAGE_BYTES; return rope_opt_kernel<T, 4, GPTJ>;
    case 2: *stage = RopeTile<T, 2, GPTJ>::STAGE_BYTES; return rope_opt_kernel<T, 2, GPTJ>;
    case 1: *stage = RopeTile<T, 1, GPTJ>::STAGE_BYTES; return rope_opt_kernel<T, 1, GPTJ>;
    }
    return nullptr;
}

template <typename T> int run(const kb_rope_args *a, const kb_rope_plan *p, cudaStream_t s, bool prepare)
{
    size_t stage = 0;
    auto k = a->style == KB_ROPE_GPTJ ? pick<T, true>(p->v, &stage) : pick<T, false>(p->v, &stage);
    if (!k) return (int)cudaErrorInvalidValue;
    if (prepare && p->smem != (size_t)(p->gpb * (a->rot / 2) + 1) / 2 * 2 * sizeof(float2) + stage)
        return (int)cudaErrorInvalidValue; // plan.c and the kernel disagree on shared memory
    if (prepare) // above 48 KiB a kernel must opt in
        return p->smem > 48 * 1024
                   ? (int)cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)p->smem)
                   : 0;
    if (p->groups == 0) return 0;
    k<<<(unsigned)p->blocks, THREADS, p->smem, s>>>((const T *)a->in, (T *)a->out, *a, p->groups, p->rpg, p->gpb,
                                                    p->chunks);
    return (int)cudaGetLastError();
}

} // namespace

extern "C" int kb_rope_opt_prepare(const kb_rope_args *a, const kb_rope_plan *p)
{
    if (!kb::rope::args_ok(a)) return (int)cudaErrorInvalidValue;
    return kb::by_dtype(a->dtype, [&](auto t) { return run<decltype(t)>(a, p, nullptr, true); });
}

extern "C" int kb_rope_opt_run(const kb_rope_args *a, const kb_rope_plan *p, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    return kb::by_dtype(a->dtype, [&](auto t) { return run<decltype(t)>(a, p, s, false); });
}
