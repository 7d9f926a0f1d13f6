/* RoPE opt's launch plan: host code with no GPU in it (plan.c), so tests
 * pin it on the CPU; the kernel (opt.cu) runs what it says. */
#ifndef KB_ROPE_PLAN_H
#define KB_ROPE_PLAN_H
#include <stddef.h>

#include "../kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* constants of the kernel, with their reasons in plan.c */
enum { KB_ROPE_THREADS = 256, KB_ROPE_TABLE = 4096, KB_ROPE_UNITS = 4 };

typedef struct {
    int v;          /* elements a vector: the widest (<= 16 bytes) with dim % v == 0, rot % 2v == 0 */
    int async;      /* loads staged in shared memory by cp.async (v * element >= 4 bytes) */
    long groups;    /* rows sharing a position: sbhd s, bshd b*s, thd tokens */
    int rpg;        /* rows a group */
    int gpb;        /* groups a block (small groups) */
    unsigned chunks; /* blocks a group (large groups) */
    long blocks;
    size_t smem;    /* dynamic shared memory: the cos/sin table, then the staging */
} kb_rope_plan;

/* The plan for a (the tensors' alignment included); 0, or -1 when the
 * arguments are invalid. */
int kb_rope_plan_make(const kb_rope_args *a, kb_rope_plan *p);
/* "opt v=8 cp.async groups/block=4" or "... blocks/group=3" */
void kb_rope_plan_describe(const kb_rope_plan *p, char *buf, size_t n);
/* Untimed: lets the kernel take the plan's shared memory; 0 or a cudaError. */
int kb_rope_opt_prepare(const kb_rope_args *a, const kb_rope_plan *p);
/* Runs a plan made by kb_rope_plan_make for the same arguments. */
int kb_rope_opt_run(const kb_rope_args *a, const kb_rope_plan *p, void *stream);

#ifdef __cplusplus
}
#endif
#endif
