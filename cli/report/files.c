/* Writing files: a file replaced whole or not at all, the directories above
 * it, whether a run could write it, and a part's sibling paths (files.h). */
#include "files.h"
#include "../core/errors.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
int kb_sibling_path(const char *json, const char *tag, const char *ext, char *buf, size_t n)
{
    size_t l = strlen(json);
    int stem = l > 5 && !strcmp(json + l - 5, ".json") ? (int)(l - 5) : (int)l;
    int w = snprintf(buf, n, "%.*s%s%s.%s", stem, json, tag ? "." : "", tag ? tag : "", ext);
    return w >= 0 && (size_t)w < n ? 0 : -1;
}

int kb_path_fits(const char *path, const char *what, char *err, size_t errlen)
{
    const size_t len = strlen(path), room = PATH_MAX - sizeof KB_TMP_SUFFIX;
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    if (len > room) {
        kb_errf(err, errlen, "%s%s%s: too long (%zu characters; a path takes %zu at most, its temporary %s%s included)",
                what, *what ? " " : "", path, len, room, "PATH", KB_TMP_SUFFIX);
        return -1;
    }
    if (strlen(base) > NAME_MAX - (sizeof KB_TMP_SUFFIX - 1)) {
        kb_errf(err, errlen, "%s%s%s: its name is too long (%zu characters; %zu at most, its temporary %s%s included)",
                what, *what ? " " : "", path, strlen(base), (size_t)NAME_MAX - (sizeof KB_TMP_SUFFIX - 1), "NAME",
                KB_TMP_SUFFIX);
        return -1;
    }
    return 0;
}

int kb_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (!a || !b || stat(a, &sa) || stat(b, &sb)) return 0;
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int kb_write_whole(const char *path, const char *text, char *err, size_t errlen)
{
    struct stat sb;
    int special = stat(path, &sb) == 0 && !S_ISREG(sb.st_mode);
    if (!special && kb_path_fits(path, "cannot write", err, errlen)) return -1;
    char *tmp = NULL; /* PATH.tmp, whole: never a cut of it (another file) */
    if (!special && asprintf(&tmp, "%s" KB_TMP_SUFFIX, path) < 0) abort();
    const char *target = special ? path : tmp;
    int e = 0;
    errno = 0;
    FILE *f = fopen(target, "w");
    if (!f) e = errno ? errno : EIO;
    else {
        int bad = fputs(text, f) < 0 || fputc('\n', f) == EOF || kb_flush_ok(f);
        e = bad ? (errno ? errno : EIO) : 0;
        if (fclose(f) != 0 && !e) e = errno ? errno : EIO;
        if (!e && !special && rename(tmp, path) != 0) e = errno, target = path;
    }
    if (e) {
        kb_errf(err, errlen, "cannot write %s: %s", target, strerror(e));
        if (!special) remove(tmp);
    }
    free(tmp);
    return e ? -1 : 0;
}

int kb_ensure_dir_of(const char *path, char *err, size_t errlen)
{
    char *d = strdup(path); /* the whole path: a cut of it would make other directories */
    if (!d) abort();
    char *slash = strrchr(d, '/');
    int rc = 0;
    if (slash && slash != d) {
        *slash = 0;
        for (char *p = d + 1; *p; p++) {
            if (*p != '/') continue;
            *p = 0;
            mkdir(d, 0777);
            *p = '/';
        }
        struct stat sb;
        if ((mkdir(d, 0777) && errno != EEXIST) || stat(d, &sb) || !S_ISDIR(sb.st_mode)) {
            kb_errf(err, errlen, "cannot create directory %s: %s", d, errno == EEXIST ? "a file is in the way" : strerror(errno));
            rc = -1;
        }
    }
    free(d);
    return rc;
}

/* Whether a run could write path, without writing anything: an existing
 * path must be a writable file (or a device, a pipe), not a directory; a new
 * one needs its nearest existing ancestor to be a writable directory (the
 * directories between are created by the run). 0, or -1 with err. */
/* The nearest existing ancestor of path (path's directories cut off one by
 * one, in d): 0, or -1 with errno where one could not be looked at */
static int nearest_dir(char *d)
{
    struct stat sb;
    for (;;) {
        char *slash = strrchr(d, '/');
        if (!slash) { strcpy(d, "."); return 0; }
        if (slash == d) { d[1] = 0; return 0; }
        *slash = 0;
        if (stat(d, &sb) == 0) return 0;
        if (errno != ENOENT) return -1;
    }
}

int kb_output_check(const char *path, const char *what, char *err, size_t errlen)
{
    struct stat sb;
    if (!path || !*path) return 0;
    if (kb_path_fits(path, what, err, errlen)) return -1;
    if (stat(path, &sb) == 0) {
        if (S_ISDIR(sb.st_mode)) { kb_errf(err, errlen, "%s %s is a directory", what, path); return -1; }
        if (access(path, W_OK)) { kb_errf(err, errlen, "cannot write %s %s: %s", what, path, strerror(errno)); return -1; }
        return 0;
    }
    if (errno != ENOENT) { kb_errf(err, errlen, "cannot write %s %s: %s", what, path, strerror(errno)); return -1; }
    char *d = malloc(strlen(path) + 2); /* room for "." */
    if (!d) abort();
    strcpy(d, path);
    int rc = -1;
    if (nearest_dir(d)) kb_errf(err, errlen, "cannot write %s %s: %s: %s", what, path, d, strerror(errno));
    else if (stat(d, &sb) || !S_ISDIR(sb.st_mode))
        kb_errf(err, errlen, "cannot write %s %s: %s is not a directory", what, path, d);
    else if (access(d, W_OK | X_OK)) kb_errf(err, errlen, "cannot write %s %s: %s: %s", what, path, d, strerror(errno));
    else rc = 0;
    free(d);
    return rc;
}

/* A stream's buffered bytes out and its error flag: 0, or -1 with errno. */
int kb_flush_ok(FILE *f)
{
    errno = 0;
    if (fflush(f) != 0 || ferror(f)) return -1;
    return 0;
}
