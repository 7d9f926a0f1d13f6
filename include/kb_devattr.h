/* The device's attributes that plans depend on, queried once per process
 * (cli/harness/device.c: kb_devattr_query) and passed down: planners are host code
 * with no GPU in them, so a test can plan for an H100, an A100 or an sm_89
 * part on a machine without one (kb_devattr_preset). Plain C: included by
 * cli/, kernels/ and refs/. */
#ifndef KB_DEVATTR_H
#define KB_DEVATTR_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int cc_major, cc_minor;
    int sm_count;
    int max_threads_per_sm;
    int regs_per_sm;          /* 32-bit registers */
    int smem_per_sm;          /* bytes of shared memory an SM has for blocks */
    int smem_per_block_optin; /* bytes one block may opt in to */
    long l2_bytes;
    int dram_gbps; /* peak DRAM bandwidth, GB/s: 2 x the memory clock x the bus width (0: unknown) */
} kb_devattr;

/* Published figures of a few parts, for planner tests: "h100" (SXM, sm_90),
 * "h200" (SXM, sm_90), "a100" (SXM, sm_80), "l40s" (sm_89). NULL for an
 * unknown name. */
const kb_devattr *kb_devattr_preset(const char *name);

#ifdef __cplusplus
}
#endif
#endif
