/* libFuzzer harness: the whole command line, kb_main (cli/main.c) with every
 * parser behind it: flags, parameter axes and their expansion, settings,
 * sweep files, compare's flags and result files, help and list.
 *
 * The input is argv: words separated by NUL or newline (a separator at the
 * very end ends the last word), at most MAX_WORDS words and MAX_BYTES bytes
 * (a longer input is rejected: -1, kept out of the corpus); "kbench" is put
 * in front. Seeds: tests/fuzz/seeds/cmdline, one word a line.
 *
 * The GPU is stubbed: the harness is linked with --wrap=kb_device_open and
 * its kb_device_open below fails as on a machine with no GPU, so a command
 * that would run a plan (or `kbench device`) stops where kbench would without
 * one; every other GPU call comes after it. --dry-run expands and validates
 * in full.
 *
 * Files: kb_main runs inside a private sandbox (mkdtemp), entered before each
 * call and left after it, holding copies of the configs/ sweeps and of
 * tests/data/compare (as base.json, new.json, failed.json and results/...,
 * so the README's and --help's examples find their files). An input with a
 * word that could reach out of it (an absolute path, "..", "~") is skipped,
 * also after '=' (--csv=/x). The only command that writes is compare --csv
 * (a run writes after the device opens, which never happens here); after each
 * input anything new in the sandbox is removed and a changed file restored
 * (every entry's mtime is set to 0 when made, so any write shows).
 * The sandbox is removed at exit (not after a crash: it stays in $TMPDIR).
 * Because the working directory is the sandbox while kb_main runs, a crash
 * artifact with a relative -artifact_prefix would land there: the prefix
 * is made absolute at start-up.
 *
 * stdin is /dev/null (nothing can wait on it), stdout /dev/null; stderr
 * (kbench's messages) goes to a memory buffer, checked: the exit code is one
 * of KB_EXIT_*, and a usage error (exit 2) says so in one line with no raw
 * control character. For an input whose bytes sum to a multiple of 4,
 * stdout is instead a stream whose every write fails (ENOSPC, as a full
 * disk): then a command that wrote to it must not exit 0 or with a verdict
 * (1, 4), but 2 (or 3), and every line it says has no raw control
 * character. Long relative output paths (tests/fuzz/seeds/cmdline/long-*)
 * reach the path checks; absolute ones stay out (the sandbox). libFuzzer's own
 * output and the sanitizers' reports keep the real stderr (fd 2).
 * KB_FUZZ_VERBOSE=1 prints each input's argv, exit code and messages there.
 *
 * The fuzz build lowers KB_MAX_CASES (Makefile): a sweep of the largest
 * allowed size then expands in tens of milliseconds, not seconds. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../cli/core/errors.h"
#include "../../cli/main.h"
#include "../../cli/report/device.h"

#ifndef KB_FUZZ_ROOT /* the repository (the Makefile passes it): configs/, tests/data/compare/ */
#define KB_FUZZ_ROOT "."
#endif

enum { MAX_WORDS = 64, MAX_BYTES = 4096, ERRBUF = 1 << 16 };

/* ---- the stubbed device ------------------------------------------------ */
/* Linked with -Wl,--wrap=kb_device_open: every call of it outside device.c
 * comes here, and fails as on a machine without a GPU. */
int __wrap_kb_device_open(kb_device *d);
int __wrap_kb_device_open(kb_device *d)
{
    memset(d, 0, sizeof *d);
    fprintf(stderr, "kbench: no NVIDIA GPU or driver found: the fuzzer stubs the GPU out\n");
    return KB_EXIT_CUDA;
}

/* ---- the sandbox ------------------------------------------------------- */
typedef struct {
    const char *path; /* relative to the sandbox; "." is the sandbox */
    const char *from; /* a file: its source, relative to KB_FUZZ_ROOT; NULL: a directory */
    char *text;
    size_t len;
} entry;

static entry tree[64];
static int ntree;
static char sandbox[PATH_MAX];
static int sandbox_fd = -1, home_fd = -1;
static FILE *errf; /* kbench's stderr */
static char *errbuf;
static int verbose;

static void add(const char *path, const char *from) { tree[ntree++] = (entry){path, from, NULL, 0}; }

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *s = NULL;
    size_t n = 0, cap = 0, got;
    char chunk[4096];
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (n + got > cap) {
            cap = (n + got) * 2;
            s = realloc(s, cap);
            if (!s) abort();
        }
        memcpy(s + n, chunk, got);
        n += got;
    }
    fclose(f);
    *len = n;
    return s ? s : calloc(1, 1);
}

/* Make every entry (cwd: the sandbox), then set every mtime to 0. */
static void build(void)
{
    for (int i = 0; i < ntree; i++) {
        const entry *e = &tree[i];
        if (!e->from) {
            if (mkdir(e->path, 0755) && errno != EEXIST) { perror(e->path); abort(); }
            continue;
        }
        int fd = open(e->path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || write(fd, e->text, e->len) != (ssize_t)e->len || close(fd)) { perror(e->path); abort(); }
    }
    const struct timespec zero[2] = {{0, 0}, {0, 0}};
    for (int i = 0; i < ntree; i++)
        if (utimensat(AT_FDCWD, tree[i].path, zero, 0)) { perror(tree[i].path); abort(); }
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    if (ftw->level > 0 && remove(path)) { perror(path); abort(); }
    return 0;
}

/* Everything in the sandbox as it was made? Each entry is there, of its type,
 * mtime 0 (a write, a truncation, a new name in a directory all set it), a
 * file of its size. */
static int intact(void)
{
    for (int i = 0; i < ntree; i++) {
        struct stat sb;
        const entry *e = &tree[i];
        if (lstat(e->path, &sb) || sb.st_mtim.tv_sec || sb.st_mtim.tv_nsec) return 0;
        if (e->from ? !S_ISREG(sb.st_mode) || (size_t)sb.st_size != e->len : !S_ISDIR(sb.st_mode)) return 0;
    }
    return 1;
}

static void restore(void)
{
    if (intact()) return;
    if (nftw(".", rm_entry, 16, FTW_DEPTH | FTW_PHYS)) abort();
    build();
}

static void remove_sandbox(void)
{
    if (home_fd >= 0 && fchdir(home_fd)) return;
    if (sandbox[0]) nftw(sandbox, rm_entry, 16, FTW_DEPTH | FTW_PHYS), rmdir(sandbox);
}

/* ---- a stdout that fails ---------------------------------------------- */
static FILE *fullf;  /* every write fails, as on a full disk */
static int full_hit; /* a write reached it */

static ssize_t full_write(void *cookie, const char *buf, size_t n)
{
    (void)cookie, (void)buf, (void)n;
    full_hit = 1;
    errno = ENOSPC;
    return -1;
}

/* -artifact_prefix made absolute (libFuzzer writes crash files while kb_main,
 * and so the sandbox, has the working directory); "./" when none is given. */
static void absolute_artifacts(int *argc, char ***argv)
{
    static const char opt[] = "-artifact_prefix=";
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) return;
    int at = -1;
    for (int i = 1; i < *argc; i++) {
        if (!strcmp((*argv)[i], "-ignore_remaining_args=1")) break;
        if (!strncmp((*argv)[i], opt, sizeof opt - 1)) at = i;
    }
    const char *given = at < 0 ? "" : (*argv)[at] + sizeof opt - 1;
    if (given[0] == '/') return;
    char **nv = calloc((size_t)*argc + 2, sizeof *nv); /* for the process's life */
    if (!nv) abort();
    memcpy(nv, *argv, (size_t)*argc * sizeof *nv);
    size_t n = sizeof opt + strlen(cwd) + strlen(given) + 2;
    char *arg = malloc(n);
    if (!arg) abort();
    snprintf(arg, n, "%s%s/%s", opt, cwd, given);
    if (at < 0) {
        memmove(nv + 2, nv + 1, (size_t)(*argc - 1) * sizeof *nv); /* before any -ignore_remaining_args */
        nv[1] = arg;
        (*argc)++;
    } else {
        nv[at] = arg;
    }
    *argv = nv;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    verbose = getenv("KB_FUZZ_VERBOSE") && atoi(getenv("KB_FUZZ_VERBOSE"));
    absolute_artifacts(argc, argv);

    add(".", NULL);
    add("configs", NULL);
    add("results", NULL);
    add("results/base", NULL);
    add("results/main", NULL);
    static const char *const configs[] = {"ci", "default", "layernorm", "mlp", "rmsnorm", "rope"};
    static char cpath[6][2][64];
    for (int i = 0; i < 6; i++) {
        snprintf(cpath[i][0], 64, "configs/%s.json", configs[i]);
        snprintf(cpath[i][1], 64, "configs/%s.json", configs[i]);
        add(cpath[i][0], cpath[i][1]);
    }
    add("base.json", "tests/data/compare/base.json");
    add("new.json", "tests/data/compare/new.json");
    add("failed.json", "tests/data/compare/failed.json");
    add("results/base/rope.json", "tests/data/compare/base.json");
    add("results/main/rope.json", "tests/data/compare/base.json");
    add("results/rope.json", "tests/data/compare/new.json");
    add("empty.json", NULL); /* made a file below: empty */
    tree[ntree - 1].from = "";
    for (int i = 0; i < ntree; i++) {
        entry *e = &tree[i];
        if (!e->from) continue;
        if (!e->from[0]) { e->text = calloc(1, 1); continue; }
        char src[PATH_MAX];
        snprintf(src, sizeof src, "%s/%s", KB_FUZZ_ROOT, e->from);
        e->text = slurp(src, &e->len);
        if (!e->text) {
            fprintf(stderr, "fuzz_cmdline: %s: %s (an empty file instead)\n", src, strerror(errno));
            e->text = calloc(1, 1);
        }
    }

    const char *tmp = getenv("TMPDIR");
    snprintf(sandbox, sizeof sandbox, "%s/kbench-fuzz-cmdline.XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp");
    if (!mkdtemp(sandbox)) { perror("fuzz_cmdline: mkdtemp"); abort(); }
    home_fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    sandbox_fd = open(sandbox, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (home_fd < 0 || sandbox_fd < 0 || fchdir(sandbox_fd)) { perror("fuzz_cmdline: sandbox"); abort(); }
    build();
    if (fchdir(home_fd)) abort();
    atexit(remove_sandbox);
    fprintf(stderr, "fuzz_cmdline: kbench runs in %s (removed at exit)\n", sandbox);

    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null < 0 || dup2(null, STDIN_FILENO) < 0) abort();
    if (!verbose && dup2(null, STDOUT_FILENO) < 0) abort();
    close(null);
    errbuf = malloc(ERRBUF);
    errf = errbuf ? fmemopen(errbuf, ERRBUF, "w") : NULL;
    if (!errf) abort();
    fullf = fopencookie(NULL, "w", (cookie_io_functions_t){.write = full_write});
    if (!fullf || setvbuf(fullf, NULL, _IONBF, 0)) abort(); /* unbuffered: nothing left over for the next input */
    return 0;
}

/* A path kbench could be given that leaves the sandbox. */
static int escapes(const char *w)
{
    return w[0] == '/' || w[0] == '~' || strstr(w, "..") != NULL;
}

/* What kbench said, checked: a documented exit code, and a usage error is one
 * line (kbench alone prints its help on stderr) with control characters
 * escaped (compare's too, since its usage() escapes them). */
static void check_messages(int argc, char **argv, int rc, const char *msg, size_t len)
{
    if (rc < KB_EXIT_OK || rc > KB_EXIT_REGRESSION) abort();
    if (full_hit) { /* stdout failed: said, and no success or verdict */
        if (rc != KB_EXIT_USAGE && rc != KB_EXIT_CUDA) abort();
        for (size_t i = 0; i < len && len < ERRBUF - 1; i++)
            if (((unsigned char)msg[i] < 0x20 && msg[i] != '\n') || msg[i] == 0x7f) abort();
        return;
    }
    if (rc != KB_EXIT_USAGE || argc < 2 || len >= ERRBUF - 1) return;
    if (len == 0 || msg[len - 1] != '\n' || memchr(msg, '\n', len - 1)) abort();
    for (size_t i = 0; i + 1 < len; i++)
        if ((unsigned char)msg[i] < 0x20 || msg[i] == 0x7f) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > MAX_BYTES) return -1;
    const char *w[MAX_WORDS];
    size_t wl[MAX_WORDS];
    int nw = 0;
    for (size_t i = 0; i < size;) {
        size_t j = i;
        while (j < size && data[j] != 0 && data[j] != '\n') j++;
        if (nw == MAX_WORDS) return -1;
        w[nw] = (const char *)data + i;
        wl[nw++] = j - i;
        i = j + 1;
    }
    int argc = nw + 1;
    char **argv = calloc((size_t)argc + 1, sizeof *argv); /* each word its own allocation: ASan sees each end */
    if (!argv) abort();
    argv[0] = strdup("kbench");
    for (int k = 0; k < nw; k++) argv[k + 1] = strndup(w[k], wl[k]);
    int skip = 0;
    for (int k = 1; k < argc && !skip; k++) {
        const char *eq = strchr(argv[k], '=');
        skip = escapes(argv[k]) || (eq && escapes(eq + 1));
    }
    if (!skip) {
        char *copy[MAX_WORDS + 2]; /* getopt_long permutes argv: print and free what was given */
        memcpy(copy, argv, ((size_t)argc + 1) * sizeof *argv);
        rewind(errf);
        FILE *real_stderr = stderr, *real_stdout = stdout;
        unsigned sum = 0;
        for (size_t i = 0; i < size; i++) sum += data[i];
        const int full = sum % 4 == 0;
        full_hit = 0;
        stderr = errf;
        if (full) stdout = fullf;
        if (fchdir(sandbox_fd)) abort();
        int rc = kb_main(argc, argv);
        fflush(errf);
        stderr = real_stderr;
        stdout = real_stdout;
        restore();
        if (fchdir(home_fd)) abort();
        size_t len = (size_t)ftell(errf);
        if (verbose) {
            fprintf(stderr, "fuzz_cmdline:");
            for (int k = 0; k < argc; k++) fprintf(stderr, " '%s'", copy[k]);
            fprintf(stderr, " -> exit %d%s\n%.*s", rc, full ? " (stdout failing)" : "", (int)len, errbuf);
        }
        check_messages(argc, copy, rc, errbuf, len);
        for (int k = 0; k < argc; k++) free(copy[k]);
    } else {
        for (int k = 0; k < argc; k++) free(argv[k]);
    }
    free(argv);
    return skip ? -1 : 0;
}
