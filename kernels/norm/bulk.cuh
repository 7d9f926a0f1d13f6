// The bulk kernels (sm_90): whole chunks of rows by the copy engine.
#pragma once
#include "../ptx/mbarrier.cuh"
#include "common.cuh"

namespace kb::norm {
namespace { // internal linkage, as one file had it: inlined helpers emit no copy of their own

// On sm_90 a persistent block keeps a ring of S slots, each holding a chunk of
// R consecutive rows (R * cols elements, contiguous in memory, so one bulk
// copy: cp.async.bulk completing on the slot's mbarrier). One thread issues
// the copies, S chunks ahead; no register holds a byte in flight, so every
// SM has many rows in flight whatever the kernel's register count. A row of
// the chunk belongs to a group of tpr threads (as above); thread t reads
// vectors t, t + tpr, ... of its row from the slot. After the last read of a
// slot (a block barrier), the slot is refilled with the chunk S ahead.
// Needs cols * sizeof(T) a multiple of 16 and 16-byte aligned tensors.

// The ring's shared memory: its barriers at 0 (8 at most), the reductions'
// [2][32] float4 at 64 (bulk_bwd's float2 take half; its saved statistics,
// two iterations of at most 32 rows' mean and rstd, the other half, from
// STATS_OFF), the slots from RING_OFF (16-byte aligned, as bulk copies need).
constexpr int STATS_OFF = 64 + 2 * 32 * 8, RING_OFF = 64 + 2 * 32 * 16, STATS_ROWS = 32;
static_assert(STATS_OFF + 2 * 2 * STATS_ROWS * 4 <= RING_OFF, "bulk_bwd's statistics fit below the ring");
static_assert(RING_OFF == KB_NORM_RING_OFF && STATS_ROWS == KB_NORM_STATS_ROWS, "plan.h's layout");

// The ring of one block: chunk ch holds rows ch*R .. ch*R + R - 1 (fewer at
// the end) of one tensor (src0) or two (src1: the slot holds src0's rows, then
// src1's); this block's iteration i takes chunk blockIdx.x + i*gridDim.x.
struct Ring {
    // nothing but the kernel's parameters (constant bank) and shared-memory
    // addresses: every thread holds a Ring, so a field kept in a register
    // costs all of them (bulk_bwd runs 1024 threads at 64 registers)
    unsigned char *sm;
    const char *src0, *src1;
    int S, R;
    long rows, row_bytes;
    // every thread: the ring's layout (start, start_parts)
    __device__ __forceinline__ void layout(unsigned char *smem, int S_, int R_, long rows_, long row_bytes_, const void *a,
                                           const void *b)
    {
        sm = smem;
        src0 = (const char *)a;
        src1 = (const char *)b;
        S = S_;
        R = R_;
        rows = rows_;
        row_bytes = row_bytes_;
    }
    // every thread: the layout; thread 0 also sets up the barriers and
    // issues the first S chunks; then a block barrier.
    __device__ __forceinline__ void start(unsigned char *smem, int S_, int R_, long rows_, long row_bytes_, const void *a, const void *b)
    {
        layout(smem, S_, R_, rows_, row_bytes_, a, b);
        if (threadIdx.x == 0) {
            for (int s = 0; s < S; s++) ptx::mbar_init(bar(s), 1);
            ptx::fence_mbar_init();
            for (int s = 0; s < S; s++) issue(s);
        }
        __syncthreads();
    }
    __device__ __forceinline__ uint32_t bar(int s) const { return ptx::smem_u32(sm) + 8u * (uint32_t)s; }
    __device__ __forceinline__ long chunk(int i) const { return blockIdx.x + (long)i * gridDim.x; }
    __device__ __forceinline__ char *slot(int i, int tensor) const
    {
        return reinterpret_cast<char *>(sm) + RING_OFF + ((size_t)(i % S) * (src1 ? 2 : 1) + tensor) * (size_t)R * row_bytes;
    }
    // thread 0: fill iteration i's slot (nothing past the last chunk)
    __device__ __forceinline__ void issue(int i) const
    {
        const long r0 = chunk(i) * R;
        if (r0 >= rows) return;
        const long nr = rows - r0 < R ? rows - r0 : R;
        const size_t off = (size_t)r0 * row_bytes;
        const uint32_t b = bar(i % S), bytes = (uint32_t)(nr * row_bytes);
        ptx::fence_proxy_async(); // the slot's generic reads come first
        ptx::mbar_expect_tx(b, src1 ? 2 * bytes : bytes);
        ptx::bulk_load(ptx::smem_u32(slot(i, 0)), src0 + off, bytes, b);
        if (src1) ptx::bulk_load(ptx::smem_u32(slot(i, 1)), src1 + off, bytes, b);
    }
    // every thread: until iteration i's slot is full
    __device__ __forceinline__ void wait(int i) const { ptx::mbar_wait_loop(bar(i % S), (unsigned)(i / S) & 1u); }

    // The piped ring (bulk_bwd's PIPE: one slot, one row a chunk, every thread
    // of the block on the row): the slot in parts of `pb` bytes of each tensor
    // (part k: the row's bytes k*pb .. (k+1)*pb - 1, which are vector k*tpr + t
    // of thread t; at most 4), part k completing on barrier k. Part k of the
    // next row is refilled as soon as the block has read part k of this one
    // (release_part), so the copy runs while the row is summed and written
    // instead of after it. start_parts: as start, with `parts` barriers and
    // the first row's parts.
    __device__ __forceinline__ void start_parts(unsigned char *smem, int parts, long pb, long rows_, long row_bytes_,
                                                const void *a, const void *b)
    {
        layout(smem, 1, 1, rows_, row_bytes_, a, b);
        if (threadIdx.x == 0) {
            for (int k = 0; k < parts; k++) ptx::mbar_init(bar(k), 1);
            ptx::fence_mbar_init();
            for (int k = 0; k < parts; k++) issue_part(0, k, pb);
        }
        __syncthreads();
    }
    // thread 0: part k of iteration i's row (nothing past the last row)
    __device__ __forceinline__ void issue_part(int i, int k, long pb) const
    {
        const long r = chunk(i), off = (long)k * pb;
        if (r >= rows) return;
        const uint32_t b = bar(k), bytes = (uint32_t)(row_bytes - off < pb ? row_bytes - off : pb);
        const size_t src = (size_t)r * row_bytes + off;
        ptx::fence_proxy_async(); // the part's generic reads come first
        ptx::mbar_expect_tx(b, 2 * bytes);
        ptx::bulk_load(ptx::smem_u32(slot(0, 0) + off), src0 + src, bytes, b);
        ptx::bulk_load(ptx::smem_u32(slot(0, 1) + off), src1 + src, bytes, b);
    }
    // every thread: until part k of iteration i's row is in
    __device__ __forceinline__ void wait_part(int i, int k) const { ptx::mbar_wait_loop(bar(k), (unsigned)i & 1u); }
    // every thread, once done with part k of iteration i's row: a block
    // barrier, then thread 0 refills the part with iteration i + 1's. (Warp 0
    // alone at bar.sync while the others bar.arrive and go on timed 2-3%
    // faster, but racecheck then misreads the block's later barriers and
    // reports hazards in column_sums; an mbarrier each warp arrives on, thread
    // 0 polling it, was 6% slower: DESIGN.md, bulk.pipe.)
    __device__ __forceinline__ void release_part(int i, int k, long pb) const
    {
        __syncthreads();
        if (threadIdx.x == 0) issue_part(i + 1, k, pb);
    }
    __device__ __forceinline__ int iters() const
    {
        const long nchunks = (rows + R - 1) / R;
        return (int)((nchunks - (long)blockIdx.x + gridDim.x - 1) / gridDim.x);
    }
};

} // namespace
} // namespace kb::norm
