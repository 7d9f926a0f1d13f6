/* The conditions' words (conditions.h). */
#include "conditions.h"

#include <stdio.h>
#include <string.h>

static const struct {
    unsigned long long bit;
    const char *name;
} reason_names[] = {
    {KB_REASON_APP_CLOCKS, "app_clocks"},
    {KB_REASON_SW_POWER_CAP, "sw_power_cap"},
    {KB_REASON_HW_SLOWDOWN, "hw_slowdown"},
    {KB_REASON_SYNC_BOOST, "sync_boost"},
    {KB_REASON_SW_THERMAL, "sw_thermal"},
    {KB_REASON_HW_THERMAL, "hw_thermal"},
    {KB_REASON_HW_POWER_BRAKE, "hw_power_brake"},
    {KB_REASON_DISPLAY_CLOCKS, "display_clocks"},
    {KB_REASON_BOARD_LIMIT, "board_limit"},
    {KB_REASON_RELIABILITY, "reliability"},
};

const char *kb_throttle_names(unsigned long long reasons, char *buf, size_t n)
{
    if (!buf || n == 0) return buf;
    buf[0] = 0;
    size_t len = 0;
    unsigned long long rest = reasons & ~KB_REASON_GPU_IDLE;
    char hex[24];
    for (size_t i = 0; i <= sizeof reason_names / sizeof reason_names[0]; i++) {
        const char *name;
        if (i < sizeof reason_names / sizeof reason_names[0]) {
            if (!(rest & reason_names[i].bit)) continue;
            rest &= ~reason_names[i].bit;
            name = reason_names[i].name;
        } else {
            if (!rest) break;
            snprintf(hex, sizeof hex, "0x%llx", rest);
            name = hex;
        }
        int w = snprintf(buf + len, n - len, "%s%s", len ? "," : "", name);
        if (w < 0 || (size_t)w >= n - len) { /* truncated: end at the last whole name */
            buf[len] = 0;
            break;
        }
        len += (size_t)w;
    }
    return buf;
}
