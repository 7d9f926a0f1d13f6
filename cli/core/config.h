/* A plan: the cases of a sweep file or of flags, with their settings (config.c). */
#ifndef KB_CORE_CONFIG_H
#define KB_CORE_CONFIG_H

#include "op.h"
#include "settings.h"

struct cJSON;
/* cJSON_ParseWithOpts of a whole text (config.c); on a syntax error NULL,
 * with where it stopped (*at) and that place's 1-based line and column */
struct cJSON *kb_json_parse(const char *text, const char **at, int *line, int *col);

#define KB_MAX_SET_AXES 8
typedef struct {
    kb_case *cases;
    int ncases;
    kb_opts opts;        /* settings from the file, then flags override */
    /* axes given on the command line (kbench sweep --set NAME=VALUES), set
     * before parsing: in every sweep whose op has the parameter NAME, its
     * axis becomes VALUES (read like a flag value); a NAME no sweep's op has
     * is an error */
    int nset;
    const char *set_name[KB_MAX_SET_AXES], *set_val[KB_MAX_SET_AXES];
    /* set by kb_plan_shard: the whole sweep's identity, size and ops, and the
     * shard this plan holds (shard_n 0: all of it) */
    char sweep_id[17];
    int sweep_cases, shard_k, shard_n;
    const struct kb_op *ops_all[32];
    int nops_all;
} kb_plan;

/* Give every case its own seed from the run's seed (after flags are applied). */
void kb_plan_seed(kb_plan *plan);
/* Parse a sweep file's text; name is for messages. 0 or -1 with err. */
int kb_config_parse(const char *text, const char *name, kb_plan *plan, char *err, size_t errlen);
int kb_config_load(const char *path, kb_plan *plan, char *err, size_t errlen);
/* A JSON file's whole text (malloc'd, NUL-terminated): refused with one line
 * in err when missing, a directory, not a regular file (a FIFO would block),
 * larger than max_bytes, unreadable or holding a NUL byte. kind names it in
 * messages ("sweep file"). 0 or -1. */
int kb_read_text(const char *path, const char *kind, long max_bytes, char **text, char *err, size_t errlen);
/* One sweep object to cases; all_enums sweeps enum parameters it omits over every choice. */
int kb_config_sweep(const struct cJSON *sw, const char *where, int all_enums, kb_case **cases, int *ncases,
                    char *err, size_t errlen);
extern const char kb_default_config[]; /* configs/default.json, embedded */

#endif
