/* kbench merge -o ALL.json [--csv ALL.csv] PART.json...: the outputs of the
 * shards of one sweep (--shard K/N, a Slurm job array) as one result file.
 *
 * Refused (exit 2, one line): a file that is not a kbench result file, parts
 * of different sweeps (sweep_id), parts of different shard counts. Reported
 * on stderr, the merge written all the same: a shard given twice (the later
 * file left out), rows of one case and implementation twice (the later left
 * out), parts measured on other GPU models or by other kbench versions, a
 * part's CSV rows past its JSON's (left out). The
 * exit is 1 when shards or cases are missing, else 0. Rows are written in
 * the sweep's case order. */
#include "merge.h"
#include "shard.h"
#include "../core/config.h"
#include "../core/errors.h"
#include "../core/params.h"
#include "../report/files.h"
#include "../report/json.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FILE_BYTES (512L << 20)

typedef struct {
    const char *path;
    cJSON *root;
    const char *sweep, *version, *git, *device;
    int k, n; /* shard K of N; n 0: the whole sweep */
    int worker; /* a --devices worker's part (kbench.worker: its GPU), -1: none */
    int cases;
    int dropped; /* a shard given twice: this later file left out */
    int nrows;
    char *keep;  /* keep[i]: its row i is in the merge (the CSV's row i is the JSON's) */
} part;

typedef struct {
    int cs, p, i;       /* its case, part and place in the part: the merge's order */
    const cJSON *row;   /* the JSON's row (kb_merge_files) */
    char *line;         /* or the CSV's line (merge_csv) */
} mrow;


/* a line on stderr, "kbench merge: ...": what the parts hold (a device's
 * name, a version) and the paths given, their control characters escaped */
static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
    char line[4096];
    va_list ap;
    va_start(ap, fmt);
    kb_verrf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "kbench merge: %s\n", line);
}

static const char *str(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static int load(part *p, char *err, size_t errlen)
{
    char *text = NULL;
    if (kb_read_text(p->path, "result file", MAX_FILE_BYTES, &text, err, errlen)) return -1;
    int cut = 0;
    p->root = kb_json_result(text, p->path, &cut, err, errlen);
    free(text);
    if (!p->root) return -1;
    if (cut) /* a worker killed while it wrote a row: the rows before it */
        note("%s: its last row was cut (killed while writing it): the rows before it are merged", p->path);
    const cJSON *kb = cJSON_GetObjectItemCaseSensitive(p->root, "kbench");
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(p->root, "results");
    if (!cJSON_IsObject(kb) || !cJSON_IsArray(res)) {
        kb_errf(err, errlen, "%s: not a kbench result file (no \"kbench\" object or \"results\" array)", p->path);
        return -1;
    }
    p->sweep = str(kb, "sweep_id");
    if (!p->sweep[0]) {
        kb_errf(err, errlen, "%s: no sweep_id (written by a kbench before --shard, or not by a sweep)", p->path);
        return -1;
    }
    const cJSON *nc = cJSON_GetObjectItemCaseSensitive(kb, "sweep_cases");
    if (!cJSON_IsNumber(nc) || !(nc->valuedouble >= 0 && nc->valuedouble <= KB_MAX_CASES)) {
        kb_errf(err, errlen, "%s: sweep_cases missing or out of range", p->path);
        return -1;
    }
    p->cases = (int)nc->valuedouble;
    p->version = str(kb, "version");
    p->git = str(kb, "git_commit");
    p->device = str(cJSON_GetObjectItemCaseSensitive(p->root, "device"), "name");
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(kb, "worker");
    p->worker = cJSON_IsNumber(w) && w->valuedouble >= 0 && w->valuedouble < 1024 ? (int)w->valuedouble : -1;
    const char *sh = str(kb, "shard");
    p->k = 0;
    p->n = 0;
    if (sh[0] && kb_shard_parse(sh, &p->k, &p->n, err, errlen)) {
        kb_errf(err, errlen, "%s: a bad \"shard\" '%s'", p->path, sh);
        return -1;
    }
    const cJSON *r;
    cJSON_ArrayForEach(r, res) {
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(r, "case");
        if (!cJSON_IsNumber(c) || c->valuedouble < 0 || c->valuedouble >= p->cases) {
            kb_errf(err, errlen, "%s: a row without a case index in [0, %d)", p->path, p->cases);
            return -1;
        }
    }
    p->nrows = cJSON_GetArraySize(res);
    p->keep = calloc((size_t)p->nrows + 1, 1);
    if (!p->keep) abort();
    return 0;
}

static int by_case(const void *a, const void *b)
{
    const mrow *x = a, *y = b;
    if (x->cs != y->cs) return x->cs < y->cs ? -1 : 1;
    if (x->p != y->p) return x->p < y->p ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}


/* The parts' CSVs (beside their JSON), one header, rows by case. */
/* The parts' CSVs, their rows kept where the JSON's are. A CSV's rows past
 * its JSON's last are left out (say: said on stderr): its writer was killed
 * before it rewrote the JSON, which lags (report.c), after flushing them. */
static int merge_csv(const part *ps, int np, const char *out, int say, char *err, size_t errlen)
{
    char *header = NULL;
    mrow *rows = NULL;
    int nr = 0, cap = 0, rc = -1;
    for (int p = 0; p < np; p++) {
        if (ps[p].dropped) continue;
        char path[PATH_MAX], *text = NULL;
        if (kb_sibling_path(ps[p].path, NULL, "csv", path, sizeof path)) {
            kb_errf(err, errlen, "%s: the path of its CSV beside it is too long", ps[p].path);
            goto out;
        }
        if (kb_read_text(path, "CSV", MAX_FILE_BYTES, &text, err, errlen)) goto out;
        char *save = NULL, *line = strtok_r(text, "\n", &save);
        if (!line) { kb_errf(err, errlen, "%s: empty (no header)", path); free(text); goto out; }
        if (!header) header = strdup(line);
        else if (strcmp(header, line)) {
            kb_errf(err, errlen, "%s: its columns differ from %s's", path, ps[0].path);
            free(text);
            goto out;
        }
        if (!strstr(line, ",case") || strcmp(strrchr(line, ',') + 1, "case")) {
            kb_errf(err, errlen, "%s: no case column last (written by a kbench before --shard)", path);
            free(text);
            goto out;
        }
        int i = 0, past = 0;
        while ((line = strtok_r(NULL, "\n", &save))) {
            char *end, *comma = strrchr(line, ',');
            long cs = comma ? strtol(comma + 1, &end, 10) : -1;
            if (!comma || end == comma + 1 || *end || cs < 0) {
                kb_errf(err, errlen, "%s: a row without a case index last", path);
                free(text);
                goto out;
            }
            if (i >= ps[p].nrows) {
                past++;
                continue;
            }
            if (!ps[p].keep[i++]) continue; /* left out of the JSON: out of the CSV too */
            if (nr == cap && !(rows = realloc(rows, sizeof *rows * (size_t)(cap = cap ? 2 * cap : 256)))) abort();
            char *l = strdup(line);
            if (!l) abort();
            rows[nr++] = (mrow){(int)cs, p, i, NULL, l};
        }
        free(text);
        if (i != ps[p].nrows) {
            kb_errf(err, errlen, "%s: %d rows, %s %d", path, i, ps[p].path, ps[p].nrows);
            goto out;
        }
        if (past && say)
            note("%s: %d row%s past %s's last (written before its JSON caught up, then stopped): left out", path, past,
                past == 1 ? "" : "s", ps[p].path);
    }
    if (nr) qsort(rows, (size_t)nr, sizeof *rows, by_case);
    if (kb_ensure_dir_of(out, err, errlen)) goto out;
    /* the whole text, then written whole (a temporary renamed over it), as
     * the JSON is: a merge that fails leaves no partial CSV */
    size_t len = strlen(header ? header : "") + 1;
    for (int i = 0; i < nr; i++) len += strlen(rows[i].line) + 1;
    char *text = malloc(len + 1), *w = text;
    if (!text) abort();
    w += sprintf(w, "%s", header ? header : "");
    for (int i = 0; i < nr; i++) w += sprintf(w, "\n%s", rows[i].line);
    char werr[KB_ERRLEN] = "";
    rc = kb_write_whole(out, text, werr, sizeof werr) ? -1 : 0; /* it adds the last newline */
    if (rc) kb_errf(err, errlen, "--csv: %s", werr);
    free(text);
out:
    for (int i = 0; i < nr; i++) free(rows[i].line);
    free(rows);
    free(header);
    return rc;
}

static void print_help(FILE *f)
{
    fprintf(f,
            "usage: kbench merge -o ALL.json [--csv ALL.csv] PART.json...\n\n"
            "Joins the result files of the shards of one sweep (kbench sweep FILE --shard K/N, e.g.\n"
            "one per task of a Slurm job array) into one, rows in the sweep's case order. Needs no GPU.\n\n"
            "Refused (exit 2): a file that is not a kbench result file (a key twice in one object\n"
            "included) or has no sweep_id, parts of different sweeps (other cases or another\n"
            "seed), parts of different shard counts, an output (-o, --csv) that is a part or,\n"
            "with --csv, a part's CSV (nothing is written).\n"
            "Said on stderr, the merge written all the same:\n"
            "  a shard given twice          the later file is left out\n"
            "  a case and impl twice        the later row is left out\n"
            "  missing shards, cases        listed; exit 1\n"
            "  other GPU models, versions   noted (the JSON lists each part's device)\n"
            "  CSV rows past its JSON's     left out (a part killed before its JSON caught up)\n\n"
            "Options:\n"
            "  -o, --output FILE   the merged JSON (required)\n"
            "  --csv FILE          also the merged CSV, from each part's CSV beside its JSON\n"
            "                      (X.json -> X.csv; the shards of a sweep write the same columns)\n"
            "  -h, --help          this help\n\n"
            "Exit codes: 0 complete, 1 shards or cases missing (the merge is written), 2 usage or a\n"
            "bad part.\n\n"
            "Example:\n"
            "  for k in 0 1 2 3; do kbench sweep configs/mlp.json --shard $k/4 --out-dir part$k; done\n"
            "  kbench merge -o results/mlp.json --csv results/mlp.csv part*/mlp.json\n");
}

enum { O_CSV = 1000 };

/* -o and --csv: neither a part, nor (with --csv, which reads them) a part's
 * CSV, nor the other (one file: its device and inode). -1, or the usage
 * error's exit code: said before anything is read or written. */
static int check_overwrites(const char *out, const char *csv, const char *const *parts, int np)
{
    const char *outs[2] = {out, csv}, *what[2] = {"-o", "--csv"};
    for (int o = 0; o < 2; o++) {
        if (!outs[o]) continue;
        for (int p = 0; p < np; p++) {
            char sib[PATH_MAX + 16];
            if (kb_same_file(outs[o], parts[p]))
                return kb_usage("merge", "%s %s is the part %s: it would be overwritten (give another path)", what[o],
                                outs[o], parts[p]);
            if (kb_sibling_path(parts[p], NULL, "csv", sib, sizeof sib)) continue; /* no such file could be */
            if (csv && kb_same_file(outs[o], sib))
                return kb_usage("merge", "%s %s is %s, the CSV of the part %s: it would be overwritten (give another path)",
                                what[o], outs[o], sib, parts[p]);
        }
    }
    if (csv && (!strcmp(out, csv) || kb_same_file(out, csv)))
        return kb_usage("merge", "-o and --csv are the same file %s: give each its own", out);
    return -1;
}

int kb_merge_main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"output", required_argument, NULL, 'o'},
        {"csv", required_argument, NULL, O_CSV},
        {"help", no_argument, NULL, 'h'},
        {0},
    };
    const char *out = NULL, *csv = NULL;
    int c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":ho:", opts, NULL)) != -1) {
        switch (c) {
        case 'h': print_help(stdout); return KB_EXIT_OK;
        case 'o': out = optarg; break;
        case O_CSV: csv = optarg; break;
        case ':': return kb_usage("merge", "option '%s' needs a value (see: kbench merge --help)", argv[optind - 1]);
        default:
            if (optopt > 0 && optopt < 0x7f) return kb_usage("merge", "unknown option '-%c' (see: kbench merge --help)", optopt);
            return kb_usage("merge", "unknown option '%s' (see: kbench merge --help)", argv[optind - 1]);
        }
    }
    if (!out) return kb_usage("merge", "-o ALL.json is required (see: kbench merge --help)");
    int np = argc - optind;
    if (np < 1) return kb_usage("merge", "no part to merge (PART.json...)");
    char err[KB_ERRLEN];
    int rc = check_overwrites(out, csv, (const char *const *)argv + optind, np);
    if (rc >= 0) return rc;
    if (kb_output_check(out, "-o", err, sizeof err) || (csv && kb_output_check(csv, "--csv", err, sizeof err)))
        return kb_usage("merge", "%s", err);
    return kb_merge_files((const char *const *)argv + optind, np, out, csv, 0, NULL);
}

/* The parts read (ps[p].path: paths[p]) and checked to be of one sweep and
 * one split: 0, or -1 said (a refused part) */
static int load_parts(part *ps, const char *const *paths, int np)
{
    char err[KB_ERRLEN];
    for (int p = 0; p < np; p++) {
        ps[p].path = paths[p];
        if (load(&ps[p], err, sizeof err)) { kb_usage("merge", "%s", err); return -1; }
        if (strcmp(ps[p].sweep, ps[0].sweep) || ps[p].cases != ps[0].cases) {
            kb_usage("merge", "%s and %s are different sweeps (sweep_id %s, %s)", ps[0].path, ps[p].path, ps[0].sweep, ps[p].sweep);
            return -1;
        }
        if (ps[p].n != ps[0].n) {
            kb_usage("merge", "%s is shard %d/%d, %s of %d shards: parts of one split only", ps[p].path, ps[p].k, ps[p].n,
                  ps[0].path, ps[0].n);
            return -1;
        }
    }
    return 0;
}

/* A shard (or the whole) given twice: the later file dropped; a part of
 * another GPU model or kbench version than the first: noted. Said on
 * stderr, part by part. */
static void drop_repeats(part *ps, int np)
{
    const int n = ps[0].n;
    for (int p = 0; p < np; p++) {
        for (int q = 0; q < p && !ps[p].dropped; q++)
            if (!ps[q].dropped && ps[q].k == ps[p].k && ps[q].worker == ps[p].worker) {
                note("%s is shard %d/%d again (as %s): left out", ps[p].path, ps[p].k, n ? n : 1, ps[q].path);
                ps[p].dropped = 1;
            }
        if (!ps[p].dropped && ps[p].device[0] && (strcmp(ps[p].device, ps[0].device) || strcmp(ps[p].version, ps[0].version)))
            note("note: %s ran on %s with kbench %s (%s); %s on %s with kbench %s (%s)", ps[p].path,
                ps[p].device[0] ? ps[p].device : "?", ps[p].version, ps[p].git, ps[0].path,
                ps[0].device[0] ? ps[0].device : "?", ps[0].version, ps[0].git);
    }
}

/* the shards of the split that no part is: listed on stderr; 1 if any */
static int missing_shards(const part *ps, int np)
{
    const int n = ps[0].n;
    char miss[1024] = "";
    int nm = 0;
    for (int k = 0; k < n; k++) {
        int have = 0;
        for (int p = 0; p < np; p++) have |= !ps[p].dropped && ps[p].k == k;
        if (!have && nm++ < 32) snprintf(miss + strlen(miss), sizeof miss - strlen(miss), "%s%d", nm > 1 ? ", " : "", k);
    }
    if (!nm) return 0;
    fprintf(stderr, "kbench merge: %d of %d shards missing: %s%s\n", nm, n, miss, nm > 32 ? ", ..." : "");
    return 1;
}

/* every row of the parts kept, by case (then part, then place): *nr of them */
static mrow *rows_by_case(const part *ps, int np, int *nr)
{
    mrow *rows = NULL;
    int cap = 0;
    *nr = 0;
    for (int p = 0; p < np; p++) {
        if (ps[p].dropped) continue;
        const cJSON *r;
        int i = 0;
        cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(ps[p].root, "results")) {
            if (*nr == cap && !(rows = realloc(rows, sizeof *rows * (size_t)(cap = cap ? 2 * cap : 256)))) abort();
            rows[(*nr)++] = (mrow){(int)cJSON_GetObjectItemCaseSensitive(r, "case")->valuedouble, p, i++, r, NULL};
        }
    }
    if (*nr) qsort(rows, (size_t)*nr, sizeof *rows, by_case);
    return rows;
}

/* what is each part's, not the run's: kept in its "devices" entry */
static const char *const own[] = {"start_s", "start_parts_s", "ladder_wait_s"};
#define NOWN (sizeof own / sizeof own[0])

/* part pp's entry in the merge's "devices": its device, file, GPU, start
 * and shard (n: the split's shard count, 0: none) */
static cJSON *device_entry(const part *pp, int n)
{
    cJSON *d = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(pp->root, "device"), 1);
    if (!d) d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "file", pp->path);
    if (pp->worker >= 0) cJSON_AddNumberToObject(d, "gpu", pp->worker);
    const cJSON *pk = cJSON_GetObjectItemCaseSensitive(pp->root, "kbench");
    for (size_t i = 0; i < NOWN; i++) { /* each part's own start */
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(pk, own[i]);
        if (v) cJSON_AddItemToObject(d, own[i], cJSON_Duplicate(v, 1));
    }
    if (n) {
        char sh[32];
        snprintf(sh, sizeof sh, "%d/%d", pp->k, n);
        cJSON_AddStringToObject(d, "shard", sh);
    }
    return d;
}

/* The merge's root without its results: the first part's "kbench" (less
 * what is each part's own; merged_from: the parts) and "device", and
 * "devices": an entry a part */
static cJSON *merged_head(const part *ps, int np, const char *expected)
{
    cJSON *root = cJSON_Duplicate(ps[0].root, 0); /* the first part's objects, its results replaced */
    cJSON *kb = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(ps[0].root, "kbench"), 1);
    if (!expected) cJSON_DeleteItemFromObjectCaseSensitive(kb, "shard"); /* one run's parts: still its shard */
    cJSON_DeleteItemFromObjectCaseSensitive(kb, "worker");
    for (size_t i = 0; i < NOWN; i++) cJSON_DeleteItemFromObjectCaseSensitive(kb, own[i]);
    cJSON *from = cJSON_AddArrayToObject(kb, "merged_from");
    cJSON_AddItemToObject(root, "kbench", kb);
    cJSON_AddItemToObject(root, "device", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(ps[0].root, "device"), 1));
    cJSON *devs = cJSON_AddArrayToObject(root, "devices");
    for (int p = 0; p < np; p++) {
        if (ps[p].dropped) continue;
        cJSON_AddItemToArray(from, cJSON_CreateString(ps[p].path));
        cJSON_AddItemToArray(devs, device_entry(&ps[p], ps[0].n));
    }
    return root;
}

/* row (of part p) says its GPU, "gpu" and "gpu_uuid", where it has one */
static void label_gpu(const part *ps, int np, int p, cJSON *row)
{
    int gpu = ps[p].worker; /* --devices: which GPU ran it (an ended worker's error rows say theirs) */
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(row, "gpu");
    if (gpu < 0 && cJSON_IsNumber(g)) gpu = (int)g->valuedouble;
    if (gpu < 0) return;
    cJSON_DeleteItemFromObjectCaseSensitive(row, "gpu");
    cJSON_AddNumberToObject(row, "gpu", gpu);
    const char *u = "";
    for (int q = 0; q < np && !u[0]; q++) /* its worker's part's device */
        if (!ps[q].dropped && ps[q].worker == gpu) u = str(cJSON_GetObjectItemCaseSensitive(ps[q].root, "device"), "uuid");
    if (u[0]) cJSON_AddStringToObject(row, "gpu_uuid", u);
}

/* rows (by case) into res; a case and impl twice: the first kept. The rows
 * kept are marked in their part's keep and their cases in seen. How many
 * were left out. */
static int add_rows(part *ps, int np, const mrow *rows, int nr, char *seen, cJSON *res)
{
    int dup = 0;
    for (int i = 0; i < nr; i++) {
        const char *impl = str(rows[i].row, "impl");
        int again = 0;
        for (int j = i - 1; j >= 0 && rows[j].cs == rows[i].cs && !again; j--)
            again = rows[j].p != rows[i].p && !strcmp(str(rows[j].row, "impl"), impl);
        if (again) { dup++; continue; }
        seen[rows[i].cs] = 1;
        ps[rows[i].p].keep[rows[i].i] = 1;
        cJSON *row = cJSON_Duplicate(rows[i].row, 1);
        label_gpu(ps, np, rows[i].p, row);
        cJSON_AddItemToArray(res, row);
    }
    return dup;
}

/* cases a part ran no implementation of (--impl): no row is due */
static void mark_skipped(const part *ps, int np, char *seen)
{
    for (int p = 0; p < np; p++) {
        const cJSON *sk, *v;
        if (ps[p].dropped || !(sk = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ps[p].root, "kbench"), "skipped_cases")))
            continue;
        cJSON_ArrayForEach(v, sk) if (cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < ps[0].cases) seen[(int)v->valuedouble] = 1;
    }
}

/* the cases looked for (expected, NULL: all) that have no row: listed on
 * stderr; how many */
static int missing_cases(const part *ps, const char *seen, const char *expected)
{
    int missing = 0;
    char miss[1024] = "";
    for (int k = 0; k < ps[0].cases; k++)
        if (!seen[k] && (!expected || expected[k]) && missing++ < 32) snprintf(miss + strlen(miss), sizeof miss - strlen(miss), "%s%d", missing > 1 ? ", " : "", k);
    if (missing) {
        fprintf(stderr, "kbench merge: %d of %d cases have no row: %s%s\n", missing, ps[0].cases, miss,
                missing > 32 ? ", ..." : "");
        /* (case numbers from 0, as the rows' "case") */
    }
    return missing;
}

int kb_merge_files(const char *const *paths, int np, const char *out, const char *csv, int quiet,
                   const char *expected)
{
    char err[KB_ERRLEN];
    part *ps = calloc((size_t)np, sizeof *ps);
    if (!ps) abort();
    int rc = KB_EXIT_USAGE;
    mrow *rows = NULL;
    char *seen = NULL;
    if (load_parts(ps, paths, np)) goto out;
    drop_repeats(ps, np);
    int incomplete = ps[0].n && !expected ? missing_shards(ps, np) : 0, nr;
    rows = rows_by_case(ps, np, &nr);
    seen = calloc((size_t)ps[0].cases + 1, 1);
    if (!seen) abort();
    cJSON *root = merged_head(ps, np, expected);
    cJSON *res = cJSON_AddArrayToObject(root, "results");
    int dup = add_rows(ps, np, rows, nr, seen, res);
    /* (--devices: a dead worker's error rows stand in for its case's every
     * implementation; those it finished come first and stay, silently) */
    if (dup && !expected) fprintf(stderr, "kbench merge: %d row(s) of a case and implementation already merged: left out\n", dup);
    mark_skipped(ps, np, seen);
    int missing = missing_cases(ps, seen, expected);
    if (missing) incomplete = 1;
    int written = cJSON_GetArraySize(res);
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text) abort();
    int bad = kb_ensure_dir_of(out, err, sizeof err) || kb_write_whole(out, text, err, sizeof err);
    free(text);
    if (bad) { kb_usage("merge", "-o: %s", err); goto out; }
    if (csv && merge_csv(ps, np, csv, !expected, err, sizeof err)) { kb_usage("merge", "%s", err); goto out; }
    if (!quiet)
        printf("merged %d part(s): %d rows, %d of %d cases, into %s%s%s\n", np, written, ps[0].cases - missing,
               ps[0].cases, out, csv ? " and " : "", csv ? csv : "");
    rc = incomplete ? KB_EXIT_VERIFY : KB_EXIT_OK;
out:
    for (int p = 0; p < np; p++) {
        cJSON_Delete(ps[p].root);
        free(ps[p].keep);
    }
    free(ps);
    free(rows);
    free(seen);
    return rc;
}
