/* kbench's side of the helper process that runs plugin implementations
 * (isolate.h): started on the first plugin row, asked one row at a time,
 * killed and started again when it dies or hangs. */
#include "isolate.h"
#include "pipeio.h"
#include "../core/clock.h"
#include "watch.h"
#include "../core/errors.h"
#include "../core/plugin.h"
#include "../core/pyrt.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct {
    pid_t pid; /* 0: none */
    int req, rep;
} helper;

static const char *helper_exe; /* NULL: no helper (a test binary linking kb_main): in process */

void kb_isolate_exe(const char *path) { helper_exe = path; }

int kb_isolated(const kb_opts *o, const kb_impl *impl)
{
    return impl->plugin != NULL && helper_exe && strcmp(o->isolate, "off") != 0;
}

/* How the helper ended, in words ("died of SIGSEGV", "exit 3"); it is reaped. */
static void reap(char *why, size_t n)
{
    int status = 0;
    pid_t p = helper.pid;
    close(helper.req);
    close(helper.rep);
    helper.pid = 0;
    if (p <= 0 || waitpid(p, &status, 0) != p) {
        snprintf(why, n, "ended");
        return;
    }
    if (WIFSIGNALED(status)) snprintf(why, n, "died of %s", strsignal(WTERMSIG(status)));
    else if (WEXITSTATUS(status) == KB_EXIT_CUDA)
        snprintf(why, n, "ended with exit 3 (a lost GPU context, or its watchdog on a hung kernel)");
    else snprintf(why, n, "ended with exit %d", WEXITSTATUS(status));
}

void kb_isolate_stop(void)
{
    if (!helper.pid) return;
    kill(helper.pid, SIGKILL);
    char why[128];
    reap(why, sizeof why);
}

/* The helper started: this executable as `kbench __helper PLUGINS`, requests
 * on its fd 3, answers on its fd 4, its stdout joined to stderr (a plugin's
 * printf must not reach kbench's table). 0, or -1 with why. */
static int start(const char *python, char *why, size_t n)
{
    char spec[4096];
    if (kb_plugins_spec(spec, sizeof spec)) return snprintf(why, n, "the plugin list is too long for a helper"), -1;
    int q[2], a[2];
    if (pipe2(q, O_CLOEXEC)) return snprintf(why, n, "pipe: %s", strerror(errno)), -1;
    if (pipe2(a, O_CLOEXEC)) {
        close(q[0]), close(q[1]);
        return snprintf(why, n, "pipe: %s", strerror(errno)), -1;
    }
    fcntl(a[0], F_SETPIPE_SZ, 1 << 20); /* the outputs come this way */
    fflush(NULL);
    const pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        close(q[0]), close(q[1]), close(a[0]), close(a[1]);
        return snprintf(why, n, "fork: %s", strerror(errno)), -1;
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* kbench gone: so is the helper */
        if (getppid() != parent) _exit(127);
        /* out of the way of 3 and 4 first (a pipe may be 3 or 4 itself) */
        int rq = fcntl(q[0], F_DUPFD_CLOEXEC, 10), wa = fcntl(a[1], F_DUPFD_CLOEXEC, 10);
        if (rq < 0 || wa < 0 || dup2(rq, KB_ISO_REQ_FD) < 0 || dup2(wa, KB_ISO_REP_FD) < 0 || dup2(2, 1) < 0) _exit(127);
        char *argv[] = {"kbench", "__helper", spec, (char *)python, NULL}; /* python: .py implementations' interpreter */
        execv(helper_exe, argv);
        _exit(127);
    }
    close(q[0]);
    close(a[1]);
    helper.pid = pid;
    helper.req = q[1];
    helper.rep = a[0];
    return 0;
}

/* the request for impl on c, its int lists after it; -1: refused (too many parameters) */
static int send_request(const kb_case *c, const kb_impl *impl, const kb_opts *o, int check_mode)
{
    kb_iso_req q;
    memset(&q, 0, sizeof q);
    q.magic = KB_ISO_MAGIC;
    q.check_mode = check_mode;
    q.nparams = c->op->nparams;
    q.index = c->index;
    q.seed = c->seed;
    snprintf(q.op, sizeof q.op, "%s", c->op->name);
    snprintf(q.impl, sizeof q.impl, "%s", impl->name);
    q.opts = *o;
    for (int i = 0; i < c->op->nparams && i < KB_MAX_PARAMS; i++) {
        q.num[i] = c->v[i].num;
        q.nlist[i] = c->v[i].list ? c->v[i].nlist : 0;
    }
    if (kb_write_all(helper.req, &q, sizeof q)) return -1;
    for (int i = 0; i < q.nparams; i++)
        if (q.nlist[i] && kb_write_all(helper.req, c->v[i].list, (size_t)q.nlist[i] * sizeof(int))) return -1;
    return 0;
}

/* the answer after the header: samples and outputs */
static int read_rest(kb_iso_result *r, double deadline, int *late)
{
    const kb_iso_rep *a = &r->rep;
    if (a->nsamples > 0) {
        r->samples = malloc((size_t)a->nsamples * sizeof *r->samples);
        if (!r->samples) abort();
        if (kb_read_all(helper.rep, r->samples, (size_t)a->nsamples * sizeof *r->samples, deadline, late)) return -1;
    }
    for (int i = 0; i < a->nout && i < KB_MAX_OUTPUTS && a->ran; i++) {
        r->h[i] = malloc(a->out_bytes[i] + 1);
        if (!r->h[i]) abort();
        if (kb_read_all(helper.rep, r->h[i], a->out_bytes[i], deadline, late)) return -1;
    }
    return 0;
}

int kb_isolate_run(const kb_case *c, const kb_impl *impl, const kb_opts *o, int check_mode, kb_iso_result *r)
{
    memset(r, 0, sizeof *r);
    char why[256];
    if (!helper.pid && start(kb_py_started() ? kb_py_interpreter() : o->python, why, sizeof why)) { /* the one kbench runs */
        snprintf(r->error, sizeof r->error, "cannot start the helper process: %s", why);
        return -1;
    }
    /* the helper's watchdog ends it past 2 x timeout + 60 s without progress;
     * this is the backstop for what it cannot see (a host loop in prepare) */
    const double limit = 3 * o->timeout + 120, deadline = kb_now_s() + limit;
    int late = 0;
    struct sigaction ign = {.sa_handler = SIG_IGN}, old;
    sigaction(SIGPIPE, &ign, &old);
    int bad = send_request(c, impl, o, check_mode) ||
              kb_read_all(helper.rep, &r->rep, sizeof r->rep, deadline, &late) || r->rep.magic != KB_ISO_MAGIC ||
              read_rest(r, deadline, &late);
    sigaction(SIGPIPE, &old, NULL);
    if (bad) { /* nothing of a cut answer is used: no outputs to compare */
        free(r->samples);
        r->samples = NULL;
        for (int i = 0; i < KB_MAX_OUTPUTS; i++) free(r->h[i]), r->h[i] = NULL;
        memset(&r->rep, 0, sizeof r->rep);
        if (late || kb_stop_signal) kill(helper.pid, SIGKILL);
        reap(why, sizeof why);
        if (kb_stop_signal) snprintf(r->error, sizeof r->error, "stopped (the helper process killed)");
        else if (late) snprintf(r->error, sizeof r->error, "no answer from the helper process in %.0f s: killed (hung)", limit);
        else snprintf(r->error, sizeof r->error, "the helper process %s", why);
        return -1;
    }
    snprintf(r->error, sizeof r->error, "%s", r->rep.error);
    if (r->rep.sticky) { /* it ends after this answer: reaped now, started again next time */
        reap(why, sizeof why);
    }
    return 0;
}
