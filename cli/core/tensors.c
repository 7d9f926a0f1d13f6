/* The tensors an op hands to external implementations (plugins): the
 * declarations' `when` conditions, the kbp_tensor of a kb_buf, the check
 * that a case's tensors are exactly those its op declares, and the table
 * `kbench list OP` prints. Host code, no GPU. */
#include "errors.h"
#include "op.h"
#include "params.h"
#include "tensors.h"
#include "../../include/kb_dtype.h"
#include "../../include/kbench_plugin.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* the ABI's dtype codes are kbench's */
_Static_assert((int)KBP_FP32 == (int)KB_FP32 && (int)KBP_FP16 == (int)KB_FP16 && (int)KBP_BF16 == (int)KB_BF16,
               "kbp_dtype and kb_dtype differ");

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    kb_verrf(kb_last_error, sizeof kb_last_error, fmt, ap);
    va_end(ap);
    return -1;
}

int kb_tensor_when(const kb_case *c, const char *when)
{
    if (!when) return 1;
    int holds = 1;
    for (const char *s = when;;) {
        s += strspn(s, " ");
        if (!*s) break;
        size_t len = strcspn(s, " ");
        const char *eq = memchr(s, '=', len);
        if (!eq) return -1;
        size_t nl = (size_t)(eq - s), vl = len - nl - 1;
        char name[64], want[64], have[64];
        if (!nl || !vl || nl >= sizeof name || vl >= sizeof want) return -1;
        memcpy(name, s, nl);
        name[nl] = 0;
        memcpy(want, eq + 1, vl);
        want[vl] = 0;
        int i = kb_param_index(c->op, name);
        if (i < 0) return -1;
        const kb_param *p = &c->op->params[i];
        if (p->type == KB_P_ENUM) { /* a value that is none of the choices is a typo, not "false" */
            int k, n = kb_choice_count(p);
            for (k = 0; k < n; k++)
                if (!strcmp(kb_choice(p, k, have, sizeof have), want)) break;
            if (k == n) return -1;
        }
        kb_format_value(p, &c->v[i], have, sizeof have);
        if (strcmp(have, want)) holds = 0;
        s += len;
    }
    return holds;
}

const kb_tensor_decl *kb_tensor_decl_find(const kb_case *c, const char *name, int output)
{
    const kb_op *op = c->op;
    for (int i = 0; i < op->ntensors; i++) {
        const kb_tensor_decl *d = &op->tensors[i];
        if (!d->output == !output && !strcmp(d->name, name) && kb_tensor_when(c, d->when) == 1) return d;
    }
    return NULL;
}

static void shape_text(const int64_t *shape, int ndim, char *buf, size_t n)
{
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < ndim && o < n; i++)
        o += (size_t)snprintf(buf + o, n - o, "%s%lld", i ? ", " : "[", (long long)shape[i]);
    if (o < n) snprintf(buf + o, n - o, "]");
}

int kb_plugin_tensor(kbp_tensor *t, const kb_case *c, const kb_tensor_decl *d, void *data, kb_dtype dt,
                     int is_int32, size_t n, int ndim, const int64_t *shape)
{
    const char *op = c->op->name;
    if (ndim < 1 || ndim > KBP_MAX_DIMS) return fail("%s: tensor %s: %d dimensions (1 to %d)", op, d->name, ndim, KBP_MAX_DIMS);
    if (!data) return fail("%s: tensor %s has no device memory", op, d->name);
    double elems = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) return fail("%s: tensor %s: dimension %d is %lld", op, d->name, i, (long long)shape[i]);
        elems *= (double)shape[i];
    }
    if (elems != (double)n) {
        char s[128];
        shape_text(shape, ndim, s, sizeof s);
        return fail("%s: tensor %s holds %zu elements, its shape %s %.0f", op, d->name, n, s, elems);
    }
    memset(t, 0, sizeof *t);
    t->name = d->name;
    t->data = data;
    t->dtype = is_int32 ? KBP_INT32 : (kbp_dtype)dt;
    t->is_int32 = is_int32 != 0;
    t->ndim = ndim;
    int64_t stride = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        t->shape[i] = shape[i];
        t->stride[i] = stride;
        stride *= shape[i];
    }
    return 0;
}

/* one of st's buffers as the tensor of its name */
static int from_buf(const kb_case *c, const kb_buf *b, int output,
                    int (*shape)(const kb_case *, const char *, int64_t *), kbp_tensor *t)
{
    const char *op = c->op->name;
    if (!b->name) return fail("%s: a%s buffer has no name", op, output ? "n output" : "n input");
    const kb_tensor_decl *d = kb_tensor_decl_find(c, b->name, output);
    if (!d) return fail("%s: %s %s is not among the op's tensors for this case", op, output ? "output" : "input", b->name);
    int64_t dims[KBP_MAX_DIMS] = {0};
    int nd = shape(c, b->name, dims);
    if (nd <= 0) return fail("%s: %s %s has no shape", op, output ? "output" : "input", b->name);
    return kb_plugin_tensor(t, c, d, b->dev, b->dtype, 0, b->n, nd, dims);
}

int kb_plugin_tensors_from_state(const kb_case *c, const kb_state *st,
                                 int (*shape)(const kb_case *c, const char *name, int64_t *dims),
                                 kbp_tensor *in, int *nin, kbp_tensor *out, int *nout)
{
    *nin = *nout = 0;
    if (st->nin < 0 || st->nin > KB_MAX_INPUTS || st->nout < 0 || st->nout > KB_MAX_OUTPUTS)
        return fail("%s: %d inputs, %d outputs", c->op->name, st->nin, st->nout);
    for (int i = 0; i < st->nin; i++)
        if (from_buf(c, &st->in[i], 0, shape, &in[i])) return -1;
    for (int i = 0; i < st->nout; i++)
        if (from_buf(c, &st->out[i], 1, shape, &out[i])) return -1;
    *nin = st->nin;
    *nout = st->nout;
    return 0;
}

static int count(const kbp_tensor *t, int n, const char *name)
{
    int k = 0;
    for (int i = 0; i < n; i++) k += t[i].name && !strcmp(t[i].name, name);
    return k;
}

int kb_plugin_tensors_check(const kb_case *c, const kbp_tensor *in, int nin, const kbp_tensor *out, int nout)
{
    const kb_op *op = c->op;
    for (int i = 0; i < op->ntensors; i++) {
        const kb_tensor_decl *d = &op->tensors[i];
        int w = kb_tensor_when(c, d->when);
        if (w < 0) return fail("%s: tensor %s: malformed condition '%s'", op->name, d->name, d->when);
        if (!w) continue;
        int k = d->output ? count(out, nout, d->name) : count(in, nin, d->name);
        if (k != 1)
            return fail("%s: %s %s (%s) is %s", op->name, d->output ? "output" : "input", d->name,
                        d->when ? d->when : "every case", k ? "there more than once" : "missing");
    }
    for (int dir = 0; dir < 2; dir++) {
        const kbp_tensor *t = dir ? out : in;
        for (int i = 0; i < (dir ? nout : nin); i++)
            if (!t[i].name || !kb_tensor_decl_find(c, t[i].name, dir))
                return fail("%s: %s %s is not among the op's tensors for this case", op->name, dir ? "output" : "input",
                            t[i].name ? t[i].name : "(unnamed)");
    }
    return 0;
}

int kb_plugin_tensors_finish(const kb_case *c, const kbp_tensor *in, int *nin, const kbp_tensor *out, int *nout)
{
    if (!kb_plugin_tensors_check(c, in, *nin, out, *nout)) return 0;
    *nin = *nout = 0; /* nothing half-made for the caller */
    return -1;
}

/* ---- kbench list OP ------------------------------------------------------- */

/* text wrapped at width, each line indented by indent */
static void wrap(FILE *f, const char *text, int indent, int width)
{
    const char *s = text;
    while (*s) {
        s += strspn(s, " ");
        if (!*s) break;
        int room = width - indent, len = 0, last = -1;
        while (s[len] && len < room) {
            if (s[len] == ' ') last = len;
            len++;
        }
        if (s[len] && s[len] != ' ' && last > 0) len = last; /* break at the last space that fits */
        fprintf(f, "%*s%.*s\n", indent, "", len, s);
        s += len;
    }
}

void kb_op_print_tensors(FILE *f, const kb_op *op)
{
    if (!op || !op->tensors || op->ntensors <= 0) {
        fprintf(f, "    none (this op hands no tensors to plugins)\n");
        return;
    }
    int wn = 4, ww = 6; /* "name", "always" */
    for (int i = 0; i < op->ntensors; i++) {
        const kb_tensor_decl *d = &op->tensors[i];
        int n = (int)strlen(d->name), w = d->when ? (int)strlen(d->when) : 6;
        wn = n > wn ? n : wn;
        ww = w > ww ? w : ww;
    }
    fprintf(f, "    device memory, row-major, strides in elements, the case's dtype unless the shape names\n"
               "    another; every output written whole by every launch (include/kbench_plugin.h)\n");
    fprintf(f, "    %-*s  %-3s  %-*s  %s\n", wn, "name", "dir", ww, "when", "shape");
    for (int dir = 0; dir < 2; dir++)
        for (int i = 0; i < op->ntensors; i++) {
            const kb_tensor_decl *d = &op->tensors[i];
            if (!d->output != !dir) continue;
            fprintf(f, "    %-*s  %-3s  %-*s  ", wn, d->name, dir ? "out" : "in", ww, d->when ? d->when : "always");
            /* a long shape (one a layout) a line each part, at its "; " */
            int col = 4 + wn + 2 + 3 + 2 + ww + 2;
            const char *sh = d->shape ? d->shape : "";
            int split = col + (int)strlen(sh) > 100;
            while (split && strstr(sh, "; ")) {
                const char *e = strstr(sh, "; ");
                fprintf(f, "%.*s;\n%*s", (int)(e - sh), sh, col, "");
                sh = e + 2;
            }
            fprintf(f, "%s\n", sh);
            if (d->help) wrap(f, d->help, 6 + wn, 100);
        }
}
