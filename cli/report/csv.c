/* The CSV: one column per parameter of the ops (the union, pass, dtype and
 * layout first), then the statistics (csv.h). */
#include "conditions.h"
#include "csv.h"
#include "row.h"
#include "../core/op.h"
#include "../core/params.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
/* Parameter columns: the union over the ops, pass/dtype/layout first. */
static const char *const fixed_cols[] = {"pass", "dtype", "layout"};

static int is_fixed(const char *name)
{
    for (int i = 0; i < 3; i++)
        if (!strcmp(name, fixed_cols[i])) return 1;
    return 0;
}

static int param_cols(const kb_op *const *ops, int nops, const char **cols)
{
    int n = 0;
    for (int o = 0; o < nops; o++)
        for (int i = 0; i < ops[o]->nparams; i++) {
            const char *nm = ops[o]->params[i].name;
            int seen = is_fixed(nm);
            for (int k = 0; k < n && !seen; k++) seen = !strcmp(cols[k], nm);
            if (!seen && n < 64) cols[n++] = nm;
        }
    return n;
}

void kb_csv_str(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\n\r")) { fputs(s, f); return; }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s == '\n' || *s == '\r' ? ' ' : *s, f);
    }
    fputc('"', f);
}

static const char *const stat_cols =
    "median_ms,p25_ms,p75_ms,min_ms,max_ms,mean_ms,stddev_ms,noise_pct,samples,timing,bytes,gbps,pct_of_copy,copy_gbps,"
    "flops,tflops,pct_of_gemm,gemm_tflops,cublas_shape_tflops,pct_of_cublas_shape,note,rel_err,max_abs_err,verified,"
    "verified_rows,speedup_vs_baseline,kernel,sm_mhz_min,sm_mhz_med,mem_mhz_min,mem_mhz_med,power_w_med,power_w_max,"
    "temp_c_max,throttle_reasons,throttled,error,reason,case";

void kb_csv_header(FILE *f, const kb_op *const *ops, int nops)
{
    const char *cols[64];
    int n = param_cols(ops, nops, cols);
    fputs("op,pass,impl,dtype,layout", f);
    for (int i = 0; i < n; i++) fprintf(f, ",%s", cols[i]);
    fprintf(f, ",%s\n", stat_cols);
}

/* numbers: empty when unknown (0 for a rate means not measured) */
static void num(FILE *f, double v, const char *fmt)
{
    fputc(',', f);
    if (v != 0 && isfinite(v)) fprintf(f, fmt, v);
}

void kb_csv_row(FILE *f, const kb_row *r, const kb_op *const *ops, int nops)
{
    const char *cols[64];
    int n = param_cols(ops, nops, cols);
    char v[4096];
    const kb_case *c = r->c;
    fputs(c->op->name, f);
    kb_case_value_text(c, "pass", v, sizeof v);
    fprintf(f, ",%s,", v);
    kb_csv_str(f, r->impl);
    kb_case_value_text(c, "dtype", v, sizeof v);
    fprintf(f, ",%s", v);
    kb_case_value_text(c, "layout", v, sizeof v);
    fprintf(f, ",%s", v);
    for (int i = 0; i < n; i++) {
        kb_case_value_text(c, cols[i], v, sizeof v);
        fputc(',', f);
        kb_csv_str(f, v);
    }
    int timed = r->st.samples > 0;
    if (timed) {
        fprintf(f, ",%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.3f,%d,%s", r->st.median, r->st.p25, r->st.p75, r->st.min,
                r->st.max, r->st.mean, r->st.stddev, r->st.noise_pct, r->st.samples, r->timing ? r->timing : "");
    } else {
        fputs(",,,,,,,,,,", f); /* median ... timing: 10 */
    }
    fprintf(f, ",%.0f", r->bytes);
    num(f, r->gbps, "%.2f");
    num(f, r->pct_of_copy, "%.2f");
    num(f, r->copy_gbps, "%.2f");
    fprintf(f, ",%.0f", r->flops);
    num(f, r->tflops, "%.4f");
    num(f, r->pct_of_gemm, "%.2f");
    num(f, r->gemm_tflops, "%.2f");
    num(f, r->cublas_shape_tflops, "%.2f");
    num(f, r->pct_of_cublas_shape, "%.2f");
    fputc(',', f);
    kb_csv_str(f, r->note);
    if (r->verified >= 0) fprintf(f, ",%.3e,%.3e", r->rel_err, r->max_abs_err);
    else fputs(",,", f);
    fprintf(f, ",%s", kb_verdict_name(r->verified));
    num(f, (double)r->verified_rows, "%.0f");
    num(f, r->speedup, "%.3f");
    fputc(',', f);
    kb_csv_str(f, r->kernel);
    const kb_cond *k = &r->cond;
    if (k->n > 0) {
        char names[256];
        num(f, k->sm_min_mhz, "%.0f");
        num(f, k->sm_med_mhz, "%.0f");
        num(f, k->mem_min_mhz, "%.0f");
        num(f, k->mem_med_mhz, "%.0f");
        num(f, k->power_med_w, "%.1f");
        num(f, k->power_max_w, "%.1f");
        num(f, k->temp_max_c, "%.0f");
        fputc(',', f);
        kb_csv_str(f, kb_throttle_names(k->reasons, names, sizeof names));
        fprintf(f, ",%d", k->throttled ? 1 : 0);
    } else {
        fputs(",,,,,,,,,", f);
    }
    fputc(',', f);
    kb_csv_str(f, r->error);
    fputc(',', f);
    kb_csv_str(f, r->reason);
    fprintf(f, ",%d\n", r->c->index); /* the case's place in the whole sweep (kbench merge orders by it) */
}
