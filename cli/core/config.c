/* JSON sweep files (cJSON).
 *
 *   {"settings": {harness settings},
 *    "sweeps": [{"op": "rope", "pass": ["fwd", "bwd"], "seq": [512, 1024], "dtype": "bf16"}]}
 *
 * Every array is an axis and a sweep's cases are the cartesian product of its
 * axes; a scalar is a one-value axis; a string is read like a flag's value
 * ("512:8192:x2", "all"). An int-list parameter (seqlens) takes an array of
 * numbers as one value, or an array of such arrays as an axis.
 */
#include "config.h"
#include "errors.h"
#include "op.h"
#include "params.h"
#include "plugin.h"
#include "pyrt.h"
#include "registry.h"
#include "settings.h"
#include "../../include/kb_dtype.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Text of a JSON scalar as a flag would carry it. */
/* A scalar as flag text: 0; -1 not a scalar; -2 a string of n characters or more (never cut short). */
static int scalar_text(const cJSON *v, char *buf, size_t n)
{
    if (cJSON_IsString(v)) {
        if (strlen(v->valuestring) >= n) return -2;
        snprintf(buf, n, "%s", v->valuestring);
        return 0;
    }
    if (cJSON_IsBool(v)) { snprintf(buf, n, "%s", cJSON_IsTrue(v) ? "true" : "false"); return 0; }
    if (cJSON_IsNumber(v)) { snprintf(buf, n, "%.17g", v->valuedouble); return 0; }
    return -1;
}

static const char *json_type(const cJSON *v)
{
    if (cJSON_IsArray(v)) return "an array";
    if (cJSON_IsObject(v)) return "an object";
    if (cJSON_IsNull(v)) return "null";
    return "a scalar";
}

/* Append the textual form of a list of ints (an int-list value). */
static int intlist_text(const cJSON *arr, char *buf, size_t n, const char *key, char *err, size_t errlen)
{
    size_t o = 0;
    buf[0] = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, arr) {
        if (!cJSON_IsNumber(e)) { kb_errf(err, errlen, "%s: expected a list of integers", key); return -1; }
        if (o + 24 >= n) { kb_errf(err, errlen, "%s: list too long", key); return -1; }
        o += (size_t)snprintf(buf + o, n - o, "%s%.17g", o ? "," : "", e->valuedouble);
    }
    if (!o) snprintf(buf, n, "none");
    return 0;
}

static int sweep_axis_text(const kb_param *p, const cJSON *v, char **out, char *err, size_t errlen)
{
    size_t cap = 1 << 16;
    char *buf = malloc(cap), item[1 << 14];
    size_t o = 0;
    if (!buf) { kb_errf(err, errlen, "%s: out of memory", p->name); return -1; }
    buf[0] = 0;
    const char *sep = p->type == KB_P_INTLIST ? "/" : ",";
    if (p->type == KB_P_INTLIST && cJSON_IsArray(v)) {
        const cJSON *first = cJSON_GetArrayItem(v, 0);
        if (!first || cJSON_IsNumber(first)) { /* one list */
            if (intlist_text(v, buf, cap, p->name, err, errlen)) { free(buf); return -1; }
            *out = buf;
            return 0;
        }
        const cJSON *e;
        cJSON_ArrayForEach(e, v) {
            if (!cJSON_IsArray(e)) { kb_errf(err, errlen, "%s: expected an array of integer arrays", p->name); free(buf); return -1; }
            if (intlist_text(e, item, sizeof item, p->name, err, errlen)) { free(buf); return -1; }
            if (o + strlen(item) + 2 >= cap) { kb_errf(err, errlen, "%s: too long", p->name); free(buf); return -1; }
            o += (size_t)snprintf(buf + o, cap - o, "%s%s", o ? sep : "", item);
        }
        *out = buf;
        return 0;
    }
    if (cJSON_IsArray(v)) {
        if (cJSON_GetArraySize(v) == 0) { kb_errf(err, errlen, "%s: empty array (an axis needs at least one value)", p->name); free(buf); return -1; }
        const cJSON *e;
        cJSON_ArrayForEach(e, v) {
            int sr = scalar_text(e, item, sizeof item);
            if (sr == -2) {
                kb_errf(err, errlen, "%s: an element longer than %zu characters", p->name, sizeof item - 1);
                free(buf);
                return -1;
            }
            if (sr) {
                kb_errf(err, errlen, "%s: array elements must be numbers or strings, got %s", p->name, json_type(e));
                free(buf);
                return -1;
            }
            if (o + strlen(item) + 2 >= cap) { kb_errf(err, errlen, "%s: too long", p->name); free(buf); return -1; }
            o += (size_t)snprintf(buf + o, cap - o, "%s%s", o ? sep : "", item);
        }
        *out = buf;
        return 0;
    }
    int sr = scalar_text(v, buf, cap);
    if (sr == -2) {
        kb_errf(err, errlen, "%s: a value longer than %zu characters", p->name, cap - 1);
        free(buf);
        return -1;
    }
    if (sr) {
        kb_errf(err, errlen, "%s: expected a number, a string or an array, got %s", p->name, json_type(v));
        free(buf);
        return -1;
    }
    *out = buf;
    return 0;
}

cJSON *kb_json_parse(const char *text, const char **at, int *line, int *col)
{
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(text, &end, 1);
    if (root) return root;
    *at = end ? end : cJSON_GetErrorPtr();
    if (!*at) *at = text;
    *line = 1;
    *col = 1;
    for (const char *s = text; s < *at && *s; s++) {
        if (*s == '\n') { (*line)++; *col = 1; }
        else (*col)++;
    }
    return NULL;
}

/* "plugins": {"NAME": "lib.so", ...} into o->plugin ("NAME=PATH,..."), a
 * relative path taken from the sweep file's directory */
static int plugins_setting(const cJSON *obj, kb_opts *o, const char *name, char *err, size_t errlen)
{
    if (!cJSON_IsObject(obj)) {
        kb_errf(err, errlen, "%s: settings.plugins: expected an object {\"NAME\": \"path.so\"}, got %s", name, json_type(obj));
        return -1;
    }
    const char *slash = strrchr(name, '/');
    int dirlen = slash ? (int)(slash - name) : 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, obj) {
        if (!cJSON_IsString(e) || !e->valuestring[0]) {
            kb_errf(err, errlen, "%s: settings.plugins.%s: expected a library path", name, e->string);
            return -1;
        }
        if (!kb_plugin_name_ok(e->string)) {
            kb_errf(err, errlen, "%s: settings.plugins: bad plugin name '%s' (letters, digits, '_', '-', '.')", name,
                    e->string);
            return -1;
        }
        const char *path = e->valuestring;
        size_t used = strlen(o->plugin);
        int w = path[0] == '/' || !dirlen
                    ? snprintf(o->plugin + used, sizeof o->plugin - used, "%s%s=%s", used ? "," : "", e->string, path)
                    : snprintf(o->plugin + used, sizeof o->plugin - used, "%s%s=%.*s/%s", used ? "," : "", e->string,
                               dirlen, name, path);
        if (w < 0 || (size_t)w >= sizeof o->plugin - used || strchr(path, ',')) {
            o->plugin[used] = 0;
            kb_errf(err, errlen, "%s: settings.plugins.%s: %s", name, e->string,
                    strchr(path, ',') ? "a comma in the path" : "the plugin list is longer than 1023 characters");
            return -1;
        }
    }
    return 0;
}

static int parse_settings(const cJSON *obj, kb_opts *o, const char *name, char *err, size_t errlen)
{
    if (!cJSON_IsObject(obj)) { kb_errf(err, errlen, "%s: \"settings\" must be an object", name); return -1; }
    const cJSON *e;
    cJSON_ArrayForEach(e, obj) {
        char text[1024], e2[KB_ERRLEN];
        if (!strcmp(e->string, "plugins")) { /* {"NAME": "path.so", ...}, paths relative to the sweep file */
            if (plugins_setting(e, o, name, err, errlen)) return -1;
            continue;
        }
        int sr = scalar_text(e, text, sizeof text);
        if (sr == -2) {
            kb_errf(err, errlen, "%s: settings.%s: longer than %zu characters", name, e->string, sizeof text - 1);
            return -1;
        }
        if (sr) {
            kb_errf(err, errlen, "%s: settings.%s: expected a scalar, got %s", name, e->string, json_type(e));
            return -1;
        }
        if (kb_opts_set(o, e->string, text, e2, sizeof e2)) {
            kb_errf(err, errlen, "%s: settings: %s", name, e2);
            return -1;
        }
    }
    return 0;
}

/* Expand one sweep object into plan's cases. If check_all_enums, enum
 * parameters the object leaves out are swept over every choice. */
/* kb_config_sweep, then the plan's command-line axes (hits[i]: sweeps they applied to) */
static int config_sweep(const cJSON *sw, const char *where, int all_enums, const kb_plan *set, int *hits,
                        kb_case **cases, int *ncases, char *err, size_t errlen);

int kb_config_sweep(const cJSON *sw, const char *where, int all_enums, kb_case **cases, int *ncases, char *err,
                    size_t errlen)
{
    return config_sweep(sw, where, all_enums, NULL, NULL, cases, ncases, err, errlen);
}

static int config_sweep(const cJSON *sw, const char *where, int all_enums, const kb_plan *set, int *hits,
                        kb_case **cases, int *ncases, char *err, size_t errlen)
{
    char e2[KB_ERRLEN];
    if (!cJSON_IsObject(sw)) { kb_errf(err, errlen, "%s: a sweep must be an object", where); return -1; }
    const cJSON *opj = cJSON_GetObjectItemCaseSensitive(sw, "op");
    if (!opj) { kb_errf(err, errlen, "%s: missing \"op\" (one of the ops in: kbench list)", where); return -1; }
    if (!cJSON_IsString(opj)) {
        char names[256] = "";
        for (int i = 0, o = 0; i < kb_nops && o < (int)sizeof names; i++)
            o += snprintf(names + o, sizeof names - (size_t)o, "%s%s", i ? ", " : "", kb_ops[i]->name);
        kb_errf(err, errlen, "%s: \"op\" must be a string naming an op (%s), got %s", where, names,
                cJSON_IsNumber(opj) ? "a number" : cJSON_IsBool(opj) ? "a boolean" : json_type(opj));
        return -1;
    }
    const kb_op *op = kb_find_op(opj->valuestring);
    if (!op) {
        const char *names[32];
        for (int i = 0; i < kb_nops; i++) names[i] = kb_ops[i]->name;
        const char *near = kb_nearest(opj->valuestring, names, kb_nops);
        kb_errf(err, errlen, "%s: unknown op '%s'%s%s%s", where, opj->valuestring, near ? " (did you mean '" : "",
             near ? near : "", near ? "'?)" : "");
        return -1;
    }
    kb_sweep s;
    kb_sweep_init(&s, op);
    if (all_enums)
        for (int i = 0; i < op->nparams; i++)
            if (op->params[i].type == KB_P_ENUM && !op->params[i].tunable &&
                !cJSON_GetObjectItemCaseSensitive(sw, op->params[i].name))
                kb_sweep_set(&s, op->params[i].name, "all", e2, sizeof e2);
    const cJSON *e;
    cJSON_ArrayForEach(e, sw) {
        if (!strcmp(e->string, "op") || !strcmp(e->string, "description")) continue;
        int pi = kb_param_index(op, e->string);
        if (pi < 0) {
            kb_sweep_set(&s, e->string, "", e2, sizeof e2); /* builds the suggestion */
            kb_errf(err, errlen, "%s: %s", where, e2);
            goto fail;
        }
        char *text;
        if (sweep_axis_text(&op->params[pi], e, &text, e2, sizeof e2)) { kb_errf(err, errlen, "%s: %s", where, e2); goto fail; }
        int rc = kb_sweep_set(&s, e->string, text, e2, sizeof e2);
        free(text);
        if (rc) { kb_errf(err, errlen, "%s: %s", where, e2); goto fail; }
    }
    for (int i = 0; set && i < set->nset; i++) {
        if (kb_param_index(op, set->set_name[i]) < 0) continue;
        if (kb_sweep_set(&s, set->set_name[i], set->set_val[i], e2, sizeof e2)) {
            kb_errf(err, errlen, "--set %s=%s (%s): %s", set->set_name[i], set->set_val[i], where, e2);
            goto fail;
        }
        hits[i]++;
    }
    if (kb_sweep_expand(&s, cases, ncases, e2, sizeof e2)) { kb_errf(err, errlen, "%s: %s", where, e2); goto fail; }
    kb_sweep_free(&s);
    return 0;
fail:
    kb_sweep_free(&s);
    return -1;
}

/* A key that appears twice in one object of valid JSON text: cJSON keeps
 * both and lookups see the first, so "op" twice would silently pick one.
 * 0, or -1 with err naming the key, its line and the first one's. A scan of
 * the text (cJSON keeps no positions): strings, and per open object the
 * keys so far (raw, as written). */
static int duplicate_keys(const char *text, const char *name, char *err, size_t errlen)
{
    enum { DEPTH = 64, KEYS = 256 };
    struct { const char *k[KEYS]; int len[KEYS], line[KEYS], n, obj, want_key; } *st = calloc(DEPTH, sizeof *st);
    if (!st) abort();
    int depth = -1, line = 1, rc = 0;
    for (const char *p = text; *p && !rc; p++) {
        if (*p == '\n') line++;
        else if (*p == '{' || *p == '[') {
            if (++depth >= DEPTH) break; /* deeper than this is not a sweep file: not checked */
            st[depth].n = 0;
            st[depth].obj = *p == '{';
            st[depth].want_key = *p == '{';
        } else if (*p == '}' || *p == ']') {
            if (depth >= 0) depth--;
        } else if (*p == ',' && depth >= 0 && depth < DEPTH && st[depth].obj) {
            st[depth].want_key = 1;
        } else if (*p == '"') {
            const char *s0 = ++p;
            while (*p && *p != '"') p += *p == '\\' && p[1] ? 2 : 1;
            int len = (int)(p - s0);
            if (depth >= 0 && depth < DEPTH && st[depth].obj && st[depth].want_key) {
                st[depth].want_key = 0;
                for (int i = 0; i < st[depth].n; i++)
                    if (st[depth].len[i] == len && !strncmp(st[depth].k[i], s0, (size_t)len)) {
                        kb_errf(err, errlen, "%s:%d: duplicate key '%.*s' (first at line %d)", name, line,
                                len > 64 ? 64 : len, s0, st[depth].line[i]);
                        rc = -1;
                        break;
                    }
                if (!rc && st[depth].n < KEYS) {
                    int i = st[depth].n++;
                    st[depth].k[i] = s0;
                    st[depth].len[i] = len;
                    st[depth].line[i] = line;
                }
            }
            if (!*p) break;
        }
    }
    free(st);
    return rc;
}

/* --set NAME=... where no sweep's op has NAME and no setting is NAME: said,
 * with the nearest name among the plan's ops' parameters and the settings */
static void set_unknown(const kb_plan *plan, int i, const char *name, char *err, size_t errlen)
{
    const char *cands[KB_MAX_PARAMS * 8 + 64];
    const kb_op *seen[8];
    int n = 0, nseen = 0;
    for (int c = 0; c < plan->ncases; c++) {
        const kb_op *op = plan->cases[c].op;
        int k = 0;
        while (k < nseen && seen[k] != op) k++;
        if (k < nseen || nseen == 8) continue;
        seen[nseen++] = op;
        for (int p = 0; p < op->nparams; p++) cands[n++] = op->params[p].name;
    }
    for (int k = 0; k < kb_nsettings && k < 64; k++) cands[n++] = kb_settings[k].name;
    const char *near = kb_nearest(plan->set_name[i], cands, n);
    kb_errf(err, errlen, "--set %s: no sweep of %s has an op with the parameter '%s'%s%s%s", plan->set_name[i], name,
            plan->set_name[i], near ? " (did you mean '" : " (see: kbench list)", near ? near : "", near ? "'?)" : "");
}

int kb_config_parse(const char *text, const char *name, kb_plan *plan, char *err, size_t errlen)
{
    const char *at;
    int line, col;
    for (const char *u = text; (u = strstr(u, "u0000")) != NULL; u++) { /* \u0000: cJSON would cut the string there */
        int bs = 0;
        for (const char *b = u - 1; b >= text && *b == '\\'; b--) bs++;
        if (bs % 2) {
            int line = 1;
            for (const char *q = text; q < u; q++) line += *q == '\n';
            kb_errf(err, errlen, "%s:%d: a NUL character (\\u0000) in a string", name, line);
            return -1;
        }
    }
    if (!text[strspn(text, " \t\r\n")]) {
        kb_errf(err, errlen, "%s: empty file, not a sweep (see: kbench sweep --help)", name);
        return -1;
    }
    cJSON *root = kb_json_parse(text, &at, &line, &col);
    if (!root) {
        int depth = 0, max = 0; /* cJSON stops past CJSON_NESTING_LIMIT levels */
        for (const char *p = text; p < at && *p; p++) {
            if (*p == '"') { /* skip strings */
                for (p++; *p && *p != '"'; p += *p == '\\' && p[1] ? 2 : 1) {}
                if (!*p) break;
            } else if (*p == '{' || *p == '[') {
                if (++depth > max) max = depth;
            } else if (*p == '}' || *p == ']') depth--;
        }
        if (max >= CJSON_NESTING_LIMIT)
            kb_errf(err, errlen, "%s:%d:%d: nested too deep (more than %d levels)", name, line, col, CJSON_NESTING_LIMIT);
        else if (!*at)
            kb_errf(err, errlen, "%s:%d:%d: JSON syntax error: unexpected end of file", name, line, col);
        else {
            int len = (int)strcspn(at, "\r\n");
            kb_errf(err, errlen, "%s:%d:%d: JSON syntax error near '%.*s'", name, line, col, len > 20 ? 20 : len, at);
        }
        return -1;
    }
    int rc = -1;
    if (duplicate_keys(text, name, err, errlen)) goto out;
    if (!cJSON_IsObject(root)) { kb_errf(err, errlen, "%s: the top level must be an object with \"sweeps\"", name); goto out; }
    const cJSON *e;
    cJSON_ArrayForEach(e, root) {
        if (strcmp(e->string, "settings") && strcmp(e->string, "sweeps") && strcmp(e->string, "description")) {
            static const char *const keys[] = {"settings", "sweeps", "description"};
            const char *near = kb_nearest(e->string, keys, 3);
            kb_errf(err, errlen, "%s: unknown key '%s'%s%s%s", name, e->string, near ? " (did you mean '" : "",
                 near ? near : "", near ? "'?)" : " (expected settings, sweeps, description)");
            goto out;
        }
    }
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(root, "settings");
    if (st && parse_settings(st, &plan->opts, name, err, errlen)) goto out;
    /* the file's plugins before its sweeps: their tunables are keys of the sweeps */
    if (plan->opts.python[0]) { /* before a .py among them; another than one already started: refused */
        kb_py_set_interpreter(plan->opts.python);
        if (kb_py_started() && kb_py_start(err, errlen)) goto out;
    }
    if (plan->opts.plugin[0] && kb_plugin_load_list(plan->opts.plugin, err, errlen)) goto out;
    const cJSON *sw = cJSON_GetObjectItemCaseSensitive(root, "sweeps");
    if (!cJSON_IsArray(sw) || cJSON_GetArraySize(sw) == 0) {
        kb_errf(err, errlen, "%s: \"sweeps\" must be a non-empty array of sweep objects", name);
        goto out;
    }
    int k = 0, hits[KB_MAX_SET_AXES] = {0};
    cJSON_ArrayForEach(e, sw) {
        char where[1100];
        snprintf(where, sizeof where, "%s: sweeps[%d]", name, k++);
        if (config_sweep(e, where, 0, plan, hits, &plan->cases, &plan->ncases, err, errlen)) goto out;
    }
    for (int i = 0; i < plan->nset; i++) {
        if (hits[i]) continue;
        int setting = 0; /* --set impl=opt,mine: a harness setting, as its flag would set it */
        for (int k = 0; k < kb_nsettings && !setting; k++) setting = !strcmp(kb_settings[k].name, plan->set_name[i]);
        if (setting) {
            char e2[KB_ERRLEN];
            if (kb_opts_set(&plan->opts, plan->set_name[i], plan->set_val[i], e2, sizeof e2)) {
                kb_errf(err, errlen, "--set %s", e2);
                goto out;
            }
            continue;
        }
        set_unknown(plan, i, name, err, errlen);
        goto out;
    }
    rc = 0;
out:
    cJSON_Delete(root);
    if (rc) { /* nothing half-made is left for the caller */
        kb_cases_free(plan->cases, plan->ncases);
        plan->cases = NULL;
        plan->ncases = 0;
    }
    return rc;
}

int kb_read_text(const char *path, const char *kind, long max_bytes, char **text, char *err, size_t errlen)
{
    *text = NULL;
    struct stat sb; /* before opening: a FIFO with no writer would block in fopen */
    if (stat(path, &sb)) {
        if (errno == ENOENT) kb_errf(err, errlen, "%s: not found (%s)", path, strerror(errno));
        else kb_errf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        return -1;
    }
    if (S_ISDIR(sb.st_mode)) { kb_errf(err, errlen, "%s: is a directory, not a %s", path, kind); return -1; }
    if (!S_ISREG(sb.st_mode)) {
        kb_errf(err, errlen, "%s: not a regular file (a device or a pipe); save the %s to a file", path, kind);
        return -1;
    }
    if (sb.st_size > max_bytes) {
        kb_errf(err, errlen, "%s: not a %s (larger than %ld MiB)", path, kind, max_bytes >> 20);
        return -1;
    }
    FILE *f = fopen(path, "rb");
    if (!f) { kb_errf(err, errlen, "%s: cannot read: %s", path, strerror(errno)); return -1; }
    /* read to the end, not to st_size: /proc's files say 0 and have text */
    size_t cap = (size_t)sb.st_size + 1, got = 0;
    char *t = malloc(cap < 4096 ? 4096 : cap);
    cap = cap < 4096 ? 4096 : cap;
    int rerr = 0;
    while (t) {
        got += fread(t + got, 1, cap - 1 - got, f);
        int ch = ferror(f) || feof(f) ? EOF : fgetc(f); /* full: one more byte, or the end */
        if (ferror(f)) { rerr = errno ? errno : EIO; break; }
        if (ch == EOF) break;
        if (got >= (size_t)max_bytes) { got++; break; } /* past the bound: refused below */
        char *u = realloc(t, cap * 2);
        if (!u) { free(t); t = NULL; break; }
        t = u;
        cap *= 2;
        t[got++] = (char)ch;
    }
    fclose(f);
    if (!t) { kb_errf(err, errlen, "%s: out of memory reading it", path); return -1; }
    t[got < cap ? got : cap - 1] = 0;
    if (rerr) {
        kb_errf(err, errlen, "%s: cannot read: %s", path, strerror(rerr));
        free(t);
        return -1;
    }
    if (got > (size_t)max_bytes) {
        kb_errf(err, errlen, "%s: not a %s (larger than %ld MiB)", path, kind, max_bytes >> 20);
        free(t);
        return -1;
    }
    if (strlen(t) != got) { /* the text would end at the NUL */
        kb_errf(err, errlen, "%s: a NUL byte at offset %zu: not a JSON text file", path, strlen(t));
        free(t);
        return -1;
    }
    *text = t;
    return 0;
}

int kb_config_load(const char *path, kb_plan *plan, char *err, size_t errlen)
{
    char *text;
    if (kb_read_text(path, "sweep file", 64L << 20, &text, err, errlen)) return -1;
    int rc = kb_config_parse(text, path, plan, err, errlen);
    free(text);
    return rc;
}

/* A case's inputs come from the run's seed and the case itself, not from its
 * place in the plan: the same case draws the same inputs alone or in any
 * sweep, so a row of `kbench check` reruns alone with the same values, and a
 * case added to a sweep leaves the others' inputs as they were. */
void kb_plan_seed(kb_plan *plan)
{
    for (int i = 0; i < plan->ncases; i++) {
        kb_rng r;
        kb_rng_seed(&r, plan->opts.seed * 0x100000001b3ull ^ kb_case_hash(&plan->cases[i], KB_FNV_BASIS));
        plan->cases[i].index = i;
        plan->cases[i].seed = kb_rng_next(&r);
    }
}
