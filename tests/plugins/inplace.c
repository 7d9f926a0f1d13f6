/* Declarations the harness acts on, with launches that do nothing: a rope
 * implementation that writes out over its input t (inplace "out=t"), and a
 * layernorm backward that adds into dx, dgamma and dbeta (accumulates).
 * test_impl.c prepares them on a host-only state and checks what the
 * harness was told; plugin info prints them. */
#include "kbench_plugin.h"

#include <stdio.h>

static int fwd_only(const kbp_case *c, char *why, size_t n)
{
    if (kbp_param_is(c, "pass", "fwd")) return 0;
    snprintf(why, n, "the forward only");
    return 1;
}

static int bwd_only(const kbp_case *c, char *why, size_t n)
{
    if (kbp_param_is(c, "pass", "bwd")) return 0;
    snprintf(why, n, "the backward only");
    return 1;
}

static int launch(const kbp_case *c, void *state, void *stream)
{
    (void)c, (void)state, (void)stream;
    return 0;
}

static const kbp_impl impls[] = {
    {"rope", "rot_inplace", "rotates t in place", fwd_only, NULL, launch, NULL, 0, "out=t", NULL, NULL, 0},
    {"layernorm", "bwd_accum", "adds into its gradients", bwd_only, NULL, launch, NULL, 0, NULL, "dx,dgamma,dbeta",
     NULL, 0},
};
static const kbp_table table = {KBP_ABI_VERSION, 2, impls};

const kbp_table *kbench_plugin(void) { return &table; }
