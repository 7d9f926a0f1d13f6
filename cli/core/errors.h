/* Errors: exit codes, one-line messages, and every CUDA call checked (KB_CK). */
#ifndef KB_CORE_ERRORS_H
#define KB_CORE_ERRORS_H

#include <stdarg.h>
#include <stddef.h>

#define KB_VERSION "0.1.0"

/* Exit codes (README documents them). */
enum { KB_EXIT_OK = 0, KB_EXIT_VERIFY = 1, KB_EXIT_USAGE = 2, KB_EXIT_CUDA = 3, KB_EXIT_REGRESSION = 4 };

#define KB_ERRLEN 512

/* in with control characters spelled out (\n, \t, \x1b) into out[n]; the length written */
size_t kb_escape_controls(const char *in, char *out, size_t n);
/* snprintf into an error buffer, control characters escaped: one line (params.c);
 * one longer than n keeps its start and its end (the reason), "..." between */
void kb_errf(char *err, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void kb_verrf(char *err, size_t n, const char *fmt, va_list ap); /* kb_errf's body */
/* "kbench CMD: MESSAGE" on stderr ("kbench: MESSAGE" with cmd NULL), one
 * line (control characters escaped, as kb_errf); returns KB_EXIT_USAGE */
int kb_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *kb_nearest(const char *word, const char *const *cands, int n); /* or NULL */
int kb_levenshtein(const char *a, const char *b); /* edit distance, for did-you-mean */

/* Every CUDA call is checked: KB_CK(call) records "file:line: call: error"
 * in kb_last_error and returns the error code from the enclosing function. */
extern char kb_last_error[512];
void kb_cuda_fail(int err, const char *what, const char *file, int line);
#define KB_CK(call)                                                   \
    do {                                                              \
        int e_ = (int)(call);                                         \
        if (e_ != 0) { kb_cuda_fail(e_, #call, __FILE__, __LINE__); return e_; } \
    } while (0)
int kb_cuda_sticky(int err); /* the context is unusable after this error */

#endif
