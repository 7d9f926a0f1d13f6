/* Harness settings: one table drives the common flags and the "settings"
 * object of a sweep file. */
#include "errors.h"
#include "params.h"
#include "settings.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define F(field) offsetof(kb_opts, field), sizeof(((kb_opts *)0)->field)

const kb_setting kb_settings[] = {
    {"impl", KB_S_STR, F(impl), "", 0, 0,
     "implementations to run, comma-separated (default: all); NAME=./lib.so loads a plugin as NAME"},
    {"plugin", KB_S_STR, F(plugin), "", 0, 0,
     "plugins to load, NAME=./lib.so,... (include/kbench_plugin.h; see kbench plugin --help)"},
    {"csv", KB_S_STR, F(csv), "", 0, 0, "CSV output file (default: OUT_DIR/NAME.csv)"},
    {"json", KB_S_STR, F(json), "", 0, 0, "JSON output file (default: OUT_DIR/NAME.json)"},
    {"out_dir", KB_S_STR, F(out_dir), "results", 0, 0, "directory for default outputs"},
    {"seed", KB_S_U64, F(seed), "1", 0, 0,
     "seed of the random inputs (each case draws from this and its own op and parameters: alone or in any sweep, "
     "a case gets the same inputs)"},
    {"hot", KB_S_BOOL, F(hot), "0", 0, 1, "do not flush L2 before each sample"},
    {"min_samples", KB_S_INT, F(min_samples), "20", 1, 1e7, "samples at least"},
    {"min_time", KB_S_FLOAT, F(min_time), "0.3", 0, 3600, "seconds of measured kernel time at least"},
    {"max_noise", KB_S_FLOAT, F(max_noise), "1", 0, 100, "stop once stddev/mean is under this (%)"},
    {"timeout", KB_S_FLOAT, F(timeout), "10", 0.001, 36000, "seconds per case and implementation at most"},
    {"warmup", KB_S_INT, F(warmup), "3", 0, 1000, "untimed launches before sampling"},
    {"no_verify", KB_S_BOOL, F(no_verify), "0", 0, 1, "skip the check against the CPU reference"},
    {"quiet", KB_S_BOOL, F(quiet), "0", 0, 1, "no table on stdout, no progress on stderr (a terminal: a line rewritten at each case; else a line every 30 s)"},
    {"python", KB_S_STR, F(python), "", 0, 0,
     "the Python interpreter whose packages Python implementations (.py) use; default: python3 on PATH "
     "(its shared libpython is loaded at run time: docs/python.md)"},
    {"isolate", KB_S_STR, F(isolate), "auto", 0, 0,
     "auto: a plugin's implementations run in a helper process, so a fault or a hang costs their rows only "
     "(timing equal to in-process: docs/plugins.md); off: in kbench's own process (a fault ends the sweep)",
     "auto,off"},
    {"timing", KB_S_STR, F(timing), "auto", 0, 0,
     "events: CUDA events around each launch; graph: the launches replayed from a CUDA graph "
     "(no CPU launch overhead inside a sample; the L2 flush is a node before each); auto: graph for Python "
     "implementations (their dispatch, up to 3x a small kernel, kept out of the samples), events for the rest "
     "(docs/python.md)",
     "auto,events,graph"},
    {"order", KB_S_STR, F(order), "turns", 0, 0,
     "turns: a case's implementations are each prepared and verified, then timed in turns, a batch of samples "
     "(about 20 ms) each in rounds that run backward and forward in turn (ABBA), so all see the same clocks "
     "(under a power cap the one timed last is no longer the slowest; docs/timing.md), their buffers all held at "
     "once; sequence: one after another, each to its end",
     "turns,sequence"},
    {"save_samples", KB_S_BOOL, F(save_samples), "0", 0, 1, "keep every sample in the JSON (samples_ms)"},
    {"throttle_threshold", KB_S_FLOAT, F(throttle_threshold), "0.75", 0, 1,
     "a row is throttled when its lowest SM clock is under this share of the maximum (0: off)"},
    {"devices", KB_S_STR, F(devices), "", 0, 0,
     "run on several GPUs at once: all, or a list (0,2,3); a worker process per GPU, cases handed out "
     "longest first (the GPU's time or the CPU reference's), GPUs of one model sharing the GEMM ladders' search, one CSV and JSON in case "
     "order (default: device 0 alone)"},
    {"shard", KB_S_STR, F(shard), "", 0, 0,
     "run only shard K of N of the cases (K/N, K from 0; the shards partition the sweep, "
     "balanced by estimated wall time; kbench merge joins their outputs)"},
};
const int kb_nsettings = (int)(sizeof kb_settings / sizeof kb_settings[0]);

/* text is none of s's choices: -1 with err. A list of them ("events,graph")
 * is said to be one: a setting is one value for the whole run (timing is no
 * axis of the cases), so two runs and kbench compare set them side by side.
 * A choice in other case, or a near miss, is named. */
static int bad_choice(const kb_setting *s, const char *text, char *err, size_t errlen)
{
    char alts[160] = "", words[8][32];
    const char *cands[8];
    int n = 0, all = 1;
    for (const char *q = s->choices; *q;) { /* "a,b,c": a, b or c */
        size_t l = strcspn(q, ","), used = strlen(alts);
        const char *next = q + l + (q[l] == ',');
        snprintf(alts + used, sizeof alts - used, "%s%.*s", used ? (*next ? ", " : " or ") : "", (int)l, q);
        if (n < 8) {
            snprintf(words[n], sizeof words[n], "%.*s", (int)l, q);
            cands[n] = words[n];
            n++;
        }
        q = next;
    }
    for (const char *t = text; all && *t;) { /* each comma-separated word a choice */
        size_t l = strcspn(t, ",");
        char w[32];
        snprintf(w, sizeof w, "%.*s", (int)(l < 31 ? l : 31), t);
        all = l > 0 && l < 31 && kb_list_has(s->choices, w);
        t += l + (t[l] == ',');
    }
    if (all && strchr(text, ',')) { /* the first two named, as the user wrote them */
        const size_t l1 = strcspn(text, ","), l2 = strcspn(text + l1 + 1, ",");
        kb_errf(err, errlen, "%s takes one value, %s, not a list; for both, run twice (--%s %.*s, then --%s %.*s) and "
                "kbench compare the two result files", s->name, alts, s->name, (int)l1, text, s->name, (int)l2,
                text + l1 + 1);
        return -1;
    }
    const char *near = NULL;
    for (int i = 0; i < n && !near; i++)
        if (!strcasecmp(text, cands[i])) near = cands[i];
    if (!near) near = kb_nearest(text, cands, n);
    kb_errf(err, errlen, "%s: expected %s, got '%s'%s%s%s", s->name, alts, text, near ? " (did you mean " : "",
            near ? near : "", near ? "?)" : "");
    return -1;
}

int kb_opts_set(kb_opts *o, const char *name, const char *text, char *err, size_t errlen)
{
    for (int i = 0; i < kb_nsettings; i++) {
        const kb_setting *s = &kb_settings[i];
        if (strcmp(s->name, name) != 0) continue;
        char *p = (char *)o + s->offset, *end;
        errno = 0;
        switch (s->type) {
        case KB_S_STR:
            if (s->choices && !kb_list_has(s->choices, text)) return bad_choice(s, text, err, errlen);
            if (strlen(text) >= s->size) {
                kb_errf(err, errlen, "%s: too long (more than %zu characters)", name, s->size - 1);
                return -1;
            }
            if (!text[0] && !strcmp(name, "out_dir")) { /* "" joined to NAME.csv is /NAME.csv */
                kb_errf(err, errlen, "%s: an empty path (give a directory; . for this one)", name);
                return -1;
            }
            if (!strcmp(name, "impl")) /* names have none, and an unknown name is echoed later (run.c) */
                for (const char *c = text; *c; c++)
                    if ((unsigned char)*c < 0x20 || *c == 0x7f) {
                        kb_errf(err, errlen, "%s: a control character in '%s' (implementation names: see kbench list)",
                                name, text);
                        return -1;
                    }
            strcpy(p, text);
            return 0;
        case KB_S_BOOL:
            if (!strcmp(text, "1") || !strcmp(text, "true")) *(int *)p = 1;
            else if (!strcmp(text, "0") || !strcmp(text, "false")) *(int *)p = 0;
            else { snprintf(err, errlen, "%s: expected true or false, got '%s'", name, text); return -1; }
            return 0;
        case KB_S_U64: {
            unsigned long long v = strtoull(text, &end, 10); /* decimal: 010 is ten, 0x10 refused */
            if (end == text || *end || strchr(text, '-') || !kb_decimal_syntax(text, strlen(text))) {
                snprintf(err, errlen, "%s: expected a non-negative decimal integer, got '%s'", name, text);
                return -1;
            }
            if (errno) { snprintf(err, errlen, "%s: '%s' is past the largest value, 2^64-1", name, text); return -1; }
            *(uint64_t *)p = v;
            return 0;
        }
        case KB_S_INT:
        case KB_S_FLOAT: {
            double v = strtod(text, &end);
            if (end == text || *end || !isfinite(v) || !kb_decimal_syntax(text, strlen(text))) {
                snprintf(err, errlen, "%s: expected a decimal number, got '%s'", name, text);
                return -1;
            }
            if (errno) { snprintf(err, errlen, "%s: '%s' is out of the range of a double (about 1e-308 to 1e308)", name, text); return -1; }
            if (s->type == KB_S_INT && v != floor(v)) { snprintf(err, errlen, "%s: expected an integer, got '%s'", name, text); return -1; }
            if (v < s->min || v > s->max) { snprintf(err, errlen, "%s = %s is out of bounds [%g, %g]", name, text, s->min, s->max); return -1; }
            if (s->type == KB_S_INT) *(int *)p = (int)v;
            else *(double *)p = v;
            return 0;
        }
        }
    }
    const char *names[64];
    for (int i = 0; i < kb_nsettings; i++) names[i] = kb_settings[i].name;
    const char *near = kb_nearest(name, names, kb_nsettings);
    if (near) snprintf(err, errlen, "unknown setting '%s' (did you mean '%s'?)", name, near);
    else snprintf(err, errlen, "unknown setting '%s'", name);
    return -1;
}

void kb_opts_default(kb_opts *o)
{
    char err[KB_ERRLEN];
    memset(o, 0, sizeof *o);
    for (int i = 0; i < kb_nsettings; i++)
        if (kb_opts_set(o, kb_settings[i].name, kb_settings[i].def, err, sizeof err)) abort();
}
