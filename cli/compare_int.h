/* kbench compare's pieces (compare_read.c, compare.c, compare_main.c,
 * compare_csv.c): what they share and nothing else sees. */
#ifndef KB_COMPARE_INT_H
#define KB_COMPARE_INT_H
#include "compare.h"

struct cJSON;

/* a growable string */
typedef struct {
    char *s;
    size_t len, cap;
} sbuf;
void sb_put(sbuf *b, const char *s, size_t n);
void sb_str(sbuf *b, const char *s);
char *sb_take(sbuf *b); /* the text ("" when nothing was put) */

/* a parameter's value as the sweep tables print it */
void kb_cmp_value_text(sbuf *b, const struct cJSON *v);
/* a row with a median to compare */
int kb_cmp_timed(const kb_cmp_row *r);
/* Why a verdict is what it is, where that is not obvious ("" otherwise): one
 * line, control characters escaped (compare_main.c) */
void kb_cmp_pair_note(const kb_cmp_pair *p, double threshold_pct, char *buf, size_t n);
#endif
