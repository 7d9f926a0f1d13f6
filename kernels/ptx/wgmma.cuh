// wgmma (Hopper warpgroup MMA, sm_90a): the asynchronous m64nNk16 with fp32
// accumulators in registers and both operands in shared memory (K-major,
// 128-byte swizzle descriptors), its fence / commit / wait, and a register
// fence for the accumulators. The instructions exist in the sm_90a image
// only: KB_PTX_SM90A is defined there, and callers compile their wgmma code
// under it (the declaration below is visible everywhere).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define KB_PTX_SM90A 1
#endif

namespace kb::ptx {

// d (m64 x N, fp32, the wgmma accumulator layout) += A (64 x 16, descriptor
// da) * B (N x 16, K-major, descriptor db)^T; acc = 0: d = A * B^T.
// Specialised for N 8, 16, 80, 96, 104, 112, 128, 192, 224, 256 and T __half,
// __nv_bfloat16.
template <int N, typename T> __device__ void wgmma(float (&d)[N / 2], uint64_t da, uint64_t db, int acc);

#ifdef KB_PTX_SM90A
// The accumulator operands: KB_ACC<n> lists "+f"(d[0]) .. "+f"(d[n-1]) and
// KB_REG<n> the matching "%0,...,%<n-1>" of the instruction, four more a line.
#define KB_REG4 "%0,%1,%2,%3"
#define KB_ACC4 "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
#define KB_REG8 KB_REG4 ",%4,%5,%6,%7"
#define KB_ACC8 KB_ACC4, "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
#define KB_REG12 KB_REG8 ",%8,%9,%10,%11"
#define KB_ACC12 KB_ACC8, "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11])
#define KB_REG16 KB_REG12 ",%12,%13,%14,%15"
#define KB_ACC16 KB_ACC12, "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
#define KB_REG20 KB_REG16 ",%16,%17,%18,%19"
#define KB_ACC20 KB_ACC16, "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19])
#define KB_REG24 KB_REG20 ",%20,%21,%22,%23"
#define KB_ACC24 KB_ACC20, "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23])
#define KB_REG28 KB_REG24 ",%24,%25,%26,%27"
#define KB_ACC28 KB_ACC24, "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27])
#define KB_REG32 KB_REG28 ",%28,%29,%30,%31"
#define KB_ACC32 KB_ACC28, "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define KB_REG36 KB_REG32 ",%32,%33,%34,%35"
#define KB_ACC36 KB_ACC32, "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35])
#define KB_REG40 KB_REG36 ",%36,%37,%38,%39"
#define KB_ACC40 KB_ACC36, "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39])
#define KB_REG44 KB_REG40 ",%40,%41,%42,%43"
#define KB_ACC44 KB_ACC40, "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43])
#define KB_REG48 KB_REG44 ",%44,%45,%46,%47"
#define KB_ACC48 KB_ACC44, "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47])
#define KB_REG52 KB_REG48 ",%48,%49,%50,%51"
#define KB_ACC52 KB_ACC48, "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51])
#define KB_REG56 KB_REG52 ",%52,%53,%54,%55"
#define KB_ACC56 KB_ACC52, "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55])
#define KB_REG60 KB_REG56 ",%56,%57,%58,%59"
#define KB_ACC60 KB_ACC56, "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59])
#define KB_REG64 KB_REG60 ",%60,%61,%62,%63"
#define KB_ACC64 KB_ACC60, "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#define KB_REG68 KB_REG64 ",%64,%65,%66,%67"
#define KB_ACC68 KB_ACC64, "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67])
#define KB_REG72 KB_REG68 ",%68,%69,%70,%71"
#define KB_ACC72 KB_ACC68, "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71])
#define KB_REG76 KB_REG72 ",%72,%73,%74,%75"
#define KB_ACC76 KB_ACC72, "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75])
#define KB_REG80 KB_REG76 ",%76,%77,%78,%79"
#define KB_ACC80 KB_ACC76, "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79])
#define KB_REG84 KB_REG80 ",%80,%81,%82,%83"
#define KB_ACC84 KB_ACC80, "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83])
#define KB_REG88 KB_REG84 ",%84,%85,%86,%87"
#define KB_ACC88 KB_ACC84, "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87])
#define KB_REG92 KB_REG88 ",%88,%89,%90,%91"
#define KB_ACC92 KB_ACC88, "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91])
#define KB_REG96 KB_REG92 ",%92,%93,%94,%95"
#define KB_ACC96 KB_ACC92, "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
#define KB_REG100 KB_REG96 ",%96,%97,%98,%99"
#define KB_ACC100 KB_ACC96, "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99])
#define KB_REG104 KB_REG100 ",%100,%101,%102,%103"
#define KB_ACC104 KB_ACC100, "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103])
#define KB_REG108 KB_REG104 ",%104,%105,%106,%107"
#define KB_ACC108 KB_ACC104, "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107])
#define KB_REG112 KB_REG108 ",%108,%109,%110,%111"
#define KB_ACC112 KB_ACC108, "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111])
#define KB_REG116 KB_REG112 ",%112,%113,%114,%115"
#define KB_ACC116 KB_ACC112, "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115])
#define KB_REG120 KB_REG116 ",%116,%117,%118,%119"
#define KB_ACC120 KB_ACC116, "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119])
#define KB_REG124 KB_REG120 ",%120,%121,%122,%123"
#define KB_ACC124 KB_ACC120, "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123])
#define KB_REG128 KB_REG124 ",%124,%125,%126,%127"
#define KB_ACC128 KB_ACC124, "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])


// wgmma.mma_async m64nNk16, fp32 accumulators, A and B from shared memory
// (descriptors), both K-major; acc = 0 overwrites d.
#define KB_WGMMA(N, T, TS, REGS, NR, DESC, PRED, ...)                                                             \
    template <> __device__ __forceinline__ void wgmma<N, T>(float(&d)[NR], uint64_t da, uint64_t db, int acc)       \
    {                                                                                                              \
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " PRED ", 0;\n"                                              \
                     "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TS "." TS " "                               \
                     "{" REGS "}, " DESC ", p, 1, 1, 0, 0;\n}\n"                                                     \
                     : __VA_ARGS__                                                                                 \
                     : "l"(da), "l"(db), "r"(acc));                                                               \
    }
KB_WGMMA(8, __nv_bfloat16, "bf16", KB_REG4, 4, "%4, %5", "%6", KB_ACC4)
KB_WGMMA(8, __half, "f16", KB_REG4, 4, "%4, %5", "%6", KB_ACC4)
KB_WGMMA(16, __nv_bfloat16, "bf16", KB_REG8, 8, "%8, %9", "%10", KB_ACC8)
KB_WGMMA(16, __half, "f16", KB_REG8, 8, "%8, %9", "%10", KB_ACC8)
KB_WGMMA(80, __nv_bfloat16, "bf16", KB_REG40, 40, "%40, %41", "%42", KB_ACC40)
KB_WGMMA(80, __half, "f16", KB_REG40, 40, "%40, %41", "%42", KB_ACC40)
KB_WGMMA(96, __nv_bfloat16, "bf16", KB_REG48, 48, "%48, %49", "%50", KB_ACC48)
KB_WGMMA(96, __half, "f16", KB_REG48, 48, "%48, %49", "%50", KB_ACC48)
KB_WGMMA(104, __nv_bfloat16, "bf16", KB_REG52, 52, "%52, %53", "%54", KB_ACC52)
KB_WGMMA(104, __half, "f16", KB_REG52, 52, "%52, %53", "%54", KB_ACC52)
KB_WGMMA(112, __nv_bfloat16, "bf16", KB_REG56, 56, "%56, %57", "%58", KB_ACC56)
KB_WGMMA(112, __half, "f16", KB_REG56, 56, "%56, %57", "%58", KB_ACC56)
KB_WGMMA(128, __nv_bfloat16, "bf16", KB_REG64, 64, "%64, %65", "%66", KB_ACC64)
KB_WGMMA(128, __half, "f16", KB_REG64, 64, "%64, %65", "%66", KB_ACC64)
KB_WGMMA(192, __nv_bfloat16, "bf16", KB_REG96, 96, "%96, %97", "%98", KB_ACC96)
KB_WGMMA(192, __half, "f16", KB_REG96, 96, "%96, %97", "%98", KB_ACC96)
KB_WGMMA(224, __nv_bfloat16, "bf16", KB_REG112, 112, "%112, %113", "%114", KB_ACC112)
KB_WGMMA(224, __half, "f16", KB_REG112, 112, "%112, %113", "%114", KB_ACC112)
KB_WGMMA(256, __nv_bfloat16, "bf16", KB_REG128, 128, "%128, %129", "%130", KB_ACC128)
KB_WGMMA(256, __half, "f16", KB_REG128, 128, "%128, %129", "%130", KB_ACC128)
#undef KB_WGMMA
#undef KB_REG4
#undef KB_ACC4
#undef KB_REG8
#undef KB_ACC8
#undef KB_REG12
#undef KB_ACC12
#undef KB_REG16
#undef KB_ACC16
#undef KB_REG20
#undef KB_ACC20
#undef KB_REG24
#undef KB_ACC24
#undef KB_REG28
#undef KB_ACC28
#undef KB_REG32
#undef KB_ACC32
#undef KB_REG36
#undef KB_ACC36
#undef KB_REG40
#undef KB_ACC40
#undef KB_REG44
#undef KB_ACC44
#undef KB_REG48
#undef KB_ACC48
#undef KB_REG52
#undef KB_ACC52
#undef KB_REG56
#undef KB_ACC56
#undef KB_REG60
#undef KB_ACC60
#undef KB_REG64
#undef KB_ACC64
#undef KB_REG68
#undef KB_ACC68
#undef KB_REG72
#undef KB_ACC72
#undef KB_REG76
#undef KB_ACC76
#undef KB_REG80
#undef KB_ACC80
#undef KB_REG84
#undef KB_ACC84
#undef KB_REG88
#undef KB_ACC88
#undef KB_REG92
#undef KB_ACC92
#undef KB_REG96
#undef KB_ACC96
#undef KB_REG100
#undef KB_ACC100
#undef KB_REG104
#undef KB_ACC104
#undef KB_REG108
#undef KB_ACC108
#undef KB_REG112
#undef KB_ACC112
#undef KB_REG116
#undef KB_ACC116
#undef KB_REG120
#undef KB_ACC120
#undef KB_REG124
#undef KB_ACC124
#undef KB_REG128
#undef KB_ACC128

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
// until at most N of this warpgroup's wgmma groups are pending
template <int N> __device__ __forceinline__ void wgmma_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

// A K-major operand of 8-row groups 1024 bytes apart, rows of 128 bytes,
// 128-byte swizzle (what TMA's CU_TENSOR_MAP_SWIZZLE_128B writes): start
// address >> 4 in bits 0-13, leading byte offset (unused here) 1, stride
// byte offset 1024 >> 4 in bits 32-45, swizzle mode 1 (128B) in bits 62-63.
// The tile is 1024-byte aligned (base offset 0); the next k16 slice is 32
// bytes on: +2 in the address field.
__device__ __forceinline__ uint64_t desc_sw128(uint32_t addr)
{
    return (uint64_t)((addr & 0x3FFFF) >> 4) | (1ull << 16) | ((uint64_t)(1024 >> 4) << 32) | (1ull << 62);
}
#endif // KB_PTX_SM90A

// keeps the compiler from moving register reads or writes of v across it
// (accumulators read after wgmma_wait)
__device__ __forceinline__ void reg_fence(float &v) { asm volatile("" : "+f"(v)::"memory"); }

} // namespace kb::ptx
