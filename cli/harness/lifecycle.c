/* A case's state and one implementation's run of it (lifecycle.h). */
#include "lifecycle.h"
#include "presample.h"
#include "../core/errors.h"

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int kb_case_setup(const kb_case *c, kb_state *st)
{
    int e = c->op->setup(c, st);
    if (!e && (e = cudaDeviceSynchronize())) kb_cuda_fail(e, "setup's uploads", __FILE__, __LINE__);
    return e;
}

void kb_case_free(const kb_case *c, kb_state *st)
{
    if (c->op->teardown) c->op->teardown(c, st);
    for (int k = 0; k < st->nin; k++) { cudaFree(st->in[k].dev); free(st->in[k].host); }
    for (int k = 0; k < st->nout; k++) { cudaFree(st->out[k].dev); free(st->out[k].ref); free(st->out[k].rows); }
}

int kb_impl_begin(const kb_impl *impl, const kb_case *c, kb_state *st, const kb_devattr *d, void *stream,
                  kb_impl_run *run)
{
    memset(run, 0, sizeof *run);
    run->impl = impl;
    run->stream = stream;
    if (cudaGetDevice(&run->device)) run->device = 0;
    int e = impl->prepare ? impl->prepare(c, st, d, run) : 0;
    if (e == KB_NA) {
        if (!run->why[0]) snprintf(run->why, sizeof run->why, "cannot take this case");
        if (impl->release) impl->release(c, st, run);
        return KB_NA;
    }
    if (!run->kernel[0]) snprintf(run->kernel, sizeof run->kernel, "%s", impl->name);
    if (!e && impl->prepare) e = cudaStreamSynchronize((cudaStream_t)stream); /* what prepare queued */
    if (!e && kb_presample_any(run)) e = kb_presample_begin(run);
    return e;
}

int kb_impl_end(const kb_impl *impl, const kb_case *c, kb_state *st, kb_impl_run *run, int lost)
{
    int e = 0;
    if (kb_presample_any(run) && !lost) e = kb_presample_end(run, run->stream); /* the next one reads the inputs */
    if (impl->release) impl->release(c, st, run);
    return e;
}
