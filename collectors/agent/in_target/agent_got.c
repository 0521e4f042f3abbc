/*
 * How the sampler sees allocations: GOT patching on demand.
 *
 * When memtrimd turns sampling on, every loaded object's GOT entries for the
 * malloc family (and dlopen) are rewritten to point at the sampler's hooks;
 * nothing is rewritten before that. Why this and not symbol interposition
 * (the library defining malloc itself):
 *   - nothing changes in a program until sampling is turned on: a preloaded
 *     program's malloc path stays exactly what it was (no hook on every
 *     malloc of every preloaded program that is never sampled);
 *   - it works the same when the agent arrives late, loaded into a running
 *     JVM (Agent_OnAttach), where interposition is too late: every object
 *     has bound malloc already;
 *   - it is not defeated by the order of LD_PRELOAD: a jemalloc listed before
 *     the agent would win against an interposing agent. Here the hooks call
 *     whatever the program's calls bind to (agent_got_resolve: the first
 *     object in load order that defines the name), jemalloc's or
 *     tcmalloc's as well as glibc's.
 * glibc's own libc.so.6 reaches malloc, free, calloc and realloc through
 * GLOB_DAT and JUMP_SLOT entries (readelf -rW), so it is patched too, and
 * strdup, fopen, getline are seen.
 *
 * The walk: dl_iterate_phdr (an object cannot be unloaded while its callback
 * runs: dlclose takes the same lock to drop it from the list), every object
 * but this library, the vdso and the dynamic loader. Its in-memory PT_DYNAMIC
 * gives DT_SYMTAB, DT_STRTAB, DT_JMPREL/DT_PLTRELSZ and DT_RELA/DT_RELASZ
 * (glibc relocates those d_ptr values in place; one below dlpi_addr is
 * unrelocated and gets dlpi_addr added). An R_X86_64_JUMP_SLOT or
 * R_X86_64_GLOB_DAT entry of a hooked name (GLOB_DAT: -fno-plt calls, and
 * address-taking code) is rewritten only while it holds the definition, a
 * non-PIE executable's canonical PLT stub for it (what dlsym returns there,
 * and what pointer-taking code elsewhere got), or still points into its own
 * PLT (lazy binding not yet resolved); any other value (another interposer,
 * a DEEPBIND object bound to its own malloc) is left alone and its object
 * counted as unhooked (takes_hook says which is which). An entry already
 * holding the hook is skipped: passes are idempotent.
 * Entries inside PT_GNU_RELRO (full RELRO, Debian's default) are written
 * with the page made writable for the write and read-only again after.
 *
 * An object still being loaded by another thread is in dl_iterate_phdr's
 * list before the loader has relocated it and protected its RELRO: writing
 * its GOT then would be overwritten by the loader, and a page made
 * read-only under it would crash it. _dl_find_object (glibc 2.35, lock-free)
 * knows an object only once its dlopen has relocated it, so an object it does
 * not know is left for a later pass ("unfinished").
 *
 * dlopen: objects loaded later (JNI libraries) must be patched too. The hook
 * is not a function that calls the real dlopen: glibc's dlopen takes its
 * caller from its return address, and uses the caller's DT_RUNPATH/DT_RPATH
 * to find a bare name, its $ORIGIN, and its namespace (dlmopen); called from
 * the agent, a program's dlopen("libplugin.so") relying on its own RUNPATH
 * would fail. So the hook is four instructions: count the call, jump to the
 * real dlopen, which returns straight to the caller. The sampler then runs a
 * pass after a dlopen, from the next allocation through a hook
 * (sampler_hooks.c) or the socket task's tick (sampler_control.c). An
 * object unloaded takes its patched GOT with it.
 *
 * "off" (and the end of a lease) puts every entry back (agent_got_unpatch):
 * the program's calls go straight to its allocator again, so nothing of the
 * sampler stays on its path once memtrimd stops asking. The same walk under
 * the same locks, each entry holding a hook given the value the loader gave
 * it: the definition, or for a GLOB_DAT entry where the executable has a
 * canonical PLT stub, that stub (pointer equality with the executable's
 * `&malloc`, as before the patch). A thread already inside a hook finishes
 * there: the hooks stay mapped (the library is never unloaded). A pass from
 * an allocating thread that began before "off" must not patch again after
 * it: only the agent thread's pass ("on") arms them.
 *
 * One pass at a time (two passes making the same RELRO page read-only would
 * fault the slower one's write). The lock is a word holding the holder's
 * pid: a child forked while a thread of its parent held it takes it over (no
 * thread of the child holds it), so a forked child can never wait for it.
 * Nothing here mallocs.
 */
#define _GNU_SOURCE

#include "agent_got.h"
#include "agent_phdr.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <sched.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__x86_64__)
#define RELOC_JUMP_SLOT R_X86_64_JUMP_SLOT
#define RELOC_GLOB_DAT R_X86_64_GLOB_DAT
#elif defined(__aarch64__)
#define RELOC_JUMP_SLOT R_AARCH64_JUMP_SLOT
#define RELOC_GLOB_DAT R_AARCH64_GLOB_DAT
#else
#error "libmemtrimd_agent: add this architecture's GOT relocation types (agent_got.c)"
#endif

/* Read by the dlopen hook's instructions: hidden, not static, so the
 * assembler names them as written. */
__attribute__((visibility("hidden"))) void* memtrimd_got_real_dlopen;
__attribute__((visibility("hidden"))) uint64_t memtrimd_got_dlopen_count;
void memtrimd_got_dlopen_hook(void);

#if defined(__x86_64__)
__asm__(
    ".text\n"
    ".p2align 4\n"
    ".globl memtrimd_got_dlopen_hook\n"
    ".hidden memtrimd_got_dlopen_hook\n"
    ".type memtrimd_got_dlopen_hook,@function\n"
    "memtrimd_got_dlopen_hook:\n"
    "  lock incq memtrimd_got_dlopen_count(%rip)\n"
    "  jmp *memtrimd_got_real_dlopen(%rip)\n"
    ".size memtrimd_got_dlopen_hook, .-memtrimd_got_dlopen_hook\n");
#elif defined(__aarch64__)
/* x16, x17 (the intra-procedure-call scratch registers) and x15 are free at a
 * call's entry. */
__asm__(
    ".text\n"
    ".p2align 4\n"
    ".globl memtrimd_got_dlopen_hook\n"
    ".hidden memtrimd_got_dlopen_hook\n"
    ".type memtrimd_got_dlopen_hook,%function\n"
    "memtrimd_got_dlopen_hook:\n"
    "  adrp x16, memtrimd_got_dlopen_count\n"
    "  add x16, x16, :lo12:memtrimd_got_dlopen_count\n"
    "1: ldxr x17, [x16]\n"
    "  add x17, x17, #1\n"
    "  stxr w15, x17, [x16]\n"
    "  cbnz w15, 1b\n"
    "  adrp x16, memtrimd_got_real_dlopen\n"
    "  ldr x16, [x16, :lo12:memtrimd_got_real_dlopen]\n"
    "  br x16\n"
    ".size memtrimd_got_dlopen_hook, .-memtrimd_got_dlopen_hook\n");
#endif

static uintptr_t g_self_start, g_self_end; /* this library's code */
static long g_page;
static int g_lock; /* pid of the process whose thread runs a pass; 0: none */
/* An address of an object the last pass found still being loaded, or 0:
 * once _dl_find_object knows it, a pass is due at once. */
static uintptr_t g_unfinished_at;

static int find_self(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size;
  (void)data;
  if (!agent_object_holds(info, (uintptr_t)&find_self)) {
    return 0;
  }
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
    if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
      g_self_start = info->dlpi_addr + ph->p_vaddr;
      g_self_end = g_self_start + ph->p_memsz;
    }
  }
  return 1;
}

void agent_got_init(void) {
  g_page = sysconf(_SC_PAGESIZE);
  dl_iterate_phdr(find_self, NULL);
  void* canonical;
  memtrimd_got_real_dlopen = agent_got_resolve("dlopen", &canonical);
}

void* agent_got_dlopen_hook(void) {
  return memtrimd_got_real_dlopen != NULL ? (void*)memtrimd_got_dlopen_hook : NULL;
}

void* agent_got_real_dlopen(void) { return memtrimd_got_real_dlopen; }

uint64_t agent_got_dlopen_calls(void) {
  return __atomic_load_n(&memtrimd_got_dlopen_count, __ATOMIC_ACQUIRE);
}

int agent_got_is_own_pc(uintptr_t pc) { return pc >= g_self_start && pc < g_self_end; }

static int lock_pass(int wait) {
  const int me = (int)getpid();
  for (;;) {
    int held = __atomic_load_n(&g_lock, __ATOMIC_RELAXED);
    /* Free, or held by the parent this process was forked from (no thread
     * of ours holds it). */
    if ((held == 0 || held != me) &&
        __atomic_compare_exchange_n(&g_lock, &held, me, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
      return 1;
    }
    if (!wait) {
      return 0;
    }
    sched_yield();
  }
}

static void unlock_pass(void) { __atomic_store_n(&g_lock, 0, __ATOMIC_RELEASE); }

/* Set by a pass that may patch anything (the agent thread's, "on"), cleared
 * by agent_got_unpatch; both under the pass lock. */
static int g_armed;

struct pass {
  const struct got_hook* hooks;
  size_t n;
  struct got_result* out;
  uintptr_t loader; /* an address inside the dynamic loader */
  uintptr_t vdso;
  unsigned seen; /* objects visited: the first is the executable */
  int restore;   /* agent_got_unpatch: hooks back to what the loader wrote */
};

/* d_ptr as an address in this process. */
static uintptr_t dyn_addr(const struct dl_phdr_info* info, ElfW(Addr) p) {
  return p < info->dlpi_addr ? p + info->dlpi_addr : p;
}

static const struct got_hook* hook_named(const struct pass* s, const char* name) {
  for (size_t i = 0; i < s->n; ++i) {
    if (s->hooks[i].hook != NULL && strcmp(s->hooks[i].name, name) == 0) {
      return &s->hooks[i];
    }
  }
  return NULL;
}

/* An object's dynamic section, as the loader left it in memory. */
struct dynamic {
  const ElfW(Sym) * symtab;
  const char* strtab;
  size_t strsz;
  const uint32_t* gnu_hash;
  const uint32_t* sysv_hash;
  const ElfW(Half) * versym;
  uintptr_t jmprel, rela;
  size_t pltrelsz, relasz;
  long pltrel;
};

/* 0 when the object has a dynamic section with symbols; a static
 * executable has none (nothing binds through a GOT). */
static int read_dynamic(const struct dl_phdr_info* info, struct dynamic* d) {
  memset(d, 0, sizeof *d);
  d->pltrel = DT_RELA;
  const ElfW(Dyn)* dyn = NULL;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC) {
      dyn = (const ElfW(Dyn)*)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    }
  }
  if (dyn == NULL) {
    return -1;
  }
  for (const ElfW(Dyn)* e = dyn; e->d_tag != DT_NULL; ++e) {
    switch (e->d_tag) {
      case DT_SYMTAB:
        d->symtab = (const ElfW(Sym)*)dyn_addr(info, e->d_un.d_ptr);
        break;
      case DT_STRTAB:
        d->strtab = (const char*)dyn_addr(info, e->d_un.d_ptr);
        break;
      case DT_STRSZ:
        d->strsz = e->d_un.d_val;
        break;
      case DT_GNU_HASH:
        d->gnu_hash = (const uint32_t*)dyn_addr(info, e->d_un.d_ptr);
        break;
      case DT_HASH:
        d->sysv_hash = (const uint32_t*)dyn_addr(info, e->d_un.d_ptr);
        break;
      case DT_VERSYM:
        d->versym = (const ElfW(Half)*)dyn_addr(info, e->d_un.d_ptr);
        break;
      case DT_JMPREL:
        d->jmprel = dyn_addr(info, e->d_un.d_ptr);
        break;
      case DT_PLTRELSZ:
        d->pltrelsz = e->d_un.d_val;
        break;
      case DT_PLTREL:
        d->pltrel = (long)e->d_un.d_val;
        break;
      case DT_RELA:
        d->rela = dyn_addr(info, e->d_un.d_ptr);
        break;
      case DT_RELASZ:
        d->relasz = e->d_un.d_val;
        break;
      default:
        break;
    }
  }
  return d->symtab != NULL && d->strtab != NULL ? 0 : -1;
}

/* Symbol `i` defines `name` (a function, default version, not a stub). */
static int defines(const struct dynamic* d, uint32_t i, const char* name) {
  const ElfW(Sym)* sym = &d->symtab[i];
  const unsigned type = ELF64_ST_TYPE(sym->st_info), bind = ELF64_ST_BIND(sym->st_info);
  if (sym->st_shndx == SHN_UNDEF || sym->st_value == 0 || sym->st_name >= d->strsz ||
      (type != STT_FUNC && type != STT_GNU_IFUNC) || (bind != STB_GLOBAL && bind != STB_WEAK)) {
    return 0;
  }
  /* A hidden (non-default) version binds only callers asking for it. */
  if (d->versym != NULL && (d->versym[i] & 0x8000) != 0) {
    return 0;
  }
  return strcmp(d->strtab + sym->st_name, name) == 0;
}

/* The object's own definition of `name`, through its hash table (every
 * defined dynamic symbol is in it); NULL when it defines none. */
static const ElfW(Sym) * defined_symbol(const struct dynamic* d, const char* name) {
  if (d->gnu_hash != NULL) {
    uint32_t h = 5381;
    for (const unsigned char* c = (const unsigned char*)name; *c != '\0'; ++c) {
      h = h * 33 + *c;
    }
    const uint32_t nbuckets = d->gnu_hash[0], symoffset = d->gnu_hash[1];
    const uint32_t bloom_words = d->gnu_hash[2];
    const uint32_t* buckets = (const uint32_t*)((const ElfW(Addr)*)(d->gnu_hash + 4) + bloom_words);
    const uint32_t* chain = buckets + nbuckets;
    if (nbuckets == 0) {
      return NULL;
    }
    uint32_t i = buckets[h % nbuckets];
    if (i < symoffset) {
      return NULL;
    }
    for (;; ++i) {
      const uint32_t c = chain[i - symoffset];
      if ((c | 1u) == (h | 1u) && defines(d, i, name)) {
        return &d->symtab[i];
      }
      if (c & 1u) {
        return NULL;
      }
    }
  }
  if (d->sysv_hash != NULL) {
    uint32_t h = 0;
    for (const unsigned char* c = (const unsigned char*)name; *c != '\0'; ++c) {
      h = (h << 4) + *c;
      const uint32_t g = h & 0xf0000000u;
      h ^= g >> 24;
      h &= ~g;
    }
    const uint32_t nbucket = d->sysv_hash[0];
    const uint32_t* bucket = d->sysv_hash + 2;
    const uint32_t* chain = bucket + nbucket;
    for (uint32_t i = nbucket != 0 ? bucket[h % nbucket] : 0; i != STN_UNDEF; i = chain[i]) {
      if (defines(d, i, name)) {
        return &d->symtab[i];
      }
    }
  }
  return NULL;
}

/* This library, the vdso and the dynamic loader: never patched, never a
 * definition. */
static int skipped(const struct dl_phdr_info* info, uintptr_t loader, uintptr_t vdso) {
  const char* name = info->dlpi_name != NULL ? info->dlpi_name : "";
  return agent_object_holds(info, (uintptr_t)&skipped) ||
         (loader != 0 ? agent_object_holds(info, loader) : strstr(name, "/ld-linux") != NULL) ||
         (vdso != 0 && agent_object_holds(info, vdso)) || strstr(name, "linux-vdso") != NULL;
}

/* The dynamic loader's load address (its ELF header, in its first PT_LOAD);
 * 0 when it was run as a program ("ld.so ./prog"). Not the address of
 * _dl_find_object: glibc defines that in libc.so.6, which must be patched. */
static uintptr_t loader_address(void) { return (uintptr_t)getauxval(AT_BASE); }

struct resolve {
  const char* name;
  uintptr_t loader, vdso;
  void* real;
  const ElfW(Sym) * sym;
  unsigned seen;
  uintptr_t exe_lo, exe_hi; /* the executable's first and last PT_LOAD bytes */
};

static int resolve_one(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size;
  struct resolve* r = data;
  if (r->seen++ == 0) {
    for (int i = 0; i < info->dlpi_phnum; ++i) {
      const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
      if (ph->p_type == PT_LOAD) {
        const uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (r->exe_lo == 0 || lo < r->exe_lo) r->exe_lo = lo;
        if (lo + ph->p_memsz > r->exe_hi) r->exe_hi = lo + ph->p_memsz;
      }
    }
  }
  struct dynamic d;
  if (skipped(info, r->loader, r->vdso) || read_dynamic(info, &d) != 0) {
    return 0;
  }
  const ElfW(Sym)* sym = defined_symbol(&d, r->name);
  if (sym == NULL) {
    return 0;
  }
  r->real = (void*)(info->dlpi_addr + sym->st_value);
  r->sym = sym;
  return 1;
}

void* agent_got_resolve(const char* name, void** canonical) {
  struct resolve r = {
      .name = name,
      .loader = loader_address(),
      .vdso = (uintptr_t)getauxval(AT_SYSINFO_EHDR),
  };
  dl_iterate_phdr(resolve_one, &r);
  /* What a lookup that admits a canonical PLT stub returns (address-taking
   * code got that): another address, inside the executable, is the stub. */
  void* any = dlsym(RTLD_DEFAULT, name);
  if (r.real != NULL && ELF64_ST_TYPE(r.sym->st_info) == STT_GNU_IFUNC) {
    r.real = any; /* its address is the resolver's: the loader's choice */
  }
  *canonical = NULL;
  if (any != NULL && any != r.real && (uintptr_t)any >= r.exe_lo && (uintptr_t)any < r.exe_hi) {
    *canonical = any;
  }
  return r.real;
}

struct object {
  const struct dl_phdr_info* info;
  struct dynamic dyn;
  uintptr_t relro_start, relro_end; /* pages the loader made read-only */
  unsigned entries;
  unsigned unhooked;     /* entries bound where the hooks do not see */
  unsigned malloc_slots; /* entries of malloc, hooked or not */
  int failed;
};

/* Writes `value` into the entry at `slot`, opening a read-only RELRO page
 * for the write. */
static int write_entry(struct object* o, uintptr_t slot, void* value) {
  const int relro = slot >= o->relro_start && slot < o->relro_end;
  void* page = (void*)(slot & ~(uintptr_t)(g_page - 1));
  if (relro && mprotect(page, (size_t)g_page, PROT_READ | PROT_WRITE) != 0) {
    return -1;
  }
  __atomic_store_n((void**)slot, value, __ATOMIC_RELEASE);
  if (relro) {
    mprotect(page, (size_t)g_page, PROT_READ);
  }
  return 0;
}

/* What to do with an entry holding `now`: TAKE it when it calls what the
 * program's other calls call (the definition or its canonical stub), or
 * when nothing is bound yet (lazy binding: an address in the object's own
 * PLT); LEAVE an unbound entry of an object that defines the name itself
 * and is not the definition: libc under a preloaded jemalloc binds it to
 * jemalloc's at its first call, a library loaded with RTLD_DEEPBIND to its
 * own, and nothing here tells the two apart (a later pass sees it bound);
 * OTHER for an entry bound to any other function (another malloc, its own
 * object's under RTLD_DEEPBIND): not ours to replace, and counted. */
enum verdict { TAKE, LEAVE, OTHER };

static enum verdict takes_hook(const struct object* o, const struct got_hook* h, void* now) {
  if (now == h->real || (h->canonical != NULL && now == h->canonical)) {
    return TAKE;
  }
  if (!agent_object_holds(o->info, (uintptr_t)now)) {
    return OTHER;
  }
  const ElfW(Sym)* own = defined_symbol(&o->dyn, h->name);
  if (own == NULL) {
    return TAKE; /* lazy binding */
  }
  const uintptr_t at = o->info->dlpi_addr + own->st_value;
  return (void*)at == h->real ? TAKE : (uintptr_t)now == at ? OTHER : LEAVE;
}

static void patch_relocs(struct pass* s, struct object* o, uintptr_t rela, size_t bytes) {
  if (rela == 0) {
    return;
  }
  const ElfW(Rela)* r = (const ElfW(Rela)*)rela;
  const size_t count = bytes / sizeof *r;
  for (size_t i = 0; i < count && !o->failed; ++i) {
    const unsigned type = (unsigned)ELF64_R_TYPE(r[i].r_info);
    const size_t sym = ELF64_R_SYM(r[i].r_info);
    if ((type != RELOC_JUMP_SLOT && type != RELOC_GLOB_DAT) || sym == 0) {
      continue;
    }
    const ElfW(Word) name_at = o->dyn.symtab[sym].st_name;
    if (name_at >= o->dyn.strsz) {
      continue;
    }
    const struct got_hook* h = hook_named(s, o->dyn.strtab + name_at);
    if (h == NULL) {
      continue;
    }
    if (h == &s->hooks[0]) {
      o->malloc_slots++;
    }
    const uintptr_t slot = o->info->dlpi_addr + r[i].r_offset;
    void* now = __atomic_load_n((void**)slot, __ATOMIC_ACQUIRE);
    if (s->restore) {
      if (now == h->hook) {
        void* was = type == RELOC_GLOB_DAT && h->canonical != NULL ? h->canonical : h->real;
        if (write_entry(o, slot, was) != 0) {
          o->entries++; /* still hooked: said in the result */
          o->failed = 1;
          return;
        }
      }
      continue;
    }
    if (now == h->hook) {
      o->entries++;
      continue;
    }
    const enum verdict v = takes_hook(o, h, now);
    if (v != TAKE) {
      o->unhooked += v == OTHER && !h->quiet; /* bound elsewhere on purpose: leave it */
      continue;
    }
    if (write_entry(o, slot, h->hook) != 0) {
      o->failed = 1;
      return;
    }
    o->entries++;
  }
}

/* An object that defines malloc and calls it without an entry of its own
 * (the executable that is the definition, or a library bound to itself at
 * link time): its allocations never reach a GOT. */
static int own_allocator(const struct pass* s, const struct object* o, int is_exe) {
  if (s->n == 0 || strcmp(s->hooks[0].name, "malloc") != 0 || o->malloc_slots > 0) {
    return 0;
  }
  const ElfW(Sym)* own = defined_symbol(&o->dyn, "malloc");
  if (own == NULL) {
    return 0;
  }
  return is_exe || (void*)(o->info->dlpi_addr + own->st_value) != s->hooks[0].real;
}

static int patch_one(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size;
  struct pass* s = data;
  struct got_result* out = s->out;
  const int is_exe = s->seen++ == 0;
  const char* name = info->dlpi_name != NULL ? info->dlpi_name : "";
  if (skipped(info, s->loader, s->vdso)) {
    return 0;
  }
  struct object o = {.info = info};
  uintptr_t first_load = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
    if (ph->p_type == PT_GNU_RELRO) {
      uintptr_t start = info->dlpi_addr + ph->p_vaddr;
      /* The loader's own rounding (_dl_protect_relro): whole pages only. */
      o.relro_start = start & ~(uintptr_t)(g_page - 1);
      o.relro_end = (start + ph->p_memsz) & ~(uintptr_t)(g_page - 1);
    } else if (ph->p_type == PT_LOAD && first_load == 0) {
      first_load = info->dlpi_addr + ph->p_vaddr;
    }
  }
  if (first_load == 0 || read_dynamic(info, &o.dyn) != 0) {
    return 0; /* a static executable: nothing binds through a GOT */
  }
  struct dl_find_object found;
  if (_dl_find_object((void*)first_load, &found) != 0) {
    out->unfinished++; /* still being loaded: a later pass */
    __atomic_store_n(&g_unfinished_at, first_load, __ATOMIC_RELAXED);
    return 0;
  }
  if (o.dyn.pltrel != DT_RELA) {
    return 0;
  }
  patch_relocs(s, &o, o.dyn.jmprel, o.dyn.pltrelsz);
  patch_relocs(s, &o, o.dyn.rela, o.dyn.relasz);
  if (o.entries > 0) {
    out->objects++;
    out->entries += o.entries;
  }
  if (!s->restore && (o.unhooked > 0 || own_allocator(s, &o, is_exe))) {
    out->unhooked_objects++;
  }
  if (o.failed) {
    out->failed = 1;
    const char* shown = name[0] != '\0' ? name : "the executable";
    size_t n = strlen(shown);
    if (n >= sizeof out->why) {
      n = sizeof out->why - 1;
    }
    memcpy(out->why, shown, n);
    out->why[n] = '\0';
    return 1;
  }
  return 0;
}

static void walk(const struct got_hook* hooks, size_t n, int restore, struct got_result* out) {
  struct pass s = {
      .hooks = hooks,
      .n = n,
      .out = out,
      .loader = loader_address(),
      .vdso = (uintptr_t)getauxval(AT_SYSINFO_EHDR),
      .seen = 0,
      .restore = restore,
  };
  dl_iterate_phdr(patch_one, &s);
}

int agent_got_patch(const struct got_hook* hooks, size_t n, int wait, struct got_result* out) {
  memset(out, 0, sizeof *out);
  if (!lock_pass(wait)) {
    return -1;
  }
  if (wait) {
    g_armed = 1;
  } else if (!g_armed) {
    unlock_pass(); /* unpatched since this thread's sample began */
    return -1;
  }
  __atomic_store_n(&g_unfinished_at, 0, __ATOMIC_RELAXED);
  walk(hooks, n, 0, out);
  unlock_pass();
  return 0;
}

int agent_got_unfinished_loaded(void) {
  const uintptr_t at = __atomic_load_n(&g_unfinished_at, __ATOMIC_RELAXED);
  struct dl_find_object found;
  return at != 0 && _dl_find_object((void*)at, &found) == 0;
}

int agent_got_unpatch(const struct got_hook* hooks, size_t n, struct got_result* out) {
  memset(out, 0, sizeof *out);
  lock_pass(1);
  g_armed = 0;
  walk(hooks, n, 1, out);
  unlock_pass();
  return out->failed ? -1 : 0;
}
