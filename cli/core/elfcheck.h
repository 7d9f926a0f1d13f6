/* A plugin's file checked before dlopen maps it, and its entry point after
 * (elfcheck.c). dlopen trusts the file: a library cut short (its segments
 * past the end of the file) dies of SIGBUS inside it, and a data symbol
 * called as the entry point of SIGSEGV. These checks turn both into one
 * line (plugin.c). */
#ifndef KB_CORE_ELFCHECK_H
#define KB_CORE_ELFCHECK_H

#include <stddef.h>

/* Whether the open file fd could be a shared library for this process, from
 * its bytes alone (nothing is mapped or run): an ELF file of this process's
 * class, byte order and machine, of type ET_DYN; its program and section
 * headers inside the file; every loadable segment's bytes inside the file;
 * a dynamic section inside a loadable segment, ending with DT_NULL, whose
 * tables (strings, symbols, hashes, relocations, init and fini arrays) lie
 * in the loadable segments. 0, or -1 with the first thing wrong in why
 * ("truncated: ..."; no path in it). */
int kb_elf_check_fd(int fd, char *why, size_t n);
/* The same for the file at path (opened read-only). */
int kb_elf_check(const char *path, char *why, size_t n);
/* Whether addr lies in an executable segment of an object loaded in this
 * process (dl_iterate_phdr): 1 or 0. */
int kb_elf_addr_is_code(const void *addr);

#endif
