/* The JSON result file on disk (json.c): its rows appended one a line as
 * they come, its head (the "kbench" and "device" objects) rewritten in a
 * room reserved for it at the top. Writing a row costs the same whatever
 * came before it, and after every write the file is the whole document:
 *
 *     {"kbench":{...},"device":{...},<spaces: the head's room>
 *     "results": [
 *     {ROW},
 *     {ROW}
 *     ]}
 *
 * A run killed in the middle of a row's write leaves that row cut: the
 * readers (kb_json_read) take the rows before it. */
#ifndef KB_REPORT_JSON_H
#define KB_REPORT_JSON_H

#include <stddef.h>

struct cJSON;
typedef struct kb_json_file kb_json_file;

/* path written whole with head (a JSON object's text, unformatted, "{...}")
 * and no rows. A path that is not a regular file (/dev/stdout, a pipe) is
 * written once, at kb_json_close. NULL with err ("cannot write PATH: why"). */
kb_json_file *kb_json_open(const char *path, const char *head, char *err, size_t errlen);
/* a row (an object's text, unformatted: one line) appended; 0 or -1 with err */
int kb_json_row(kb_json_file *f, const char *row, char *err, size_t errlen);
/* the head replaced (its room doubled, the file rewritten whole, where it no
 * longer fits); 0 or -1 with err */
int kb_json_head(kb_json_file *f, const char *head, char *err, size_t errlen);
/* done (the document written now where the path is not a regular file); 0
 * or -1 with err; f freed either way */
int kb_json_close(kb_json_file *f, char *err, size_t errlen);
/* the head's room for a head of n bytes: the newline and the spaces after it */
size_t kb_json_head_room(size_t n);

/* A result file's text parsed: the whole document, or, where its last row
 * was cut (a killed run), the rows before it (*cut: 1, else 0). NULL: not
 * JSON even so, with *at, *line and *col where the parse stopped. */
struct cJSON *kb_json_read(const char *text, int *cut, const char **at, int *line, int *col);
/* A key that one object of root holds twice (cJSON keeps both, and a lookup
 * sees the first: a result file's row with "median_ms" twice would silently
 * be read by its first): NULL, or the key (in root), with path the place of
 * its object ("results[3].params"; "": root itself). Every object is looked
 * at; n log n in its keys. */
const char *kb_json_duplicate_key(const struct cJSON *root, char *path, size_t n);

/* A result file's text as compare and merge read it: kb_json_read, and a
 * key twice in one object refused. NULL with err ("NAME: not JSON (syntax
 * error at line L, column C)", "NAME: duplicate key 'K' in WHERE"). */
struct cJSON *kb_json_result(const char *text, const char *name, int *cut, char *err, size_t errlen);

#endif
