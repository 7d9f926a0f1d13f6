/* LayerNorm / RMSNorm planner: plain C, no GPU. Every threshold is a row of
 * kb_norm_rules with the measurement behind it (H100 SXM unless a row says
 * otherwise; "% of copy": of the size-matched device copy, rows 4096). */
#include "plan.h"
#include "../../include/kb_dtype.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define ANY 7    /* every dtype */
#define B16 6    /* fp16, bf16 */
#define F32 1
#define F16 2
#define BF16 4
#define INF (1L << 40)

/* Measures: "try" rows by row bytes (cols * element size); wr.* by warps a
 * row, except wr.nv8, wr.nv8w and wr.nv8w2 (LayerNorm, and RMSNorm where wr.fwd2) by 16-byte vectors a row, and wr.fwd2
 * by the device's DRAM bandwidth in GB/s (kb_devattr.dram_gbps), block.cluster_tail_ln by a cluster block's 16-byte
 * vectors; bulk.slots by a chunk's bytes
 * (every tensor of it); block.cluster, block.cluster_min, block.cluster_pf, block.cluster_tail, block.cluster_tail_rms, block.reread, block.reread_ln, _ln_pf and _rms_pf by row bytes; the others take no measure (0). The first row whose
 * pass, dtype and measure match decides, except "try": every matching row in
 * order, the first variant that can take the case wins. */
const kb_norm_rule kb_norm_rules[] = {
    /* ---- which variant (opt) ---- */
    {"try", -1, ANY, 0, INF, KB_NORM_WARP_ROW,
     "whole warps a row, the row in registers, no block barrier: wherever it fits (16-bit, against the block kernels: "
     "fwd 84-114% of copy vs 74-101, bwd 66-73% vs 37-59)"},
    {"try", 1, ANY, 0, INF, KB_NORM_BULK,
     "a backward past the warp rows (16-bit cols > 10240, fp32 > 5120) on sm_90: the block kernels gave fp16 38%, "
     "fp32 23% of copy at cols 10240; bulk fp16 12288 76%, fp32 16384 86%"},
    {"try", -1, ANY, 0, INF, KB_NORM_BLOCK,
     "everything else: rows that are not 16-byte multiples (w=1), rows too long for registers (the loop kernels)"},
    /* ---- warp_row ---- */
    {"wr.nv", 0, ANY, 0, 0, 4,
     "forward 4 vectors a lane (64 registers at most): NV 2 gave 80-101% of copy, NV 1 33-87%, NV 4 84-114%"},
    {"wr.nv", 1, ANY, 0, 0, 2,
     "backward 2 vectors a lane: x, dy and two sums an element (16-bit ~128 registers, fp32 ~94); NV 1 at two blocks "
     "an SM (64 registers) 56-68% of copy"},
    {"wr.nv8", 0, B16, 129, 160, 8,
     "LayerNorm 16-bit forward rows of 129-160 vectors (cols 1032-1280): one warp, 8 vectors a lane, against 2 warps "
     "of 4 (H100, 2026-11-27, graph, two runs, us): bf16 16384 x 1032 25.38/25.25 vs 26.21/26.30, 4096 x 1160 "
     "10.18/10.08 vs 10.53/10.50; from 161 vectors 2 warps win (16384 x 1544 36.74/36.86 -> 34.24/34.18, 4096 x 2048 "
     "13.98/14.24 -> 13.22/13.09: gamma and beta come early at 4 vectors, wr.ahead); RMSNorm: 2 warps at every width "
     "(bf16 4096 x 2048 13.73/13.57 -> 12.83/12.99, 4096 x 1032 9.25/9.44 -> 8.90/8.90)"},
    {"wr.nv8w", 0, ANY, 2689, 4096, 8,
     "LayerNorm forward rows of 2689-4096 vectors (42-64 KiB), which take 22-32 warps at 4 vectors a lane, one block an "
     "SM: 8 vectors a lane, half the warps, two rows an SM (its two meetings a row wait out the loads with nothing "
     "else in flight): fp32 12288 82.8 -> 96.0% of copy, "
     "16384 87.7 -> 95.9, bf16 32768 82.7 -> 95.4; at 32 KiB rows it lost (fp32 8192 95.8 vs 95.5, bf16 16384 95.2 vs "
     "94.7), and RMSNorm (one meeting) gained at fp32 12288 (93.4 -> 96.4) but lost at 16384 (97.8 -> 96.6). At 16 warps "
     "the kernel holds gamma and beta too, one row an SM (wr_fwd<T, 8, 16>, 125 registers; H100, 2026-11-27, two runs, "
     "us): fp32 4096 x 16384 181.3/181.3 -> 179.7/179.6, 16384 x 16384 717.3/717.5 -> 707.8/707.7, bf16 4096 x 32768 "
     "182.7/182.8 -> 180.8/180.7 (Liger 179.0/179.2 and 706.8/706.9 fp32); RMSNorm at 8 so: 4096 x 16384 179.2 -> "
     "178.5, 16384 x 16384 704.5 -> 708.2, so it keeps 4"},
    {"wr.fwd2", 0, ANY, 4000, INF, 1,
     "devices of 4 TB/s or more (H200: 4.8): wr.nv8w's rows for RMSNorm too, and at 16 warps two blocks of 512 an SM "
     "(lb 1024: gamma and beta loaded after the meetings, 60-64 registers) against one with them early (H200, "
     "2026-11-28, graph, two runs each in turns, calls e and f, us): LayerNorm fp32 4096 x 16384 143.6/143.6 -> 132.1/132.1, 16384 x "
     "16384 556.1/556.0 -> 517.8/517.4, bf16 4096 x 32768 153.9/154.5 -> 134.9/134.8; RMSNorm (4 vectors a lane "
     "before) fp32 4096 x 12288 125.0/124.8 -> 99.3/99.3, 4096 x 16384 152.9/153.0 -> 130.8/130.8, 16384 x 16384 "
     "598.1/597.8 -> 516.2/516.5, bf16 4096 x 24576 129.0/129.2 -> 100.3/100.1, 4096 x 32768 157.9/157.6 -> "
     "131.8/131.6"},
    {"wr.nv8w2", 0, ANY, 2048, 4096, 8,
     "LayerNorm on wr.fwd2's devices: 8 vectors a lane from 2048 vectors (32 KiB rows), where the H100 lost "
     "0.3-0.5 points of copy (wr.nv8w) (H200, 2026-11-28, graph, two runs, us): fp32 4096 x 8192 67.49/67.71 -> 66.85/66.91, bf16 "
     "4096 x 16384 70.69/70.53 -> 68.90/68.83; RMSNorm was level there (fp32 65.98/65.98 -> 65.92/65.95, bf16 "
     "67.10/66.98 -> 66.88/66.88), so it starts at wr.nv8w's 2689; 16 KiB rows lost (fp32 4096 x 4096 33.38/33.54 "
     "-> 34.08/34.18, bf16 4096 x 8192 34.27/34.11 -> 36.32/36.22)"},
    {"wr.fwd2", 0, ANY, 0, 3999, 0,
     "slower devices (H100: 3.35 TB/s) and unknown ones: one block of 512 an SM with gamma and beta early beat two "
     "blocks by 0.9-1.3% (wr.nv8w), and RMSNorm keeps 4 vectors (8 were mixed there)"},
    {"wr.warps", 0, ANY, 0, 0, 32, "forward: a group of at most 32 warps (a block's 1024 threads)"},
    {"wr.warps", 1, ANY, 0, 0, 20,
     "backward rows of 17-20 warps (16-bit cols 8200-10240, fp32 4100-5120) in blocks of 640 beat bulk, which left 3/8 "
     "of its slots idle: fp16 10240 63 -> 73% of copy, bf16 61 -> 69; 21-24 warps (LB 768, 80 registers) spilled: 47-65%"},
    {"wr.pad", 1, ANY, 6, 7, 8,
     "backward rows of 6-7 warps (16-bit cols 2568-3584, fp32 1284-1792) on the kernel built for 8 warps (2 rows "
     "ahead), their last lanes idle, not the one taking warps at run time (H200, 2026-11-29, graph, two runs each in "
     "turns, us): 0.869-0.949 at all 18 cases; LayerNorm bf16 16384 x 3584 104.64/104.70 -> 93.34/93.34 (78.6 -> 87.7% "
     "of copy), fp16 16384 x 2568 93.15/93.28 -> 85.25/85.12, fp32 16384 x 1792 93.57/93.63 -> 88.38/88.51, 4096 x "
     "1536 26.40/26.46 -> 24.38/24.42; RMSNorm fp16 16384 x 3584 107.17/107.14 -> 93.25/93.15. Not 5 warps (8 lost "
     "7.6-10.2%: bf16 16384 x 2560 73.25/73.34 -> 80.74/80.80)"},
    {"wr.pad", 1, ANY, 11, 15, 16,
     "backward rows of 11-15 warps (16-bit cols 5128-7680, fp32 2564-3840) on the kernel built for 16 (3 rows ahead, "
     "wr.late in 16 bits) (an earlier call, same method): 0.815-0.958 at all 33 cases; LayerNorm bf16 16384 x 6656 "
     "211.68/211.84 -> 173.22/173.38 (70.6 -> 86.3% of copy), 16384 x 7680 221.60/221.54 -> 188.45/188.00, fp16 "
     "16384 x 7168 223.71/224.00 -> 184.35/183.90, fp32 16384 x 3840 191.46/191.36 -> 183.04/182.85, 4096 x 7680 "
     "bf16 65.47/65.47 -> 55.49/55.39; RMSNorm bf16 16384 x 7168 76.4 -> 92.4%. Not 9-10 warps (16 lost 3.8-27%: fp16 "
     "16384 x 4104 143.23/143.17 -> 169.25/169.28, fp32 16384 x 2056 104.67/104.70 -> 132.83/132.99; only bf16 at "
     "5120 won, 3.0-3.7%)"},
    {"wr.pad", 0, ANY, 3, 3, 4,
     "forward rows of 3 warps (4 vectors a lane: 16-bit cols 2056-3072, fp32 1028-1536) on the kernel built for 4 "
     "(gamma and beta loaded ahead), their last lanes idle, not the one taking warps at run time (H200, 2026-11-29, "
     "graph, two runs each in turns, us): 0.849-0.969 at all 7 cases; LayerNorm bf16 4096 x 3072 18.85/18.75 -> "
     "15.94/15.97 (81.0 -> 94.2% of copy), fp16 16384 x 3072 58.94/59.20 -> 52.13/52.06, fp32 4096 x 1536 "
     "17.18/17.31 -> 15.58/15.71; RMSNorm fp32 16384 x 1536 50.75/50.82 -> 49.15/49.25"},
    {"wr.pad", 0, ANY, 5, 7, 8,
     "forward rows of 5-7 warps (16-bit cols 4104-7168, fp32 2052-3584) on the kernel built for 8 (same call): "
     "0.853-0.971 at all 17 cases; LayerNorm bf16 4096 x 5120 29.95/29.79 -> 25.82/25.76 (74.7 -> 85.1% of copy), "
     "16384 x 6656 123.39/123.42 -> 110.21/110.18 (84.4 -> 95.0), fp16 4096 x 5120 30.14/30.24 -> 25.82/25.70, fp32 "
     "4096 x 3584 32.45/32.42 -> 30.14/30.05; RMSNorm bf16 4096 x 6144 28.83/28.77 -> 26.43/26.43"},
    {"wr.pad", 0, B16, 13, 15, 16,
     "16-bit forward rows of 13-15 warps (cols 12296-15360) on the kernel built for 16 (same call): 0.826-0.952 at "
     "all 10 cases; LayerNorm bf16 4096 x 12800 67.81/67.84 -> 60.77/60.64 (75.1 -> 84.0% of copy), 15360 "
     "76.10/76.10 -> 67.68/67.55, fp16 16384 x 14336 295.55/295.68 -> 244.16/244.29 (74.3 -> 90.0); RMSNorm bf16 "
     "4096 x 12800 59.97/59.90 -> 56.96/57.02. Not 10-12 warps (16 lost 4.0-19.6%: LayerNorm bf16 4096 x 11264 "
     "53.09/53.12 -> 56.99/56.83, fp32 5120 43.23/43.17 -> 51.65/51.65); 9 not timed"},
    {"wr.pad", 0, F32, 14, 15, 16,
     "fp32 forward rows of 14-15 warps (cols 6660-7680) on the kernel built for 16 (same call): 0.918-0.982 at all "
     "4 cases; LayerNorm 4096 x 7680 70.30/70.37 -> 64.58/64.58 (86.5 -> 94.5% of copy), 7168 66.46/66.43 -> "
     "61.98/61.98; RMSNorm 7168 60.48/60.48 -> 59.39/59.42. Not 13 warps (16 lost 3.7-5.2%: LayerNorm 6656 "
     "55.78/55.68 -> 58.72/58.53)"},
    {"wr.pad8", 0, ANY, 11, 15, 16,
     "forward rows of 8 vectors a lane and 11-15 warps (LayerNorm fp32 cols 10244-15360, 16-bit 20488-30720; RMSNorm "
     "fp32 from 10756, 16-bit from 21512) where wr.fwd2, on the 16-warp kernel at two blocks an SM (lb 1024) (same "
     "call): 0.965-0.997 at all 18 cases; LayerNorm bf16 4096 x 22528 97.63/97.57 -> 94.24/94.05 (90.5 -> 93.9% of "
     "copy), fp32 11264 92.35/92.38 -> 91.33/91.39 (95.6 -> 96.9), 15360 123.36/123.55 -> 123.04/122.88; RMSNorm "
     "fp32 12288 98.98/98.85 -> 98.14/98.18; landed, against f5aec91 in one call: 0.958-0.991 at 6 (RMSNorm fp32 "
     "10756 88.64/88.64 -> 87.87/87.81). Not 9-10 warps (LayerNorm fp32 9216 level, 10240 1.1% ahead, 9728 level; "
     "bf16 18440, its tenth warp nearly idle, 80.93/80.96 -> 85.41/85.44)"},
    {"wr.block", 0, ANY, 0, 0, 256,
     "forward blocks of 256 threads or one group (a grid over the rows); blocks of 256 at five an SM (48 registers) "
     "spilled for bf16 (58-71%)"},
    {"wr.block", 1, ANY, 0, 0, 512,
     "backward blocks of 512 (one an SM at ~120 registers: fewer partial rows for the column sums); blocks of 256: same "
     "or 1-3 points worse"},
    {"wr.stages", 1, ANY, 4, 4, 2,
     "backward rows of 4 warps (16-bit cols 1544-2048, fp32 772-1024): 2 rows ahead, not 3 (H100, 2026-11-28, graph, "
     "two runs each in turns with 3, us): LayerNorm 4096 x 2048 bf16 21.92/21.92 -> 21.41/21.38, fp16 22.62/22.72 -> "
     "21.92/21.82, fp32 4096 x 1024 20.35/20.29 -> 20.00/19.97; an earlier call bf16 21.98/22.14 -> 21.47/21.34"},
    {"wr.stages", 1, ANY, 8, 8, 2,
     "backward rows of 8 warps: 2 rows ahead (same calls, us): LayerNorm 4096 x 4096 fp16 37.98/37.95 -> 37.47/37.60 "
     "and 37.86/37.98 -> 37.60/37.60, bf16 37.15/37.15 -> 36.90/36.93, RMSNorm bf16 and fp16 +0.4-1.0%, fp32 "
     "4096 x 2048 level (34.85/35.01 -> 34.88/34.88); at 16 warps 2 lost (bf16 4096 x 8192 72.5/75.1 -> 76.5/75.9, "
     "16384 x 8192 279.9/277.5 -> 282.1/285.1), so they keep 3"},
    {"wr.stages", 1, ANY, 4, 32, 3,
     "backward rows of 4 warps or more: x and dy staged 3 rows ahead by cp.async: 16-bit cols 4096 66-68 -> 71% of "
     "copy, 8192 65-67 -> 74, 2048 +1"},
    {"wr.stages", 1, ANY, 1, 3, 0, "shorter backward rows take the next row in registers: stages 3 lost 1-3 points at cols 512, 1024"},
    {"wr.lb", 1, ANY, 9, 10, 320,
     "staged backward rows of 9-10 warps capped at 96 registers, two groups an SM: cols 5120 fp16 64 -> 72% of copy, "
     "bf16 63 -> 68; not at 5-6 warps (lost 1-6 points); 80 registers spilled (-17)"},
    {"wr.lb", 1, ANY, 17, 20, 640,
     "backward rows of 17-20 warps: one group a block of up to 640 threads at 96 registers (the only warp_row kernel "
     "for them: staged)"},
    /* ---- bulk (sm_90) ---- */
    {"bulk.nv", 0, ANY, 0, 0, 4, "forward 4 vectors a thread: they wait in shared memory, so more only costs passes"},
    {"bulk.nv", 1, ANY, 0, 0, 8,
     "backward 8 elements a thread (value: elements): gamma and two sums an element stay in registers"},
    {"bulk.max", 0, ANY, 0, 0, 8, "forward at most 8 vectors a thread (value: vectors)"},
    {"bulk.max", 1, ANY, 0, 0, 16, "backward at most 16 elements a thread (value: elements; more spill)"},
    {"bulk.min", 0, ANY, 0, 0, 4,
     "forward at least 4 vectors a thread (value: vectors): 1 and 2 are not built (nvcc of bulk_sm90.cu 12.1 -> "
     "10.7 s; opt plans 4, and 8 past 1024 threads; a row of 1-2 vectors runs 4 with lanes idle)"},
    {"bulk.chunk", -1, ANY, 0, 0, 16384, "chunks of about 16 KiB of each tensor (rows whole, at most 1024 threads)"},
    {"bulk.slots", -1, ANY, 0, 16384, 4, "4 slots of up to 16 KiB chunks (64 KiB in flight a block)"},
    {"bulk.slots", -1, ANY, 16385, 40960, 3, "3 slots where they fit in 120 KiB"},
    {"bulk.slots", -1, ANY, 40961, INF, 2, "else 2 (one in use, one in flight)"},
    {"bulk.slots1024", 1, ANY, 0, 0, 2,
     "backward blocks of 1024 (one an SM): at most 2 slots, gamma in shared memory: fp16 cols 12288/16384 67/67 -> "
     "70/73% of copy; the whole shared memory in slots (3-4) 51/54"},
    {"bulk.gamma_smem", 1, ANY, 0, 0, 1,
     "backward blocks of 1024: gamma in shared memory past the ring where 2 slots still fit: bf16 12288/16384 65/66 -> "
     "75/83% of copy"},
    {"bulk.pipe", 1, F32, 0, 0, 1,
     "fp32 backward rows where one chunk fits beside gamma (cols 11572-16384): one slot refilled a part at a time "
     "as the row is written, gamma beside it, against 2 slots (gamma in L1) or 1 unpiped (H200, 2026-11-28, graph, "
     "two runs each in turns, us): RMSNorm 4096 x 16384 266.2/266.6 -> 236.6/238.0 (68.9 -> 77.5% of copy), "
     "16384 x 16384 1007.6/1005.0 -> 858.1/857.5, LayerNorm 4096 x 12288 219.0/220.8 -> 190.6/190.8"},
    {"bulk.stats_smem", 1, F32 | F16, 0, 0, 1,
     "backward: the next chunk's mean/rstd by cp.async into shared memory, not registers (spilled at 64 registers): "
     "fp16 12288 70 -> 76% of copy, 16384 73 -> 80; fp32 10240 61 -> 84"},
    {"bulk.stats_smem", 1, BF16, 0, 0, 0,
     "bf16 keeps them in registers (no spill): shared memory lost, 12288 75 -> 71% of copy, 16384 83 -> 75"},
    /* ---- block ---- */
    {"block.elems", -1, ANY, 0, 0, 16,
     "about 16 elements a thread: enough bytes in flight at few registers (32 a thread spilled in the backward)"},
    {"block.max_elems", 1, F32, 0, 0, 16, "the fp32 backward holds at most 16 elements a thread (x, dy and two sums)"},
    {"block.max_elems", -1, ANY, 0, 0, 32, "at most 32 elements a thread (8 vectors) in registers; longer rows: the loop kernels"},
    {"block.fwd_block", 0, ANY, 0, 0, 256,
     "forward blocks of 256 threads or one row's group (63 registers: 4 blocks an SM)"},
    {"block.cluster", 0, ANY, 65537, 524288, 512,
     "a forward row past 64 KiB (16-byte vectors, sm_90): split over a cluster of 2-8 blocks of at most 512 threads of 8 "
     "vectors, two blocks an SM, each block's part pushed once to every block (st.async on its mbarrier), against one "
     "block of 1024 a row (one row an SM) or the loop kernels (x read three times; H200, 2026-11-28, graph, two runs "
     "each in turns, us; in brackets the first clusters, three cluster barriers a LayerNorm row): LayerNorm fp32 4096 x "
     "20480 324.9/325.8 -> [209.4] 177.2/177.2 (49 -> 89% of copy), 4096 x 32768 455.8/455.1 -> [344.3] 288.5/288.4 "
     "(55 -> 88), 16384 x 32768 1775.0/1775.4 -> [1384.9] 1133.6/1134.0 (89), 4096 x 65536 1086.5/1086.0 -> [745.5] "
     "583.9/583.7 (46 -> 86), bf16 4096 x 65536 448.2/448.0 -> [387.2] 305.2/305.4 (83); RMSNorm fp32 4096 x 32768 "
     "393.9/393.2 -> [315.6] 270.2/270.4 (64 -> 94), 4096 x 65536 785.5/785.7 -> [644.9] 553.4/553.4 (91), bf16 4096 x "
     "65536 375.4/375.2 -> [312.0] 278.7/278.7 (67 -> 91). 4 vectors a thread (C doubled) and blocks of 256 (C doubled, "
     "four an SM) were level or lost (LayerNorm fp32 32768 311.1 -> 322.2 at 256). Against bulk, which opt took for "
     "forward rows of 32 KiB and more until then (fp32 cols 24576-28920, 16-bit 49152-57840): LayerNorm fp32 24576 224.0/224.0 "
     "vs 264.9/265.6 (85 vs 72% of copy), 28672 255.8/255.7 vs 305.6/305.9; RMSNorm fp32 24576 214.7/214.8 vs "
     "247.2/247.2, 28672 242.8/242.7 vs 284.2/284.8; bf16 LayerNorm 49152 241.5/241.4 vs 302.4/302.6, 57344 "
     "271.4/271.5 vs 338.4/338.0, RMSNorm 49152 225.7/225.6 vs 281.2/281.1: opt no longer tries bulk forward (the "
     "warp rows take every aligned row to 64 KiB). The H100 was not measured (not lent)"},
    {"block.reread", 0, F32, 65600, 131072, 1024,
     "RMSNorm forward rows past 64 KiB to 128 KiB in fp32 (sm_90; from 16400 columns): a row a block of 1024 "
     "threads, every vector loaded at once and kept in L2, the sum of squares from registers in one block barrier, "
     "y from x read again through L2 (reread_fwd.cu, torch.compile's shape there), against the clusters (H200, "
     "2026-11-28, graph, two runs each in turns, us): 4096 x 16400 142.2/142.3 -> 141.5/141.3, 18432 154.7/154.8 "
     "-> 147.5/147.4, 20480 169.7/170.0 -> 159.9/160.0 (92.2 -> 97.6% of copy; torch.compile 162.7 in the same "
     "call), 21504 184.2/184.1 -> 169.5/169.7, 16384 x 20480 661.3/661.1 -> 625.4/625.5 (100.3%); 0.5% behind at "
     "16388 (142.9/143.0 -> 143.8/143.5), so not there. From 88 KiB it ran first in a version with group_sum's two "
     "barriers and 64-bit clamped offsets, against the clusters, then that against this one in a later call: 4096 "
     "x 24576 208.2/208.3 -> 201.2/201.0; 202.2/202.2 -> 191.5/191.8 (torch.compile 191.4), 32768 269.5/269.5 -> "
     "257.4/257.5; 260.9/260.7 -> 255.2/254.8 (98.7%; torch.compile 255.0), 16384 x 32768 1058.7/1059.1 -> "
     "1007.1/1006.9; 1018.0/1018.1 -> 1001.0/1001.1. LayerNorm: block.reread_ln. Not in 16 bits (8 vectors spilled: "
     "bf16 4096 x 65536 276.3/276.5 -> 408.6/408.5). The H100 was not measured (not lent)"},
    {"block.reread_ln", 0, F32, 73728, 131072, 1024,
     "LayerNorm forward rows of 72-128 KiB in fp32 (sm_90; from 18432 columns): block.reread's kernel with beta, "
     "the statistics merged in one block barrier (block_merge), against the clusters (H200, 2026-11-28, graph, two "
     "runs each in turns, us): 4096 x 18432 163.8/163.7 -> 162.7/162.8, 20480 177.3/177.4 -> 174.2/174.2, 24576 "
     "216.0/215.9 -> 208.7/209.0, 28672 257.7/257.4 -> 247.2/247.4, 32768 289.0/289.1 -> 267.6/267.6 (87.0 -> "
     "94.3% of copy; torch.compile 276.0 in a call where this ran 269.7), 16384 x 24576 846.0/846.6 -> 816.9/817.2, "
     "16384 x 32768 1134.9/1134.9 -> 1053.7/1054.1, affine none 4096 x 24576 205.4/205.5 -> 191.6/191.4. Below "
     "18432 the clusters win: 4096 x 16400 150.3/150.4 -> 155.6/155.6, 16896 149.8/149.8 -> 157.5/157.3, 17408 "
     "154.8/154.7 -> 158.8/158.8 (16384 rows: 600.8/600.7 -> 620.0/619.4), 17920 160.4/160.3 -> 160.7/160.7. Its "
     "first version (session 62's probe) lost: 4096 x 32768 288.4/288.5 -> 317.4/317.6. The H100 was not measured (not lent)"},
    {"block.cluster_pf", 0, ANY, 65537, 524288, 4,
     "the clusters' rows: each block prefetches its part of the row a quarter of the resident rows on into L2 (one "
     "cp.async.bulk.prefetch a block), so the memory keeps reading while an SM's blocks meet and write; against none "
     "(H200, 2026-11-29, graph, two runs each in turns, us): LayerNorm fp32 4096 x 16388 150.5/150.3 -> 138.0/137.9 "
     "(83.7 -> 91.3% of copy), 17408 154.5/154.3 -> 142.4/142.3, 40960 360.9/361.0 -> 329.1/329.3 (86.7 -> 95.0), "
     "49152 443.6/443.5 -> 417.3/417.6, 65536 584.8/585.2 -> 535.4/535.7 (85.5 -> 93.3), 16384 x 17408 600.9/600.9 "
     "-> 544.2/544.6, 16384 x 65536 2316.8/2315.5 -> 2125.2/2125.2, 1000 x 65536 148.1/148.2 -> 139.8/139.8, 1000 x "
     "17408 42.6/42.7 -> 42.4/42.3, affine none 4096 x 40960 319.5/319.4 -> 315.8/315.9; RMSNorm fp32 4096 x 32772 "
     "292.9/292.7 -> 267.3/267.3 (86.0 -> 94.2), 40960 343.5/343.3 -> 323.1/323.2 (91.0 -> 96.7), 65536 "
     "552.3/552.4 -> 520.3/520.7 (90.4 -> 96.0), 1000 x 40960 89.2/89.1 -> 85.5/85.5; 16 bits: LayerNorm bf16 4096 x "
     "32776 158.9/159.1 -> 149.6/149.8, 65536 300.9/301.1 -> 281.5/281.1, 131072 636.9/636.5 -> 610.2/610.6, "
     "RMSNorm bf16 131072 575.4/575.4 -> 538.8/539.0, fp16 40960 173.5/173.4 -> 166.7/166.8 (a quarter: 0.906-0.994 "
     "of none at 20 shapes). Other distances at the 15 of 4096 and 16384 rows: 1/16 0.947-0.989, 1/8 0.921-0.980, "
     "1/2 0.906-1.023; a whole round of resident rows ahead 0.993-1.337 (L2 churns). The reread rows: block.reread_ln_pf, _rms_pf. The H100 "
     "was not measured (not lent)"},
    {"block.reread_ln_pf", 0, F32, 73728, 81920, 8,
     "LayerNorm's reread rows of 72-80 KiB (18432-20480 columns): half the resident rows ahead, not a quarter "
     "(H200, 2026-11-29, graph, two runs each in turns against a quarter, us): 4096 x 18432 153.4/153.7 -> "
     "151.0/151.4, 16384 x 18432 589.3/589.2 -> 578.5/578.3; at 24576 and past it a half lost (4096 x 24576 "
     "196.7/196.8 -> 200.4/200.6, 28672 231.7/231.9 -> 247.2/247.2), and an eighth or a sixteenth lost at every "
     "prefetched row (4096 x 18432 158.4/158.4, 162.8/163.2). Landed, against a quarter in one call: 2000 x 18432 79.7/79.8 -> "
     "79.2/79.0, 4096 x 18432 153.9/153.6 -> 151.0/151.2 (91.9 -> 93.5% of copy), 19456 160.0/160.0 -> 158.6/158.7, "
     "20480 166.8/166.8 -> 166.2/166.2, 16384 x 18432 589.0/589.2 -> 578.2/578.3, 20480 639.5/639.6 -> 636.6/636.8. "
     "The H100 was not measured (not lent)"},
    {"block.reread_ln_pf", 0, F32, 73728, 126976, 4,
     "LayerNorm's reread rows with gamma and beta to 124 KiB (18432-31744 columns): each block prefetches the row a "
     "quarter of the resident rows on into L2 first, as block.cluster_pf; against none (H200, 2026-11-29, graph, two "
     "runs each in turns, us): 4096 x 18432 162.6/162.5 -> 153.9/153.9 (86.8 -> 91.8% of copy), 20480 173.9/173.8 -> "
     "166.5/166.6, 24576 207.0/207.1 -> 197.1/196.9, 28672 245.5/245.8 -> 232.3/232.2 (89.3 -> 94.4), 29696 "
     "246.0/246.0 -> 240.5/240.6, 30720 254.7/255.0 -> 250.0/250.0, 31744 261.2/261.3 -> 259.6/260.0; 1000 x 24576 "
     "55.9/56.1 -> 56.2/56.0 (level). Not at 32768 (267.6/267.7 -> 270.9/271.1; 16384 rows 1050.5/1050.7 -> "
     "1069.6/1068.7), nor without the affine (4096 x 24576 190.6/190.6 -> 201.7/201.9, at copy speed already); "
     "RMSNorm: block.reread_rms_pf; from 2000 rows: block.reread_pf_rows. The H100 was not measured (not lent)"},
    {"block.reread_rms_pf", 0, F32, 65600, 71680, 4,
     "RMSNorm's reread rows with gamma to 70 KiB (16400-17920 columns): block.reread_ln_pf's prefetch, against none "
     "(H200, 2026-11-29, graph, two runs each in turns, us): 4096 x 16400 142.5/142.4 -> 134.7/134.7 (89.4 -> 94.6% "
     "of copy), 17408 144.4/144.1 -> 139.6/139.6; landed, against main in one call: 2000 x 16400 72.2/72.1 -> "
     "70.2/70.2, 17920 74.3/74.4 -> 74.0/74.1, 4096 x 16400 142.4/142.7 -> 135.0/135.2 (89.0 -> 94.1), 17920 "
     "146.0/146.2 -> 143.0/143.2, 16384 x 16400 556.5/556.3 -> 515.8/515.8 (90.3 -> 97.5), 17920 570.9/571.1 -> "
     "552.8/552.7; from 2000 rows (block.reread_pf_rows: 1000 x 16400 38.4/38.4 -> 39.3/39.1, 300 x 16400 "
     "15.9/16.0 -> 16.7/16.6). Not past 17920 (19456-26624 0.5-2.1% slower, session 65). The H100 was not measured "
     "(not lent)"},
    {"block.reread_pf_rows", 0, F32, 0, 0, 2000,
     "the reread prefetch (block.reread_ln_pf, block.reread_rms_pf) from 2000 rows: with fewer the first round's "
     "blocks prefetch rows the same round is already reading (H200, 2026-11-29, graph, two runs each in turns against "
     "none, us): LayerNorm 2000 x 20480 90.0/89.9 -> 86.3/86.2, 2000 x 24576 106.6/106.6 -> 101.4/101.6; 1000 x "
     "20480 47.9/47.9 -> 47.3/47.4, 1000 x 24576 56.4/56.5 -> 55.9/55.9 (level); 600 x 24576 36.5/36.6 -> "
     "37.4/37.2, 300 x 24576 22.0/22.2 -> 23.5/23.3. Skipping only the first round's rows (each block prefetching "
     "rows past the resident ones) kept 300 rows 2-4% behind none (20.2/20.2, 23.0/22.9). Landed, against main (from "
     "4096 rows) in one call: 2000 x 18432 83.9/84.0 -> 80.2/80.2, 28672 124.1/124.0 -> 119.9/119.9, 3000 x 24576 "
     "155.8/155.8 -> 146.9/146.8 (89.5 -> 95.1% of copy), 28672 183.4/183.5 -> 172.9/173.1; 1500 rows unchanged"},
    {"block.cluster_tail", 0, F32, 131073, 327696, 9,
     "fp32 cluster rows of 128-320 KiB: a block's part in whole warps of 8 vectors and a ninth vector for its tail "
     "(tpr rounded down to a warp), not 8 vectors and tpr rounded up, at two blocks an SM (block.cluster3's three "
     "spilled 28-32 bytes at 9) (H200, 2026-11-29, graph, two runs each in turns, us): LayerNorm fp32 4096 x 32772 "
     "278.9/279.4 -> 267.8/267.6 (90.3 -> 93.8% of copy), 16384 x 32772 1109.4/1108.6 -> 1050.2/1050.2 (90.0 -> "
     "95.1), 4096 x 53252 458.6/457.9 -> 443.5/443.3, 65540 589.3/589.8 -> 547.1/546.1 (84.8 -> 91.4), 81924 "
     "753.9/752.0 -> 705.6/706.9 (83.3 -> 88.9); RMSNorm fp32 4096 x 65540 92.5 -> 95.3%, 81924 713.1/712.4 -> "
     "665.4/665.3 (88.1 -> 94.3); 0.4-0.7% behind at 36868 and 57348 (both ops), level at RMSNorm 40964 and 45060. "
     "Not past 320 KiB (98308, 114692 level) nor at 64 KiB (16388: LayerNorm 1.0% ahead, RMSNorm 0.4% behind); "
     "16 bits mixed (LayerNorm bf16 2.0-5.1% ahead at 32776-98312, RMSNorm bf16 2.3% ahead to 2.5% behind)"},
    {"block.cluster_tail_ln", 0, B16, 2049, 2304, 9,
     "LayerNorm's 16-bit cluster rows whose blocks take 2049-2304 vectors (cols 32776-36864 in clusters of 2, "
     "65544-73728 of 4, 131080-147456 of 8): 8 warps of 9 vectors, not 9 of 8, as block.cluster_tail (cl_fwd<16-bit, "
     "9> spills 12 bytes) (H200, 2026-11-29, graph, two runs each in turns, us): bf16 4096 x 65544 323.17/323.20 -> "
     "303.10/302.94 (77.8 -> 83.2% of copy), 16384 x 65544 1269.73/1264.61 -> 1222.94/1223.36, 131080 676.80/676.90 "
     "-> 631.04/630.46 (73.8 -> 79.2), 32776 149.79/149.70 -> 146.78/146.59; fp16 65544 320.03/319.81 -> "
     "304.74/302.78; landed, against f5aec91 in one call: bf16 72000 341.12/343.74 -> 331.84/330.14. Not other parts "
     "(block.cluster_tail's nine warps measured by bytes): 1.9-2.4% ahead at 1281 and 1537 vectors (81928, 98312, "
     "clusters of 8; since session 71 the row below), 2.1-2.7% at 2561 (40968), behind at 1793 (114696, 256 -> 224 threads: "
     "561.95/560.19 -> 572.38/570.43), 2305 (36872: 165.02/164.77 -> 169.98/169.86) and 3073 (49160)"},
    {"block.cluster_tail_ln", 0, B16, 1281, 1792, 9,
     "and where they take 1281-1792 vectors (cols 45057-46080 in clusters of 4, 81921-92160 and 98305-110592 of 8; "
     "tail where 9 warps rounded down hold the part, so not 1441-1536 nor 1729-1792): block.cluster_tail_ln's ninth "
     "vector (H200, 2026-11-29, session 71, graph, two runs each in turns against main, us): bf16 4096 x 45064 "
     "207.97/207.74 -> 205.73/205.79, 81928 405.22/405.73 -> 395.78/395.81 (77.2 -> 79.1% of copy), 90000 "
     "431.52/432.58 -> 424.22/424.13, 98312 489.41/488.54 -> 481.44/480.22, 106504 521.44/520.10 -> 512.42/513.54, "
     "16384 x 90000 1750.08/1749.22 -> 1710.78/1722.08; fp16 4096 x 45064 208.48/207.49 -> 206.40/206.40, 81928 "
     "407.94/405.31 -> 397.57/397.86, 90000 433.70/434.11 -> 427.20/427.49, 98312 489.34/488.51 -> 481.86/483.42, "
     "106504 522.18/522.27 -> 515.78/515.20 (0.976-0.992 at all 11). Not 1793 (114696: 1.018 behind, session 70)"},
    {"block.cluster_tail_rms", 0, B16, 131073, 135168, 9,
     "RMSNorm's 16-bit cluster rows of 128-132 KiB (65544-67584 cols, clusters of 4, parts of 2049-2112 vectors): "
     "block.cluster_tail's ninth vector, 8 warps of 9 vectors, not 9 of 8 (H200, 2026-11-29, session 71, graph, two "
     "runs each in turns against 7d65ba8, us): bf16 4096 x 65544 285.50/285.63 -> 279.23/279.07 (88.2 -> 90.1% of "
     "copy), 16384 x 65544 1119.68/1118.53 -> 1091.90/1091.55, 4096 x 67584 284.29/284.51 -> 281.44/281.60, fp16 65544 "
     "0.989 (call 2). Not past 132 KiB in clusters of 4: 69632 0.997 (fp16 1.006 behind), 71680 1.002, 73656 1.009; "
     "nor in clusters of 2 (32776 1.026 behind) or at parts of 1281-1792 (45064 1.028, 81928 1.012, 90000 1.017 "
     "behind; 98312 0.994, 106504 1.001)"},
    {"block.cluster_tail_rms", 0, B16, 262145, 294912, 9,
     "and rows of 256-288 KiB (131080-147456 cols, clusters of 8, parts of 2049-2304 vectors), ahead at every one "
     "timed (the same call, us): bf16 4096 x 131080 591.71/591.26 -> 560.03/560.70 (84.3 -> 89.2% of copy), 135168 "
     "587.84/587.68 -> 562.72/562.75, 139264 598.08/598.11 -> 578.40/578.72, 143360 610.24/609.89 -> 594.46/594.46, "
     "147312 632.93/632.83 -> 619.87/619.23, 16384 x 131080 2355.49/2353.66 -> 2236.77/2235.74 (84.7 -> 89.2), 2000 "
     "x 139264 298.59/298.37 -> 286.91/287.04, 300 x 131080 54.56/54.56 -> 51.71/51.49; fp16 4096 x 139264 "
     "593.98/594.34 -> 578.43/578.59 (0.946-0.979 at all 9). The H100 was not measured (not lent)"},
    {"block.cluster3", 0, ANY, 0, 0, 384,
     "cluster blocks of 352-384 threads, which at block.cluster's 64 registers run two an SM, launch bounded for three "
     "(384, 3: 56 registers, 20-24 bytes spilled) against two (H200, 2026-11-28, graph, two runs each in turns, us): "
     "LayerNorm fp32 4096 x 22528 212.7/212.5 -> 202.5/202.4 (82.3 -> 86.5% of copy), 24576 221.5/221.4 -> "
     "214.7/214.6 (85.6 -> 88.4), clusters of 4: 45056 445.2/445.3 -> 404.3/404.2 (77.7 -> 85.7), 49152 "
     "470.3/469.9 -> 443.5/443.5; RMSNorm fp32 49152 439.6/439.8 -> 419.5/419.6; LayerNorm bf16 4096 x 45056 "
     "231.0/231.0 -> 209.7/209.8 (75.8 -> 83.5), 49152 239.4/239.4 -> 226.6/227.0. Not where three fit already "
     "(blocks of 320 at 64 registers: fp32 20480 175.5/175.4 -> 182.5/182.7), nor with clusters of 3 or 6 to reach "
     "blocks of 352 (fp32 32768 285.5/285.8 -> 313.2/313.3, 65536 578.5/578.7 -> 623.8/623.7, bf16 65536 "
     "302.7/302.5 -> 339.9/340.1). Since session 67 block.cluster_min halves these blocks where it measured (16-bit "
     "rows of 88-96 KiB, every row of 160-256 KiB); three an SM stay at 16-bit 80-88 KiB (two blocks of 352 beat four "
     "there) and at rows of 320-384 KiB, where eight blocks already take the row (fp32 81924-98304, 16-bit "
     "163848-196608 columns: sixteen lost at 5 of 6 shapes). The H100 was not measured (not lent)"},
    {"block.cluster_min", 0, B16, 90113, 98304, 4,
     "16-bit rows of 88-96 KiB: clusters of 4 blocks of 192 threads, not 2 of 384 three an SM (block.cluster3) (H200, "
     "2026-11-29, graph, two runs each in turns against main, us): LayerNorm bf16 4096 x 49152 219.5/219.8 -> "
     "216.2/217.3, 300 x 49152 25.8/26.0 -> 24.6/24.5, fp16 4096 x 45064 208.3/208.0 -> 207.2/206.9, 49152 "
     "220.0/219.6 -> 217.1/215.2; RMSNorm bf16 4096 x 49152 212.1/211.9 -> 200.6/200.8 (89.7 -> 94.9% of copy), "
     "16384 x 49152 819.2/818.5 -> 774.5/773.7. Not below 88 KiB, where 2 blocks of 352 beat 4 (LayerNorm bf16 4096 "
     "x 40968 190.0/190.5 -> 193.3/193.5, 45056 201.4/201.7 -> 203.2/203.2), nor past 96 KiB, where 2 of 448-512 "
     "did (bf16 57344 248.2/248.3 -> 255.0/255.5, 65536 282.8/282.5 -> 285.2/287.3); clusters of 8 (96 threads) "
     "lost (LayerNorm bf16 49152 236.2/235.9). The H100 was not measured (not lent)"},
    {"block.cluster_min", 0, ANY, 163841, 262144, 8,
     "rows of 160-256 KiB: clusters of 8 blocks of 192-256 threads, not 4 of 352-512 (H200, 2026-11-29, graph, two "
     "runs each in turns against main, us): LayerNorm fp32 4096 x 40964 363.4/363.6 -> 345.6/346.1 (86.0 -> 90.7% "
     "of copy), 45056 383.6/383.7 -> 365.8/366.2, 49152 418.0/418.2 -> 397.3/397.4 (90.0 -> 94.8), 49156 "
     "432.5/433.0 -> 424.2/424.2, 53248 and 57344 level, 65536 536.2/536.9 -> 526.5/526.5 (93.2 -> 94.8), 2000 x "
     "49152 209.2/209.2 -> 198.7/198.8, 16384 x 57344 1852.6/1850.7 -> 1858.8/1863.7 (0.5% behind); RMSNorm fp32 "
     "4096 x 40964 354.8/354.7 -> 331.3/331.3 (88.3 -> 94.4), 49152 411.8/411.8 -> 387.0/387.0 (91.4 -> 97.4), "
     "53248-65536 0.3-1.2% ahead; 16 bits: LayerNorm bf16 98304 460.1/459.8 -> 449.7/451.9, 131072 610.8/609.9 -> "
     "596.4/596.4, fp16 131072 619.7/622.5 -> 599.8/602.9, RMSNorm bf16 98304 419.0/419.1 -> 397.8/398.1 (89.9 -> "
     "94.7); landed, in one call: LayerNorm fp32 4096 x 49152 affine none 406.3/406.3 -> 378.2/378.1 (92.7 -> "
     "99.5%), 16384 x 45056 1513.1/1514.2 -> 1455.5/1457.1. Not at 160 KiB and below (4 blocks of 288-320: fp32 36864 "
     "level, bf16 81920 0.5% behind), nor 16 blocks past 320 KiB (the non-portable cluster size: LayerNorm fp32 4096 "
     "x 114688 987.7/988.0 -> 1030.1/1029.8, 1.2-4.3% behind at 9 of 11 shapes). The H100 was not measured (not lent)"},
};
const int kb_norm_nrules = (int)(sizeof kb_norm_rules / sizeof kb_norm_rules[0]);

/* the first row of key matching pass, dtype and measure m: its value, or dflt */
static int rule_at(const char *key, int bwd, int dtype, long m, int from, int *at)
{
    for (int i = from; i < kb_norm_nrules; i++) {
        const kb_norm_rule *r = &kb_norm_rules[i];
        if (strcmp(r->key, key) || (r->pass >= 0 && r->pass != bwd) || !(r->dtypes & (1 << dtype)) || m < r->lo ||
            m > r->hi)
            continue;
        if (at) *at = i;
        return r->value;
    }
    if (at) *at = -1;
    return -1;
}
static int rule(const char *key, const kb_norm_shape *s, long m)
{
    return rule_at(key, s->backward, s->dtype, m, 0, NULL);
}

const char *kb_norm_variant_name(int v)
{
    switch (v) {
    case KB_NORM_WARP_ROW: return "warp_row";
    case KB_NORM_BLOCK: return "block";
    case KB_NORM_BULK: return "bulk";
    }
    return "auto";
}

static int say(char *why, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int say(char *why, size_t n, const char *fmt, ...)
{
    if (why && n) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static long pow2ceil(long n)
{
    long p = 1;
    while (p < n) p <<= 1;
    return p;
}
static size_t zmax(size_t a, size_t b) { return a > b ? a : b; }
static int sm90(const kb_devattr *d) { return d->cc_major == 9 && d->cc_minor == 0; }
static int tune(const kb_norm_tune *t, int which)
{
    if (!t) return KB_NORM_TUNE_AUTO;
    return which == 0 ? t->vec : which == 1 ? t->stages : t->slots;
}

/* warp_row backward: the staging of x and dy, the groups' partial rows and
 * column_sums' slices share the dynamic area */
static size_t wr_smem(const kb_norm_plan *p, const kb_norm_shape *s)
{
    if (!s->backward) return 0;
    const size_t acc = p->tpr < p->block ? (size_t)(p->block / p->tpr) * 2 * (size_t)s->cols * sizeof(float) : 0,
                 part = (size_t)p->block * KB_NORM_COLSUM_BYTES, stage = (size_t)p->stages * p->block * p->nv * 16 * 2;
    return zmax(zmax(acc, part), stage);
}

static int plan_wr(const kb_norm_shape *s, const kb_devattr *d, const kb_norm_tune *t, kb_norm_plan *p, char *why,
                   size_t n)
{
    const int es = (int)kb_dtype_size((kb_dtype)s->dtype), w = 16 / es, bwd = s->backward, vec = tune(t, 0), stages_t = tune(t, 1);
    if (s->unaligned) return say(why, n, "a tensor is not 16-byte aligned");
    if (s->cols % w) return say(why, n, "cols*%d bytes not a multiple of 16", es);
    if (!bwd && stages_t > 0) return say(why, n, "stages=%d: the warp_row forward stages nothing", stages_t);
    if (bwd && vec > 2)
        return say(why, n, "v=%d: the warp_row backward holds at most 2 vectors a lane (x, dy, two sums an element)", vec);
    const long nvec = s->cols / w;
    const int nv_auto = rule("wr.nv", s, 0);
    int nv = vec > 0 ? vec : nv_auto;
    const long maxw = rule("wr.warps", s, 0);
    long wpr = (nvec + 32L * nv - 1) / (32L * nv);
    if (nv == 8) { /* the one-warp 16-bit forward row (wr.nv8), or forward rows of 2-32 warps */
        if (wpr == 1 && es != 2) return say(why, n, "v=8 on a one-warp row only for 16-bit rows; fp32: 2 warps or more");
        if (wpr > maxw) return say(why, n, "a row of %ld vectors needs %ld warps of 8 vectors a lane; at most %ld", nvec, wpr, maxw);
    } else if (vec > 0 && vec < nv_auto && wpr > 1) { /* kernels built only for one-warp rows (warp_row_*.cu) */
        return say(why, n, "v=%d only for one-warp rows: fewer vectors on rows of more warps never won (fwd NV 1 "
                   "33-87%%, NV 2 80-101%% of copy vs NV 4 84-114; bwd NV 1 56-68%% vs NV 2 66-73)", vec);
    } else if (wpr > maxw) {
        return say(why, n, "a row of %ld vectors needs %ld warps of %d vectors a lane; at most %ld", nvec, wpr, nv, maxw);
    }
    if (bwd) { /* rows of 6-7 and 11-15 warps on the kernels built for 8 and 16 (wr.pad) */
        const int pad = rule("wr.pad", s, wpr);
        if (pad > wpr) wpr = pad;
    }
    /* the backward's staging (wr.stages by the warps a row, which a short row keeps); staged rows hold 2
     * vectors a lane at least: wr_bwd<T, 1, 1, S> is not built; 2 rows ahead only at 4 and 8 warps */
    const int stages = bwd ? (stages_t >= 0 ? stages_t : rule("wr.stages", s, wpr)) : 0;
    if (nv == 1 && stages > 0)
        return say(why, n, "stages=%d at v=1: not built (staging lost 1-3 points of copy under 4 warps: wr.stages)", stages);
    if (stages_t == 2 && rule("wr.stages", s, wpr) != 2)
        return say(why, n, "stages=2 is built for rows of 4 and 8 warps (wr.stages); this row takes %ld", wpr);
    const int fwd2 = !bwd && rule("wr.fwd2", s, d->dram_gbps) == 1; /* the faster memories' forward */
    if (vec < 0) {
        const int nv_min = stages > 0 ? 2 : 1;
        while (nv > nv_min && wpr * 32 * (nv / 2) >= nvec) nv /= 2; /* a short row: fewer vectors, same warps */
        /* wr.nv8, wr.nv8w: LayerNorm's rules (its two meetings a row); where wr.fwd2, LayerNorm's 8 vectors
         * start at wr.nv8w2's 2048 vectors and RMSNorm takes wr.nv8w's */
        const char *wide = s->rms ? (fwd2 ? "wr.nv8w" : NULL) : (fwd2 ? "wr.nv8w2" : "wr.nv8w");
        const int nv8 = s->rms ? -1 : rule("wr.nv8", s, nvec), nv8w = wide ? rule(wide, s, nvec) : -1;
        if (nv8 > 0) {
            nv = nv8;
            wpr = 1;
        } else if (nv8w > 0) {
            nv = nv8w;
            wpr = (nvec + 32L * nv - 1) / (32L * nv);
        }
    }
    if (!bwd && wpr > 1 && (nv == 4 || fwd2)) { /* forward rows on the kernels built for 4, 8 and 16 warps (wr.pad;
                                                  * 8 vectors a lane: wr.pad8, the 16 warps two an SM of wr.fwd2) */
        const int pad = rule(nv == 8 ? "wr.pad8" : "wr.pad", s, wpr);
        if (pad > wpr) wpr = pad;
    }
    memset(p, 0, sizeof *p);
    p->variant = KB_NORM_WARP_ROW;
    p->w = w;
    p->nv = nv;
    p->tpr = (int)(32 * wpr);
    const int blk = rule("wr.block", s, 0);
    long G = blk / p->tpr;
    if (G < 1) G = 1;
    const long gmax = wpr > 1 ? 15 : 16; /* groups of several warps meet at named barriers 1..15; one warp needs none */
    if (G > gmax) G = gmax;
    p->block = (int)(G * p->tpr);
    p->smem_static = KB_NORM_WR_RED_BYTES;
    if (!bwd) {
        if (fwd2 && nv == 8 && wpr == 16) p->lb = 1024; /* two blocks of 512 an SM (wr.fwd2) */
        return 0;
    }
    p->stages = stages;
    p->lb = 512;
    if (p->stages == 3) {
        const int lb = rule("wr.lb", s, wpr);
        if (lb > 0) p->lb = lb;
    }
    if (p->block > 512 && p->stages != 3)
        return say(why, n, "rows of %ld warps run only the staged kernel (stages=3, blocks of 640)", wpr);
    p->smem = wr_smem(p, s);
    /* the staging must fit the device's shared memory with the kernel's static
     * red (120 KiB at 640 threads: more than the 99 KiB of sm_86/89/120) */
    if (p->smem + p->smem_static > (size_t)d->smem_per_block_optin) {
        if (p->block > 512 || stages_t > 0)
            return say(why, n, "%zu bytes of shared memory for stages=%d; the device has %d a block",
                       p->smem + p->smem_static, p->stages, d->smem_per_block_optin);
        p->stages = 0;
        p->lb = 512;
        p->smem = wr_smem(p, s);
    }
    return 0;
}

static size_t bulk_smem(const kb_norm_plan *p, const kb_norm_shape *s)
{
    const size_t es = kb_dtype_size((kb_dtype)s->dtype);
    size_t m = (size_t)p->stages * (s->backward ? 2 : 1) * (size_t)(p->block / p->tpr) * (size_t)s->cols * es +
               (p->gsm ? (size_t)s->cols * es : 0);
    if (s->backward) {
        const size_t acc = p->tpr < p->block ? 2 * (size_t)s->cols * sizeof(float) : 0,
                     part = (size_t)p->block * KB_NORM_COLSUM_BYTES;
        m = zmax(m, zmax(acc, part));
    }
    return KB_NORM_RING_OFF + m;
}

/* every row bulk can take (opt reaches it by the "try" rows alone: the
 * backward past the warp rows) */
static int plan_bulk(const kb_norm_shape *s, const kb_devattr *d, const kb_norm_tune *t, kb_norm_plan *p, char *why,
                     size_t n)
{
    const int es = (int)kb_dtype_size((kb_dtype)s->dtype), w = 16 / es, bwd = s->backward, vec = tune(t, 0), slots = tune(t, 2);
    if (!sm90(d)) return say(why, n, "bulk copies need sm_90 (this device: %d.%d)", d->cc_major, d->cc_minor);
    if (s->unaligned) return say(why, n, "a tensor is not 16-byte aligned");
    if (s->cols % w) return say(why, n, "cols*%d bytes not a multiple of 16", es);
    const long nvec = s->cols / w, row_bytes = s->cols * es;
    const long maxnv = bwd ? rule("bulk.max", s, 0) / w : rule("bulk.max", s, 0);
    const long minnv = bwd ? 1 : rule("bulk.min", s, 0);
    if (vec > 0 && vec > maxnv)
        return say(why, n, "v=%d: the bulk %s holds at most %ld vectors a thread", vec, bwd ? "backward" : "forward", maxnv);
    if (vec > 0 && vec < minnv)
        return say(why, n, "v=%d: the bulk forward is built for %ld and %ld vectors a thread (opt plans %ld)", vec, minnv,
                   maxnv, minnv);
    long tpr, nv;
    if (vec > 0) {
        nv = vec;
        tpr = pow2ceil((nvec + nv - 1) / nv);
        if (tpr > 1024) return say(why, n, "a row of %ld vectors needs more than 1024 threads of v=%d", nvec, vec);
    } else {
        long nv0 = bwd ? rule("bulk.nv", s, 0) / w : rule("bulk.nv", s, 0);
        if (nv0 < 1) nv0 = 1;
        tpr = pow2ceil((nvec + nv0 - 1) / nv0);
        if (tpr > 1024) tpr = 1024;
        nv = pow2ceil((nvec + tpr - 1) / tpr);
        if (nv < minnv) nv = minnv; /* a row of 1-2 vectors: lanes idle */
        if (nv > maxnv)
            return say(why, n, "a row of %ld vectors needs %ld a thread of 1024 threads; at most %ld", nvec, nv, maxnv);
    }
    const long tens = bwd ? 2 : 1, chunk_max = rule("bulk.chunk", s, 0);
    long R = 1;
    while (R * 2 * tpr <= 1024 && R * 2 * row_bytes <= chunk_max && R < s->rows) R *= 2;
    while (R * tpr < 32) R *= 2; /* whole warps: group_sum shuffles over all 32 lanes */
    const size_t chunk = (size_t)(tens * R * row_bytes);
    memset(p, 0, sizeof *p);
    p->variant = KB_NORM_BULK;
    p->w = w;
    p->tpr = (int)tpr;
    p->nv = (int)nv;
    p->block = (int)(R * tpr);
    p->stages = slots > 0 ? slots : rule("bulk.slots", s, (long)chunk);
    if (bwd)
        p->sst = rule("bulk.stats_smem", s, 0) == 1 && R <= KB_NORM_STATS_ROWS && 2 * R <= p->block;
    if (bwd && p->block == 1024) {
        const int smax = slots > 0 ? slots : rule("bulk.slots1024", s, 0);
        const size_t room = (size_t)d->smem_per_block_optin - KB_NORM_RING_OFF,
                     gb = s->affine ? (size_t)s->cols * es : 0;
#define FIT(r) ((int)((r) / chunk < (size_t)smax ? (r) / chunk : (size_t)smax))
        p->gsm = rule("bulk.gamma_smem", s, 0) == 1 && gb && gb < room && FIT(room - gb) >= 2;
        p->stages = FIT(room - (p->gsm ? gb : 0));
        /* where one chunk is all that fits beside gamma (fp32 rows past ~45 KiB), the piped ring with gamma beside
         * it (slots=2 asks for the ring of two, gamma in L1, where two fit) */
        if (rule("bulk.pipe", s, 0) == 1 && slots <= 1 && w == 4 && nv == 4 && R == 1 && p->sst && gb < room &&
            FIT(room - gb) == 1) {
            p->pipe = 1;
            p->gsm = gb > 0 && rule("bulk.gamma_smem", s, 0) == 1;
            p->stages = 1;
        }
#undef FIT
        if (p->stages < 1)
            return say(why, n, "a chunk of %zu bytes does not fit the device's shared memory (%d a block)", chunk,
                       d->smem_per_block_optin);
        if (slots > 0 && p->stages != slots)
            return say(why, n, "slots=%d: only %d chunks of %zu bytes fit", slots, p->stages, chunk);
    }
    p->smem = bulk_smem(p, s);
    if (p->smem > (size_t)d->smem_per_block_optin)
        return say(why, n, "%zu bytes of shared memory (%d slots); the device has %d a block", p->smem, p->stages,
                   d->smem_per_block_optin);
    return 0;
}

/* The next rows into L2: a prefetch row's sixteenths of the resident rows
 * (block.cluster_pf, block.reread_ln_pf, _rms_pf; kb_norm_plan_ahead), 0
 * where no row matches the row's bytes. */
static int prefetch(const char *key, const kb_norm_shape *s, long bytes)
{
    const int v = rule(key, s, bytes);
    return v > 0 ? v : 0;
}

/* A group of tpr threads a row (a power of two), nv vectors of w elements a
 * thread in registers (nv 0: the loop kernels, one row a block). */
static int plan_block(const kb_norm_shape *s, const kb_devattr *d, kb_norm_plan *p, char *why, size_t n)
{
    const int es = (int)kb_dtype_size((kb_dtype)s->dtype), wv = 16 / es;
    memset(p, 0, sizeof *p);
    p->variant = KB_NORM_BLOCK;
    p->w = !s->unaligned && s->cols % wv == 0 ? wv : 1;
    const long nvec = (s->cols + p->w - 1) / p->w;
    /* forward rows past 64 KiB (LayerNorm 72 KiB) to 128 KiB in fp32 on sm_90: a row a block,
     * x read again through L2 (block.reread, block.reread_ln: their value is the block's threads) */
    const int rr = s->backward || p->w != wv || !sm90(d) ? -1
                 : rule(s->rms ? "block.reread" : "block.reread_ln", s, s->cols * es);
    if (rr > 0) {
        p->rr = 1, p->tpr = p->block = rr, p->nv = (int)((nvec + rr - 1) / rr);
        p->pf = !s->affine || s->rows < rule("block.reread_pf_rows", s, 0)
              ? 0 : prefetch(s->rms ? "block.reread_rms_pf" : "block.reread_ln_pf", s, s->cols * es);
        return 0;
    }
    /* a forward row past 64 KiB on sm_90: a cluster of C blocks a row, 8
     * vectors a thread (block.cluster: its value is a block's most threads) */
    const int clmax = s->backward || p->w != wv || !sm90(d) ? 0 : rule("block.cluster", s, s->cols * es);
    if (clmax > 0) {
        const int cmin = rule("block.cluster_min", s, s->cols * es); /* more, smaller blocks where they won */
        long C = cmin > 2 ? cmin : 2;
        while (C < 8 && (nvec + C - 1) / C > 8L * clmax) C *= 2;
        const long per = (nvec + C - 1) / C; /* vectors a block */
        if (per <= 8L * clmax) {
            p->cl = (int)C, p->nv = 8, p->tpr = (int)(((per + 7) / 8 + 31) / 32 * 32), p->block = p->tpr;
            const long tdown = per / 8 / 32 * 32; /* whole warps of 8 vectors, a ninth for the tail (block.cluster_tail) */
            const int tail = rule("block.cluster_tail", s, s->cols * es) == 9 ||
                             (!s->rms && rule("block.cluster_tail_ln", s, per) == 9) || /* by a block's vectors */
                             (s->rms && rule("block.cluster_tail_rms", s, s->cols * es) == 9);
            if (tail && tdown >= 64 && tdown < p->tpr && per <= 9 * tdown)
                p->nv = 9, p->tpr = p->block = (int)tdown;
            p->pf = prefetch("block.cluster_pf", s, s->cols * es);
            /* three blocks an SM where two of clmax's registers are all that fit (block.cluster3) */
            const long regs = d->regs_per_sm / (2L * KB_NORM_CL_BLOCK), cl3 = rule("block.cluster3", s, 0);
            if (p->nv == 8 && p->tpr <= cl3 && p->tpr <= KB_NORM_CL3_BLOCK && 3L * p->tpr * regs > d->regs_per_sm)
                p->lb = KB_NORM_CL3_BLOCK;
            return 0;
        }
    }
    const int elems = rule("block.elems", s, 0), emax = rule("block.max_elems", s, 0);
    const int nvmax = emax / p->w < 8 ? emax / p->w : 8;
    const int nvt = elems / p->w < 1 ? 1 : elems / p->w < nvmax ? elems / p->w : nvmax;
    const long tmax = s->backward ? KB_NORM_BWD_BLOCK : 1024;
    long tpr = pow2ceil((nvec + nvt - 1) / nvt);
    if (tpr > tmax) tpr = tmax;
    const long nv = pow2ceil((nvec + tpr - 1) / tpr);
    p->tpr = (int)tpr;
    p->nv = nv <= nvmax ? (int)nv : 0;
    if (!p->nv) p->tpr = (int)tmax;
    /* 16-byte vectors: only past what warp_row holds (fp32 forward 8 vectors a
     * thread, backward 4, the loop kernels); below it they never won and are
     * not built (block_*.cu) */
    if (p->w == wv && p->nv && !(s->backward ? p->nv == 4 : es == 4 && p->nv == 8))
        return say(why, n, "a 16-byte row that warp_row holds: block's vector kernels never won there (H100 16-bit fwd "
                   "74-101%% of copy vs 84-114, bwd 37-59%% vs 66-73) and are not built");
    const int fb = rule("block.fwd_block", s, 0);
    p->block = s->backward ? KB_NORM_BWD_BLOCK : (p->nv ? (p->tpr > fb ? p->tpr : fb) : 1024);
    if (!s->backward && !p->nv) return 0; /* loop_fwd: static shared memory only */
    const size_t acc = s->backward && p->nv && p->tpr < p->block ? 2 * (size_t)s->cols * sizeof(float) : 0,
                 part = s->backward ? (size_t)p->block * KB_NORM_COLSUM_BYTES : 0;
    p->smem = KB_NORM_RED_BYTES + zmax(acc, part);
    return 0;
}

int kb_norm_plan_make(const kb_norm_shape *s, const kb_devattr *d, int variant, const kb_norm_tune *t,
                      kb_norm_plan *p, char *why, size_t n)
{
    if (why && n) why[0] = 0;
    if (s->dtype < 0 || s->dtype > 2 || s->rows < 1 || s->cols < 1) return say(why, n, "invalid shape");
    int rc;
    switch (variant) {
    case KB_NORM_WARP_ROW: rc = plan_wr(s, d, t, p, why, n); break;
    case KB_NORM_BULK: rc = plan_bulk(s, d, t, p, why, n); break;
    case KB_NORM_BLOCK:
        if (tune(t, 0) > 0 || tune(t, 1) >= 0 || tune(t, 2) > 0) return say(why, n, "block takes no vec, stages, slots");
        rc = plan_block(s, d, p, why, n);
        break;
    case KB_NORM_AUTO:
        for (int i = 0; i < kb_norm_nrules; i++) {
            const int v = rule_at("try", s->backward, s->dtype, s->cols * (int)kb_dtype_size((kb_dtype)s->dtype), i, &i);
            if (i < 0) break;
            char tmp[160];
            rc = v == KB_NORM_WARP_ROW ? plan_wr(s, d, t, p, tmp, sizeof tmp)
               : v == KB_NORM_BULK    ? plan_bulk(s, d, t, p, tmp, sizeof tmp)
                                      : (tune(t, 0) > 0 || tune(t, 1) >= 0 || tune(t, 2) > 0) ? -1 : plan_block(s, d, p, tmp, sizeof tmp);
            if (!rc) {
                p->rule = i;
                goto done;
            }
        }
        return say(why, n, "no variant takes these tunables");
    default: return say(why, n, "unknown variant %d", variant);
    }
    if (rc) return rc;
    p->rule = -1;
done:
    p->dtype = s->dtype;
    p->backward = s->backward;
    p->cols = s->cols;
    return 0;
}

long kb_norm_plan_ahead(const kb_norm_plan *p, long resident)
{
    if (!p->pf || resident < 1) return 0;
    const long a = resident * p->pf / 16;
    return a > 0 ? a : 1;
}

void kb_norm_plan_describe(const kb_norm_plan *p, char *buf, size_t n)
{
    switch (p->variant) {
    case KB_NORM_WARP_ROW:
        if (!p->backward) snprintf(buf, n, "warp_row v=%d warps=%d%s", p->nv, p->tpr / 32, p->lb == 1024 ? " lb=1024" : "");
        else snprintf(buf, n, "warp_row v=%d warps=%d stages=%d lb=%d", p->nv, p->tpr / 32, p->stages, p->lb);
        break;
    case KB_NORM_BULK:
        if (!p->backward) snprintf(buf, n, "bulk v=%d rows=%d slots=%d", p->nv, p->block / p->tpr, p->stages);
        else
            snprintf(buf, n, "bulk v=%d rows=%d slots=%d gamma=%s stats=%s%s", p->nv, p->block / p->tpr, p->stages,
                     p->gsm ? "smem" : "l1", p->sst ? "smem" : "regs", p->pipe ? " pipe" : "");
        break;
    case KB_NORM_BLOCK: {
        char lb[16] = "", pf[16] = "";
        if (p->lb) snprintf(lb, sizeof lb, " lb=%d", p->lb); /* block.cluster3 */
        if (p->pf) snprintf(pf, sizeof pf, " pf=%d", p->pf); /* block.cluster_pf, block.reread_ln_pf, _rms_pf */
        if (p->cl) snprintf(buf, n, "block cluster=%d tpr=%d v=%d w=%d%s%s", p->cl, p->tpr, p->nv, p->w, lb, pf);
        else if (p->rr) snprintf(buf, n, "block reread v=%d w=%d%s", p->nv, p->w, pf);
        else if (!p->nv) snprintf(buf, n, "block loop w=%d", p->w);
        else snprintf(buf, n, "block tpr=%d v=%d w=%d", p->tpr, p->nv, p->w);
        break;
    }
    default: snprintf(buf, n, "none");
    }
}
