/* Published attributes of a few GPUs (CUDA Programming Guide, compute
 * capability tables; SM counts of the shipping parts), for planner tests. */
#include "../../include/kb_devattr.h"

#include <string.h>

static const struct {
    const char *name;
    kb_devattr a;
} presets[] = {
    {"h100", {9, 0, 132, 2048, 65536, 228 * 1024, 227 * 1024, 50L << 20, 3352}},
    {"h200", {9, 0, 132, 2048, 65536, 228 * 1024, 227 * 1024, 60L << 20, 4800}}, /* the H100's SMs, HBM3e */
    {"a100", {8, 0, 108, 2048, 65536, 164 * 1024, 163 * 1024, 40L << 20, 2039}},
    {"l40s", {8, 9, 142, 1536, 65536, 100 * 1024, 99 * 1024, 96L << 20, 864}},
};

const kb_devattr *kb_devattr_preset(const char *name)
{
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (!strcmp(presets[i].name, name)) return &presets[i].a;
    return NULL;
}
