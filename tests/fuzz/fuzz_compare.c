/* libFuzzer harness: `kbench compare`'s result-file reader (kb_cmp_parse),
 * then a file matched against itself (every case must come out same or
 * untimed) and its CSV written (to /dev/null). Seeds: tests/data/compare. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../cli/compare.h"
#include "../../cli/core/errors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    kb_cmp_file f;
    char err[KB_ERRLEN] = "";
    if (kb_cmp_parse(text, "fuzz.json", &f, err, sizeof err) == 0) {
        kb_cmp_result r;
        if (kb_cmp_match(&f, &f, "", 5, &r, err, sizeof err) == 0) {
            if (r.slower || r.faster) abort(); /* a file against itself */
            /* the CSV's columns (a hash of the parameters' names) and cells */
            if (kb_cmp_write_csv("/dev/null", &r, 5, err, sizeof err)) abort();
            kb_cmp_result_free(&r);
        }
        kb_cmp_free(&f);
    } else if (strchr(err, '\n')) {
        abort();
    }
    free(text);
    return 0;
}
