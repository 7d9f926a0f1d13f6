/* libFuzzer harness: the plugin loader's check of a library's file before
 * dlopen (kb_elf_check_fd, cli/core/elfcheck.c): the ELF header, program
 * and section headers, loadable segments and dynamic section read against
 * the file's size.
 *
 * The input is the file: written to a memory file (memfd_create) and
 * checked. Only the check runs: dlopen of a mutated library would run its
 * constructors, and the loader itself trusts what the check lets through.
 * Seeds: the test plugins, the .so files of build/tests/plugins (make test-plugins; the
 * Makefile's fuzz target builds them), mutated byte by byte.
 *
 * Beyond "no crash, no sanitizer report", each input is checked: a refusal
 * says why in one line; an acceptance means that the file is an ELF shared
 * library of this machine whose loadable segments lie inside it (read again
 * here, independently of the check), the property whose absence ended
 * kbench with SIGBUS (issue 45). */
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../cli/core/elfcheck.h"

static int memfd = -1;

/* the file's loadable segments inside it (what the check must have made sure of) */
static int segments_inside(const uint8_t *data, size_t size)
{
    ElfW(Ehdr) h;
    if (size < sizeof h) return 0;
    memcpy(&h, data, sizeof h);
    if (memcmp(h.e_ident, ELFMAG, SELFMAG) || h.e_type != ET_DYN || h.e_phentsize != sizeof(ElfW(Phdr))) return 0;
    if (h.e_phoff > size || (size - h.e_phoff) / sizeof(ElfW(Phdr)) < h.e_phnum) return 0;
    for (int i = 0; i < h.e_phnum; i++) {
        ElfW(Phdr) p;
        memcpy(&p, data + h.e_phoff + (size_t)i * sizeof p, sizeof p);
        if (p.p_type == PT_LOAD && (p.p_offset > size || p.p_filesz > size - p.p_offset)) return 0;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (memfd < 0 && (memfd = memfd_create("fuzz_plugin", MFD_CLOEXEC)) < 0) abort();
    if (ftruncate(memfd, 0) || pwrite(memfd, data, size, 0) != (ssize_t)size) abort();
    char why[256];
    memset(why, 'x', sizeof why);
    int rc = kb_elf_check_fd(memfd, why, sizeof why);
    if (rc != 0 && rc != -1) abort();
    if (rc) {
        size_t len = strnlen(why, sizeof why);
        if (len == 0 || len == sizeof why || memchr(why, '\n', len)) abort(); /* one line, said */
    } else if (!segments_inside(data, size)) {
        abort(); /* accepted, yet a segment reaches past the end */
    }
    return 0;
}
