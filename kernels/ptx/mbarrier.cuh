// mbarriers and the Hopper (sm_90) bulk copy engine, in one style: every
// barrier and shared-memory operand is a 32-bit shared-memory address
// (smem_u32). Only compiled into sm_90 code paths: callers guard with
// __CUDA_ARCH__ >= 900 where a file is also built for older targets.
#pragma once
#include <stdint.h>

#include "cp_async.cuh" // smem_u32

namespace kb::ptx {

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
// the barriers' initialisation visible to the async proxy and the cluster
__device__ __forceinline__ void fence_mbar_init() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
// this thread arrives and the phase expects `bytes` more of copies
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ bool mbar_try_wait(uint32_t bar, uint32_t parity)
{
    uint32_t done;
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(bar), "r"(parity)
                 : "memory");
    return done != 0;
}
// until the phase of this parity has completed
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity)
{
    while (!mbar_try_wait(bar, parity)) {
    }
}
// the same wait as one asm loop (try_wait, branch back): the norm bulk
// kernels keep their registers with it (bulk_bwd bf16 spilled 48 bytes more
// with the selp loop above). SEM: try_wait's semantics and scope ("": the
// default, acquire at .cta)
#define KB_MBAR_WAIT_LOOP(SEM)                                                                                      \
    "{\n.reg .pred P1;\nLAB_WAIT:\nmbarrier.try_wait.parity" SEM ".shared::cta.b64 P1, [%0], %1;\n@P1 bra DONE;\n"   \
    "bra LAB_WAIT;\nDONE:\n}\n"
__device__ __forceinline__ void mbar_wait_loop(uint32_t bar, uint32_t parity)
{
    asm volatile(KB_MBAR_WAIT_LOOP("") ::"r"(bar), "r"(parity) : "memory");
}
// ... with acquire at cluster scope: a phase completed by other CTAs'
// st.async (which release at .cluster); a .cta acquire is not formally
// ordered after them (PTX memory model; cccl's st.async example waits so)
__device__ __forceinline__ void mbar_wait_cluster(uint32_t bar, uint32_t parity)
{
    asm volatile(KB_MBAR_WAIT_LOOP(".acquire.cluster") ::"r"(bar), "r"(parity) : "memory");
}
#undef KB_MBAR_WAIT_LOOP
__device__ __forceinline__ void mbar_arrive(uint32_t bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
// the shared-memory address `addr` of this CTA, in CTA `cta` of the cluster
__device__ __forceinline__ uint32_t mapa(uint32_t addr, uint32_t cta)
{
    uint32_t remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(addr), "r"(cta));
    return remote;
}
// arrive on the barrier at the same shared-memory offset in CTA `cta` of the cluster
__device__ __forceinline__ void mbar_arrive_cluster(uint32_t bar, uint32_t cta)
{
    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(mapa(bar, cta)) : "memory");
}
// 16 bytes into another CTA's shared memory (remote: mapa's, 16-byte
// aligned), completing 16 bytes of its barrier's phase (remote_bar: mapa's);
// no reply awaited
__device__ __forceinline__ void st_async_f4(uint32_t remote, float4 v, uint32_t remote_bar)
{
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [%0], {%1, %2, %3, %4}, [%5];" ::"r"(remote),
                 "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w), "r"(remote_bar)
                 : "memory");
}
__device__ __forceinline__ uint32_t cluster_ctarank()
{
    uint32_t r;
    asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
__device__ __forceinline__ uint32_t cluster_nctarank()
{
    uint32_t n;
    asm("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
    return n;
}
// the cluster barrier in two halves, the work between them overlapping it:
// arrive, relaxed (what the cluster must see first, such as barriers'
// initialisation, is fenced: fence_mbar_init), ... wait (acquire). A release
// arrive there cost the norm cluster kernel 9-25% (kernels/norm/DESIGN.md)
__device__ __forceinline__ void cluster_arrive_relaxed() { asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory"); }
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory"); }
__device__ __forceinline__ void cluster_sync()
{
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// this thread's generic shared-memory accesses ordered before later async-proxy ones (bulk copies, TMA)
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

// `bytes` (a multiple of 16, 16-byte aligned both ends) global -> shared,
// completing on bar (whose phase must expect them: mbar_expect_tx)
__device__ __forceinline__ void bulk_load(uint32_t dst, const void *src, uint32_t bytes, uint32_t bar)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
                 "l"(src), "r"(bytes), "r"(bar)
                 : "memory");
}
// `bytes` (a multiple of 16, 16-byte aligned) of global memory asked of L2,
// nothing waited for: under L2's default policy, or under `policy` (createpolicy)
__device__ __forceinline__ void bulk_prefetch_l2(const void *src, uint32_t bytes)
{
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void bulk_prefetch_l2(const void *src, uint32_t bytes, uint64_t policy)
{
    asm volatile("cp.async.bulk.prefetch.L2.global.L2::cache_hint [%0], %1, %2;" ::"l"(src), "r"(bytes), "l"(policy)
                 : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
// this thread's bulk stores have read their shared memory (it may be reused)
__device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); }
// ... and written global memory
__device__ __forceinline__ void bulk_wait() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }

} // namespace kb::ptx
