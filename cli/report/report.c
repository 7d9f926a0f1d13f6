/* Outputs: the table on stdout, CSV (appended and flushed row by row) and
 * JSON (json.c: each row appended as it comes, the head rewritten in place,
 * so the file on disk is always the whole document). */
#include "conditions.h"
#include "csv.h"
#include "device.h"
#include "files.h"
#include "json.h"
#include "report.h"
#include "row.h"
#include "table.h"
#include "../core/clock.h"
#include "../core/errors.h"
#include "../core/op.h"
#include "../core/params.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

const char *const kb_wall_names[KB_WALL_N] = {"ceilings", "setup", "reference", "wait", "verify", "time"};

#ifndef KB_GIT
#define KB_GIT "unknown"
#endif

struct kb_report {
    FILE *csv;
    char json_path[PATH_MAX];
    cJSON *root;        /* the head: "kbench" and "device" */
    kb_json_file *json; /* the file (json.h) */
    const kb_op *const *ops;
    int nops, quiet;
    const kb_case *last_case;
    FILE *table;
    char csv_path[PATH_MAX];
    char err[KB_ERRLEN]; /* the first failed write: the report writes nothing after it */
};

/* The first failed write, said once: "cannot write PATH: REASON". */
static int write_failed(kb_report *r, const char *path, int errnum)
{
    if (!r->err[0]) kb_errf(r->err, sizeof r->err, "cannot write %s: %s", path, strerror(errnum ? errnum : EIO));
    return -1;
}

/* The head rewritten (json.c), now. 0, or -1 with r->err. */
static int head_write(kb_report *r)
{
    if (!r->json || r->err[0]) return r->err[0] ? -1 : 0;
    char *text = cJSON_PrintUnformatted(r->root);
    if (!text) return write_failed(r, r->json_path, ENOMEM);
    char err[KB_ERRLEN];
    int rc = kb_json_head(r->json, text, err, sizeof err);
    if (rc) snprintf(r->err, sizeof r->err, "%s", err);
    free(text);
    return rc;
}

/* device.gemm_tflops, gemm_size, gemm_layout and gemm_ladder_gpus: the GEMM
 * ceilings measured in this run (any there before replaced) */
static void add_gemm(cJSON *d, const kb_device *dev)
{
    static const char *const keys[] = {"gemm_tflops", "gemm_size", "gemm_layout", "gemm_ladder_gpus"};
    cJSON *o[4] = {NULL};
    for (int j = 0; j < 4; j++) cJSON_DeleteItemFromObjectCaseSensitive(d, keys[j]);
    for (int k = 0; k < KB_NGEMM; k++) {
        if (!(dev->gemm_tflops[k] > 0)) continue;
        if (!o[0])
            for (int j = 0; j < 4; j++) o[j] = cJSON_AddObjectToObject(d, keys[j]);
        const char *name = kb_gemm_key_name((kb_gemm_key)k);
        cJSON_AddNumberToObject(o[0], name, dev->gemm_tflops[k]);
        cJSON_AddNumberToObject(o[1], name, dev->gemm_n[k]);
        cJSON_AddStringToObject(o[2], name, kb_gemm_layout_name(dev->gemm_layout[k]));
        cJSON_AddNumberToObject(o[3], name, dev->gemm_shared[k] > 1 ? dev->gemm_shared[k] : 1);
    }
}

void kb_report_gemm(kb_report *r, const kb_device *dev)
{
    cJSON *d = r && r->root ? cJSON_GetObjectItemCaseSensitive(r->root, "device") : NULL;
    if (!d || !dev || !dev->ok) return;
    add_gemm(d, dev);
    head_write(r);
}

kb_report *kb_report_open(const char *csv, const char *json, const kb_op *const *ops, int nops,
                          const kb_device *dev, int argc, char **argv, int quiet, char *err, size_t errlen)
{
    kb_report *r = calloc(1, sizeof *r);
    r->ops = ops;
    r->nops = nops;
    r->quiet = quiet;
    r->table = stdout;
    /* paths whole (kb_path_fits: PATH_MAX with the temporary), or refused */
    if ((csv && *csv && kb_path_fits(csv, "--csv", err, errlen)) || (json && *json && kb_path_fits(json, "--json", err, errlen)))
        goto fail;
    if (csv && *csv) {
        if (kb_ensure_dir_of(csv, err, errlen)) goto fail;
        r->csv = fopen(csv, "w");
        if (!r->csv) { kb_errf(err, errlen, "cannot write %s: %s", csv, strerror(errno)); goto fail; }
        snprintf(r->csv_path, sizeof r->csv_path, "%s", csv);
        kb_csv_header(r->csv, ops, nops);
        if (kb_flush_ok(r->csv)) { kb_errf(err, errlen, "cannot write %s: %s", csv, strerror(errno ? errno : EIO)); goto fail; }
    }
    if (json && *json) {
        if (kb_ensure_dir_of(json, err, errlen)) goto fail;
        snprintf(r->json_path, sizeof r->json_path, "%s", json);
        r->root = cJSON_CreateObject();
        cJSON *k = cJSON_AddObjectToObject(r->root, "kbench");
        cJSON_AddStringToObject(k, "version", KB_VERSION);
        cJSON_AddStringToObject(k, "git_commit", KB_GIT);
        char cmd[8192];
        size_t o = 0;
        cmd[0] = 0;
        for (int i = 0; i < argc && o < sizeof cmd; i++)
            o += (size_t)snprintf(cmd + o, sizeof cmd - o, "%s%s", i ? " " : "", argv[i]);
        cJSON_AddStringToObject(k, "command_line", cmd);
        char ts[64];
        time_t now = time(NULL);
        strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
        cJSON_AddStringToObject(k, "started", ts);
        cJSON *d = cJSON_AddObjectToObject(r->root, "device");
        if (dev && dev->ok) {
            cJSON_AddStringToObject(d, "name", dev->name);
            char cc[16];
            snprintf(cc, sizeof cc, "%d.%d", dev->cc_major, dev->cc_minor);
            cJSON_AddStringToObject(d, "compute_capability", cc);
            cJSON_AddNumberToObject(d, "sm_count", dev->sm_count);
            cJSON_AddNumberToObject(d, "l2_bytes", (double)dev->l2_bytes);
            cJSON_AddNumberToObject(d, "memory_bytes", (double)dev->mem_bytes);
            cJSON *cl = cJSON_AddObjectToObject(d, "clocks");
            cJSON_AddNumberToObject(cl, "sm_max_mhz", dev->sm_clock_mhz);
            cJSON_AddNumberToObject(cl, "mem_max_mhz", dev->mem_clock_mhz);
            if (dev->cur_sm_clock_mhz) cJSON_AddNumberToObject(cl, "sm_mhz", dev->cur_sm_clock_mhz);
            if (dev->cur_mem_clock_mhz) cJSON_AddNumberToObject(cl, "mem_mhz", dev->cur_mem_clock_mhz);
            cJSON_AddNumberToObject(d, "driver", dev->driver);
            cJSON_AddNumberToObject(d, "runtime", dev->runtime);
            cJSON_AddNumberToObject(d, "copy_gbps", dev->copy_gbps);
            const kb_gpu_info *nv = &dev->nvml;
            if (nv->ok) {
                if (nv->uuid[0]) cJSON_AddStringToObject(d, "uuid", nv->uuid);
                if (nv->persistence >= 0) cJSON_AddBoolToObject(d, "persistence_mode", nv->persistence);
                if (nv->power_limit_w > 0) cJSON_AddNumberToObject(d, "power_limit_w", nv->power_limit_w);
                if (nv->ecc >= 0) cJSON_AddBoolToObject(d, "ecc", nv->ecc);
                if (nv->app_sm_mhz) cJSON_AddNumberToObject(cl, "sm_application_mhz", nv->app_sm_mhz);
                if (nv->app_mem_mhz) cJSON_AddNumberToObject(cl, "mem_application_mhz", nv->app_mem_mhz);
            } else {
                cJSON_AddStringToObject(d, "nvml", nv->why[0] ? nv->why : "not available");
            }
            add_gemm(d, dev);
        }
        char *text = cJSON_PrintUnformatted(r->root);
        if (!text) abort();
        r->json = kb_json_open(json, text, err, errlen);
        free(text);
        if (!r->json) goto fail;
    }
    return r;
fail:
    if (r->csv) fclose(r->csv);
    cJSON_Delete(r->root);
    free(r);
    return NULL;
}

/* v to `digits` significant digits, as the JSON writes it */
static double sig(double v, int digits)
{
    char t[40];
    snprintf(t, sizeof t, "%.*g", digits, v);
    return strtod(t, NULL);
}

static void add_num(cJSON *o, const char *k, double v)
{
    if (isfinite(v)) cJSON_AddNumberToObject(o, k, v);
    else cJSON_AddNullToObject(o, k);
}

/* A row as the JSON writes it (one object; the caller deletes it). */
static cJSON *row_object(const kb_row *row)
{
    const kb_case *c = row->c;
    cJSON *o = cJSON_CreateObject();
    char v[4096];
    cJSON_AddStringToObject(o, "op", c->op->name);
    cJSON_AddNumberToObject(o, "case", c->index);
    kb_case_value_text(c, "pass", v, sizeof v);
    cJSON_AddStringToObject(o, "pass", v);
    cJSON_AddStringToObject(o, "impl", row->impl);
    if (row->kernel[0]) cJSON_AddStringToObject(o, "kernel", row->kernel);
    kb_case_value_text(c, "dtype", v, sizeof v);
    cJSON_AddStringToObject(o, "dtype", v);
    cJSON *p = cJSON_AddObjectToObject(o, "params");
    for (int i = 0; i < c->op->nparams; i++) {
        const kb_param *pp = &c->op->params[i];
        if (pp->type == KB_P_ENUM) {
            kb_format_value(pp, &c->v[i], v, sizeof v);
            cJSON_AddStringToObject(p, pp->name, v);
        } else if (pp->type == KB_P_INTLIST) {
            cJSON *a = cJSON_AddArrayToObject(p, pp->name);
            for (int k = 0; k < c->v[i].nlist; k++) cJSON_AddItemToArray(a, cJSON_CreateNumber(c->v[i].list[k]));
        } else {
            cJSON_AddNumberToObject(p, pp->name, c->v[i].num);
        }
    }
    if (row->st.samples) {
        add_num(o, "median_ms", row->st.median);
        add_num(o, "p25_ms", row->st.p25);
        add_num(o, "p75_ms", row->st.p75);
        add_num(o, "min_ms", row->st.min);
        add_num(o, "max_ms", row->st.max);
        add_num(o, "mean_ms", row->st.mean);
        add_num(o, "stddev_ms", row->st.stddev);
        add_num(o, "noise_pct", row->st.noise_pct);
    }
    cJSON_AddNumberToObject(o, "samples", row->st.samples);
    if (row->samples && row->st.samples > 0) { /* events resolve about 0.5 us: 7 digits say all of it */
        cJSON *a = cJSON_AddArrayToObject(o, "samples_ms");
        for (int i = 0; i < row->st.samples; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(sig(row->samples[i], 7)));
    }
    if (row->st.samples && row->timing) cJSON_AddStringToObject(o, "timing", row->timing);
    add_num(o, "bytes", row->bytes);
    if (row->gbps > 0) add_num(o, "gbps", row->gbps);
    if (row->pct_of_copy > 0) add_num(o, "pct_of_copy", row->pct_of_copy);
    if (row->copy_gbps > 0) add_num(o, "copy_gbps", row->copy_gbps);
    add_num(o, "flops", row->flops);
    if (row->st.samples) add_num(o, "tflops", row->tflops);
    if (row->pct_of_gemm > 0) add_num(o, "pct_of_gemm", row->pct_of_gemm);
    if (row->gemm_tflops > 0) add_num(o, "gemm_tflops", row->gemm_tflops);
    if (row->cublas_shape_tflops > 0) add_num(o, "cublas_shape_tflops", row->cublas_shape_tflops);
    if (row->pct_of_cublas_shape > 0) add_num(o, "pct_of_cublas_shape", row->pct_of_cublas_shape);
    if (row->note[0]) cJSON_AddStringToObject(o, "note", row->note);
    if (row->cond.n > 0) {
        const kb_cond *k = &row->cond;
        char names[256];
        cJSON *cd = cJSON_AddObjectToObject(o, "conditions");
        cJSON_AddNumberToObject(cd, "polls", k->n);
        if (k->sm_min_mhz) cJSON_AddNumberToObject(cd, "sm_mhz_min", k->sm_min_mhz);
        if (k->sm_med_mhz) cJSON_AddNumberToObject(cd, "sm_mhz_median", k->sm_med_mhz);
        if (k->mem_min_mhz) cJSON_AddNumberToObject(cd, "mem_mhz_min", k->mem_min_mhz);
        if (k->mem_med_mhz) cJSON_AddNumberToObject(cd, "mem_mhz_median", k->mem_med_mhz);
        if (k->power_med_w > 0) add_num(cd, "power_w_median", k->power_med_w);
        if (k->power_max_w > 0) add_num(cd, "power_w_max", k->power_max_w);
        if (k->temp_max_c) cJSON_AddNumberToObject(cd, "temp_c_max", k->temp_max_c);
        cJSON_AddStringToObject(cd, "throttle_reasons", kb_throttle_names(k->reasons, names, sizeof names));
        cJSON_AddBoolToObject(cd, "throttled", k->throttled != 0);
    }
    if (row->verified >= 0) {
        add_num(o, "rel_err", row->rel_err);
        add_num(o, "max_abs_err", row->max_abs_err);
    }
    cJSON_AddStringToObject(o, "verified", kb_verdict_name(row->verified));
    if (row->verified_rows > 0) cJSON_AddNumberToObject(o, "verified_rows", (double)row->verified_rows);
    if (row->speedup > 0) add_num(o, "speedup_vs_baseline", row->speedup);
    if (row->launch_host_ms > 0) add_num(o, "launch_host_ms", row->launch_host_ms);
    if (row->error[0]) cJSON_AddStringToObject(o, "error", row->error);
    if (row->gpu_known) cJSON_AddNumberToObject(o, "gpu", row->gpu);
    if (row->reason[0]) cJSON_AddStringToObject(o, "reason", row->reason);
    cJSON *w = NULL;
    for (int i = 0; i < KB_WALL_N; i++)
        if (row->wall[i] > 0) {
            if (!w) w = cJSON_AddObjectToObject(o, "wall_s");
            cJSON_AddNumberToObject(w, kb_wall_names[i], sig(row->wall[i], 4));
        }
    return o;
}

int kb_report_row(kb_report *r, const kb_row *row)
{
    if (r->err[0]) return -1;
    if (r->csv) {
        kb_csv_row(r->csv, row, r->ops, r->nops);
        if (kb_flush_ok(r->csv)) return write_failed(r, r->csv_path, errno);
    }
    if (r->root) {
        cJSON *o = row_object(row);
        char *text = cJSON_PrintUnformatted(o), err[KB_ERRLEN];
        cJSON_Delete(o);
        if (!text) return write_failed(r, r->json_path, ENOMEM);
        const int rc = kb_json_row(r->json, text, err, sizeof err);
        free(text);
        if (rc) {
            snprintf(r->err, sizeof r->err, "%s", err);
            return -1;
        }
    }
    if (!r->quiet) {
        if (row->c != r->last_case) {
            char label[1024];
            kb_case_label(row->c, label, sizeof label);
            fprintf(r->table, "\n%s %s\n", row->c->op->name, label);
            kb_table_header(r->table);
            r->last_case = row->c;
        }
        kb_table_row(r->table, row);
    }
    return 0;
}

const char *kb_report_error(const kb_report *r) { return r && r->err[0] ? r->err : NULL; }

void kb_report_sweep(kb_report *r, const char *sweep_id, int sweep_cases, int shard_k, int shard_n, int worker)
{
    cJSON *k = r && r->root ? cJSON_GetObjectItemCaseSensitive(r->root, "kbench") : NULL;
    if (!k || !sweep_id || !sweep_id[0]) return;
    cJSON_AddStringToObject(k, "sweep_id", sweep_id);
    cJSON_AddNumberToObject(k, "sweep_cases", sweep_cases);
    if (shard_n > 0) {
        char sh[32];
        snprintf(sh, sizeof sh, "%d/%d", shard_k, shard_n);
        cJSON_AddStringToObject(k, "shard", sh);
    }
    if (worker >= 0) cJSON_AddNumberToObject(k, "worker", worker);
    head_write(r);
}

void kb_report_order(kb_report *r, const char *order)
{
    cJSON *k = r && r->root ? cJSON_GetObjectItemCaseSensitive(r->root, "kbench") : NULL;
    if (!k || !order || !order[0]) return;
    cJSON_AddStringToObject(k, "order", order);
    head_write(r);
}

const char *const kb_start_parts[KB_START_NPARTS] = {"device", "copy", "first_case", "ladders"};

void kb_report_ladder_wait(kb_report *r, double seconds)
{
    cJSON *k = r && r->root ? cJSON_GetObjectItemCaseSensitive(r->root, "kbench") : NULL;
    if (!k || !(seconds > 0)) return;
    cJSON_DeleteItemFromObjectCaseSensitive(k, "ladder_wait_s");
    cJSON_AddNumberToObject(k, "ladder_wait_s", round(seconds * 1000) / 1000);
    head_write(r);
}

void kb_report_start(kb_report *r, double seconds, const double parts[KB_START_NPARTS])
{
    cJSON *k = r && r->root ? cJSON_GetObjectItemCaseSensitive(r->root, "kbench") : NULL;
    if (!k) return;
    cJSON_AddNumberToObject(k, "start_s", round(seconds * 1000) / 1000);
    cJSON *p = cJSON_AddObjectToObject(k, "start_parts_s");
    for (int i = 0; i < KB_START_NPARTS; i++) cJSON_AddNumberToObject(p, kb_start_parts[i], round(parts[i] * 1000) / 1000);
    head_write(r);
}

int kb_report_skip(kb_report *r, int case_index)
{
    cJSON *k = r && r->root ? cJSON_GetObjectItemCaseSensitive(r->root, "kbench") : NULL;
    if (!k) return 0;
    cJSON *a = cJSON_GetObjectItemCaseSensitive(k, "skipped_cases");
    if (!a) a = cJSON_AddArrayToObject(k, "skipped_cases");
    cJSON_AddItemToArray(a, cJSON_CreateNumber(case_index));
    return head_write(r); /* on disk before a --devices worker says it done */
}

int kb_report_close(kb_report *r, char *err, size_t errlen)
{
    if (!r) return 0;
    int rc = r->err[0] ? -1 : 0;
    if (r->csv) {
        errno = 0;
        if (fclose(r->csv) != 0 && !rc) rc = write_failed(r, r->csv_path, errno);
    }
    if (r->json) {
        char e[KB_ERRLEN];
        if (kb_json_close(r->json, rc ? NULL : e, sizeof e) && !rc) {
            snprintf(r->err, sizeof r->err, "%s", e);
            rc = -1;
        }
    }
    cJSON_Delete(r->root);
    if (rc && err) snprintf(err, errlen, "%s", r->err);
    free(r);
    return rc;
}

