/* The ops' tensors as plugins see them (tensors.c). */
#ifndef KB_CORE_TENSORS_H
#define KB_CORE_TENSORS_H

#include "op.h"
#include "../../include/kb_dtype.h"
#include "../../include/kbench_plugin.h"
#include <stdio.h>

/* ---- tensors.c: the ops' tensors for plugins ---------------------------- */
#define KB_MAX_PLUGIN_INPUTS (KB_MAX_INPUTS + 2) /* in[] of plugin_tensors */
/* Whether case c has a tensor declared with this `when`: 1, 0, or -1 when
 * the text is malformed (a term that is not PARAM=VALUE, a parameter c's op
 * lacks, a value that is not one of an enum's choices). */
int kb_tensor_when(const kb_case *c, const char *when);
/* The declaration of c's input (output 0) or output (1) of that name whose
 * `when` holds for c; NULL if none. */
const kb_tensor_decl *kb_tensor_decl_find(const kb_case *c, const char *name, int output);
/* t = a tensor named d->name over data: dtype dt (is_int32: int32, dtype
 * KBP_FP32 unused), ndim dims of shape, row-major strides. 0, or -1 with
 * kb_last_error when data is NULL, ndim is out of 1..KBP_MAX_DIMS, a dimension
 * is negative or the shape's elements are not n (the buffer's). */
int kb_plugin_tensor(kbp_tensor *t, const kb_case *c, const kb_tensor_decl *d, void *data, kb_dtype dt,
                     int is_int32, size_t n, int ndim, const int64_t *shape);
/* plugin_tensors' common part: st's inputs, then its outputs (out[i] from
 * st->out[i]), each under the declaration of its name (kb_tensor_decl_find)
 * with the shape shape(c, name, output, dims) gives (its ndim; <= 0: the op
 * has no such tensor). 0, or -1 with kb_last_error (a buffer the table does
 * not declare for c, a shape that does not match the buffer). */
int kb_plugin_tensors_from_state(const kb_case *c, const kb_state *st,
                                 int (*shape)(const kb_case *c, const char *name, int64_t *dims),
                                 kbp_tensor *in, int *nin, kbp_tensor *out, int *nout);
/* Whether in[] and out[] are exactly the tensors c's op declares for c (each
 * declaration whose `when` holds once, in its direction, nothing else): 0, or
 * -1 with kb_last_error naming the first difference. */
int kb_plugin_tensors_check(const kb_case *c, const kbp_tensor *in, int nin, const kbp_tensor *out, int nout);
/* kb_plugin_tensors_check, and on failure no tensors (*nin = *nout = 0): the
 * last step of every op's plugin_tensors. 0 or -1. */
int kb_plugin_tensors_finish(const kb_case *c, const kbp_tensor *in, int *nin, const kbp_tensor *out, int *nout);
/* kb_op_print_tensors: below, with plugin.c's. */
/* RoPE's plugin_tensors with thd's cu_seqlens (device memory) given rather
 * than read from st->priv: no GPU call, nothing read through the pointers
 * (tests call it with fake ones). */
int kb_rope_plugin_tensors(const kb_case *c, const kb_state *st, const int *cu_seqlens, kbp_tensor *in, int *nin,
                           kbp_tensor *out, int *nout);
/* The tensors an op hands to plugins, for people. */
void kb_op_print_tensors(FILE *f, const kb_op *op);

#endif
