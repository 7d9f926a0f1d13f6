/* The fused SwiGLU gate/up planner (plan.h): host C, no GPU. Each decision
 * is a row of the table below, with the measurement (H100 80GB HBM3, bf16
 * unless said, kbench median ms) or the constraint behind it; the code
 * under the table takes the rows in order and records which it took. With
 * no tunables and the occupancy of the H100 it chooses what
 * kernels/mlp_fused.cu chose before the split (gate_up, gate_up_hopper,
 * pick_bn), tile for tile. */
#include "plan.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const kb_mlp_plan_row kb_mlp_plan_rows[KB_MLP_NROWS] = {
    [KB_MLP_ROW_F32] = {
        "dtype fp32: fused_f32, the CUDA-core kernel (64x64 tiles of h, 4x4 of g and u a thread), true fp32; tf32 "
        "applies to the down GEMM only",
        "constraint: wgmma and mma.sync take 16-bit operands here; one fp32 path, nothing to choose"},
    [KB_MLP_ROW_HOPPER] = {
        "compute capability 9.x, bf16/fp16, hidden % 8 == 0: fused_wgmma; any other sm_80+ device: fused_mma",
        "2048x1024x11008: the mma.sync path on the H100 0.6353 ms vs TMA + wgmma 0.2237 (2026-11-23); wgmma is "
        "sm_90a code, absent from the sm_80 image"},
    [KB_MLP_ROW_TMA_PITCH] = {
        "hidden % 8 != 0 (rows of x, G, U not 16-byte multiples): fused_mma",
        "constraint: a TMA tensor map's row pitch is a multiple of 16 bytes (check shapes hidden 257, 5, 1)"},
    [KB_MLP_ROW_OCCUPANCY] = {
        "the chosen wgmma kernel fits no cluster on the device (occupancy 0) or its tensor maps cannot be made: "
        "fused_mma",
        "constraint: a fallback, as before the split; not taken on the H100, where every tile fits one CTA an SM"},
    [KB_MLP_ROW_WARPGROUPS] = {
        "tokens <= 64: one consumer warpgroup (BM 64); more: two (BM 128)",
        "decode is weight-bound: 16x4096x11008 one warpgroup 0.1068 ms, 86% of copy, vs cublas_cat 0.1117; BM 128 "
        "would compute 64 or more rows of zeros"},
    [KB_MLP_ROW_WG1_BN] = {
        "one warpgroup: BN as BN_WAVE's (128, 112, 96 or 64: the fewest rounds of tiles over the CTAs that fit, "
        "weighted by BN / efficiency; decode x 11008: 96, 115 tiles for 132 CTAs; x 14336 and x 28672: 112)",
        "graph, two runs, BN 64 -> chosen: 1x4096x11008 0.1054 / 0.1059 -> 0.1000 / 0.0992 ms, 16x4096x11008 "
        "0.1047 / 0.1042 -> 0.1020 / 0.1006, 16x4096x14336 0.1288 / 0.1292 -> 0.1271 / 0.1276 (BN 96: 0.137), "
        "16x8192x28672 0.4841 / 0.4847 -> 0.4788 / 0.4770 (BN 64: 172 tiles at x 11008, the last 40 CTAs a second "
        "round alone)"},
    [KB_MLP_ROW_CLUSTER] = {
        "two warpgroups, tokens > 128 and an even number of 128-row m-blocks (any number on rows past a sector: the "
        "SECTOR row): clusters of 2 (each CTA loads G's or U's tile and multicasts it to both); else clusters of 1",
        "2048x1024x11008: clusters of 2 0.2246 / 0.2251 ms vs 1 0.234-0.235 (multicast worth 2-6%); an odd count "
        "leaves one CTA a tile wholly past the last token, not verified as a default"},
    [KB_MLP_ROW_BN_WAVE] = {
        "two warpgroups: BN 128, 112, 96 or 64, the fewest rounds of cluster tiles over the clusters that fit, "
        "weighted by BN / efficiency (1, 0.99, 0.98, 0.90); within 0.1% the wider",
        "2048x1024x11008 (BN 112: 12 full rounds on 66 clusters of 2): 0.2215 / 0.2224 ms vs a fixed 128 0.2250 / "
        "0.2260; 4096x4096x11008 picks 128; BN 64's 0.90 (0.955 before) from the shapes where 64 won by fewer rows "
        "over several rounds and lost (H100, 2026-11-27, two runs): 1589x4096x3000 BN 112 0.1916 / 0.1912 ms vs 64 "
        "0.2159 / 0.2069, 1298x4096x8192 128 0.4206 / 0.4235 vs 0.4842 / 0.4744, 2365x4096x5504 96 0.4889 / 0.4931 "
        "vs 0.5221 / 0.5256, 324x4096x13824 (now swapped) 0.1998 / 0.2006 vs 0.2674 / 0.2643; one round (<= 256 x "
        "3000) keeps 64"},
    [KB_MLP_ROW_STAGES] = {
        "the ring: as many stages as fit in 220 KiB, 12 at most (two warpgroups, BN 112: 5 of 44 KiB)",
        "2048x1024x11008 BN 112: 5 stages 0.2203 / 0.2208 ms vs 4 0.2226 / 0.2234 (ncu: the tensor pipe 73% "
        "active, waiting for operands)"},
    [KB_MLP_ROW_GROUP] = {
        "tiles walk m fastest in groups of 16 m-blocks (16 / cl m-groups, at most as many as there are): the CTAs "
        "running at once share weight tiles, x's rows stay in L2",
        "2048x1024x11008, clusters of 2: groups of 8 m-pairs 0.2324 ms vs 4 0.2355 (the only size that "
        "won)"},
    [KB_MLP_ROW_TMA_STORE] = {
        "inter % 8 == 0 (h's rows 16-byte multiples, h 16-byte aligned): h staged in the tile's last stage and "
        "stored by TMA; else every thread stores its h values",
        "2048x1024x11008: register stores 0.2256-0.2266 ms -> TMA 0.2010-0.2100, 4096x4096x11008 1.641 -> 1.479 "
        "(ncu: the stores stalled 14% of warp samples); register stores only where TMA cannot address h"},
    [KB_MLP_ROW_MMA_VEC] = {
        "fused_mma: hidden % 8 == 0 and x, G, U 16-byte aligned: 16-byte cp.async, zero-filled past the edges; "
        "else element loads through registers",
        "constraint: cp.async of 16 bytes needs 16-byte aligned rows (check shapes hidden 257, 5, 1)"},
    [KB_MLP_ROW_CUBLAS_MID] = {
        "fused on Hopper with no tunable fixed: at hidden >= 4096, 129-160 or 513-544 tokens below inter 14336, or "
        "257-383 tokens from inter 28672 (257-319 from hidden 8192), or 257-352 at inter 13824-28671 from hidden 5120; "
        "and 65-128 tokens at inter <= 3584 from hidden 3072: cuBLAS's GEMM over the stacked [G; U], silu(g)*u, cuBLAS down (cublas_cat's "
        "path; the kernel column says so)",
        "against the wgmma kernels, the swapped one included (H100, 2026-11-27, graph, two runs in one call, ms): "
        "bf16 x 4096 x 11008 129 cublas_cat 0.1208 / 0.1202 vs swapped 0.1294 / 0.1282 (fp16 0.1168 / 0.1184 vs "
        "0.1243 / 0.1246), 160 0.1181 / 0.1190 vs 0.1219 / 0.1220, 513 0.2182 / 0.2180 vs 0.2378 / 0.2283 (fp16 "
        "0.2356 / 0.2338 vs 0.2448 / 0.2440); 300x8192x28672 0.6852 / 0.6866 vs 0.7025 / 0.7033 (320 level: 0.7207 "
        "/ 0.7224 vs 0.7288 / 0.7157; since, three runs in one call, 2026-11-27, events, cublas_cat vs fused_wgmma's plan, the "
        "swapped kernel at 300 and 320, the tile (wg 2, BN 112, dynamic) from 352: 300 bf16 0.6832 / 0.6858 / 0.6870 "
        "vs 0.6946 / 0.6957 / 0.6985, 320 0.7208 / 0.7242 / 0.7178 vs 0.7080 / 0.7076 / 0.7114, 352 0.8772 / 0.8786 / "
        "0.8779 vs 0.8146 / 0.8203 / 0.8215, 383 0.8824 / 0.8845 / 0.8909 vs 0.8225 / 0.8216 / 0.8213, fp16 352 0.9107 / "
        "0.9296 / 0.9440 vs 0.8610 / 0.8693 / 0.8876, 383 0.9258 / 0.9153 / 0.9241 vs 0.8650 / 0.8564 / 0.8632: so from "
        "320 the wgmma kernels at hidden >= 8192 and inter >= 28672). Not at x 14336 (129: 0.1486 / 0.1478 vs swapped 0.1376 / 0.1380; 513: 0.3223 "
        "/ 0.3230 vs 0.3019 / 0.3044), nor at 192 (swapped + cuBLASLt down 0.1178 / 0.1184 vs 0.1306 / 0.1305) or "
        "576 (0.2421 / 0.2395 vs 0.2474 / 0.2478). From hidden 5120 (2026-11-27, in turns, events, two runs in one call, "
        "bf16, cublas_cat vs the swapped kernel + cuBLASLt down): 5120x13824 257 0.2124 / 0.2128 vs 0.2178 / 0.2178, 320 "
        "0.2437 / 0.2473 vs 0.2789 / 0.2801, 352 0.2549 / 0.2567 vs 0.2859 / 0.2878; 7168x18944 257 0.3700 / 0.3728 vs "
        "0.4011 / 0.4118, 300 0.4028 / 0.4019 vs 0.4342 / 0.4350; 6144x16384 300 0.3004 / 0.3028 vs 0.3028 / 0.3053 "
        "(level; at 320 the swapped kernel ahead, cublas_cat 0.3450 / 0.3477 vs 0.3250 / 0.3307, inside the box); fp16 alike (7168x18944 257 0.3911 "
        "/ 0.3891 vs 0.4341 / 0.4332). Not 383 (mixed: 5120x13824 0.2627 / 0.2650 vs 0.2730 / 0.2701, 6144x16384 "
        "0.3689 / 0.3687 vs 0.3633 / 0.3696) nor 256 (the tile 0.1841 / 0.1841 vs 0.1928 / 0.1926 at 5120x13824), nor "
        "at 4096x14336 (the grid: the swapped kernel ahead). At 65-128 tokens and inter <= 3584 (tensor-parallel "
        "shards: one m-block makes 43-56 tiles of BN 64 for 132 SMs, where cuBLAS splits K; H100, 2026-11-27, events, "
        "two runs, cublas_cat vs fused's tile): x 4096 x 2752 65 0.0367 / 0.0381 vs 0.0386 / 0.0394, 128 0.0356 / "
        "0.0378 vs 0.0402 / 0.0410 (fp16 0.0367 / 0.0376 vs 0.0403 / 0.0405), x 4096 x 3584 128 0.0441 / 0.0451 vs "
        "0.0453 / 0.0460, x 3072 x 2816 85 0.0319 / 0.0318 vs 0.0334 / 0.0334; one warpgroup lost too (128 x 2752 "
        "0.0396 / 0.0400). Not at hidden 2048 (x 2816: 0.97-1.006), from inter 5504 (the tile 1.03-1.11x), nor at "
        "200-256 tokens (mixed: 200 x 2752 1.04x, 256 0.965x); below inter 2752 not measured"},
    [KB_MLP_ROW_SCHED] = {
        "two warpgroups in clusters of 1: the dynamic scheduler (tiles in order from a global counter as CTAs free "
        "up); clusters of 2 and one warpgroup: static (tile t on CTA t mod the grid)",
        "clusters of 1, static vs dynamic (H100, 2026-11-25, two runs each): x 4096 x 11008 bf16 257 0.2062 / 0.2064 "
        "-> 0.1949 / 0.1945 ms, 300 0.1982 -> 0.1796, 385 0.2718 -> 0.2386, 513 0.3044 -> 0.2715, 1000 0.4095 -> "
        "0.3753 (fp16 alike); 257 x 8192 x 28672 0.980 / 1.017 -> 0.817 / 0.826; 300 x 1024 x 11008 0.0592 / 0.0613 "
        "-> 0.0580 / 0.0575; 128 and 384 (full m-blocks) the same within 1%. Where clusters of 2 are planned, dynamic "
        "in clusters of 1 was no faster (256-2048 tokens, all four grid widths: 0.92-1.12x, median 0.99)"},
    [KB_MLP_ROW_DOWN] = {
        "Hopper, after fused_wgmma, 1-16 tokens, inter % 8 == 0, hidden >= 1024 and inter >= 2816, but not hidden "
        "3072-8191 with inter < 5504: the down GEMM by down_splitk (TMA + wgmma m64n8/n16 with D's rows as the "
        "64-row operand, K split to about one block an SM, or two where one already splits K, up to 8 splits, 16 "
        "of 11 k-blocks or more where 8 of every row block are fewer blocks than SMs (hidden 1024), the splits "
        "added in order by the last block of each row block, every split's loads at once, launched as the gate/up "
        "kernel's programmatic dependent, D loaded before it waits); else cuBLAS",
        "whole MLP, fused_wgmma, graph, two runs in one call (H100, 2026-11-27), cuBLAS's down -> down_splitk, ms: "
        "bf16 16x4096x11008 0.1006 / 0.1012 -> 0.0980 / 0.0981 (90.2% of copy), 1x4096x11008 0.0999 / 0.0996 -> "
        "0.0967 / 0.0967, 16x1024x11008 0.0331 / 0.0329 -> 0.0319 / 0.0317, 16x2048x2816 0.0223 / 0.0220 -> 0.0216 "
        "/ 0.0215, 16x4096x5504 0.0572 / 0.0572 -> 0.0535 / 0.0533, 16x4352x11008 0.1077 / 0.1076 -> 0.1045 / "
        "0.1051, 1x8192x2816 0.0569 / 0.0570 -> 0.0552 / 0.0546; ahead or level at all 44 bf16 shapes of 1 and 16 "
        "tokens from inter 5504 (hidden 1024, 2048, 4096, 8192 x 5504, 11008, 28672; 3072, 4104, 4352, 5120, 6144 x "
        "11008, 28672: 1.003-1.079x; the 5504 end at hidden 3072-8191 measured at 4096 only) and at hidden 1024, "
        "2048 and 8192 x 2816 (1.025-1.10x); fp16 alike. cuBLAS kept at hidden 3072-6144 x 2816, where it was level or ahead (16x4096x2816 "
        "0.0331 / 0.0332 against 0.0334 / 0.0334; 16x4352x2816 0.0355 / 0.0354 against 0.0365 / 0.0370). Before the "
        "last block loaded every split at once (a loop of dependent 4-byte loads, 8 in turn at 9-16 tokens), "
        "down_splitk was level with cuBLAS at 9-16 tokens x 4096 and behind at hidden 1024 (16x1024x11008 0.0355 "
        "against 0.0329): that change alone, 16x4096x11008 0.1004 / 0.1005 -> 0.0977 / 0.0975, 16x1024x11008 0.0355 "
        "/ 0.0355 -> 0.0324 / 0.0324. Past 8 splits at hidden 1024 (16 x 16 blocks of 11 k-blocks two an SM, not "
        "16 x 8 of 22 one an SM; graph, three runs in one call, 2026-11-27), us: 1x1024x11008 32.1 / 32.0 / 32.0 -> "
        "30.6 / 30.5 / 30.4 (67 -> 72.8% of copy), 1x1024x14336 38.3 / 38.3 / 38.2 -> 36.4 / 36.4 / 36.3, 16x1024x11008 "
        "31.8 / 32.0 / 31.9 -> 31.3 / 31.4 / 31.1, fp16 1x1024x11008 32.1 / 32.1 / 32.0 -> 30.8 / 30.6 / 30.6, x 8192 "
        "and x 28672 1.000-1.022x; splits of under 11 k-blocks lost (16x1024x2816 15.3 -> 16.1, 16x1024x5504 20.7 -> "
        "21.1 at 16 of 6)"},
    [KB_MLP_ROW_DOWN_LT] = {
        "fused on cublas_cat's path (the CUBLAS_MID or SECTOR row) at 257-352 tokens and hidden 4096-5119, after the swapped "
        "kernel (the SWAP row) at 257-400 tokens, hidden 4096-8191 and inter > 8192, or after a wgmma kernel at 768-1024 tokens, "
        "hidden <= 1024 and inter >= 11008: the down GEMM by cuBLASLt with K split in two (its heuristic's first such algorithm, "
        "fp32 partials reduced out of place); else cuBLAS's own pick",
        "the down GEMM alone, 300 x 4096 x 11008 bf16 (H100, 2026-11-27, flushed, median of 30): cuBLAS's pick, one "
        "split, 59.5 us; the heuristic's first split-K 2 algorithm 47.1. Whole MLP, graph, two runs in one call, "
        "cublas -> cublaslt down, ms: 300x4096x11008 0.1574 / 0.1572 -> 0.1471 / 0.1468 (fp16 0.1572 / 0.1586 -> "
        "0.1544 / 0.1516), 320x4096x11008 0.1673 / 0.1659 -> 0.1569 / 0.1566, 300x4096x14336 0.1967 / 0.1964 -> "
        "0.1890 / 0.1896, 320x4096x14336 0.1988 / 0.1990 -> 0.1971 / 0.1968; another call: 336x4096x11008 0.1676 / "
        "0.1665 -> 0.1564 / 0.1565, 336x4096x14336 0.2296 / 0.2300 -> 0.2131 / 0.2110, 352x4096x11008 0.1772 / 0.1708 "
        "-> 0.1672 / 0.1689 (fp16 1.1-5.3% alike; fp16 320x4096x14336 0.2068 / 0.2081 vs 0.2139 / 0.2144 there, "
        "ahead 0.2142 vs 0.2063 in a third). Kept on cuBLAS where level or behind: 368 tokens (0.983-1.003x), 383 "
        "(0.983-1.022x), "
        "300x8192x28672 0.6867 / 0.6868 vs 0.6825 / 0.6989; after fused_wgmma 16-128 tokens (within 1%), "
        "512x4096x11008 0.2064 / 0.2065 vs 0.2139 / 0.2110, 128x1024x11008 0.0355 / 0.0356 vs 0.0393 / 0.0394, "
        "320x1024x11008 0.0534 / 0.0532 vs 0.0608 / 0.0609. x 1024 x 11008 after fused_wgmma, a third call, two "
        "runs each, verified: 768 0.1024 / 0.1020 -> 0.0851 / 0.0852 ms (fp16 0.1076 / 0.1073 -> 0.0895 / 0.0902), "
        "1000 0.1174 / 0.1174 -> 0.1100 / 0.1106 (fp16 1.004x), 1024 0.1139 / 0.1160 -> 0.1106 / 0.1110 (fp16 "
        "1.052x); kept: 384 and 640 level, 448 0.973x (fp16 0.995), 512 1.052x (fp16 1.033; alone between a loss "
        "and a level), 1536 0.1568 / 0.1575 vs 0.1625 / 0.1629, 2048 0.998x (fp16 0.959). After the swapped kernel (2026-11-27, two runs, "
        "bf16, cublas -> cublaslt down, ms): 257x4096x11008 0.1373 / 0.1336 -> 0.1271 / 0.1296, 300 0.1477 / 0.1469 "
        "-> 0.1394 / 0.1422, 400 0.1971 / 0.1967 -> 0.1819 / 0.1870 (fp16 0.1953 / 0.1959 -> 0.1956 / 0.1951), "
        "300x4096x14336 0.2038 / 0.2018 -> 0.1874 / 0.1959; kept: 192x4096x14336 0.1433 / 0.1447 vs 0.1473 / 0.1461, "
        "447x4096x11008 0.2009 / 0.2024 vs 0.2045 / 0.2066. Not below inter 11008 (2026-11-27, in turns, graph, two "
        "runs, bf16): 1000x1000x3000 cublas -> cublaslt down 0.0514 / 0.0515 -> 0.0587 / 0.0588 after the tile, "
        "0.0606 / 0.0612 -> 0.0676 / 0.0676 after the swapped kernel. On the SECTOR row's cublas_cat path (in turns, "
        "two runs): 300x4104x11000 cublas_cat 0.2131 / 0.2084 vs fused 0.2027 / 0.2010 (fp16 0.2116 / 0.2100 vs 0.2019 / "
        "0.2016). Not on cublas_cat's path from hidden 5120 (in turns, two runs, bf16, cublas_cat vs its path with "
        "cuBLASLt's down): 5120x13824 300 0.2257 / 0.2269 vs 0.2391 / 0.2404, 320 0.2437 / 0.2473 vs 0.2830 / 0.2828; "
        "7168x18944 300 0.4028 / 0.4019 vs 0.4208 / 0.4211; 6144x16384 257 0.2864 / 0.2866 vs 0.2960 / 0.2971. Not "
        "after the swapped kernel at inter <= 8192 (H100, 2026-11-27, events, two runs, bf16, cublaslt -> cublas down, "
        "ms): 325x5120x5504 0.1009 / 0.1005 -> 0.0906 / 0.0924, 349x6144x5504 0.1311 / 0.1297 -> 0.1132 / 0.1124, "
        "325x6144x8192 0.1871 / 0.1856 -> 0.1736 / 0.1712, 380x4096x8192 0.1288 / 0.1278 -> 0.1213 / 0.1175; level "
        "at 300x4096x8192 (0.1087 / 0.1091 -> 0.1087 / 0.1083); inter 10920 keeps it (300x4096x10920 fused 0.1469 / "
        "0.1476 vs cublas_cat 0.1606 / 0.1605)"},
    [KB_MLP_ROW_SWAP] = {
        "two warpgroups, no tunable fixed, 129-1024 tokens, inter % 8 == 0, hidden % 16 == 0 (the SECTOR row): the swapped kernel (G's and U's 128 rows "
        "wgmma's A operand, bn tokens its N) where its rounds' work a CTA in clusters of 1 is no more than the "
        "planned tile's (rounds x 128 rows x 2 BN / BN_WAVE's efficiency), in clusters of 1 (2, two token blocks a "
        "weight tile multicast, only where cluster=2 is fixed); bn by the fewest rounds of its tiles over the CTAs, "
        "x bn / efficiency 1, 0.99, 0.985, 0.98, 0.96 for 128, 112, 104, 96, 80",
        "fused_wgmma, the planned tile -> the swapped kernel (H100, 2026-11-27, graph, two runs in one call, ms): "
        "bf16 x 4096 x 11008 129 0.1414 / 0.1396 -> 0.1294 / 0.1282, 257 0.1959 / 0.1967 -> 0.1393 / 0.1373, 300 "
        "0.1812 / 0.1796 -> 0.1477 / 0.1469 (fp16 0.1805 / 0.1726 -> 0.1523 / 0.1493), 513 0.2758 / 0.2783 -> 0.2200 / "
        "0.2205, 1000 0.4247 / 0.4216 -> 0.3876 / 0.3936; x 1024 x 11008 300 0.0539 / 0.0546 -> 0.0482 / 0.0460, 1000 "
        "0.1113 / 0.1108 -> 0.1062 / 0.1067. Kept where the model says the tile: bf16 352x4096x14336 0.2143 / 0.2135 "
        "vs 0.2240 / 0.2312, 383 0.2123 / 0.2238 vs 0.2344 / 0.2381; and from 1536 tokens (clusters of 2): "
        "2048x1024x11008 0.2069 / 0.2075 vs 0.2236 / 0.2201, 2048x4096x11008 0.7972 / 0.8030 vs 0.8179 / 0.8563. The "
        "model's misses (level at 640x1024 and 447x4096x14336, 0.97 at 447x1024) are within 3%. Not on rows 16 bytes "
        "past a 32-byte sector: the SECTOR row. Clusters of 2 were not faster (2026-11-27, in turns, events, two runs in "
        "one call, bf16, clusters of 1 vs 2, ms): 256x4096x11008 0.1336 / 0.1323 vs 0.1625 / 0.1602, 300 0.1398 / "
        "0.1386 vs 0.1542 / 0.1517, 448 0.2041 / 0.2118 vs 0.2044 / 0.2036, 640 0.2637 / 0.2635 vs 0.2634 / 0.2628, "
        "768 0.3020 / 0.2927 vs 0.3043 / 0.3034; 256x1024x11008 0.0432 / 0.0436 vs 0.0505 / 0.0515, 448 0.0715 / "
        "0.0677 vs 0.0654 / 0.0648; 640x7168x18944 0.8385 / 0.8287 vs 0.8402 / 0.8258"},
    [KB_MLP_ROW_SECTOR] = {
        "16-bit rows of x, G and U that end 16 bytes past a 32-byte sector (hidden % 16 == 8), two warpgroups, no "
        "tunable fixed, over 128 tokens: clusters of 2 at any count of m-blocks (the CLUSTER row's odd counts too), "
        "BN by BN_WAVE's rounds with efficiencies 1, 0.958, 0.916, 0.74 for 128, 112, 96, 64, never the swapped "
        "kernel; fused: cublas_cat's path at 128-384 tokens from hidden 2048, 576-640, 641-768 "
        "to hidden 1024, and 1000-1536 to hidden 1024 and from 4096 (each end a measured point)",
        "H100, 2026-11-27, in turns, events, two runs in one call, bf16, ms. Clusters of 1 -> 2 (the tile, static), x "
        "4104 x 11000: 576 0.4163 / 0.4138 -> 0.3431 / 0.3410, 640 0.4327 / 0.4273 -> 0.3562 / 0.3503, 896 0.5610 / "
        "0.5660 -> 0.4724 / 0.4695, 1000 0.6442 / 0.6436 -> 0.4774 / 0.4898 (x 1000 x 3000 896 0.0593 / 0.0593 -> "
        "0.0510 / 0.0508; 576 and 640 level). The swapped kernel against the tile in clusters of 2: x 4104 200 "
        "0.2184 / 0.2191 vs 0.1615 / 0.1608, 448 0.3986 / 0.3994 vs 0.2707 / 0.2651 (300 0.2349 / 0.2358 vs 0.2400 / "
        "0.2401); x 1000 384 0.0376 / 0.0373 vs 0.0349 / 0.0348, 1000x4104x11008 (an earlier call) 0.5931-0.6015 vs "
        "0.4380 / 0.4398. cublas_cat against the tile: x 4104 128 0.1343 / 0.1354 vs 0.1390 / 0.1385 (clusters of "
        "1), 200 0.1449 / 0.1455 vs 0.1615 / 0.1608, 384 0.2258 / 0.2228 vs 0.2547 / 0.2547, 576 0.2791 / 0.2812 vs "
        "0.3431 / 0.3410, 640 0.3382 / 0.3387 vs 0.3562 / 0.3503, 1000 0.4729 / 0.4704 vs 0.4774 / 0.4898, 1536 "
        "0.7247 / 0.7271 vs 0.7426 / 0.7393; x 1000 576 0.0396 / 0.0411 vs 0.0455 / 0.0450, 768 0.0478 / 0.0451 vs "
        "0.0503 / 0.0501, 1000 0.0502 / 0.0519 vs 0.0541 / 0.0537, 1536 0.0664 / 0.0671 vs 0.0699 / 0.0696. The tile "
        "kept: 64 tokens (x 4104 0.1114 / 0.1095 vs cublas_cat 0.1192 / 0.1202), 448 (0.2707 / 0.2651 vs 0.2783 / "
        "0.2795), 768 at 4104 (level, 0.3697 / 0.3678 vs 0.3737 / 0.3670), 896 (0.4724 / 0.4695 vs 0.5094 / 0.5078; x "
        "1000 0.0510 / 0.0508 vs 0.0539 / 0.0526), 2048 (0.9601 / 0.9578 vs 0.9830 / 0.9674) and 4096; at hidden "
        "1000 300-448 (300 0.0314 / 0.0308 vs 0.0335 / 0.0344, 448 0.0332 / 0.0337 vs 0.0407 / 0.0393). BN at "
        "2048x2056x5504 (another call, two runs): 128 0.2313 / 0.2349 ms, 112 0.2452 / 0.2464, 96 0.2524 / 0.2526, 64 "
        "(BN_WAVE's pick) 0.2860 / 0.2855, cublas_cat 0.2344 / 0.2359; 300x2056x5504 96 0.0727 / 0.0726, 112 0.0741 / "
        "0.0740, 128 0.0784 / 0.0783, cublas_cat 0.0674 / 0.0651 (200: 0.0526 / 0.0531 vs 0.0542 / 0.0556); 1000x2056x5504 "
        "the tile ahead, 0.1260 / 0.1262 vs cublas_cat 0.1466 / 0.1469"},
    [KB_MLP_ROW_SECTOR_FAST] = {
        "SECTOR's fused boxes on devices of 4 TB/s or more (kb_devattr.dram_gbps >= 4000; the H200's 4.8): "
        "cublas_cat's path at 128-384 tokens at any hidden (the H100's from 2048), 576-640, and 641-768 to hidden "
        "1024; the tile at 1000-1536 (the H100's cublas_cat there)",
        "H200, 2026-11-28, session 56 call 4, in turns, events, two runs in one call, cublas_cat vs the tile "
        "(fused_wgmma), ms; results/curated/2026-11-28-h200-sector-s56: x 1000 x 3000 bf16 128 0.0233 / 0.0236 vs "
        "0.0253 / 0.0259, 300 0.0291 / 0.0301 vs 0.0329 / 0.0340, 384 0.0299 / 0.0300 vs 0.0307 / 0.0307 (fp16 "
        "200 0.0248 / 0.0260 vs 0.0257 / 0.0265, 300 0.0281 / 0.0302 vs 0.0323 / 0.0333); the tile from 1000: bf16 "
        "1000 0.0484 / 0.0485 vs 0.0470 / 0.0471, 1280 0.0584 / 0.0585 vs 0.0517 / 0.0519, 1536 0.0641 / 0.0667 vs "
        "0.0639 / 0.0641 (fp16 0.0666 / 0.0672 vs 0.0642 / 0.0644); x 4104 x 11000 bf16 1000 0.4586 / 0.4648 vs "
        "0.4398 / 0.4422, 1280 0.5540 / 0.5527 vs 0.5443 / 0.5425, 1536 0.6859 / 0.6964 vs 0.6623 / 0.6685 (fp16 "
        "1000 0.4899 / 0.4867 vs 0.4733 / 0.4709). Kept as on the H100: 576-640 (x 4104 bf16 640 0.3005 / 0.3035 vs "
        "0.3171 / 0.3190; x 1000 576 0.0380 / 0.0385 vs 0.0429 / 0.0431) and 768 at hidden 1000 (0.0442 / 0.0447 "
        "vs 0.0451 / 0.0453). Left: 640 x 2056 x 5504 (the tile 1.09-1.11x ahead) and 448 x 2056 (cublas_cat 3% "
        "ahead), single points"},
    [KB_MLP_ROW_DOWN_LT_FAST] = {
        "DOWN_LT's box after the swapped kernel (257-400 tokens, hidden 4096-8191, inter > 8192) on devices of 4 TB/s or "
        "more (kb_devattr.dram_gbps >= 4000; the H200's 4.8): cuBLASLt's split-K 2 down from inter 14336 only, "
        "cuBLAS's own pick below (inter 11009-14335 not measured)",
        "H200, 2026-11-29, session 73 call 3, events, in turns, two runs in one call, the swapped kernel with cuBLASLt's "
        "down (fused, down auto) vs cuBLAS's (down=cublas), ms; results/curated/2026-11-29-h200-s73: x 4096 x 11008 bf16 "
        "300 0.1369 / 0.1365 vs 0.1375 / 0.1385 (level), 320 0.1419 / 0.1421 vs 0.1395 / 0.1386, 352 0.1612 / 0.1638 vs 0.1547 / 0.1562, 384 "
        "0.1638 / 0.1633 vs 0.1576 / 0.1576, 400 0.1869 / 0.1872 vs 0.1840 / 0.1847 (fp16 300 0.1467 / 0.1499 vs 0.1425 / 0.1427, "
        "352 0.1716 / 0.1759 vs 0.1692 / 0.1691, 384 0.1766 / 0.1748 vs 0.1702 / 0.1704); x 6144 x 11008 3.3-6.6% at each "
        "count measured (257-400), both dtypes (bf16 257 0.1956 / 0.1939 vs 0.1831 / 0.1844, 320 0.2212 / 0.2183 vs 0.2125 / 0.2130). Kept at "
        "x 4096 x 14336 (bf16 257 0.1666 / 0.1667 vs 0.1768 / 0.1786, 300 0.1829 / 0.1839 vs 0.1858 / 0.1877, 400 0.2392 / "
        "0.2386 vs 0.2431 / 0.2436; fp16 300 0.1929 / 0.1912 vs 0.1972 / 0.1979, 320 0.2029 / 0.2055 vs 0.2093 / 0.2066) and at "
        "6144 x 14336 x 400 (mixed: bf16 0.3608 / 0.3588 vs 0.3776 / 0.3556, fp16 0.3959 / 0.3949 vs 0.3902 / 0.3887). Given up: "
        "bf16 257 x 4096 x 11008 (0.1244 / 0.1238 vs 0.1282 / 0.1289; cuBLAS's down still 1.008x the better cuBLAS path, "
        "0.1299 / 0.1293). The H100 keeps DOWN_LT (its row's text)"},
    [KB_MLP_ROW_CUBLAS_MID_FAST] = {
        "fused on Hopper with no tunable fixed, on devices of 4 TB/s or more (kb_devattr.dram_gbps >= 4000; the "
        "H200's 4.8), where the planner chose the swapped kernel: at 385-432 tokens (416 apart) and inter "
        "10240-11264 from hidden 3072 to 8192, at 385-432 tokens and inter 5120-5504 from hidden 4096 to 8192, and "
        "at 401-432 tokens (416 apart) and inter 5505-6144, or 408-432 (416 apart) and 4864-5119, at hidden "
        "4096-6144: cublas_cat's path (the kernel column says so)",
        "H200, 2026-11-29, session 74 calls 1-4, events, in turns, two runs in one call each, cublas_cat vs the "
        "swapped kernel (fused), ms; results/curated/2026-11-29-h200-s74: x 4096 x 11008 bf16 385 0.1736 / 0.1740 vs "
        "0.1799 / 0.1798, 408 0.1772 / 0.1784 vs 0.1843 / 0.1847, 432 0.1939 / 0.1947 vs 0.1971 / 0.1963 (fp16 392 "
        "0.1905 / 0.1904 vs 0.1983 / 0.1987); x 6144 x 11008 bf16 401 0.2581 / 0.2613 vs 0.2724 / 0.2744; x 8192 x "
        "11008 bf16 408 0.3358 / 0.3370 vs 0.3602 / 0.3608; x 3072 x 11008 fp16 385 0.1421 / 0.1411 vs 0.1445 / "
        "0.1446; x 6144 x 10240 bf16 385 0.2372 / 0.2380 vs 0.2506 / 0.2509; x 4096 x 11264 bf16 385 0.1714 / 0.1717 "
        "vs 0.1773 / 0.1778; x 6144 x 5504 bf16 385 0.1287 / 0.1298 vs 0.1388 / 0.1386; x 8192 x 5504 fp16 385 "
        "0.1739 / 0.1752 vs 0.1904 / 0.1902; x 6144 x 6144 fp16 404 0.1569 / 0.1601 vs 0.1740 / 0.1746. Call 7, 24 "
        "random points in the boxes: cublas_cat ahead at 44 of 48 cases (the old boxes: 386 x 3584 x 4928 the "
        "swapped kernel 7-8% ahead, now outside; bf16 417 x 3072 x 11264 0.8% ahead). The swapped kernel kept "
        "(its time first): 384 (x 6144 x 5504 bf16 0.1145 / 0.1148 vs 0.1203 / 0.1208), 440 (x 8192 x 11008 fp16 "
        "0.3996 / 0.4028 vs 0.3979 / 0.3994, level), 416 (x 4096 x 11008 bf16 0.1936 / 0.1942 vs 0.1999 / 0.2037), "
        "inter 9728 (x 4096 bf16 385 0.1483 / 0.1495 vs 0.1652 / 0.1679) and 11776 (0.1778 / 0.1781 vs 0.1874 / "
        "0.1884), 400 x 4096 x 6144 (bn 80, bf16 0.0996 / 0.0998 vs 0.1017 / 0.1032), 385 x 4096 x 4864 (fp16 "
        "0.0890 / 0.0891 vs 0.0937 / 0.0924). The H100 not measured there"},
};

/* KB_MLP_ROW_DOWN: down_splitk's grid, 64-row blocks of D times K ranges of
 * a multiple of 64 columns over `slots` blocks at a time: the split with the
 * least time, waves x k-blocks a block, over 1-max_s splits of 2 k-blocks or
 * more (past KB_MLP_DOWN_SPLITS, of KB_MLP_DOWN_WIDE_KB or more); the fewest
 * splits within 1% of it. */
typedef struct {
    long cost, kchunk, splits, grid;
} down_split;

static down_split split_k(long rbs, long kblocks, long slots, long max_s)
{
    down_split best = {0, 0, 0, 0};
    for (long s = 1; s <= max_s && (s == 1 || kblocks / s >= 2); s++) {
        const long per = (kblocks + s - 1) / s, splits = (kblocks + per - 1) / per;
        if (s > KB_MLP_DOWN_SPLITS && per < KB_MLP_DOWN_WIDE_KB) continue;
        const long cost = (rbs * splits + slots - 1) / slots * per;
        if (!best.cost || cost * 100 < best.cost * 99) best = (down_split){cost, per * 64, splits, rbs * splits};
    }
    return best;
}

/* One block an SM (200 KiB rings); two (100 KiB) where one an SM already
 * splits K and two fill more than one an SM: the partials are paid either
 * way, and twice the streams finish the down GEMM sooner in the gate/up
 * kernel's wake (x 4096 x 11008: 64 x 4 blocks of 43 k-blocks). At x 8192
 * one an SM needs no split (128 x 1) and stays. Up to 16 splits where 8 of
 * every row block are fewer blocks than SMs (x 1024 x 11008: 16 x 16 blocks
 * of 11 k-blocks two an SM, not 16 x 8 of 22 one an SM). */
static void plan_down_grid(const kb_mlp_req *r, const kb_devattr *d, kb_mlp_plan *p)
{
    const long rbs = (r->hidden + 63) / 64, sms = d->sm_count > 0 ? d->sm_count : 1, kblocks = (r->inter + 63) / 64;
    const long max_s = rbs * KB_MLP_DOWN_SPLITS < sms ? KB_MLP_DOWN_MAX_SPLITS : KB_MLP_DOWN_SPLITS;
    down_split g = split_k(rbs, kblocks, sms, KB_MLP_DOWN_SPLITS);
    p->dsplit.per_sm = 1;
    if (g.splits > 1) { /* more than 8 splits two an SM only (the kernels built: down_splitk.cu) */
        const down_split two = split_k(rbs, kblocks, 2 * sms, max_s);
        if (two.grid > sms) g = two, p->dsplit.per_sm = 2;
    }
    p->dsplit.kchunk = (int)g.kchunk, p->dsplit.splits = (int)g.splits, p->dsplit.grid = (int)g.grid;
}

static int na(char *why, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int na(char *why, size_t n, const char *fmt, ...)
{
    if (why && n) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, n, fmt, ap);
        va_end(ap);
    }
    return 1;
}

int kb_mlp_fixed(const kb_mlp_req *r)
{
    return r->bn || r->cluster || r->warpgroups || r->sched || r->swap;
}

int kb_mlp_clusters_model(const kb_devattr *d, int wg, int bn, int cl)
{
    if (!d || wg < 1 || wg > 2 || cl < 1 || bn < 16) return 0;
    /* + the full/empty barriers, and the tile ring's (two slots of a barrier pair and an int) */
    const long smem = KB_MLP_WG_SMEM(wg, bn) + 16L * KB_MLP_WG_STAGES(wg, bn) + 40;
    if (smem > d->smem_per_block_optin) return 0;
    long per_sm = d->smem_per_sm / (smem + 1024); /* the runtime reserves 1 KiB a block */
    const long by_threads = d->max_threads_per_sm / (128L * (wg + 1));
    if (by_threads < per_sm) per_sm = by_threads;
    return (int)((long)d->sm_count * per_sm / cl);
}

int kb_mlp_swap_model(const kb_devattr *d, int bn, int cl)
{
    if (!d || bn < 8 || cl < 1) return 0;
    const long smem = KB_MLP_SW_SMEM(bn) + 16L * KB_MLP_SW_STAGES(bn);
    if (smem > d->smem_per_block_optin) return 0;
    long per_sm = d->smem_per_sm / (smem + 1024);
    if (d->max_threads_per_sm / 384 < per_sm) per_sm = d->max_threads_per_sm / 384;
    return (int)((long)d->sm_count * per_sm / cl);
}

static int clusters_of(kb_mlp_occupancy_fn occ, void *ctx, const kb_devattr *d, int dtype, int wg, int bn, int cl)
{
    return occ ? occ(ctx, dtype, wg, bn, cl, 0) : kb_mlp_clusters_model(d, wg, bn, cl);
}

/* the swapped kernel's clusters of cl that fit (CTAs, for cl 1) */
static int swap_ctas(kb_mlp_occupancy_fn occ, void *ctx, const kb_devattr *d, int dtype, int bn, int cl)
{
    return occ ? occ(ctx, dtype, 2, bn, cl, 1) : kb_mlp_swap_model(d, bn, cl);
}

/* the swapped kernel's tiles: 128 columns of h by cl x bn tokens (a cluster's) */
static long swap_tiles(const kb_mlp_req *r, int bn, int cl)
{
    return (long)(r->inter + 127) / 128 * (((r->tokens + bn - 1) / bn + cl - 1) / cl);
}

/* KB_MLP_ROW_SWAP: the swapped kernel's token tile, the fewest rounds of its
 * tiles (128 columns of h by bn tokens) over the CTAs that fit, weighted by
 * bn / efficiency (narrower tiles a little slower per FLOP, as BN_WAVE's:
 * 1, 0.99, 0.985, 0.98, 0.96); within 0.1% the wider. *cost: the rounds'
 * work a CTA, in weight rows x tokens, / efficiency. */
static int pick_swap_bn(const kb_mlp_req *r, const kb_devattr *d, kb_mlp_occupancy_fn occ, void *ctx, int cl,
                        double *cost)
{
    static const int bns[] = KB_MLP_SW_BNS;
    static const double eff[] = {1.0, 0.99, 0.985, 0.98, 0.96};
    int best = 0;
    double best_cost = 0;
    for (int i = 0; i < (int)(sizeof bns / sizeof bns[0]); i++) {
        const int ctas = swap_ctas(occ, ctx, d, r->dtype, bns[i], cl);
        if (!ctas) continue;
        const double c = (double)((swap_tiles(r, bns[i], cl) + ctas - 1) / ctas) * bns[i] / eff[i];
        if (!best || c < best_cost * 0.999) best = bns[i], best_cost = c;
    }
    if (cost) *cost = best_cost * 256; /* G's and U's 128 rows a tile */
    return best;
}

/* The swapped kernel's plan: 0, 1 (n/a, why) or 2 (it fits nowhere here, why). */
static int plan_swap(const kb_mlp_req *r, const kb_devattr *d, kb_mlp_occupancy_fn occ, void *ctx, kb_mlp_plan *p,
                     char *why, size_t n)
{
    static const int bns[] = KB_MLP_SW_BNS;
    int bn = r->bn, ok = !bn;
    for (int i = 0; i < (int)(sizeof bns / sizeof bns[0]); i++) ok |= bn == bns[i];
    if (!ok) return na(why, n, "bn=%d: the swapped kernel's token tiles are 80, 96, 104, 112 or 128", bn);
    if (r->warpgroups == 1 || r->sched == 2)
        return na(why, n, "swap=on runs two warpgroups, scheduled statically (in clusters of 1 or 2)");
    if (r->inter % 8)
        return na(why, n, "swap=on stores h by TMA, which needs inter %% 8 == 0 (rows of h 16-byte multiples)");
    const int cl = r->cluster == 2 ? 2 : 1; /* KB_MLP_ROW_SWAP: clusters of 1 unless 2 is fixed */
    if (!bn) bn = pick_swap_bn(r, d, occ, ctx, cl, NULL);
    p->wg = 2, p->bn = bn, p->cl = cl, p->bm = 128, p->swap = 1;
    p->stages = KB_MLP_SW_STAGES(bn);
    p->smem = KB_MLP_SW_SMEM(bn);
    p->clusters = bn ? swap_ctas(occ, ctx, d, r->dtype, bn, cl) : 0;
    if (p->clusters < 1) {
        p->clusters = 0;
        na(why, n, "the swapped wgmma kernel (bn=%d, %d bytes of shared memory, clusters of %d) fits no SM of this device",
           bn, p->smem, cl);
        return 2;
    }
    p->tiles = swap_tiles(r, bn, cl);
    p->grid = (int)(cl * (p->tiles < p->clusters ? p->tiles : p->clusters));
    p->tma_store = 1;
    p->rows |= 1u << KB_MLP_ROW_STAGES;
    p->variant = KB_MLP_WGMMA;
    return 0;
}

/* KB_MLP_ROW_SECTOR: 16-bit rows of x, G and U that end 16 bytes past a
 * 32-byte sector (hidden % 8 == 0 for TMA, hidden % 16 == 8): every other
 * row's 128-byte box spans two L2 lines, and the kernels that read the most
 * per multiply-add (clusters of 1, the swapped kernel) lost the most. */
static int sector(const kb_mlp_req *r)
{
    return r->hidden % 16 == 8;
}

/* tiles of BM x BN over h, counted in clusters' units (CL m-blocks of one n-block) */
static long cluster_tiles(int M, int N, int BM, int BN, int CL)
{
    return ((long)(M + BM - 1) / BM + CL - 1) / CL * ((N + BN - 1) / BN);
}

/* KB_MLP_ROW_BN_WAVE and _WG1_BN: the tile width for wg consumer warpgroups
 * (BM 64 wg).
 * The weights are measured: at 2048 x 1024 x 11008, BN 112 beat 128 by
 * 1.5%; BN 64 over several rounds runs 0.87-0.93 of the wider tiles' speed
 * per FLOP (1298-4499 tokens x 3000-8192, 324-383 x 13824, 2048 x 2048 x
 * 5504; H100, 2026-11-27), where 0.955 (from 2048 x 1024 x 11008 alone)
 * had it chosen and up to 1.33x slower. */
static const int wave_bns[] = {128, 112, 96, 64};
static const double wave_eff[] = {1.0, 0.99, 0.98, 0.90};
/* KB_MLP_ROW_SECTOR: on rows past a sector every x row a tile reads costs
 * more, and narrow tiles read more of them per multiply-add; measured at
 * 2048 x 2056 x 5504 (H100, 2026-11-27, two runs): BN 128 0.2313 / 0.2349
 * ms, 112 0.2452 / 0.2464, 96 0.2524 / 0.2526, 64 0.2860 / 0.2855, so per
 * FLOP 112 0.958, 96 0.916, 64 0.74 of 128 */
static const double sector_eff[] = {1.0, 0.958, 0.916, 0.74};

static int pick_bn(const kb_mlp_req *r, const kb_devattr *d, kb_mlp_occupancy_fn occ, void *ctx, int wg, int cl,
                   int sec)
{
    int best = 0;
    double best_cost = 0;
    for (int i = 0; i < 4; i++) {
        const int clusters = clusters_of(occ, ctx, d, r->dtype, wg, wave_bns[i], cl);
        if (!clusters) continue;
        const long rounds = (cluster_tiles(r->tokens, r->inter, 64 * wg, wave_bns[i], cl) + clusters - 1) / clusters;
        const double eff = sec && wg == 2 && r->tokens > 128 ? sector_eff[i] : wave_eff[i];
        const double cost = (double)rounds * wave_bns[i] / eff;
        if (!best || cost < best_cost * 0.999) best = wave_bns[i], best_cost = cost;
    }
    return best ? best : 128;
}

/* A box of measured shapes: tokens, inter and hidden, each from lo to hi. */
typedef struct {
    int tok_lo, tok_hi, inter_lo, inter_hi, hid_lo, hid_hi;
} shape_box;

static int in_boxes(const shape_box *b, int n, const kb_mlp_req *r)
{
    for (int i = 0; i < n; i++)
        if (r->tokens >= b[i].tok_lo && r->tokens <= b[i].tok_hi && r->inter >= b[i].inter_lo &&
            r->inter <= b[i].inter_hi && r->hidden >= b[i].hid_lo && r->hidden <= b[i].hid_hi)
            return 1;
    return 0;
}

/* KB_MLP_ROW_CUBLAS_MID: where cuBLAS was measured ahead of the wgmma
 * kernels (the swapped one included) at hidden >= 4096 (5120 for the fifth
 * box: level or behind at 4096 x 14336; 3072 for the sixth, below): boxes of tokens, inter and hidden,
 * each end a measured point. cuBLAS's tiles follow the tokens; at
 * 129-160 and 513-544 tokens the swapped kernel's rounds are short of a
 * whole (x 11008: 172 tiles of 80 tokens, 516 of 96, on 132 SMs), and at x
 * 28672 (224 weight tiles) 300 tokens take seven rounds of 80 (from 320 the
 * wgmma kernels lead at 8192 x 28672: the swapped one 1-2% at 320 in bf16,
 * the tile 6-8% at 352 and 383; at hidden 4096-8191 the box is as it was,
 * 257-383, not measured again). The last box
 * (65-128 tokens, inter <= 3584, hidden >= 3072: tensor-parallel shards):
 * one m-block of the tile is 43-56 tiles for 132 SMs, where cuBLAS splits
 * K; its inter's low end is not measured (fewer tiles still below 2752). */
static int cublas_mid(const kb_mlp_req *r)
{
    static const shape_box boxes[] = {{129, 160, 0, 14335, 4096, 1 << 30},
                                      {513, 544, 0, 14335, 4096, 1 << 30},
                                      {257, 383, 28672, 1 << 30, 4096, 8191},
                                      {257, 319, 28672, 1 << 30, 8192, 1 << 30},
                                      {257, 352, 13824, 28671, 5120, 1 << 30},
                                      {65, 128, 0, 3584, 3072, 1 << 30}};
    return in_boxes(boxes, (int)(sizeof boxes / sizeof boxes[0]), r);
}

/* The plan runs the swapped wgmma kernel (KB_MLP_ROW_SWAP) */
static int swapped(const kb_mlp_plan *p)
{
    return p->variant == KB_MLP_WGMMA && p->swap;
}

/* Devices of 4 TB/s or more (the H200's 4.8), where the _FAST rows decide */
static int fast_memory(const kb_devattr *d)
{
    return d->dram_gbps >= 4000;
}

/* KB_MLP_ROW_CUBLAS_MID_FAST: on devices of 4 TB/s or more, where the
 * swapped kernel was planned and measured behind cuBLAS's stacked GEMM (the
 * H200, session 74; the ends measured unless said): 385-432 tokens (384 and 440:
 * the swapped kernel ahead or level) at inter 10240-11264 (9728 and 11776:
 * it is level or up to 14% ahead) from hidden 3072 to 8192, but not 416
 * tokens, where cuBLAS's GEMM is 3-11% slower than at 415 and 417 and the
 * swapped kernel 2-5% ahead of it at inter 11008; at inter 5120-5504 from
 * hidden 4096 to 8192 (at 3584 and 3072 mixed, and 386 x 3584 x 4928 7-8%
 * ahead for the swapped kernel); at 5505-6144 from 401 tokens (385 and
 * 400 run bn 80 there, level or ahead; from 401 bn 96, 5-11% behind) and at
 * 4864-5119 from 408 (385 x 4096 x 4864 mixed), at hidden 4096-6144, 416
 * apart as above (the swapped kernel ahead at 4096 x 6144 in bf16; cuBLAS
 * 3-7% ahead at 6144 x 6144 and 6144 x 10240, not taken). Not measured
 * there: 415-417 tokens and inter 5119-5120 at 4864-6144, which follow
 * the boxes beside them; 386-407 at 4864-5119 (391 x 5120 x 4992: cuBLAS
 * 2-3% ahead, left to the swapped kernel). */
static int mid_fast(const kb_mlp_req *r, const kb_devattr *d, const kb_mlp_plan *p)
{
    static const shape_box boxes[] = {{385, 415, 10240, 11264, 3072, 8192}, {417, 432, 10240, 11264, 3072, 8192},
                                      {385, 432, 5120, 5504, 4096, 8192},   {401, 415, 5505, 6144, 4096, 6144},
                                      {408, 415, 4864, 5119, 4096, 6144},   {417, 432, 4864, 6144, 4096, 6144}};
    return swapped(p) && fast_memory(d) && in_boxes(boxes, (int)(sizeof boxes / sizeof boxes[0]), r);
}

/* KB_MLP_ROW_SECTOR's cublas_cat boxes (any inter), each end of tokens a
 * measured point (x 4104 x 11000, x 2056 x 5504 and x 1000 x 3000); on
 * devices of 4 TB/s or more, KB_MLP_ROW_SECTOR_FAST's (measured on the H200).
 * The row that decides, or -1 where no box holds the case. */
static int sector_cat(const kb_mlp_req *r, const kb_devattr *d)
{
    static const shape_box boxes[] = {{128, 384, 0, 1 << 30, 2048, 1 << 30}, {576, 640, 0, 1 << 30, 0, 1 << 30},
                                      {641, 768, 0, 1 << 30, 0, 1024},       {1000, 1536, 0, 1 << 30, 0, 1024},
                                      {1000, 1536, 0, 1 << 30, 4096, 1 << 30}};
    static const shape_box fast[] = {{128, 384, 0, 1 << 30, 0, 1 << 30},
                                     {576, 640, 0, 1 << 30, 0, 1 << 30},
                                     {641, 768, 0, 1 << 30, 0, 1024}};
    if (!sector(r)) return -1;
    if (fast_memory(d))
        return in_boxes(fast, (int)(sizeof fast / sizeof fast[0]), r) ? KB_MLP_ROW_SECTOR_FAST : -1;
    return in_boxes(boxes, (int)(sizeof boxes / sizeof boxes[0]), r) ? KB_MLP_ROW_SECTOR : -1;
}

/* The row that sends fused from the wgmma plan p to cublas_cat's path, or -1 */
static int cat_row(const kb_mlp_req *r, const kb_devattr *d, const kb_mlp_plan *p)
{
    if (cublas_mid(r)) return KB_MLP_ROW_CUBLAS_MID;
    if (mid_fast(r, d, p)) return KB_MLP_ROW_CUBLAS_MID_FAST;
    return sector_cat(r, d);
}

/* KB_MLP_ROW_SWAP: the swapped kernel where its rounds' work a CTA is no
 * more than the planned tile's (rounds of cluster tiles x 128 rows x 2 BN /
 * BN_WAVE's efficiency), at 129-1024 tokens (measured; from 1536 the tile in
 * clusters of 2 was level or ahead) and inter % 8 == 0 (h by TMA); never on
 * rows 16 bytes past a sector (SECTOR). */
static int swap_wins(const kb_mlp_req *r, const kb_devattr *d, kb_mlp_occupancy_fn occ, void *ctx, const kb_mlp_plan *p)
{
    if (p->wg != 2 || r->tokens < 129 || r->tokens > 1024 || r->inter % 8 || sector(r)) return 0;
    double eff = 1;
    for (int i = 0; i < 4; i++)
        if (wave_bns[i] == p->bn) eff = wave_eff[i];
    const double tile = (double)((p->tiles + p->clusters - 1) / p->clusters) * 128 * 2 * p->bn / eff;
    double swapped = 0;
    return pick_swap_bn(r, d, occ, ctx, 1, &swapped) && swapped <= tile;
}

/* The wgmma kernel's tile: 0, 1 (n/a, why) or 2 (it fits no cluster here, why). */
static int plan_wgmma(const kb_mlp_req *r, const kb_devattr *d, kb_mlp_occupancy_fn occ, void *ctx, kb_mlp_plan *p,
                      char *why, size_t n)
{
    const int M = r->tokens, N = r->inter;
    int wg = r->warpgroups, cl = r->cluster, bn = r->bn;
    if (wg && wg != 1 && wg != 2) return na(why, n, "warpgroups=%d: the wgmma kernel has 1 or 2 consumer warpgroups", wg);
    if (cl && cl != 1 && cl != 2) return na(why, n, "cluster=%d: the wgmma kernel runs clusters of 1 or 2", cl);
    if (r->sched < 0 || r->sched > 2) return na(why, n, "sched=%d: 0 auto, 1 static, 2 dynamic", r->sched);
    if (r->swap < 0 || r->swap > 2) return na(why, n, "swap=%d: 0 auto, 1 off, 2 on", r->swap);
    if (r->swap == 2) return plan_swap(r, d, occ, ctx, p, why, n);
    /* the SECTOR row's choices apply where no tunable is fixed */
    const int planned = !kb_mlp_fixed(r), sec = planned && sector(r);
    if (bn && bn != 64 && bn != 96 && bn != 112 && bn != 128)
        return na(why, n, "bn=%d: the wgmma kernel's tiles are 64, 96, 112 or 128 wide (80 and 104: swap=on only)", bn);
    if (r->sched == 2 && cl == 2)
        return na(why, n, "sched=dynamic runs clusters of 1 (cluster=2 needs sched static)");
    if (r->sched == 2) cl = 1;
    if (!wg) {
        wg = M <= 64 ? 1 : 2;
        p->rows |= 1u << KB_MLP_ROW_WARPGROUPS;
    }
    if (wg == 1) {
        if (cl == 2) return na(why, n, "warpgroups=1 runs clusters of 1 only (cluster=2 needs warpgroups 2)");
        cl = 1;
        if (!bn) {
            bn = pick_bn(r, d, occ, ctx, 1, 1, sec);
            p->rows |= 1u << KB_MLP_ROW_WG1_BN;
        }
    } else {
        if (!cl) {
            cl = M > 128 && ((M + 127) / 128 % 2 == 0 || sec) ? 2 : 1;
            p->rows |= 1u << KB_MLP_ROW_CLUSTER;
        }
        if (!bn) {
            bn = pick_bn(r, d, occ, ctx, 2, cl, sec);
            p->rows |= 1u << KB_MLP_ROW_BN_WAVE;
        }
    }
    p->wg = wg, p->bn = bn, p->cl = cl;
    p->bm = 64 * wg;
    p->stages = KB_MLP_WG_STAGES(wg, bn);
    p->smem = KB_MLP_WG_SMEM(wg, bn);
    p->clusters = clusters_of(occ, ctx, d, r->dtype, wg, bn, cl);
    if (p->clusters < 1) {
        p->clusters = 0;
        na(why, n, "no cluster of the wgmma kernel (wg=%d bn=%d cl=%d, %d bytes of shared memory) fits on this device",
           wg, bn, cl, p->smem);
        return 2;
    }
    const long m_groups = ((long)(M + p->bm - 1) / p->bm + cl - 1) / cl;
    p->tiles = cluster_tiles(M, N, p->bm, bn, cl);
    p->grid = (int)(cl * (p->tiles < p->clusters ? p->tiles : p->clusters));
    p->group = (16 + cl - 1) / cl;
    if (p->group > m_groups) p->group = (int)m_groups;
    p->tma_store = N % 8 == 0;
    if (r->sched) {
        p->dyn = r->sched == 2;
    } else {
        p->dyn = wg == 2 && cl == 1;
        p->rows |= 1u << KB_MLP_ROW_SCHED;
    }
    p->rows |= 1u << KB_MLP_ROW_STAGES | 1u << KB_MLP_ROW_GROUP | 1u << KB_MLP_ROW_TMA_STORE;
    p->variant = KB_MLP_WGMMA;
    if (sec && wg == 2 && M > 128) p->rows |= 1u << KB_MLP_ROW_SECTOR;
    if (planned && swap_wins(r, d, occ, ctx, p)) {
        kb_mlp_plan q;
        memset(&q, 0, sizeof q);
        q.rows = p->rows & ~KB_MLP_TILE_ROWS;
        if (plan_swap(r, d, occ, ctx, &q, why, n) == 0) { /* else the tile stands */
            q.rows |= 1u << KB_MLP_ROW_SWAP;
            *p = q;
        } else if (why && n) {
            why[0] = 0;
        }
    }
    return 0;
}

static int plan_gate_up(const kb_mlp_req *r, const kb_devattr *d, kb_mlp_occupancy_fn occ, void *ctx, kb_mlp_plan *p,
                        char *why, size_t n)
{
    memset(p, 0, sizeof *p);
    if (why && n) why[0] = 0;
    if (r->tokens < 1 || r->hidden < 1 || r->inter < 1 || r->dtype < 0 || r->dtype > 2)
        return na(why, n, "no such MLP case (tokens %d, hidden %d, inter %d, dtype %d)", r->tokens, r->hidden, r->inter,
                  r->dtype);
    const int forced = kb_mlp_fixed(r);
    char sm[32];
    snprintf(sm, sizeof sm, "sm_%d%d", d->cc_major, d->cc_minor);
    if (r->dtype == 0) {
        if (r->want == KB_MLP_WGMMA)
            return na(why, n, "fp32: fused_wgmma takes bf16/fp16 (TMA + wgmma on 16-bit operands); fused runs fp32 on CUDA cores");
        if (r->want == KB_MLP_MMA)
            return na(why, n, "fp32: fused_mma takes bf16/fp16 (mma.sync m16n8k16 on 16-bit operands); fused runs fp32 on CUDA cores");
        if (forced)
            return na(why, n, "dtype fp32 runs fused_f32 (CUDA cores), which takes no bn, cluster, warpgroups, sched or swap (auto for them)");
        p->variant = KB_MLP_F32;
        p->rows |= 1u << KB_MLP_ROW_F32;
        return 0;
    }
    if (d->cc_major < 8)
        return na(why, n, "the 16-bit fused kernels need sm_80 or newer (mma.sync m16n8k16 bf16); this device is %s", sm);
    const int hopper = d->cc_major == 9, pitch = r->hidden % 8 == 0;
    if (r->want == KB_MLP_MMA) {
        if (forced) return na(why, n, "fused_mma takes no bn, cluster, warpgroups, sched or swap (auto for them)");
    } else if (r->want == KB_MLP_WGMMA) {
        if (!hopper) return na(why, n, "fused_wgmma is Hopper-only (sm_90a TMA, wgmma, clusters); this device is %s", sm);
        if (!pitch)
            return na(why, n, "hidden %% 8 != 0: TMA needs rows of x, G and U that are 16-byte multiples (fused runs fused_mma)");
        int rc = plan_wgmma(r, d, occ, ctx, p, why, n);
        return rc ? 1 : 0;
    } else {
        p->rows |= 1u << KB_MLP_ROW_HOPPER;
        if (hopper && !pitch) p->rows |= 1u << KB_MLP_ROW_TMA_PITCH;
        if (hopper && pitch) {
            const unsigned rows = p->rows;
            int rc = plan_wgmma(r, d, occ, ctx, p, why, n);
            const int cat = rc == 0 && !forced ? cat_row(r, d, p) : -1;
            if (cat >= 0) {
                memset(p, 0, sizeof *p);
                p->variant = KB_MLP_CUBLAS_CAT;
                p->rows = rows | 1u << cat;
                return 0;
            }
            if (rc == 0) return 0;
            if (rc == 1 || forced) return 1; /* a tunable it cannot take; or forced, so no fallback */
            memset(p, 0, sizeof *p);         /* fits nowhere: the portable kernel */
            p->rows = rows | 1u << KB_MLP_ROW_OCCUPANCY;
            if (why && n) why[0] = 0;
        } else if (forced) {
            return na(why, n, "bn, cluster, warpgroups, sched and swap are fused_wgmma's; this case runs fused_mma (%s)",
                      hopper ? "hidden % 8 != 0" : sm);
        }
    }
    p->variant = KB_MLP_MMA;
    p->vec = r->hidden % 8 == 0;
    p->rows |= 1u << KB_MLP_ROW_MMA_VEC;
    return 0;
}

/* DOWN_LT's swapped box (257-400 tokens, hidden 4096-8191, inter > 8192), where
 * KB_MLP_ROW_DOWN_LT_FAST decides on devices of 4 TB/s or more */
static int lt_swapped(const kb_mlp_req *r, const kb_mlp_plan *p)
{
    return swapped(p) && r->hidden >= 4096 && r->hidden < 8192 && r->tokens >= 257 && r->tokens <= 400 &&
           r->inter > 8192;
}

/* KB_MLP_ROW_DOWN_LT: where cuBLAS's own pick for the down GEMM was measured
 * behind cuBLASLt's split-K 2 algorithm: after cublas_cat's path at 257-352
 * tokens (measured ends; level from 368) and hidden 4096-5119 (behind from
 * 5120: 5120 x 13824, 6144 x 16384, 7168 x 18944); after the
 * swapped kernel at 257-400 tokens, hidden 4096-8191 and inter > 8192
 * (measured ends: 192 and 447 level or behind; at inter 5504 and 8192 cuBLAS's
 * down was ahead); after a wgmma kernel at 768-1024 tokens (measured
 * ends: level at 640, behind at 1536), hidden <= 1024 and inter >= 11008
 * (measured there; behind at 1000 x 1000 x 3000). On devices of 4 TB/s or
 * more, KB_MLP_ROW_DOWN_LT_FAST takes the swapped box: cuBLASLt's from inter
 * 14336 only (the H200: cuBLAS's down ahead at 11008 from 320 tokens in bf16
 * and 300 in fp16, and at each count measured at hidden 6144) */
static int down_lt(const kb_mlp_req *r, const kb_mlp_plan *p, const kb_devattr *d)
{
    if (p->variant == KB_MLP_CUBLAS_CAT) return r->hidden >= 4096 && r->hidden < 5120 && r->tokens >= 257 && r->tokens <= 352;
    if (p->variant != KB_MLP_WGMMA) return 0;
    if (lt_swapped(r, p)) return !fast_memory(d) || r->inter >= 14336; /* KB_MLP_ROW_DOWN_LT_FAST */
    return r->tokens >= 768 && r->tokens <= 1024 && r->hidden <= 1024 && r->inter >= 11008;
}

int kb_mlp_plan_make(const kb_mlp_req *r, const kb_devattr *d, kb_mlp_occupancy_fn occ, void *ctx, kb_mlp_plan *p,
                     char *why, size_t n)
{
    if (r->down < 0 || r->down > 3) return na(why, n, "down=%d: 0 auto, 1 cublas, 2 splitk, 3 cublaslt", r->down);
    if (plan_gate_up(r, d, occ, ctx, p, why, n)) return 1;
    const int fast = r->down == 0 && fast_memory(d) && lt_swapped(r, p); /* the H200's row decides, either way */
    if (fast) p->rows |= 1u << KB_MLP_ROW_DOWN_LT_FAST;
    if (r->down == 3 || (r->down == 0 && down_lt(r, p, d))) {
        if (p->variant == KB_MLP_F32) {
            memset(p, 0, sizeof *p);
            return na(why, n, "down=cublaslt takes bf16/fp16 (fp32 runs fused_f32 with cuBLAS's down GEMM)");
        }
        if (r->down == 0 && !fast) p->rows |= 1u << KB_MLP_ROW_DOWN_LT;
        p->down = 2, p->dsplit.splits = 2;
        return 0;
    }
    const int gemm = p->variant == KB_MLP_WGMMA || p->variant == KB_MLP_MMA;
    const int fits = gemm && d->cc_major == 9 && r->tokens <= 16 && r->inter % 8 == 0;
    if (r->down == 2 && !fits) {
        memset(p, 0, sizeof *p);
        return na(why, n, "down=splitk takes 1-16 tokens, bf16/fp16 and inter %% 8 == 0 on Hopper (sm_90a TMA + wgmma) "
                          "after the fused gate/up kernel (%s)",
                  d->cc_major != 9 ? "not Hopper" : r->tokens > 16 ? "tokens > 16" : r->dtype == 0 ? "fp32"
                                                    : r->inter % 8 ? "inter % 8 != 0" : "cublas_cat's path");
    }
    if (r->down == 1 || !fits) return 0;
    if (r->down == 0) { /* KB_MLP_ROW_DOWN: where down_splitk was measured ahead */
        if (p->variant != KB_MLP_WGMMA) return 0; /* no overlap after fused_mma (it does not trigger); not measured */
        p->rows |= 1u << KB_MLP_ROW_DOWN;
        if (r->hidden < 1024 || r->inter < 2816 || (r->hidden >= 3072 && r->hidden < 8192 && r->inter < 5504))
            return 0;
    }
    plan_down_grid(r, d, p);
    p->down = 1;
    return 0;
}

void kb_mlp_plan_describe(const kb_mlp_plan *p, char *buf, size_t n)
{
    switch (p->variant) {
    case KB_MLP_WGMMA:
        if (p->swap)
            snprintf(buf, n, "fused_wgmma swap-ab bn=%d%s tma-store", p->bn, p->cl == 2 ? " cl=2" : "");
        else
            snprintf(buf, n, "fused_wgmma wg=%d bn=%d cl=%d %s%s", p->wg, p->bn, p->cl,
                     p->tma_store ? "tma-store" : "reg-store", p->dyn ? " dynamic" : "");
        break;
    case KB_MLP_MMA: snprintf(buf, n, "fused_mma %s", p->vec ? "vec" : "scalar"); break;
    case KB_MLP_F32: snprintf(buf, n, "fused_f32 cuda-cores"); break;
    case KB_MLP_CUBLAS_CAT:
        snprintf(buf, n, "cublas_cat (planner: %s)",
                 p->rows & (1u << KB_MLP_ROW_SECTOR | 1u << KB_MLP_ROW_SECTOR_FAST) ? "rows past a 32-byte sector"
                                                                                     : "cuBLAS measured ahead");
        break;
    default: snprintf(buf, n, "fused (not planned)"); break;
    }
}
