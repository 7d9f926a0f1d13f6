/* The table on stdout: a row a line (table.h). */
#include "row.h"
#include "table.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
void kb_table_header(FILE *f)
{
    fprintf(f, "  %-11s %10s %9s %6s %8s %6s %7s %9s  %-8s %7s  %-9s %s\n", "impl", "median_ms", "GB/s", "%copy", "TFLOP/s",
            "%gemm", "%cublas", "rel_err", "verified", "speedup", "note", "kernel");
}

void kb_table_row(FILE *f, const kb_row *r)
{
    char med[32] = "-", gb[32] = "-", pc[32] = "-", tf[32] = "-", pg[32] = "-", pb[32] = "-", re[32] = "-", sp[32] = "-";
    char note[64] = "-";
    if (r->st.samples) {
        snprintf(med, sizeof med, "%.4f", r->st.median);
        snprintf(gb, sizeof gb, "%.1f", r->gbps);
        if (r->pct_of_copy > 0) snprintf(pc, sizeof pc, "%.1f", r->pct_of_copy);
        snprintf(tf, sizeof tf, "%.3f", r->tflops);
        if (r->pct_of_gemm > 0) snprintf(pg, sizeof pg, "%.1f", r->pct_of_gemm);
        if (r->pct_of_cublas_shape > 0) snprintf(pb, sizeof pb, "%.1f", r->pct_of_cublas_shape);
        if (r->note[0] || r->cond.throttled)
            snprintf(note, sizeof note, "%s%s%s", r->note, r->note[0] && r->cond.throttled ? "," : "",
                     r->cond.throttled ? "THROTTLED" : "");
    }
    if (r->verified >= 0) snprintf(re, sizeof re, "%.2e", r->rel_err);
    if (r->speedup > 0) snprintf(sp, sizeof sp, "%.2fx", r->speedup);
    fprintf(f, "  %-11s %10s %9s %6s %8s %6s %7s %9s  %-8s %7s  %-9s %s", r->impl, med, gb, pc, tf, pg, pb, re,
            r->verified == 0 ? "FAIL" : kb_verdict_name(r->verified), sp, note, r->kernel[0] ? r->kernel : "-");
    if (r->error[0]) fprintf(f, "  %s", r->error);
    if (r->reason[0]) fprintf(f, "  %s", r->reason);
    fputc('\n', f);
    fflush(f);
}
