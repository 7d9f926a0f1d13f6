/* elfcheck.c: a plugin's file checked before dlopen. A real shared library
 * of this process (libcjson, as loaded) is accepted whole and refused, with
 * its reason, once cut short or with one field of its headers broken; and
 * the entry point's check tells code from data. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../cli/core/elfcheck.h"

static unsigned char *lib; /* the library's bytes */
static size_t lib_size;

static int find_cjson(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    if (!strstr(info->dlpi_name, "libcjson.so")) return 0;
    snprintf(arg, 4096, "%s", info->dlpi_name);
    return 1;
}

static int setup(void **state)
{
    (void)state;
    char path[4096] = "";
    dl_iterate_phdr(find_cjson, path);
    FILE *f = path[0] ? fopen(path, "rb") : NULL;
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    lib_size = (size_t)ftell(f);
    rewind(f);
    lib = malloc(lib_size);
    int ok = lib && fread(lib, 1, lib_size, f) == lib_size;
    fclose(f);
    return ok ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    free(lib);
    return 0;
}

/* the check of bytes (len of them) as a file: 0, or -1 with why */
static int check(const void *bytes, size_t len, char *why, size_t n)
{
    int fd = memfd_create("test_elfcheck", MFD_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, bytes, len), (ssize_t)len);
    int rc = kb_elf_check_fd(fd, why, n);
    close(fd);
    return rc;
}

/* a copy of the library, to break */
static unsigned char *copy(void)
{
    unsigned char *c = malloc(lib_size);
    assert_non_null(c);
    memcpy(c, lib, lib_size);
    return c;
}

static void expect_refused(const unsigned char *bytes, size_t len, const char *reason)
{
    char why[256] = "";
    assert_int_equal(check(bytes, len, why, sizeof why), -1);
    if (!strstr(why, reason)) fail_msg("refused for '%s', want '%s'", why, reason);
}

static ElfW(Phdr) *phdr(unsigned char *c, unsigned type)
{
    ElfW(Ehdr) *h = (ElfW(Ehdr) *)c;
    ElfW(Phdr) *p = (ElfW(Phdr) *)(c + h->e_phoff);
    for (int i = 0; i < h->e_phnum; i++)
        if (p[i].p_type == type) return &p[i];
    fail_msg("no program header of type %u", type);
    return NULL;
}

static void test_whole_and_cut(void **state)
{
    (void)state;
    char why[256] = "";
    assert_int_equal(check(lib, lib_size, why, sizeof why), 0);
    expect_refused(lib, lib_size / 2, "truncated");
    expect_refused(lib, lib_size - 1, "truncated");
    expect_refused(lib, 40, "truncated: 40 bytes, shorter than an ELF header");
    expect_refused((const unsigned char *)"hello\n", 6, "not an ELF file");
    expect_refused(lib, 0, "not an ELF file");
}

static void test_headers(void **state)
{
    (void)state;
    unsigned char *c = copy();
    ElfW(Ehdr) *h = (ElfW(Ehdr) *)c;
    h->e_machine = h->e_machine == EM_AARCH64 ? EM_X86_64 : EM_AARCH64;
    expect_refused(c, lib_size, "built for another machine");
    memcpy(c, lib, lib_size);
    h->e_ident[EI_CLASS] = ELFCLASS32;
    expect_refused(c, lib_size, "another class (32-bit");
    memcpy(c, lib, lib_size);
    h->e_type = ET_EXEC;
    expect_refused(c, lib_size, "an executable");
    memcpy(c, lib, lib_size);
    h->e_phoff = lib_size - 8;
    expect_refused(c, lib_size, "truncated: its program headers");
    memcpy(c, lib, lib_size);
    h->e_shoff = lib_size;
    expect_refused(c, lib_size, "truncated: its section headers");
    free(c);
}

static void test_segments(void **state)
{
    (void)state;
    unsigned char *c = copy();
    ElfW(Phdr) *load = phdr(c, PT_LOAD);
    load->p_filesz = load->p_memsz = lib_size + 4096;
    expect_refused(c, lib_size, "truncated: its segment");
    memcpy(c, lib, lib_size);
    phdr(c, PT_DYNAMIC)->p_type = PT_NULL;
    expect_refused(c, lib_size, "no dynamic segment");
    memcpy(c, lib, lib_size);
    load = phdr(c, PT_LOAD);
    load->p_filesz = load->p_memsz + 1;
    expect_refused(c, lib_size, "more than its");
    free(c);
}

/* the dynamic entry of tag in c, or NULL (an ELF file as the library is: the
 * dynamic segment's bytes at its p_offset) */
static ElfW(Dyn) *dyn_entry(unsigned char *c, int64_t tag)
{
    ElfW(Phdr) *p = phdr(c, PT_DYNAMIC);
    ElfW(Dyn) *d = (ElfW(Dyn) *)(c + p->p_offset);
    for (size_t i = 0; i < p->p_filesz / sizeof *d && d[i].d_tag != DT_NULL; i++)
        if (d[i].d_tag == tag) return &d[i];
    return NULL;
}

static void test_dynamic(void **state)
{
    (void)state;
    unsigned char *c = copy();
    ElfW(Dyn) *d = dyn_entry(c, DT_STRTAB);
    assert_non_null(d);
    d->d_un.d_ptr = (ElfW(Addr))1 << 40;
    expect_refused(c, lib_size, "DT_STRTAB");
    memcpy(c, lib, lib_size);
    d = dyn_entry(c, DT_STRSZ);
    assert_non_null(d);
    d->d_un.d_val = lib_size * 2;
    expect_refused(c, lib_size, "DT_STRTAB");
    memcpy(c, lib, lib_size);
    d = dyn_entry(c, DT_NEEDED);
    if (d) {
        d->d_un.d_val = lib_size * 4;
        expect_refused(c, lib_size, "past its string table");
        memcpy(c, lib, lib_size);
    }
    /* no DT_NULL: every entry of the segment made DT_DEBUG */
    ElfW(Phdr) *p = phdr(c, PT_DYNAMIC);
    ElfW(Dyn) *all = (ElfW(Dyn) *)(c + p->p_offset);
    for (size_t i = 0; i < p->p_filesz / sizeof *all; i++) all[i].d_tag = DT_DEBUG;
    expect_refused(c, lib_size, "no end (DT_NULL)");
    free(c);
}

int kb_elfcheck_data_symbol = 5;

static void test_code_or_data(void **state)
{
    (void)state;
    int local = 0;
    void *fn;
    int (*f)(const char *, char *, size_t) = kb_elf_check;
    memcpy(&fn, &f, sizeof fn);
    assert_true(kb_elf_addr_is_code(fn));
    assert_false(kb_elf_addr_is_code(&kb_elfcheck_data_symbol));
    assert_false(kb_elf_addr_is_code(&local));
    assert_false(kb_elf_addr_is_code(lib));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_whole_and_cut), cmocka_unit_test(test_headers), cmocka_unit_test(test_segments),
        cmocka_unit_test(test_dynamic),       cmocka_unit_test(test_code_or_data),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
