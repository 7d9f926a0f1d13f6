/* Splitting a sweep: --shard K/N (shard.c) and the --devices queue
 * (devices.c, shard.c), for the files that deal cases out. */
#ifndef KB_SHARD_H
#define KB_SHARD_H
#include "count.h"
#include "../core/config.h"
#include "../core/op.h"
#include "../core/settings.h"

/* ---- shard.c: --shard K/N ------------------------------------------------ */
#define KB_MAX_SHARDS 4096
/* "K/N", 0 <= K < N <= KB_MAX_SHARDS: 0, or -1 with err */
int kb_shard_parse(const char *s, int *k, int *n, char *err, size_t errlen);
/* the sweep's identity: 16 hex digits of a hash of the seed and the cases in order */
void kb_plan_identity(const kb_plan *plan, char id[17]);
/* a case's wall seconds under o, roughly (its implementations' sampling):
 * the shards' balance (shard.c) */
double kb_case_cost(const kb_case *c, const kb_opts *o);
/* shard_of[i] in [0, n) for each case: longest-processing-time first by
 * kb_case_cost over groups of cases that share their ceilings (summed), ties
 * by the text of a group's first case; the same for any order of the cases */
void kb_shard_assign(const kb_plan *plan, int n, int *shard_of);
/* After kb_plan_seed: records the sweep (identity, cases, ops), then keeps
 * only shard opts.shard's cases (their index and seed unchanged). 0, or -1
 * with err on a bad --shard. */
int kb_plan_shard(kb_plan *plan, char *err, size_t errlen);

/* ---- the --devices queue's order ---------------------------------------- */
/* the order cases are dealt to shards in: the longest (kb_case_cost)
 * first, ties by op and label (shard.c) */
void kb_plan_by_cost(const kb_plan *plan, int *order);
/* A case's CPU reference in core-seconds, roughly (0 under --no-verify):
 * its op's ref_cost, else in proportion to its bytes */
double kb_case_ref_cost(const kb_case *c, const kb_opts *o);
/* the larger of its wall estimate (kb_case_cost) and its reference's on
 * threads cores: how long a --devices worker is busy with it, roughly */
double kb_case_queue_cost(const kb_case *c, const kb_opts *o, int threads);
/* The order the --devices queue hands cases out in: the longest
 * (kb_case_queue_cost, threads: a worker's reference team) first, ties by
 * op and label. Not kb_case_cost alone: the MLP grid's 8192 x 28672 cases
 * are short on the GPU but have the longest references, and handed out
 * among the last the grid waited 29.6 s summed for references on 4 x H200
 * (48.7 s a run against 50.6). By size (bytes + flops / 250) the
 * references came first, but the default sweep's layernorm 4096 x 1024
 * cases, small and 3.2 s each (thousands of flushed samples), came last.
 * On 4 x H200 (2026-11-26, one machine): the default sweep 17.4 and 17.5 s
 * against 17.9 s by size, the grid 33.6 s against 34.4 s (replayed on the
 * per-case times of another run: 17.4 against 17.8 s, 33.1 against 33.4). */
void kb_plan_by_queue(const kb_plan *plan, int threads, int *order);
/* group[j] for each place j in order: the first place whose case shares
 * the ceilings of order[j]'s (the same kb_case_copy_key; itself when none before) */
void kb_ceiling_groups(const kb_plan *plan, const int *order, int *group);
/* The --devices queue: the place in order (of n) of the next case for worker
 * w, given the places taken (taken[j]) and each worker's last place (last[v],
 * -1: none, or the worker is gone): a place left whose case shares the
 * ceilings of w's last (w measured them), else the first left whose ceilings
 * no other worker's last case has (that worker comes back for it), else the
 * first left; -1: none left. */
int kb_queue_pick(const int *group, int n, const char *taken, const int *last, int nworkers, int w);
/* group[w]: the first of the n workers whose GPU is of w's model (models[w]
 * "": its own), size[w] how many they are */
void kb_model_groups(char (*models)[KB_MODEL_LEN], int n, int *group, int *size);

#endif
