/*
 * GOT patching for the allocation sampler (sampler_hooks.c): the malloc
 * family's entries of every loaded object rewritten to the sampler's hooks,
 * on demand (agent_got.c says how and why this way).
 */
#ifndef MEMTRIMD_AGENT_GOT_H
#define MEMTRIMD_AGENT_GOT_H

#include <stddef.h>
#include <stdint.h>

/* One function to hook: its dynamic symbol name, the hook written into the
 * GOTs, the definition the program's calls bind to and, in a non-PIE
 * executable that takes its address, the executable's canonical PLT stub
 * (agent_got_resolve). An entry is rewritten only while it holds `real` or
 * `canonical`, or is not yet bound (lazy binding). `quiet`: an entry bound
 * elsewhere is not an allocation the sampler misses (dlopen). */
struct got_hook {
  const char* name;
  void* hook;
  void* real;
  void* canonical;
  int quiet;
};

/* What one pass found. */
struct got_result {
  unsigned objects;    /* objects with at least one entry holding a hook */
  unsigned entries;    /* entries holding a hook after the pass */
  unsigned unfinished; /* objects still being loaded (not yet relocated): left for later */
  /* Objects whose allocation calls pass by the hooks: an entry bound to
   * another definition (RTLD_DEEPBIND, an interposer of its own), or an
   * allocator defined in the object and called directly (the executable
   * with one linked in statically). */
  unsigned unhooked_objects;
  int failed; /* an mprotect was refused; `why` names the object */
  char why[256];
};

/* In the constructor (dlsym may malloc): the agent's own address range and
 * the real dlopen, which the dlopen hook jumps to. */
void agent_got_init(void);

/* The definition of `name` the program's calls bind to: the first loaded
 * object, in load order, whose dynamic symbol table defines it (not dlsym,
 * which returns a non-PIE executable's canonical PLT stub), or NULL; and
 * that stub in *canonical, or NULL when there is none. Never mallocs. */
void* agent_got_resolve(const char* name, void** canonical);

/* The dlopen hook: counts the call and jumps to the real dlopen with the
 * caller's own return address (agent_got.c: why not a call). NULL when the
 * real dlopen was not found. */
void* agent_got_dlopen_hook(void);

/* The real dlopen (agent_got_init). */
void* agent_got_real_dlopen(void);

/* Rewrites the entries of `hooks` in every loaded object but this library,
 * the vdso and the dynamic loader. `wait`: spin for another thread's pass to
 * end (the agent thread, which holds no loader lock); else give up at once
 * when one runs (an allocating thread: it may hold a loader lock the running
 * pass waits for). 0 when a pass ran, -1 when it gave up. Never mallocs. */
int agent_got_patch(const struct got_hook* hooks, size_t n, int wait, struct got_result* out);

/* Puts back what the loader wrote into every entry holding one of `hooks`,
 * in every loaded object, and disarms passes that do not wait (an
 * allocating thread's) until the next waiting one. The agent thread only:
 * waits for a running pass. `out->entries` counts entries left holding a
 * hook (an mprotect refused: -1, `why` names the object). Never mallocs. */
int agent_got_unpatch(const struct got_hook* hooks, size_t n, struct got_result* out);

/* Whether an object the last pass found still being loaded is loaded now
 * (relocated: _dl_find_object knows it, lock-free), so that a pass should
 * run at once rather than at its next turn. Never mallocs. */
int agent_got_unfinished_loaded(void);

/* How many times the dlopen hook ran: a change means objects may have been
 * loaded since the last pass. */
uint64_t agent_got_dlopen_calls(void);

/* Whether `pc` is in this library's code (its own frames in a stack). */
int agent_got_is_own_pc(uintptr_t pc);

#endif
