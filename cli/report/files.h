/* Writing files: whole or not at all (files.c). */
#ifndef KB_REPORT_FILES_H
#define KB_REPORT_FILES_H

#include <stddef.h>

/* Whether a run could write path (what: "--csv", "--json"), without writing:
 * 0, or -1 with err ("--json results is a directory"); a path too long for
 * kb_path_fits is refused. */
int kb_output_check(const char *path, const char *what, char *err, size_t errlen);
/* The temporary beside a file written whole: PATH.tmp */
#define KB_TMP_SUFFIX ".tmp"
/* Whether path and its temporary fit the system's limits (PATH_MAX for the
 * path, NAME_MAX for its last name): 0, or -1 with err ("WHAT PATH: too
 * long (...)"). Paths are never cut: one that does not fit is refused. */
int kb_path_fits(const char *path, const char *what, char *err, size_t errlen);
/* Whether paths a and b name one existing file (its device and inode: ./x
 * and x, a link and its target): 1, else 0 (either missing, NULL) */
int kb_same_file(const char *a, const char *b);
/* text and a newline as the whole of path: a regular file replaced whole
 * (path.tmp, then rename, so the file on disk is always a complete
 * version), anything else (/dev/stdout, a pipe) written in place. 0, or -1
 * with err ("cannot write PATH: why"), the temporary removed (report.c). */
int kb_write_whole(const char *path, const char *text, char *err, size_t errlen);
/* the directories above path, created where missing (report.c). 0, or -1 with err */
int kb_ensure_dir_of(const char *path, char *err, size_t errlen);
/* A stream's buffered bytes out and its error flag: 0, or -1 with errno. */
#include <stdio.h>
int kb_flush_ok(FILE *f);
/* X.json -> X.TAG.EXT beside it (TAG NULL: X.EXT); a path without .json keeps
 * its whole name as the stem: a part's files (--devices, merge). 0, or -1
 * where it does not fit buf[n] (buf then holds a cut of it: not a path) */
int kb_sibling_path(const char *json, const char *tag, const char *ext, char *buf, size_t n);

#endif
