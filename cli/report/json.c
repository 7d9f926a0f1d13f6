/* The JSON result file on disk (json.h): a head in a room of its own at the
 * top, rewritten in place; rows appended one a line before the tail.
 *
 * Before (to 3931075) the document was rewritten whole after a row, which
 * made a run O(rows^2) (a part of 2000 cases of 6 rows took 54 s of
 * rewrites), and a throttle held the rewrites to a twentieth of the run at
 * the cost of the rows' being on disk late; a --devices worker had to sync
 * before it could say a case done. Now every write is of one row or of the
 * head, and a row is on disk as soon as it is written. */
#include "json.h"
#include "files.h"
#include "../core/config.h"
#include "../core/errors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RESULTS "\"results\": ["
#define TAIL "\n]}\n"

struct kb_json_file {
    char *path;
    int fd;       /* -1: not a regular file: the document is kept here and written at close */
    size_t room;  /* the head's bytes, its spaces and newline included */
    size_t end;   /* where the tail starts: after the last row */
    long rows;
    char *head;                 /* the head's text (for a path that is not a regular file) */
    char *mem;                  /* and its rows, ",\n" between them */
    size_t mem_len, mem_cap;
};

size_t kb_json_head_room(size_t n)
{
    const size_t want = 2 * (n + 2);
    return want > 4096 ? want : 4096;
}

static int fail(char *err, size_t errlen, const char *path, int e)
{
    kb_errf(err, errlen, "cannot write %s: %s", path, strerror(e ? e : EIO));
    return -1;
}

/* the head's room: its members, a comma, spaces, a newline (room bytes) */
static char *head_region(const char *head, size_t room)
{
    size_t n = strlen(head);
    while (n > 0 && head[n - 1] != '}') n--; /* the closing brace: dropped */
    char *buf = malloc(room + 1);
    if (!buf) abort();
    size_t k = n ? n - 1 : 0;
    memcpy(buf, head, k);
    if (k > 1) buf[k++] = ','; /* members to follow ("{" alone: none) */
    memset(buf + k, ' ', room - k);
    buf[room - 1] = '\n';
    buf[room] = 0;
    return buf;
}

/* pwrite all of buf at off; 0 or an errno */
static int put(int fd, const char *buf, size_t n, size_t off)
{
    while (n > 0) {
        const ssize_t k = pwrite(fd, buf, n, (off_t)off);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return k < 0 ? errno : EIO;
        buf += k, n -= (size_t)k, off += (size_t)k;
    }
    return 0;
}

/* path written whole: the head in its room, rows (their text: "\n{..},\n{..}"), the tail */
static int write_file(kb_json_file *f, const char *head, const char *rows, size_t nrows_bytes, char *err,
                      size_t errlen)
{
    char *region = head_region(head, f->room);
    const size_t n = f->room + strlen(RESULTS) + nrows_bytes + strlen(TAIL);
    char *text = malloc(n + 1);
    if (!text) abort();
    size_t o = 0;
    memcpy(text + o, region, f->room), o += f->room;
    memcpy(text + o, RESULTS, strlen(RESULTS)), o += strlen(RESULTS);
    memcpy(text + o, rows, nrows_bytes), o += nrows_bytes;
    memcpy(text + o, TAIL, strlen(TAIL) - 1), o += strlen(TAIL) - 1; /* kb_write_whole adds the newline */
    text[o] = 0;
    free(region);
    int rc = kb_write_whole(f->path, text, err, errlen);
    free(text);
    if (rc) return -1;
    if (f->fd >= 0) close(f->fd);
    f->fd = open(f->path, O_RDWR | O_CLOEXEC);
    if (f->fd < 0) return fail(err, errlen, f->path, errno);
    f->end = f->room + strlen(RESULTS) + nrows_bytes;
    return 0;
}

kb_json_file *kb_json_open(const char *path, const char *head, char *err, size_t errlen)
{
    kb_json_file *f = calloc(1, sizeof *f);
    if (!f || !(f->path = strdup(path)) || !(f->head = strdup(head))) abort();
    f->fd = -1;
    struct stat sb;
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) return f; /* written at close */
    f->room = kb_json_head_room(strlen(head));
    if (write_file(f, head, "", 0, err, errlen)) {
        kb_json_close(f, NULL, 0);
        return NULL;
    }
    return f;
}

int kb_json_row(kb_json_file *f, const char *row, char *err, size_t errlen)
{
    const char *sep = f->rows ? ",\n" : "\n";
    const size_t ns = strlen(sep), nr = strlen(row);
    if (f->fd < 0) { /* kept for the close */
        if (f->mem_len + ns + nr + 1 > f->mem_cap) {
            f->mem_cap = 2 * (f->mem_len + ns + nr + 1) + 4096;
            if (!(f->mem = realloc(f->mem, f->mem_cap))) abort();
        }
        memcpy(f->mem + f->mem_len, sep, ns);
        memcpy(f->mem + f->mem_len + ns, row, nr + 1);
        f->mem_len += ns + nr;
        f->rows++;
        return 0;
    }
    char *buf = malloc(ns + nr + strlen(TAIL));
    if (!buf) abort();
    memcpy(buf, sep, ns);
    memcpy(buf + ns, row, nr);
    memcpy(buf + ns + nr, TAIL, strlen(TAIL)); /* one write: the row and the tail after it */
    const int e = put(f->fd, buf, ns + nr + strlen(TAIL), f->end);
    free(buf);
    if (e) { /* what it wrote of the row undone, where the disk lets it: the rows before it whole */
        if (!put(f->fd, TAIL, strlen(TAIL), f->end) && ftruncate(f->fd, (off_t)(f->end + strlen(TAIL)))) {}
        return fail(err, errlen, f->path, e);
    }
    f->end += ns + nr;
    f->rows++;
    return 0;
}

int kb_json_head(kb_json_file *f, const char *head, char *err, size_t errlen)
{
    free(f->head);
    if (!(f->head = strdup(head))) abort();
    if (f->fd < 0) return 0;
    const size_t n = strlen(head);
    if (n + 2 <= f->room) { /* in its room */
        char *region = head_region(head, f->room);
        /* one write; a head past its first room (4096 bytes, a page: a
         * thousand skipped cases) could be cut by a kill in the write, which
         * kb_json_read does not mend */
        const int e = put(f->fd, region, f->room, 0);
        free(region);
        return e ? fail(err, errlen, f->path, e) : 0;
    }
    /* a room twice the head's: the rows read back and the file written whole */
    const size_t start = f->room + strlen(RESULTS), len = f->end - start;
    char *rows = malloc(len + 1);
    if (!rows) abort();
    for (size_t got = 0; got < len;) {
        const ssize_t k = pread(f->fd, rows + got, len - got, (off_t)(start + got));
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            const int e = k < 0 ? errno : EIO;
            free(rows);
            return fail(err, errlen, f->path, e);
        }
        got += (size_t)k;
    }
    const size_t old = f->room;
    f->room = kb_json_head_room(n);
    const int rc = write_file(f, head, rows, len, err, errlen);
    if (rc) f->room = old;
    free(rows);
    return rc;
}

int kb_json_close(kb_json_file *f, char *err, size_t errlen)
{
    if (!f) return 0;
    int rc = 0;
    if (f->fd >= 0) {
        if (close(f->fd) != 0 && err) rc = fail(err, errlen, f->path, errno);
    } else if (err) { /* not a regular file: the document, once */
        f->room = kb_json_head_room(strlen(f->head));
        char *region = head_region(f->head, f->room), *text = NULL;
        size_t n = strlen(region); /* its room's spaces trimmed: nobody rewrites it */
        while (n > 0 && (region[n - 1] == ' ' || region[n - 1] == '\n')) n--;
        region[n] = 0;
        if (asprintf(&text, "%s\n%s%s%s", region, RESULTS, f->mem ? f->mem : "", "\n]}") < 0) abort();
        rc = kb_write_whole(f->path, text, err, errlen);
        free(region);
        free(text);
    }
    free(f->path);
    free(f->head);
    free(f->mem);
    free(f);
    return rc;
}

/* The rows of a document whose last row was cut: the head up to "results",
 * then each whole row line, closed. NULL: not such a document. */
static cJSON *read_cut(const char *text)
{
    const size_t tl = strlen(text);
    if (tl >= strlen(TAIL) && !strcmp(text + tl - strlen(TAIL), TAIL)) return NULL; /* whole: broken otherwise */
    const char *r = strstr(text, "\n" RESULTS);
    if (!r) return NULL;
    r += 1 + strlen(RESULTS);
    size_t cap = (size_t)(r - text) + strlen(r) + 8, n = (size_t)(r - text);
    char *doc = malloc(cap);
    if (!doc) abort();
    memcpy(doc, text, n);
    int rows = 0;
    for (const char *p = r; *p;) {
        while (*p == '\n') p++;
        const char *eol = strchr(p, '\n');
        if (!eol) break; /* the cut row: no newline after it */
        size_t len = (size_t)(eol - p);
        if (len && p[len - 1] == ',') len--;
        if (len == 0 || p[0] != '{') break;
        char *line = strndup(p, len);
        const char *end = NULL;
        cJSON *o = line ? cJSON_ParseWithOpts(line, &end, 0) : NULL;
        /* the row and, after it, nothing but what a cut write leaves of the
         * tail (a row cut one byte in: "{...},]}") */
        const int whole = cJSON_IsObject(o) && end && strspn(end, ",]} \t\r") == strlen(end);
        if (whole) len = (size_t)(end - line);
        free(line);
        cJSON_Delete(o);
        if (!whole) break;
        if (rows++) doc[n++] = ',';
        memcpy(doc + n, p, len), n += len;
        p = eol + 1;
    }
    memcpy(doc + n, "]}", 3);
    cJSON *root = cJSON_Parse(doc);
    free(doc);
    return root;
}

cJSON *kb_json_read(const char *text, int *cut, const char **at, int *line, int *col)
{
    *cut = 0;
    cJSON *root = kb_json_parse(text, at, line, col);
    if (root) return root;
    cJSON *rows = read_cut(text);
    if (rows) *cut = 1;
    return rows;
}

/* ---- a key twice in one object ------------------------------------------ */
static int cmp_key(const void *a, const void *b)
{
    const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;
    return strcmp(x->string ? x->string : "", y->string ? y->string : "");
}

/* o's own keys: the one it has twice, or NULL (a few compared pairwise,
 * more sorted: n log n however many) */
static const char *twice_in(const cJSON *o)
{
    const cJSON *e, *f;
    int n = 0;
    cJSON_ArrayForEach(e, o) n++;
    if (n < 2) return NULL;
    if (n <= 8) {
        for (e = o->child; e; e = e->next)
            for (f = e->next; f; f = f->next)
                if (!strcmp(e->string ? e->string : "", f->string ? f->string : "")) return e->string ? e->string : "";
        return NULL;
    }
    const cJSON **k = malloc(sizeof *k * (size_t)n);
    if (!k) abort();
    int i = 0;
    cJSON_ArrayForEach(e, o) k[i++] = e;
    qsort(k, (size_t)n, sizeof *k, cmp_key);
    const char *dup = NULL;
    for (i = 1; i < n && !dup; i++)
        if (!cmp_key(&k[i - 1], &k[i])) dup = k[i]->string ? k[i]->string : "";
    free(k);
    return dup;
}

/* the walk: v at path (len bytes of path[n] so far) */
static const char *dup_walk(const cJSON *v, char *path, size_t n, size_t len)
{
    if (cJSON_IsObject(v)) {
        const char *dup = twice_in(v);
        if (dup) return dup;
    }
    if (!cJSON_IsObject(v) && !cJSON_IsArray(v)) return NULL;
    const cJSON *e;
    int i = 0;
    cJSON_ArrayForEach(e, v) {
        if (cJSON_IsObject(e) || cJSON_IsArray(e)) {
            if (len < n) {
                if (cJSON_IsArray(v)) snprintf(path + len, n - len, "[%d]", i);
                else snprintf(path + len, n - len, "%s%s", len ? "." : "", e->string ? e->string : "");
            }
            const char *dup = dup_walk(e, path, n, strlen(path));
            if (dup) return dup;
            path[len < n ? len : n - 1] = 0;
        }
        i++;
    }
    return NULL;
}

const char *kb_json_duplicate_key(const cJSON *root, char *path, size_t n)
{
    if (!n) return NULL;
    path[0] = 0;
    return dup_walk(root, path, n, 0);
}

cJSON *kb_json_result(const char *text, const char *name, int *cut, char *err, size_t errlen)
{
    const char *at;
    int line, col;
    cJSON *root = kb_json_read(text, cut, &at, &line, &col);
    if (!root) {
        kb_errf(err, errlen, "%s: not JSON (syntax error at line %d, column %d)", name, line, col);
        return NULL;
    }
    char where[256];
    const char *dup = kb_json_duplicate_key(root, where, sizeof where);
    if (dup) { /* as a sweep file's: refused, not read by its first */
        kb_errf(err, errlen, "%s: duplicate key '%.64s' in %s", name, dup, where[0] ? where : "the top level");
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}
