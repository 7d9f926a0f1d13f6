/* The GEMM ceilings: cuBLAS over the ladder, and on a case's own shapes (gemm.c). */
#ifndef KB_HARNESS_GEMM_H
#define KB_HARNESS_GEMM_H

#include "ladder.h"
#include "timer.h"
#include "../core/op.h"
#include "../core/settings.h"

/* Dense GEMM ceiling for key k: the best square cuBLAS GEMM over a ladder of
 * sizes and operand layouts (median each), cached; 0 TFLOP/s when none fits in
 * the free memory. size, layout: n and kb_gemm_layout of the best n^3 GEMM;
 * shared: the GPUs whose workers searched its ladder together (1: alone). */
int kb_gemm_tflops(kb_timer *t, kb_gemm_key k, const kb_opts *o, double *tflops, int *size, int *layout, int *shared);
/* the ceilings of keys[0..nk) measured in one search (the rest as above); 0
 * or the CUDA error. kb_gemm_wait_s: the seconds the workers' queue kept
 * the timer's searches waiting, all of them (0 alone). */
int kb_gemm_ceilings(kb_timer *t, const kb_gemm_key *keys, int nk, const kb_opts *o);
double kb_gemm_wait_s(const kb_timer *t);
/* the timer's ladders shared from now on (NULL: alone) */
void kb_timer_share_ladder(kb_timer *t, const kb_ladder_share *sh);
/* cuBLAS alone on n GEMMs (M x N x K, row-major, of key k's type) in sequence,
 * L2 flushed before each sequence, median: their FLOPs over the time; cached;
 * 0 when they do not fit beside the case. */
int kb_gemm_shapes_tflops(kb_timer *t, kb_gemm_key k, const int (*mnk)[3], int n, const kb_opts *o, double *tflops);
size_t kb_gemm_shapes_bytes(kb_gemm_key k, const int (*mnk)[3], int n); /* the device bytes that allocates */
size_t kb_gemm_ladder_bytes(kb_gemm_key k); /* the device bytes key k's ladder allocates at most (its largest rung) */

#endif
