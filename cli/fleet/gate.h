/* One process at a time: the --devices workers open their GPUs in turn (gate.c). */
#ifndef KB_FLEET_GATE_H
#define KB_FLEET_GATE_H

/* One process at a time (--devices: the workers open their GPUs in turn,
 * devices.c says why): a token in a pipe made before the fork. kb_gate_enter
 * waits for it, at most wait_s (a holder that died never gives it back: then
 * it goes on without); 1: taken, to be given back by kb_gate_leave. NULL: no
 * gate, nothing waited for. */
typedef struct kb_gate kb_gate;
kb_gate *kb_gate_new(double wait_s); /* NULL: none (no pipe) */
void kb_gate_free(kb_gate *g);
int kb_gate_enter(kb_gate *g);
void kb_gate_leave(kb_gate *g, int taken);

#endif
