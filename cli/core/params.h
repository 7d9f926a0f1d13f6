/* Parameters: values, axes, a case's label, and a sweep expanded to cases (params.c). */
#ifndef KB_CORE_PARAMS_H
#define KB_CORE_PARAMS_H

#include "op.h"
#include "../../include/kb_dtype.h"
#include <stddef.h>
#include <stdint.h>

/* params.c */
int kb_param_index(const kb_op *op, const char *name);
const char *kb_case_enum(const kb_case *c, const char *name); /* NULL if absent */
long kb_case_int(const kb_case *c, const char *name);
double kb_case_float(const kb_case *c, const char *name);
const kb_val *kb_case_val(const kb_case *c, const char *name);
kb_dtype kb_case_dtype(const kb_case *c);
const char *kb_choice(const kb_param *p, int idx, char *buf, size_t n);
int kb_choice_count(const kb_param *p);
/* c's parameter k, a numeric enum ("auto,64,80"): its choice's text as a
 * number, auto_value for "auto" (so the choices are the one list of values) */
int kb_case_choice_num(const kb_case *c, int k, int auto_value);
/* Parse one textual axis ("512,1024", "512:8192:x2", "fwd,bwd", "all") into
 * values; returns count or -1 with err. */
int kb_parse_axis(const kb_param *p, const char *text, kb_val **vals, char *err, size_t errlen);
int kb_check_value(const kb_param *p, const kb_val *v, char *err, size_t errlen);
/* An int list's values joined by sep, whole: the length it needs (as
 * snprintf; buf holds it when that is under n, else what fitted). */
size_t kb_format_list(const kb_val *v, char sep, char *buf, size_t n);
/* An int list's sum and its largest element (0 for none), kept with the list
 * (O(1)): v's list from kb_parse_axis, a sweep's axis or case, not built by hand. */
/* v's int list made from n values (a block of its own, one holder: the
 * sum and maximum kept, as the parser makes them); 0, or -1 out of memory */
int kb_val_list(kb_val *v, const int *vals, int n);
void kb_val_list_drop(kb_val *v); /* v's hold on its list let go */
long kb_list_sum(const kb_val *v);
int kb_list_max(const kb_val *v);
void kb_format_value(const kb_param *p, const kb_val *v, char *buf, size_t n);
/* the value of c's parameter name as a flag takes it ("" when c's op has none) */
void kb_case_value_text(const kb_case *c, const char *name, char *buf, size_t n);
/* b bytes for people ("1.5 GiB") */
void kb_human_bytes(double b, char *buf, size_t n);
/* "seq=2048 batch=16 ..." (all parameters) */
void kb_case_label(const kb_case *c, char *buf, size_t n);
/* FNV-1a: h (start from KB_FNV_BASIS) over the bytes of s */
#define KB_FNV_BASIS 0xcbf29ce484222325ull
uint64_t kb_fnv(uint64_t h, const char *s);
/* h over a case's identity, "op label" (kb_case_label): the case's seed
 * (kb_plan_seed) and a sweep's identity (kb_plan_identity) */
uint64_t kb_case_hash(const kb_case *c, uint64_t h);
/* s[0..len) is a decimal number: [+-]digits[.digits][e[+-]digits] (no hex, inf, nan) */
int kb_decimal_syntax(const char *s, size_t len);
/* name is one of the comma-separated names of list (NULL or "": none) */
int kb_list_has(const char *list, const char *name);

/* A sweep: axes per parameter, expanded to cases. */
typedef struct {
    const kb_op *op;
    kb_val *axis[KB_MAX_PARAMS];
    int naxis[KB_MAX_PARAMS];
} kb_sweep;

void kb_sweep_init(kb_sweep *s, const kb_op *op); /* every axis = its default */
int kb_sweep_set(kb_sweep *s, const char *param, const char *text, char *err, size_t errlen);
#ifndef KB_MAX_CASES /* the fuzz build (make fuzz) lowers it: a worst-case sweep stays quick */
#define KB_MAX_CASES 1000000 /* cases in one plan: more is surely a mistake */
#endif
long kb_sweep_count(const kb_sweep *s); /* saturates at KB_MAX_CASES + 1 */
/* The memory a plan of n cases takes: the cases, and what ordering them for
 * --shard or --devices holds a case (fleet/shard.c: a cost and a label). An
 * int list is not counted a case: the cases share their axis's (kb_val). */
#define KB_CASE_WORK_BYTES 1280
double kb_plan_bytes(long ncases);
#ifndef KB_MAX_PLAN_BYTES /* the fuzz build lowers it: a sweep refused for its memory stays quick to reach */
#define KB_MAX_PLAN_BYTES 0 /* none: half the machine's memory, or of ulimit -v / -d, whichever is least */
#endif
/* the most kb_plan_bytes a plan may take, *why naming the limit that decides */
double kb_plan_bytes_max(const char **why);
void kb_sweep_free(kb_sweep *s); /* its axes; the cases expanded from it still hold the lists they share */
void kb_case_free_lists(kb_case *c); /* lets go of its lists (the last holder frees one) */
void kb_cases_free(kb_case *cases, int n); /* every case's lists, then the array */
/* an axis's values (kb_parse_axis): their lists let go, then the array */
void kb_vals_free(kb_val *vals, int n);
/* Append the sweep's cases (validated) to *cases; -1 with err on the first bad
 * one, or (before any is made) when there are more than KB_MAX_CASES or more
 * than kb_plan_bytes_max allows. A case's int lists are its axis's, shared. */
int kb_sweep_expand(const kb_sweep *s, kb_case **cases, int *ncases, char *err, size_t errlen);

#endif
