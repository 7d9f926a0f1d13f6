/* The harness options (kb_opts): flags and a sweep file's "settings" from one
 * table (settings.c). */
#ifndef KB_CORE_SETTINGS_H
#define KB_CORE_SETTINGS_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    char impl[256];     /* comma list of implementations, "" = all */
    char csv[PATH_MAX], json[PATH_MAX], out_dir[PATH_MAX]; /* whole paths: a longer one is refused */
    uint64_t seed;
    int hot, no_verify, quiet;
    int min_samples;
    double min_time, max_noise, timeout;
    int warmup;
    char plugin[1024];         /* plugins to load: "NAME=PATH,..." (--plugin, a sweep file's "plugins") */
    int save_samples;          /* every sample into the JSON (samples_ms) */
    char order[12];            /* "turns": a case's implementations timed in turns (harness/timer.h kb_time_turns); "sequence" */
    char timing[8];            /* "events" (default) or "graph" */
    double throttle_threshold; /* a row is throttled below this share of the max SM clock */
    char shard[32];            /* "K/N": only shard K of N of the cases (shard.c); "" all */
    char devices[256];         /* "all" or "0,2,3": a worker process per GPU (devices.c); "" device 0 */
    char python[1024];         /* the interpreter of Python implementations: "" python3 on PATH (core/pyrt.h) */
    char isolate[8];           /* "auto": plugin implementations in a helper process (harness/isolate.c); "off": in kbench's */
} kb_opts;

typedef enum { KB_S_STR, KB_S_INT, KB_S_U64, KB_S_FLOAT, KB_S_BOOL } kb_stype;
typedef struct {
    const char *name; /* JSON key; the flag is --name with '-' for '_' */
    kb_stype type;
    size_t offset, size;
    const char *def;
    double min, max;
    const char *help;
    const char *choices; /* strings: the values it takes, comma list; NULL: any */
} kb_setting;

extern const kb_setting kb_settings[];
extern const int kb_nsettings;
void kb_opts_default(kb_opts *o);
int kb_opts_set(kb_opts *o, const char *name, const char *text, char *err, size_t errlen);

#endif
