/* The parent's queue of GEMM-ladder rungs for --devices workers of one GPU
 * model, and its messages (ladder_queue.c). */
#ifndef KB_FLEET_LADDER_QUEUE_H
#define KB_FLEET_LADDER_QUEUE_H

#include "../core/op.h"
#include "../harness/ladder.h"
#include <stddef.h>

/* The parent's queue for one group of workers (nw: the parent's worker
 * indices 0..nw-1): _done records worker w's report of the rung it holds (0,
 * -1: not that rung); _next gives w its next rung: 1, 0 none yet (ask again
 * once another's rate is in), -1 the search is over for w; _leave puts back
 * the rung of a worker gone; _gpus: the workers that timed a rung. */
typedef struct kb_ladder_queue kb_ladder_queue;
kb_ladder_queue *kb_ladder_queue_new(const kb_gemm_key *keys, int nk, int nw);
void kb_ladder_queue_free(kb_ladder_queue *q);
int kb_ladder_queue_done(kb_ladder_queue *q, int w, const kb_rung_msg *m);
int kb_ladder_queue_next(kb_ladder_queue *q, int w, kb_rung_msg *next);
void kb_ladder_queue_leave(kb_ladder_queue *q, int w);
int kb_ladder_queue_gpus(const kb_ladder_queue *q);
/* The messages: a worker's "rung K I L R" (K -1: its first ask), the
 * parent's "K I L" (the next rung) or "end M". A worker whose exchange
 * failed says "alone" and leaves its group. Lengths, -1: no room; parses:
 * 0, -1 malformed (the reply's: 1 a rung, 0 end, -1). */
int kb_rung_format(char *buf, size_t len, const kb_rung_msg *m);
int kb_rung_parse(const char *line, kb_rung_msg *m);
int kb_rung_reply_format(char *buf, size_t len, int r, const kb_rung_msg *next, int gpus);
int kb_rung_reply_parse(const char *line, kb_rung_msg *next, int *gpus);

#endif
