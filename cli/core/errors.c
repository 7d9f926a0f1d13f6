/* Errors: one-line messages (control characters escaped), did-you-mean, and
 * every CUDA call checked (errors.h). */
#include "errors.h"

#include <ctype.h>
#include <cuda_runtime_api.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
char kb_last_error[512];

void kb_cuda_fail(int err, const char *what, const char *file, int line)
{
    snprintf(kb_last_error, sizeof kb_last_error, "%s:%d: %s: %s (%s)", file, line, what,
             cudaGetErrorString((cudaError_t)err), cudaGetErrorName((cudaError_t)err));
}

int kb_cuda_sticky(int err)
{
    switch ((cudaError_t)err) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
    case cudaErrorContextIsDestroyed:
        return 1;
    default:
        return 0;
    }
}

size_t kb_escape_controls(const char *in, char *out, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    if (!n) return 0;
    for (const unsigned char *p = (const unsigned char *)in; *p; p++) {
        char e[5];
        size_t k = 0;
        if (*p == '\n') e[k++] = '\\', e[k++] = 'n';
        else if (*p == '\r') e[k++] = '\\', e[k++] = 'r';
        else if (*p == '\t') e[k++] = '\\', e[k++] = 't';
        else if (*p < 0x20 || *p == 0x7f) e[k++] = '\\', e[k++] = 'x', e[k++] = hex[*p >> 4], e[k++] = hex[*p & 15];
        else e[k++] = (char)*p;
        if (o + k >= n) break;
        memcpy(out + o, e, k);
        o += k;
    }
    out[o] = 0;
    return o;
}

/* s (len bytes) into out[n]: whole where it fits, else its start, "...",
 * and its end, the end the longer (a message's reason comes last: "cannot
 * write PATH: REASON"), cut between UTF-8 characters */
static void fit_middle(const char *s, size_t len, char *out, size_t n)
{
    if (len < n) {
        memcpy(out, s, len + 1);
        return;
    }
    if (n < 8) {
        snprintf(out, n, "%s", s);
        return;
    }
    size_t head = (n - 4) / 3, tail = n - 4 - head;
    while (head > 0 && ((unsigned char)s[head] & 0xc0) == 0x80) head--;
    const char *t = s + len - tail;
    while (*t && ((unsigned char)*t & 0xc0) == 0x80) t++;
    memcpy(out, s, head);
    memcpy(out + head, "...", 3);
    memcpy(out + head + 3, t, strlen(t) + 1);
}

/* Messages are one line: what the user typed is echoed with its newlines and
 * escape sequences spelled out (\n, \x1b). One too long for err keeps its
 * start and its end (the reason), "..." between: a long path never pushes
 * the reason out of the line. */
void kb_verrf(char *err, size_t n, const char *fmt, va_list ap)
{
    if (!n) return;
    char *raw = NULL;
    if (vasprintf(&raw, fmt, ap) < 0) {
        snprintf(err, n, "(no memory for the message)");
        return;
    }
    size_t len = strlen(raw), cap = 4 * len + 1;
    char *esc = malloc(cap);
    if (!esc) {
        kb_escape_controls(raw, err, n);
    } else {
        fit_middle(esc, kb_escape_controls(raw, esc, cap), err, n);
        free(esc);
    }
    free(raw);
}

void kb_errf(char *err, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    kb_verrf(err, n, fmt, ap);
    va_end(ap);
}

int kb_usage(const char *cmd, const char *fmt, ...)
{
    char line[4096];
    va_list ap;
    va_start(ap, fmt);
    kb_verrf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "kbench%s%s: %s\n", cmd ? " " : "", cmd ? cmd : "", line);
    return KB_EXIT_USAGE;
}

int kb_levenshtein(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63) return 99;
    int d[64][64];
    for (size_t i = 0; i <= la; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            int c = d[i - 1][j - 1] + (tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]));
            int x = d[i - 1][j] + 1, y = d[i][j - 1] + 1;
            d[i][j] = c < x ? (c < y ? c : y) : (x < y ? x : y);
        }
    return d[la][lb];
}

const char *kb_nearest(const char *word, const char *const *cands, int n)
{
    const char *best = NULL;
    int bd = 1 << 30;
    for (int i = 0; i < n; i++) {
        int d = kb_levenshtein(word, cands[i]);
        if (d < bd) { bd = d; best = cands[i]; }
    }
    size_t len = strlen(word);
    int limit = len <= 3 ? 1 : len <= 6 ? 2 : 3;
    return bd <= limit ? best : NULL;
}
