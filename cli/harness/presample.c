/* Untimed work before each launch: in-place inputs restored, accumulating
 * outputs zeroed (presample.h). */
#include "presample.h"
#include "../../include/kb_dtype.h"
#include "../core/errors.h"

#include <cuda_runtime_api.h>

int kb_presample_any(const kb_impl_run *r) { return r->ninplace > 0 || r->accumulate != 0; }

int kb_presample_begin(kb_impl_run *r)
{
    for (int k = 0; k < r->ninplace; k++) {
        int e = cudaMalloc(&r->inplace[k].pristine, r->inplace[k].bytes + 1);
        if (e) r->inplace[k].pristine = NULL;
        /* on the run's stream, finished before the first restore reads it
         * (a legacy-stream copy may return before it lands; the timer's
         * stream does not wait for that one) */
        if (!e) e = cudaMemcpyAsync(r->inplace[k].pristine, r->inplace[k].in, r->inplace[k].bytes,
                                    cudaMemcpyDeviceToDevice, (cudaStream_t)r->stream);
        if (!e) e = cudaStreamSynchronize((cudaStream_t)r->stream);
        if (e) {
            cudaFree(r->inplace[k].pristine); /* never restored from: the input is as it was */
            r->inplace[k].pristine = NULL;
            kb_cuda_fail(e, "a copy of an input written in place", __FILE__, __LINE__);
            return e;
        }
    }
    return 0;
}

int kb_presample(const kb_state *st, const kb_impl_run *r, void *stream)
{
    int e = 0;
    for (int k = 0; k < r->ninplace && !e; k++)
        e = cudaMemcpyAsync(r->inplace[k].in, r->inplace[k].pristine, r->inplace[k].bytes, cudaMemcpyDeviceToDevice,
                            (cudaStream_t)stream);
    for (int i = 0; i < st->nout && !e; i++)
        if (r->accumulate >> i & 1)
            e = cudaMemsetAsync(st->out[i].dev, 0, st->out[i].n * kb_dtype_size(st->out[i].dtype), (cudaStream_t)stream);
    if (e) kb_cuda_fail(e, "restoring an in-place input or zeroing an accumulating output", __FILE__, __LINE__);
    return e;
}

int kb_presample_collect(kb_state *st, const kb_impl_run *r, void *stream)
{
    int e = 0;
    for (int k = 0; k < r->ninplace && !e; k++)
        e = cudaMemcpyAsync(st->out[r->inplace[k].out].dev, r->inplace[k].in, r->inplace[k].bytes,
                            cudaMemcpyDeviceToDevice, (cudaStream_t)stream);
    if (e) kb_cuda_fail(e, "reading an in-place result", __FILE__, __LINE__);
    return e;
}

int kb_presample_end(kb_impl_run *r, void *stream)
{
    int e = 0;
    for (int k = 0; k < r->ninplace; k++) {
        if (r->inplace[k].pristine && !e)
            e = cudaMemcpyAsync(r->inplace[k].in, r->inplace[k].pristine, r->inplace[k].bytes, cudaMemcpyDeviceToDevice,
                                (cudaStream_t)stream);
        if (!e) e = cudaStreamSynchronize((cudaStream_t)stream);
        cudaFree(r->inplace[k].pristine);
        r->inplace[k].pristine = NULL;
    }
    if (e) kb_cuda_fail(e, "restoring an input written in place", __FILE__, __LINE__);
    return e;
}

double kb_presample_read_bytes(const kb_state *st, const kb_impl_run *r)
{
    double b = 0;
    for (int i = 0; i < st->nout; i++) {
        const double bytes = (double)st->out[i].n * (double)kb_dtype_size(st->out[i].dtype);
        if (r->unwritten >> i & 1) b -= bytes; /* neither written nor verified */
        else if (r->accumulate >> i & 1) b += bytes;
    }
    return b;
}
