/* --impl's names (plugin.h): NAME=PATH and PATH loaded as libraries that
 * NAME selects whole, and the plugin lists of --plugin and sweep files. */
#include "errors.h"
#include "op.h"
#include "params.h"
#include "plugin.h"
#include "plugin_int.h"
#include "settings.h"

#include <stdio.h>
#include <string.h>


int kb_impl_named(const char *filter, const kb_impl *impl)
{
    if (!filter || !filter[0] || kb_list_has(filter, impl->name)) return 1;
    const pimpl *p = impl->plugin ? kb_pimpl_of(impl) : NULL;
    return p && p->lib->alias[0] && kb_list_has(filter, p->lib->alias);
}

int kb_plugin_load_spec(const char *spec, char *err, size_t n)
{
    const char *eq = strchr(spec, '=');
    if (!eq) return kb_plugin_load(NULL, spec, err, n);
    char alias[64];
    if ((size_t)(eq - spec) >= sizeof alias)
        return kb_errf(err, n, "plugin name '%.*s...': at most 63 characters", 20, spec), -1;
    snprintf(alias, sizeof alias, "%.*s", (int)(eq - spec), spec);
    if (!eq[1]) return kb_errf(err, n, "plugin '%s=': no library path", alias), -1;
    return kb_plugin_load(alias, eq + 1, err, n);
}

int kb_plugin_load_list(const char *list, char *err, size_t n)
{
    for (const char *s = list; *s;) {
        size_t l = strcspn(s, ",");
        char spec[1100];
        snprintf(spec, sizeof spec, "%.*s", (int)(l < sizeof spec - 1 ? l : sizeof spec - 1), s);
        if (!spec[0]) return kb_errf(err, n, "plugins: an empty entry in '%s' (NAME=PATH,...)", list), -1;
        if (kb_plugin_load_spec(spec, err, n)) return -1;
        s += l + (s[l] == ',');
    }
    return 0;
}

/* --impl's PATH alone (a token with a '/' or ending in .so) is NAME=PATH,
 * NAME its file's stem: ./build/libmine.so -> mine */
void kb_plugin_file_alias(const char *path, char *alias, size_t n)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    if (!strncmp(b, "lib", 3) && b[3] && b[3] != '.') b += 3;
    size_t k = strcspn(b, ".");
    if (k >= n) k = 0; /* too long for a name: none (the caller asks for NAME=PATH) */
    snprintf(alias, n, "%.*s", (int)k, b);
}

static int path_alias(const char *tok, char *alias, size_t n)
{
    const size_t l = strlen(tok);
    if (!strchr(tok, '/') && !(l > 3 && (!strcmp(tok + l - 3, ".so") || !strcmp(tok + l - 3, ".py")))) return 0;
    kb_plugin_file_alias(tok, alias, n);
    return 1;
}

/* One --impl token: a library loaded (NAME=PATH, or PATH alone) becomes its
 * NAME, which selects every implementation of it (kb_impl_named); a name
 * stays. 0 or -1 with err. */
static int take_token(const char *tok, char *out, size_t size, char *err, size_t n)
{
    char alias[64], spec[1200];
    const char *eq = strchr(tok, '=');
    if (!eq && path_alias(tok, alias, sizeof alias)) {
        if (!alias[0] || !kb_plugin_name_ok(alias))
            return kb_errf(err, n, "--impl %s: name it, NAME=%s (its file's name is not one: letters, digits, '_', '-', '.')",
                           tok, tok), -1;
        snprintf(spec, sizeof spec, "%s=%s", alias, tok);
        tok = spec;
        eq = strchr(tok, '=');
    }
    if (!eq) return snprintf(out, size, "%s", tok) >= (int)size ? -1 : 0;
    if (kb_plugin_load_spec(tok, err, n)) return -1;
    return snprintf(out, size, "%.*s", (int)(eq - tok), tok) >= (int)size ? -1 : 0;
}

int kb_plugin_take_impls(char *impl, size_t size, char *err, size_t n)
{
    if (n) err[0] = 0;
    char out[sizeof((kb_opts *)0)->impl] = "";
    size_t o = 0;
    for (const char *s = impl; *s;) {
        size_t l = strcspn(s, ",");
        char tok[1100], names[sizeof out];
        snprintf(tok, sizeof tok, "%.*s", (int)(l < sizeof tok - 1 ? l : sizeof tok - 1), s);
        if (take_token(tok, names, sizeof names, err, n)) {
            if (!err[0]) kb_errf(err, n, "--impl: longer than %zu characters", sizeof out - 1);
            return -1;
        }
        int w = snprintf(out + o, sizeof out - o, "%s%s", o ? "," : "", names);
        if (w < 0 || (size_t)w >= sizeof out - o) return kb_errf(err, n, "--impl: longer than %zu characters", sizeof out - 1), -1;
        o += (size_t)w;
        s += l + (s[l] == ',');
    }
    if (o >= size) return kb_errf(err, n, "--impl: longer than %zu characters", size - 1), -1;
    memcpy(impl, out, o + 1);
    return 0;
}

