/* A plugin's file read before dlopen: its ELF headers, segments, sections
 * and dynamic section checked against the file's size, so that the loader
 * never maps bytes past the end of the file (SIGBUS) or follows a table out
 * of the library (elfcheck.h). Only the file's bytes are read: nothing of it
 * is mapped or run, so any bytes at all are safe here (tests/fuzz/fuzz_plugin.c).
 *
 * Not checked: what the tables hold beyond their bounds (a relocation's
 * target, a hash chain's length, a symbol's value). A file made to crash the
 * loader can still do so; a file cut short, written over or of another
 * machine cannot. */
#include "elfcheck.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#if __SIZEOF_POINTER__ == 8
#define KB_ELFCLASS ELFCLASS64
#else
#define KB_ELFCLASS ELFCLASS32
#endif
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define KB_ELFDATA ELFDATA2LSB
#else
#define KB_ELFDATA ELFDATA2MSB
#endif
#if defined(__x86_64__)
#define KB_ELFMACHINE EM_X86_64
#elif defined(__aarch64__)
#define KB_ELFMACHINE EM_AARCH64
#elif defined(__powerpc64__)
#define KB_ELFMACHINE EM_PPC64
#elif defined(__i386__)
#define KB_ELFMACHINE EM_386
#else
#define KB_ELFMACHINE EM_NONE /* unknown here: not checked */
#endif

typedef unsigned long long ull;

typedef struct {
    int fd;
    uint64_t size; /* the file's bytes */
    ElfW(Ehdr) eh;
    ElfW(Phdr) *ph;
    int nph;
    char *why;
    size_t n;
} elf;

static int no(elf *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int no(elf *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->why, e->n, fmt, ap);
    va_end(ap);
    return -1;
}

/* [off, off + len) inside the file? (no overflow) */
static int in_file(const elf *e, uint64_t off, uint64_t len) { return off <= e->size && len <= e->size - off; }

/* len bytes at off, all of them: 0, or -1 */
static int rd(const elf *e, uint64_t off, void *buf, size_t len)
{
    size_t got = 0;
    while (got < len) {
        ssize_t r = pread(e->fd, (char *)buf + got, len - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        got += (size_t)r;
    }
    return 0;
}

/* count entries of size each at off, read whole into a new allocation (freed
 * by the caller), or NULL with why (what: "program headers") */
static void *table(elf *e, uint64_t off, uint64_t count, uint64_t each, const char *what)
{
    if (count > UINT64_MAX / each || !in_file(e, off, count * each)) {
        no(e, "truncated: its %s (bytes %llu to %llu) end past the file's end (%llu bytes)", what, (ull)off,
           (ull)(off + count * each), (ull)e->size);
        return NULL;
    }
    void *t = malloc(count > 0 ? count * each : 1);
    if (!t) return no(e, "no memory to read its %s", what), NULL;
    if (rd(e, off, t, count * each)) {
        free(t);
        return no(e, "cannot read its %s: %s", what, strerror(errno ? errno : EIO)), NULL;
    }
    return t;
}

static const char *type_name(unsigned t)
{
    switch (t) {
    case ET_REL: return "a relocatable object (.o), not a shared library";
    case ET_EXEC: return "an executable, not a shared library";
    case ET_CORE: return "a core dump, not a shared library";
    default: return "not a shared library (unknown ELF type)";
    }
}

/* The ELF header: this process's kind of shared library, its header tables
 * inside the file */
static int check_header(elf *e)
{
    ElfW(Ehdr) *h = &e->eh;
    memset(h, 0, sizeof *h);
    ssize_t got = pread(e->fd, h, sizeof *h, 0);
    if (got < SELFMAG || memcmp(h->e_ident, ELFMAG, SELFMAG))
        return no(e, "not an ELF file (it does not begin with 0x7f 'ELF')");
    if ((size_t)got < sizeof *h)
        return no(e, "truncated: %llu bytes, shorter than an ELF header (%zu)", (ull)e->size, sizeof *h);
    if (h->e_ident[EI_CLASS] != KB_ELFCLASS)
        return no(e, "an ELF file of another class (%s; this kbench is %d-bit)",
                  h->e_ident[EI_CLASS] == ELFCLASS32 ? "32-bit" : h->e_ident[EI_CLASS] == ELFCLASS64 ? "64-bit" : "unknown",
                  (int)(8 * sizeof(void *)));
    if (h->e_ident[EI_DATA] != KB_ELFDATA) return no(e, "an ELF file of another byte order");
    if (h->e_ident[EI_VERSION] != EV_CURRENT || h->e_version != EV_CURRENT) return no(e, "an unknown ELF version");
    if (h->e_type != ET_DYN) return no(e, "%s", type_name(h->e_type));
    if (KB_ELFMACHINE != EM_NONE && h->e_machine != KB_ELFMACHINE)
        return no(e, "built for another machine (ELF machine %u; this kbench runs on %u)", h->e_machine, KB_ELFMACHINE);
    if (h->e_ehsize != sizeof *h) return no(e, "an ELF header of %u bytes, not %zu", h->e_ehsize, sizeof *h);
    if (h->e_phentsize != sizeof(ElfW(Phdr)))
        return no(e, "program headers of %u bytes, not %zu", h->e_phentsize, sizeof(ElfW(Phdr)));
    if (h->e_phnum == 0 || h->e_phnum >= PN_XNUM) return no(e, "%u program headers", h->e_phnum);
    if (!in_file(e, h->e_phoff, (uint64_t)h->e_phnum * sizeof(ElfW(Phdr))))
        return no(e, "truncated: its program headers (bytes %llu to %llu) end past the file's end (%llu bytes)",
                  (ull)h->e_phoff, (ull)h->e_phoff + (ull)h->e_phnum * sizeof(ElfW(Phdr)), (ull)e->size);
    if (h->e_shnum) {
        if (h->e_shentsize != sizeof(ElfW(Shdr)))
            return no(e, "section headers of %u bytes, not %zu", h->e_shentsize, sizeof(ElfW(Shdr)));
        if (!in_file(e, h->e_shoff, (uint64_t)h->e_shnum * sizeof(ElfW(Shdr))))
            return no(e, "truncated: its section headers (bytes %llu to %llu) end past the file's end (%llu bytes)",
                      (ull)h->e_shoff, (ull)h->e_shoff + (ull)h->e_shnum * sizeof(ElfW(Shdr)), (ull)e->size);
        if (h->e_shstrndx != SHN_UNDEF && h->e_shstrndx >= h->e_shnum)
            return no(e, "its section names' index %u is past its %u sections", h->e_shstrndx, h->e_shnum);
    }
    return 0;
}

/* The loadable segments: each one's bytes in the file, in address order; a
 * dynamic segment inside the file. *dyn: the PT_DYNAMIC header's index */
static int check_segments(elf *e, int *dyn)
{
    e->nph = e->eh.e_phnum;
    e->ph = table(e, e->eh.e_phoff, (uint64_t)e->nph, sizeof(ElfW(Phdr)), "program headers");
    if (!e->ph) return -1;
    int nload = 0;
    uint64_t last = 0;
    *dyn = -1;
    for (int i = 0; i < e->nph; i++) {
        const ElfW(Phdr) *p = &e->ph[i];
        if (p->p_type == PT_DYNAMIC) {
            if (*dyn >= 0) return no(e, "two dynamic segments (%d and %d)", *dyn, i);
            *dyn = i;
        }
        if (p->p_type != PT_LOAD && p->p_type != PT_DYNAMIC) continue;
        if (!in_file(e, p->p_offset, p->p_filesz))
            return no(e, "truncated: its segment %d (bytes %llu to %llu) ends past the file's end (%llu bytes)", i,
                      (ull)p->p_offset, (ull)p->p_offset + (ull)p->p_filesz, (ull)e->size);
        if (p->p_type != PT_LOAD) continue;
        if (p->p_filesz > p->p_memsz)
            return no(e, "segment %d: %llu bytes in the file, more than its %llu in memory", i, (ull)p->p_filesz,
                      (ull)p->p_memsz);
        if (p->p_vaddr + p->p_memsz < p->p_vaddr) return no(e, "segment %d: its addresses wrap around", i);
        if (p->p_align > 1 && ((p->p_align & (p->p_align - 1)) || (p->p_vaddr - p->p_offset) % p->p_align))
            return no(e, "segment %d: its alignment (%llu) does not hold", i, (ull)p->p_align);
        if (nload++ && p->p_vaddr < last) return no(e, "segment %d: loadable segments out of address order", i);
        last = p->p_vaddr + p->p_memsz;
    }
    if (!nload) return no(e, "no loadable segment");
    if (*dyn < 0) return no(e, "no dynamic segment (not a shared library)");
    return 0;
}

/* Every section with bytes in the file has them inside it */
static int check_sections(elf *e)
{
    if (!e->eh.e_shnum) return 0;
    ElfW(Shdr) *sh = table(e, e->eh.e_shoff, e->eh.e_shnum, sizeof *sh, "section headers");
    if (!sh) return -1;
    int rc = 0;
    for (int i = 0; i < e->eh.e_shnum && !rc; i++)
        if (sh[i].sh_type != SHT_NOBITS && sh[i].sh_type != SHT_NULL && !in_file(e, sh[i].sh_offset, sh[i].sh_size))
            rc = no(e, "truncated: its section %d (bytes %llu to %llu) ends past the file's end (%llu bytes)", i,
                    (ull)sh[i].sh_offset, (ull)sh[i].sh_offset + (ull)sh[i].sh_size, (ull)e->size);
    free(sh);
    return rc;
}

/* The loadable segment holding [addr, addr + len) (file: in its bytes from
 * the file, not the zeroes after them), or NULL */
static const ElfW(Phdr) *seg_of(const elf *e, uint64_t addr, uint64_t len, int file)
{
    for (int i = 0; i < e->nph; i++) {
        const ElfW(Phdr) *p = &e->ph[i];
        uint64_t size = file ? p->p_filesz : p->p_memsz;
        if (p->p_type == PT_LOAD && addr >= p->p_vaddr && addr - p->p_vaddr <= size && len <= size - (addr - p->p_vaddr))
            return p;
    }
    return NULL;
}

/* the dynamic section's values the checks need (0: absent) */
enum { D_STRTAB, D_STRSZ, D_SYMTAB, D_SYMENT, D_HASH, D_GNU_HASH, D_RELA, D_RELASZ, D_REL, D_RELSZ, D_JMPREL,
       D_PLTRELSZ, D_INIT_ARRAY, D_INIT_ARRAYSZ, D_FINI_ARRAY, D_FINI_ARRAYSZ, D_PREINIT_ARRAY, D_PREINIT_ARRAYSZ,
       D_INIT, D_FINI, D_VERSYM, D_VERDEF, D_VERNEED, D_N };
static const struct {
    int64_t tag;
    const char *name;
} dtags[D_N] = {{DT_STRTAB, "DT_STRTAB"},   {DT_STRSZ, "DT_STRSZ"},         {DT_SYMTAB, "DT_SYMTAB"},
                {DT_SYMENT, "DT_SYMENT"},   {DT_HASH, "DT_HASH"},           {DT_GNU_HASH, "DT_GNU_HASH"},
                {DT_RELA, "DT_RELA"},       {DT_RELASZ, "DT_RELASZ"},       {DT_REL, "DT_REL"},
                {DT_RELSZ, "DT_RELSZ"},     {DT_JMPREL, "DT_JMPREL"},       {DT_PLTRELSZ, "DT_PLTRELSZ"},
                {DT_INIT_ARRAY, "DT_INIT_ARRAY"}, {DT_INIT_ARRAYSZ, "DT_INIT_ARRAYSZ"},
                {DT_FINI_ARRAY, "DT_FINI_ARRAY"}, {DT_FINI_ARRAYSZ, "DT_FINI_ARRAYSZ"},
                {DT_PREINIT_ARRAY, "DT_PREINIT_ARRAY"}, {DT_PREINIT_ARRAYSZ, "DT_PREINIT_ARRAYSZ"},
                {DT_INIT, "DT_INIT"},       {DT_FINI, "DT_FINI"},           {DT_VERSYM, "DT_VERSYM"},
                {DT_VERDEF, "DT_VERDEF"},   {DT_VERNEED, "DT_VERNEED"}};

/* a table of the dynamic section (d[at], d[sz] bytes, or minimum where it
 * has no size) inside a loadable segment's bytes from the file */
static int table_in(elf *e, const uint64_t *d, int at, int sz, uint64_t minimum)
{
    if (!d[at]) return 0;
    uint64_t len = sz >= 0 && d[sz] ? d[sz] : minimum;
    if (!seg_of(e, d[at], len, 1))
        return no(e, "its dynamic section's %s (%llu bytes at 0x%llx) is outside its loadable segments", dtags[at].name,
                  (ull)len, (ull)d[at]);
    return 0;
}

/* the 32-bit words at address addr (inside a segment's file bytes) */
static int words_at(elf *e, uint64_t addr, uint32_t *w, int count)
{
    const ElfW(Phdr) *p = seg_of(e, addr, 4u * (uint64_t)count, 1);
    return p && !rd(e, p->p_offset + (addr - p->p_vaddr), w, 4u * (size_t)count) ? 0 : -1;
}

/* The symbol hash tables' fixed parts (their heads, buckets, bloom words)
 * inside the file: dlsym walks them */
static int check_hashes(elf *e, const uint64_t *d)
{
    if (!d[D_HASH] && !d[D_GNU_HASH]) return no(e, "its dynamic section has no symbol hash table (DT_HASH or DT_GNU_HASH)");
    uint32_t h[4];
    if (d[D_HASH]) {
        if (words_at(e, d[D_HASH], h, 2) || table_in(e, d, D_HASH, -1, 4 * (2 + (uint64_t)h[0] + h[1])))
            return no(e, "its symbol hash table (DT_HASH at 0x%llx) is outside its loadable segments", (ull)d[D_HASH]);
        if (h[0] == 0) return no(e, "its symbol hash table (DT_HASH) has no bucket");
        if (table_in(e, d, D_SYMTAB, -1, (uint64_t)h[1] * sizeof(ElfW(Sym)))) return -1; /* nchain: the symbols */
    }
    if (d[D_GNU_HASH]) {
        if (words_at(e, d[D_GNU_HASH], h, 4) ||
            table_in(e, d, D_GNU_HASH, -1, 16 + (uint64_t)h[2] * sizeof(ElfW(Addr)) + 4 * (uint64_t)h[0]))
            return no(e, "its symbol hash table (DT_GNU_HASH at 0x%llx) is outside its loadable segments",
                      (ull)d[D_GNU_HASH]);
        if (h[0] == 0 || h[2] == 0 || (h[2] & (h[2] - 1)))
            return no(e, "its symbol hash table (DT_GNU_HASH) has %u buckets and %u bloom words", h[0], h[2]);
    }
    return 0;
}

/* The dynamic section: entries up to DT_NULL inside it, its tables inside
 * the loadable segments, the names it points at inside its string table */
static int check_dynamic(elf *e, const ElfW(Phdr) *p)
{
    if (!seg_of(e, p->p_vaddr, p->p_filesz, 1)) return no(e, "its dynamic segment is outside its loadable segments");
    const uint64_t nd = p->p_filesz / sizeof(ElfW(Dyn));
    ElfW(Dyn) *dy = table(e, p->p_offset, nd, sizeof(ElfW(Dyn)), "dynamic section");
    if (!dy) return -1;
    uint64_t d[D_N] = {0}, end = nd;
    for (uint64_t i = 0; i < nd && end == nd; i++) {
        if (dy[i].d_tag == DT_NULL) end = i;
        for (int k = 0; k < D_N; k++)
            if (dy[i].d_tag == dtags[k].tag) d[k] = dy[i].d_un.d_val;
    }
    int rc = end == nd ? no(e, "its dynamic section has no end (DT_NULL)") : 0;
    if (!rc && (!d[D_STRTAB] || !d[D_SYMTAB]))
        rc = no(e, "its dynamic section has no %s", d[D_STRTAB] ? "symbol table (DT_SYMTAB)" : "string table (DT_STRTAB)");
    if (!rc && d[D_SYMENT] && d[D_SYMENT] != sizeof(ElfW(Sym)))
        rc = no(e, "symbols of %llu bytes, not %zu", (ull)d[D_SYMENT], sizeof(ElfW(Sym)));
    static const int sized[][3] = {{D_STRTAB, D_STRSZ, 1}, {D_SYMTAB, -1, sizeof(ElfW(Sym))}, {D_RELA, D_RELASZ, 1},
                                   {D_REL, D_RELSZ, 1}, {D_JMPREL, D_PLTRELSZ, 1}, {D_INIT_ARRAY, D_INIT_ARRAYSZ, 1},
                                   {D_FINI_ARRAY, D_FINI_ARRAYSZ, 1}, {D_PREINIT_ARRAY, D_PREINIT_ARRAYSZ, 1},
                                   {D_VERSYM, -1, 2}, {D_VERDEF, -1, 1}, {D_VERNEED, -1, 1}};
    for (size_t k = 0; !rc && k < sizeof sized / sizeof sized[0]; k++)
        rc = table_in(e, d, sized[k][0], sized[k][1], (uint64_t)sized[k][2]);
    for (int k = D_INIT; !rc && k <= D_FINI; k++)
        if (d[k] && !seg_of(e, d[k], 1, 0)) rc = no(e, "its %s (0x%llx) is outside its loadable segments", dtags[k].name, (ull)d[k]);
    if (!rc) rc = check_hashes(e, d);
    for (uint64_t i = 0; !rc && i < end; i++) { /* names: offsets into the string table */
        const int64_t t = dy[i].d_tag;
        if ((t == DT_NEEDED || t == DT_SONAME || t == DT_RPATH || t == DT_RUNPATH) && dy[i].d_un.d_val >= d[D_STRSZ])
            rc = no(e, "its dynamic entry %llu names a string at %llu, past its string table (%llu bytes)", (ull)i,
                    (ull)dy[i].d_un.d_val, (ull)d[D_STRSZ]);
    }
    free(dy);
    return rc;
}

int kb_elf_check_fd(int fd, char *why, size_t n)
{
    struct stat sb;
    elf e = {.fd = fd, .why = why, .n = n};
    if (n) why[0] = 0;
    if (fstat(fd, &sb)) return no(&e, "cannot read it: %s", strerror(errno));
    if (!S_ISREG(sb.st_mode)) return no(&e, "not a file");
    e.size = (uint64_t)sb.st_size;
    int dyn = -1;
    int rc = check_header(&e) || check_segments(&e, &dyn) || check_sections(&e) || check_dynamic(&e, &e.ph[dyn]) ? -1 : 0;
    free(e.ph);
    return rc;
}

int kb_elf_check(const char *path, char *why, size_t n)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, n, "cannot read it: %s", strerror(errno));
        return -1;
    }
    int rc = kb_elf_check_fd(fd, why, n);
    close(fd);
    return rc;
}

typedef struct {
    uintptr_t addr;
    int code;
} addr_probe;

static int probe_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    addr_probe *a = arg;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        uintptr_t lo = (uintptr_t)info->dlpi_addr + (uintptr_t)p->p_vaddr;
        if (p->p_type == PT_LOAD && a->addr >= lo && a->addr - lo < p->p_memsz) {
            a->code = (p->p_flags & PF_X) != 0;
            return 1;
        }
    }
    return 0;
}

int kb_elf_addr_is_code(const void *addr)
{
    addr_probe a = {(uintptr_t)addr, 0};
    dl_iterate_phdr(probe_object, &a);
    return a.code;
}
