/* The helper process's side (isolate.h): `kbench __helper PLUGINS` loads the
 * plugins, opens the GPU and a timer, then answers one request at a time:
 * the case's inputs made from its seed, the implementation prepared,
 * verified (poisoned outputs) and timed as run.c does in kbench's own
 * process, and everything a row needs sent back. */
#include "device.h"
#include "isolate.h"
#include "lifecycle.h"
#include "pipeio.h"
#include "presample.h"
#include "rows.h"
#include "timer.h"
#include "watch.h"
#include "../core/clock.h"
#include "../core/errors.h"
#include "../core/op.h"
#include "../core/params.h"
#include "../core/plugin.h"
#include "../core/pyrt.h"
#include "../core/registry.h"
#include "../../include/kb_dtype.h"

#include <cuda_runtime_api.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The case of a request, its int lists read after it; -1: a broken request. */
static int read_case(const kb_iso_req *q, kb_case *c, const kb_impl **impl)
{
    memset(c, 0, sizeof *c);
    c->op = kb_find_op(q->op);
    if (!c->op || q->nparams != c->op->nparams || q->nparams > KB_MAX_PARAMS) return -1;
    c->seed = q->seed;
    c->index = q->index;
    for (int i = 0; i < q->nparams; i++) {
        c->v[i].num = q->num[i];
        if (q->nlist[i] <= 0) continue;
        int *l = malloc((size_t)q->nlist[i] * sizeof(int));
        int bad = !l || kb_read_all(KB_ISO_REQ_FD, l, (size_t)q->nlist[i] * sizeof(int), 0, NULL) ||
                  kb_val_list(&c->v[i], l, q->nlist[i]); /* with the sum and maximum ops read (params.h) */
        free(l);
        if (bad) return -1;
    }
    *impl = NULL;
    for (int k = 0; k < kb_op_nimpls(c->op) && !*impl; k++)
        if (!strcmp(kb_op_impl(c->op, k)->name, q->impl)) *impl = kb_op_impl(c->op, k);
    return *impl ? 0 : -1;
}

static void free_state(kb_case *c, kb_state *st)
{
    kb_case_free(c, st);
    for (int i = 0; i < c->op->nparams; i++) kb_val_list_drop(&c->v[i]);
}

/* prepare (untimed, its stream synchronised), the verify run, the timing:
 * into a, h and *samples; the error, 0 */
static int measure(const kb_iso_req *q, const kb_case *c, const kb_impl *impl, kb_state *st, kb_timer *t,
                   const kb_device *dev, kb_iso_rep *a, void **h, double **samples)
{
    kb_impl_run run;
    int e = kb_impl_begin(impl, c, st, &dev->attr, kb_timer_stream(t), &run);
    if (e == KB_NA) {
        a->na = 1;
        snprintf(a->reason, sizeof a->reason, "%s", run.why);
        return 0;
    }
    snprintf(a->kernel, sizeof a->kernel, "%s", run.kernel);
    a->extra_bytes = kb_presample_read_bytes(st, &run);
    a->unwritten = run.unwritten;
    kb_watch_arm(a->kernel, 2 * q->opts.timeout + 60); /* a hang ends this process, not kbench */
    double tw = kb_now_s();
    if (!e && !q->opts.no_verify)
        e = verify_run(impl, c, st, &run, run.stream, q->check_mode, h, &a->ran, a->nondet, sizeof a->nondet);
    a->wall_verify = kb_now_s() - tw;
    if (!e && !q->check_mode) {
        launch_ctx l = {impl, c, st, &run};
        kb_time_extra x = {.keep = q->opts.save_samples, .before = kb_presample_any(&run) ? presample_fn : NULL,
                           .interpreted = impl->interpreted};
        tw = kb_now_s();
        e = kb_time(t, launch_fn, &l, &q->opts, a->kernel, &a->st, &x);
        a->wall_time = kb_now_s() - tw;
        a->cond = x.cond;
        snprintf(a->fallback, sizeof a->fallback, "%s", x.fallback);
        a->host_ms = x.host_ms;
        if (!e && x.samples) *samples = x.samples, a->nsamples = a->st.samples;
        else free(x.samples);
    }
    kb_watch_disarm();
    const int r = kb_impl_end(impl, c, st, &run, kb_cuda_sticky(e));
    return e ? e : r;
}

/* One request answered. 0; -1: stop (kbench gone); 1: the context is lost. */
static int serve(kb_timer *t, const kb_device *dev)
{
    kb_iso_req q;
    if (kb_read_all(KB_ISO_REQ_FD, &q, sizeof q, 0, NULL) || q.magic != KB_ISO_MAGIC) return -1;
    kb_case c;
    const kb_impl *impl = NULL;
    if (read_case(&q, &c, &impl)) return -1;
    kb_iso_rep a;
    memset(&a, 0, sizeof a);
    a.magic = KB_ISO_MAGIC;
    void *h[KB_MAX_OUTPUTS] = {0};
    double *samples = NULL;
    kb_state st;
    memset(&st, 0, sizeof st);
    kb_last_error[0] = 0;
    int e = kb_case_setup(&c, &st);
    if (e) snprintf(a.error, sizeof a.error, "setup: %.400s", kb_last_error);
    else if ((e = measure(&q, &c, impl, &st, t, dev, &a, h, &samples)) != 0)
        snprintf(a.error, sizeof a.error, "%.500s", kb_last_error[0] ? kb_last_error : cudaGetErrorString((cudaError_t)e));
    a.e = e;
    a.sticky = e && kb_cuda_sticky(e);
    a.nout = st.nout;
    for (int i = 0; i < st.nout && i < KB_MAX_OUTPUTS; i++) a.out_bytes[i] = st.out[i].n * kb_dtype_size(st.out[i].dtype);
    if (!a.ran) a.nout = 0;
    int bad = kb_write_all(KB_ISO_REP_FD, &a, sizeof a) ||
              (a.nsamples && kb_write_all(KB_ISO_REP_FD, samples, (size_t)a.nsamples * sizeof *samples));
    for (int i = 0; i < a.nout && !bad; i++) bad = kb_write_all(KB_ISO_REP_FD, h[i], a.out_bytes[i]);
    for (int i = 0; i < KB_MAX_OUTPUTS; i++) free(h[i]);
    free(samples);
    if (a.sticky) return 1; /* nothing more to do in this context */
    free_state(&c, &st);
    return bad ? -1 : 0;
}

int kb_helper_main(int argc, char **argv)
{
    if (argc != 4) return fprintf(stderr, "kbench __helper: run by kbench itself (isolate.h)\n"), KB_EXIT_USAGE;
    kb_py_set_interpreter(argv[3]); /* a .py among the plugins: the run's interpreter */
    fcntl(KB_ISO_REQ_FD, F_SETFD, FD_CLOEXEC); /* not inherited by what a plugin starts (a compiler's workers) */
    fcntl(KB_ISO_REP_FD, F_SETFD, FD_CLOEXEC);
    signal(SIGINT, SIG_IGN); /* Ctrl-C reaches the whole group: kbench stops, then ends the helper */
    signal(SIGTERM, SIG_IGN);
    char err[KB_ERRLEN];
    if (argv[2][0] && kb_plugin_load_list(argv[2], err, sizeof err))
        return fprintf(stderr, "kbench helper: %s\n", err), KB_EXIT_USAGE;
    kb_device dev;
    kb_timer *t = NULL;
    if (kb_device_open(&dev)) return KB_EXIT_CUDA;
    if (kb_timer_create(&t, &dev)) {
        fprintf(stderr, "kbench helper: %s\n", kb_last_error);
        return KB_EXIT_CUDA;
    }
    int r;
    while ((r = serve(t, &dev)) == 0) {}
    if (r > 0) _exit(KB_EXIT_CUDA); /* said in the answer; kbench starts another */
    kb_timer_destroy(t);
    return 0;
}
