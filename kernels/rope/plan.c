/* RoPE opt's plan (see plan.h). The kernel's constants, each with the
 * measurement that set it (H100, forward, % of the size-matched copy; the
 * history is in git, commit 84e59fa and kernels/rope/DESIGN.md):
 *  - KB_ROPE_UNITS 4 work units (vector pairs) a thread, all loaded before
 *    the cos/sin table is built, so the table's latency hides behind them;
 *  - loads staged in shared memory by cp.async where a vector is 4 bytes or
 *    more: 16-bit sbhd 84 -> 87.5 (bytes in flight bounded by shared memory,
 *    not by registers);
 *  - the widest vector the shape keeps aligned: a 16-byte vector is one
 *    load (fp32 98, 16-bit 97 with the transposed table);
 *  - several small groups a block up to KB_ROPE_TABLE table entries (32 KiB):
 *    bshd (8 KiB groups) 56 -> 64-70 when blocks took one group each. */
#include "plan.h"
#include "../../include/kb_dtype.h"

#include <stdint.h>
#include <stdio.h>


int kb_rope_plan_make(const kb_rope_args *a, kb_rope_plan *p)
{
    *p = (kb_rope_plan){0};
    if (a->rot < 2 || a->rot % 2 || a->rot > a->dim || a->heads <= 0 || a->dtype < 0 || a->dtype > 2) return -1;
    const size_t es = kb_dtype_size((kb_dtype)a->dtype);
    const int maxv = (int)(16 / es);
    for (int v = maxv; v >= 1; v /= 2)
        if (a->dim % v == 0 && a->rot % (2 * v) == 0 && (uintptr_t)a->in % (v * es) == 0 &&
            (uintptr_t)a->out % (v * es) == 0) {
            p->v = v;
            break;
        }
    p->async = p->v * es >= 4;
    if (a->layout == KB_ROPE_SBHD) { p->groups = a->seq; p->rpg = a->batch * a->heads; }
    else if (a->layout == KB_ROPE_BSHD) { p->groups = (long)a->batch * a->seq; p->rpg = a->heads; }
    else { p->groups = a->tokens; p->rpg = a->heads; }
    const int half = a->rot / 2;
    const unsigned step = KB_ROPE_THREADS * KB_ROPE_UNITS;
    const unsigned upg = (unsigned)p->rpg * (unsigned)(half / p->v + (a->dim - a->rot) / p->v); /* units a group */
    p->gpb = 1;
    p->chunks = (upg + step - 1) / step;
    if (p->chunks <= 1) { /* small groups: several a block, as many as fill it and the table holds */
        p->chunks = 1;
        int gpb = (int)(step / (upg ? upg : 1)), cap = half ? KB_ROPE_TABLE / half : KB_ROPE_THREADS;
        if (gpb > cap) gpb = cap;
        if (gpb > KB_ROPE_THREADS) gpb = KB_ROPE_THREADS;
        p->gpb = gpb < 1 ? 1 : gpb;
    }
    p->blocks = (p->groups + p->gpb - 1) / p->gpb * p->chunks; /* < 2^31, as elements a tensor are */
    const size_t stage = p->async ? 2u * KB_ROPE_UNITS * KB_ROPE_THREADS * p->v * es : 0;
    p->smem = (size_t)(p->gpb * half + 1) / 2 * 2 * 8 /* float2 */ + stage;
    return 0;
}

void kb_rope_plan_describe(const kb_rope_plan *p, char *buf, size_t n)
{
    if (p->chunks > 1)
        snprintf(buf, n, "opt v=%d%s blocks/group=%u", p->v, p->async ? " cp.async" : "", p->chunks);
    else
        snprintf(buf, n, "opt v=%d%s groups/block=%d", p->v, p->async ? " cp.async" : "", p->gpb);
}
