/* The test plugins' path (the tests/plugins sources, built by make into
 * $KB_TEST_PLUGINS, default build/tests/plugins): whether NAME is there to
 * read, its path in buf. Included by the tests that load one. */
#ifndef KB_TEST_PLUGIN_PATH_H
#define KB_TEST_PLUGIN_PATH_H
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int test_plugin(const char *name, char *buf, size_t n)
{
    const char *dir = getenv("KB_TEST_PLUGINS");
    snprintf(buf, n, "%s/%s", dir && dir[0] ? dir : "build/tests/plugins", name);
    return access(buf, R_OK) == 0;
}
#endif
