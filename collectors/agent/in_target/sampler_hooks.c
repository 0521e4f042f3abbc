/*
 * The allocation sampler: which code holds a program's native memory,
 * measured inside it at a cost memtrimd chooses, without a restart.
 *
 * On "sampling on <T>" every loaded object's malloc-family GOT entries are
 * pointed at the hooks below (agent_got.c: how, and why GOT patching rather
 * than interposition). Before the first "on" nothing in the program changes;
 * on "off" every hook becomes a pass-through (one relaxed load and a branch
 * before the real call) and the entries are then put back as the loader
 * wrote them (agent_got_unpatch), so the program's calls go straight to its
 * allocator again. Allocations made before "on" are not seen, nor
 * calls from objects that bind malloc elsewhere (another interposer's
 * choice, DEEPBIND), nor anything in a static executable (no GOT).
 *
 * Sampling by bytes, as tcmalloc, jemalloc and Go do: each thread counts down
 * a number of bytes drawn from an exponential with mean T; the allocation
 * that takes the count to zero or below is sampled and a new count is drawn.
 * So an allocation of s bytes is sampled with probability 1 - exp(-s/T),
 * whatever the allocation pattern, and a sample stands for s/(1-exp(-s/T))
 * bytes and 1/(1-exp(-s/T)) objects (Go's scaleHeapSample, jemalloc's
 * prof_unbias): the counters below hold those unbiased weights, each with
 * the T its thread's count was drawn at.
 *
 * A cost bound (sampler_control.c): memtrimd says how many samples a second
 * the program may pay for ("max_rate"); the socket task counts the samples
 * every SAMPLER_TICK_MS and, above the budget, raises the period in force
 * (back down to T when the rate falls well below). Threads draw their next
 * count at the new period; each sample keeps the weight of the period it was
 * drawn at, so the estimates stay unbiased whatever the period did (which
 * period a count uses is fixed before the allocations it weighs). The count
 * and the random state are initial-exec TLS (a few bytes: a dlopen()ed agent
 * gets them from glibc's static TLS surplus, so the JVM path works too).
 *
 * A sampled allocation's stack is taken with libgcc's _Unwind_Backtrace
 * (Debian builds without frame pointers; libgcc 12 with glibc 2.36 finds
 * unwind tables with the lock-free _dl_find_object), after the real
 * allocator has returned, with no lock held: up to 32 return addresses, the
 * agent's own frames left out. Where the unwinder stops at code without
 * unwind tables (a JVM's JIT or interpreter code) that address is still the
 * last frame: memtrimd names it by its mapping.
 *
 * A per-thread guard: a hook entered while its thread is already inside a
 * hook (a signal handler that mallocs, the unwinder, the real allocator
 * calling through a patched GOT) passes straight through.
 *
 * Two tables and a filter, mmap'd on the first "on" and never unmapped,
 * 3.31 MiB together (at most 4 MiB: memtrimd's hard cap on the sampler's
 * memory; live_table.c and stack_table.c say how each works):
 *   live   65,536 slots of 32 bytes (2 MiB): open addressing of the sampled
 *          allocations still live, {pointer, weights, size, stack, generation};
 *          a slot is claimed with a CAS on its key, freed slots become
 *          tombstones that inserts reuse, probes stop after 64 slots (an
 *          insert that finds no slot is dropped and counted: dropped_live).
 *          free, realloc and reallocarray take the pointer out BEFORE the
 *          real call (after it another thread may get the same address from
 *          malloc and insert it first). While on, every free reads the
 *          filter, and probes the table only when the filter says a
 *          sampled pointer with its hash is live; while off nothing does.
 *   filter 65,536 one-byte counters (64 KiB) of live sampled pointers by
 *          another part of their hash (see FILTER_SLOTS).
 *   stacks 4,096 rows of 320 bytes (1.25 MiB): stacks deduplicated by a hash
 *          of their frames (lock-free insert: CAS on the row's tag), each
 *          with atomic counters: live samples, bytes and objects, allocated
 *          samples, bytes and objects (bytes and objects unbiased; objects
 *          in 16.16 fixed point). Row 0 is "[stack table full]", where a
 *          sample goes when its stack finds no row (dropped_stacks).
 * "on" after "off", or with another T, starts from empty tables
 * (MADV_DONTNEED gives the pages back). A hook in flight across the switch
 * writes rows tagged with the old generation: they are skipped in "sites"
 * and reclaimed by later inserts and frees.
 *
 * No locks (agent_got.c's pass lock is never waited for on an allocating
 * thread): a forked child cannot hang on one, and goes on sampling into its
 * own copy of the tables. Threads exiting leave nothing: TLS only.
 *
 * MEMTRIMD_AGENT_SAMPLING=0 in the program's environment refuses "on".
 */
#define _GNU_SOURCE

#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <unwind.h>

#include "agent_got.h"
#include "agent_java.h"
#include "agent_sampler.h"
#include "collectors/agent/agent_protocol.h"
#include "sampler_state.h"

typedef void* (*malloc_fn)(size_t);
typedef void (*free_fn)(void*);
typedef void* (*calloc_fn)(size_t, size_t);
typedef void* (*realloc_fn)(void*, size_t);
typedef int (*posix_memalign_fn)(void**, size_t, size_t);
typedef void* (*aligned_fn)(size_t, size_t);
typedef void* (*reallocarray_fn)(void*, size_t, size_t);

/* The definitions the program's calls bind to (constructor). */
static struct {
  malloc_fn malloc;
  free_fn free;
  calloc_fn calloc;
  realloc_fn realloc;
  posix_memalign_fn posix_memalign;
  aligned_fn aligned_alloc;
  aligned_fn memalign;
  malloc_fn valloc;
  malloc_fn pvalloc;
  reallocarray_fn reallocarray;
} g_real;

__thread struct thread_state t_state __attribute__((tls_model("initial-exec")));

static int g_inited;

/* A sample taken out of the live table: its weights come off its row
 * (current generation only: an earlier generation's row is gone). `arg`
 * points to the generation the caller read, or is NULL for "now". */
static void forget(const struct live_sample* s, void* arg) {
  const uint32_t gen =
      arg != NULL ? *(const uint32_t*)arg : __atomic_load_n(&g_gen, __ATOMIC_ACQUIRE);
  if (s->gen != gen) {
    return;
  }
  struct stack_row* r = &g_rows[s->row];
  ADD(r->live_samples, -1);
  ADD(r->live_bytes, -s->bytes);
  ADD(r->live_objects, -(int64_t)s->objects);
  ADD(g_live, -1);
}

/* Before the real free: the pointer's sample, if any, is no longer live. */
static inline void live_remove(uintptr_t p) { live_table_remove(p, forget, NULL); }

/* ---- Sampling ---- */

struct backtrace {
  uintptr_t* pcs;
  int n;
};

static _Unwind_Reason_Code one_frame(struct _Unwind_Context* c, void* arg) {
  struct backtrace* b = arg;
  const uintptr_t ip = (uintptr_t)_Unwind_GetIP(c);
  if (ip == 0) {
    return _URC_END_OF_STACK;
  }
  if (agent_got_is_own_pc(ip)) {
    return _URC_NO_REASON; /* the hook's and the sampler's frames */
  }
  b->pcs[b->n++] = ip;
  return b->n < MAX_FRAMES ? _URC_NO_REASON : _URC_END_OF_STACK;
}

/* After a dlopen the new objects' GOTs are patched from here (agent_got.c:
 * the dlopen hook cannot run after the real dlopen): a pass at most every
 * 10 ms for a second after each dlopen the hook saw, from any allocation
 * through a hook, not only a sampled one (a library just loaded calls malloc
 * past the hooks until its GOT is patched: every allocation it makes before
 * the pass is unseen). Outside that second an allocation pays two loads
 * here. Never waits for a pass running elsewhere. */
static void maybe_repatch(void) {
  const uint64_t calls = agent_got_dlopen_calls();
  uint64_t now = 0;
  if (calls != LOAD(g_seen_dlopens)) {
    STORE(g_seen_dlopens, calls);
    now = sampler_now_ns();
    STORE(g_repatch_until, now + REPATCH_WINDOW_NS);
  }
  uint64_t until = LOAD(g_repatch_until);
  if (until == 0) {
    return;
  }
  if (now == 0) {
    now = sampler_now_ns();
  }
  if (now > until) {
    /* The window is over (unless another thread just opened a new one). */
    __atomic_compare_exchange_n(&g_repatch_until, &until, 0, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return;
  }
  /* At most every 10 ms, but at once when an object a pass found still
   * being loaded (a dlopen in flight on another thread) has been loaded:
   * its first allocations would otherwise pass by the hooks for 10 ms (a
   * JVM's first Deflaters, all of them when they are quick). */
  if (now < LOAD(g_repatch_next) && !agent_got_unfinished_loaded()) {
    return;
  }
  /* Never in a forked child: a loader lock another thread of the parent
   * held at the fork stays held there for good (dl_iterate_phdr would hang). */
  if ((int)getpid() != LOAD(g_on_pid)) {
    STORE(g_repatch_until, 0);
    return;
  }
  /* Every millisecond in the first 20 after the dlopen was seen (the object
   * may not be listed yet when the first pass runs: a dlopen in flight on
   * another thread), every 10 after. */
  const uint64_t every = until - now > REPATCH_WINDOW_NS - REPATCH_EAGER_NS ? REPATCH_EAGER_EVERY_NS
                                                                            : REPATCH_EVERY_NS;
  STORE(g_repatch_next, now + every);
  struct got_result r;
  if (agent_got_patch(g_hooks, g_nhooks, 0, &r) == 0) {
    sampler_store_pass(&r);
    if (r.unfinished > 0) {
      STORE(g_repatch_until, now + REPATCH_WINDOW_NS);
    }
  }
}

/* `period`: the mean of the countdown that chose this sample, which is the
 * T of its weight (the period in force may have moved since). */
static void record(uintptr_t p, size_t size, uint32_t gen, uint64_t period) {
  uintptr_t pcs[MAX_FRAMES];
  struct backtrace b = {pcs, 0};
  _Unwind_Backtrace(one_frame, &b);
  /* In a JVM, the Java frames above (agent_java.c): after the native ones,
   * in the same row, so stacks that differ only in their Java callers are
   * rows of their own. */
  if (__atomic_load_n(&g_java_walk, __ATOMIC_ACQUIRE) && b.n < MAX_FRAMES) {
    b.n += agent_java_walk(pcs + b.n, MAX_FRAMES - b.n);
  }
  const uint32_t row = stack_row_of(pcs, b.n, gen);
  /* 1 - exp(-s/T), without losing small s to rounding. */
  const double taken = -expm1(-(double)size / (double)period);
  const int64_t bytes = llround((double)size / taken);
  const double objects_fp = OBJ_ONE / taken;
  const uint32_t objects = objects_fp >= 4294967295.0 ? 0xffffffffu : (uint32_t)lround(objects_fp);
  struct stack_row* r = &g_rows[row];
  ADD(r->alloc_samples, 1);
  ADD(r->alloc_bytes, bytes);
  ADD(r->alloc_objects, (int64_t)objects);
  ADD(g_samples, 1);
  if (live_table_insert(p, size, bytes, objects, row, gen, forget, &gen)) {
    ADD(r->live_samples, 1);
    ADD(r->live_bytes, bytes);
    ADD(r->live_objects, (int64_t)objects);
    ADD(g_live, 1);
  } else {
    ADD(g_dropped_live, 1);
  }
}

/* Every allocation of `size` bytes at `p` while on (and not re-entered). */
static void note_alloc(void* p, size_t size) {
  struct thread_state* t = &t_state;
  const uint32_t gen = __atomic_load_n(&g_gen, __ATOMIC_ACQUIRE);
  const uint64_t period = LOAD(g_period);
  /* A new generation, or the budget moved the period: a fresh count at the
   * period in force. The count is memoryless, so drawing it again mid-way
   * changes no allocation's odds under the period it is weighed at. */
  if (t->gen != gen || t->period != period) {
    t->gen = gen;
    t->period = period;
    t->countdown = countdown_draw(t);
  }
  if (LOAD(g_repatch_until) != 0 || agent_got_dlopen_calls() != LOAD(g_seen_dlopens)) {
    maybe_repatch();
  }
  const int64_t s = size > (size_t)INT64_MAX / 2 ? INT64_MAX / 2 : (int64_t)size;
  t->countdown -= s;
  if (t->countdown > 0) {
    return;
  }
  t->countdown = countdown_draw(t);
  record((uintptr_t)p, size, gen, t->period);
}

static inline int sampling(void) { return LOAD(g_on) && !t_state.busy; }

static void* hook_malloc(size_t n) {
  if (!sampling()) {
    return g_real.malloc(n);
  }
  t_state.busy = 1;
  void* p = g_real.malloc(n);
  if (p != NULL) {
    note_alloc(p, n);
  }
  t_state.busy = 0;
  return p;
}

static void hook_free(void* p) {
  if (!sampling()) {
    g_real.free(p);
    return;
  }
  t_state.busy = 1;
  if (p != NULL) {
    live_remove((uintptr_t)p);
  }
  g_real.free(p);
  t_state.busy = 0;
}

static void* hook_calloc(size_t n, size_t size) {
  if (!sampling()) {
    return g_real.calloc(n, size);
  }
  t_state.busy = 1;
  void* p = g_real.calloc(n, size);
  size_t total;
  if (p != NULL && !__builtin_mul_overflow(n, size, &total)) {
    note_alloc(p, total);
  }
  t_state.busy = 0;
  return p;
}

/* realloc of a sampled pointer counts as its free and a new allocation
 * (sampled by the countdown as any other). The pointer leaves the table
 * before the call; should the call fail, the block stays live unsampled. */
static void* hook_realloc(void* old, size_t n) {
  if (!sampling()) {
    return g_real.realloc(old, n);
  }
  t_state.busy = 1;
  if (old != NULL) {
    live_remove((uintptr_t)old);
  }
  void* p = g_real.realloc(old, n);
  if (p != NULL && n > 0) {
    note_alloc(p, n);
  }
  t_state.busy = 0;
  return p;
}

static void* hook_reallocarray(void* old, size_t n, size_t size) {
  if (!sampling()) {
    return g_real.reallocarray(old, n, size);
  }
  t_state.busy = 1;
  size_t total = 0;
  const int overflow = __builtin_mul_overflow(n, size, &total);
  if (old != NULL && !overflow) {
    live_remove((uintptr_t)old); /* an overflow fails and leaves it */
  }
  void* p = g_real.reallocarray(old, n, size);
  if (p != NULL && total > 0) {
    note_alloc(p, total);
  }
  t_state.busy = 0;
  return p;
}

static int hook_posix_memalign(void** out, size_t align, size_t n) {
  if (!sampling()) {
    return g_real.posix_memalign(out, align, n);
  }
  t_state.busy = 1;
  int rc = g_real.posix_memalign(out, align, n);
  if (rc == 0 && *out != NULL) {
    note_alloc(*out, n);
  }
  t_state.busy = 0;
  return rc;
}

#define ALIGNED_HOOK(name)                           \
  static void* hook_##name(size_t align, size_t n) { \
    if (!sampling()) {                               \
      return g_real.name(align, n);                  \
    }                                                \
    t_state.busy = 1;                                \
    void* p = g_real.name(align, n);                 \
    if (p != NULL) {                                 \
      note_alloc(p, n);                              \
    }                                                \
    t_state.busy = 0;                                \
    return p;                                        \
  }
ALIGNED_HOOK(aligned_alloc)
ALIGNED_HOOK(memalign)

/* valloc and pvalloc round up to pages: the request is what is counted. */
#define PAGE_HOOK(name)                \
  static void* hook_##name(size_t n) { \
    if (!sampling()) {                 \
      return g_real.name(n);           \
    }                                  \
    t_state.busy = 1;                  \
    void* p = g_real.name(n);          \
    if (p != NULL) {                   \
      note_alloc(p, n);                \
    }                                  \
    t_state.busy = 0;                  \
    return p;                          \
  }
PAGE_HOOK(valloc)
PAGE_HOOK(pvalloc)

/* Where each name's calls go besides the definition: a non-PIE
 * executable's canonical PLT stub (agent_got_resolve). */
static struct {
  void* malloc;
  void* free;
  void* calloc;
  void* realloc;
  void* posix_memalign;
  void* aligned_alloc;
  void* memalign;
  void* valloc;
  void* pvalloc;
  void* reallocarray;
} g_canonical;

static void add_hook(const char* name, void* hook, void* real, void* canonical, int quiet) {
  if (real != NULL && hook != NULL) {
    g_hooks[g_nhooks++] = (struct got_hook){name, hook, real, canonical, quiet};
  }
}

void agent_sampler_init(void) {
  if (g_inited) {
    return;
  }
  g_inited = 1;
  const char* env = getenv(AGENT_ENV_SAMPLING);
  g_opted_out = env != NULL && strcmp(env, "0") == 0;
  agent_java_configure();
  agent_got_init();
  /* The definitions in load order, not dlsym(RTLD_DEFAULT): in a non-PIE
   * executable that takes malloc's address, dlsym returns the executable's
   * canonical PLT stub, which jumps through the executable's own GOT entry:
   * a hook calling it would call itself once that entry is hooked. */
#define REAL(name) \
  g_real.name = (__typeof__(g_real.name))agent_got_resolve(#name, &g_canonical.name)
  REAL(malloc);
  REAL(free);
  REAL(calloc);
  REAL(realloc);
  REAL(posix_memalign);
  REAL(aligned_alloc);
  REAL(memalign);
  REAL(valloc);
  REAL(pvalloc);
  REAL(reallocarray);
#undef REAL
  /* malloc and free first: without both nothing is hooked (malloc first:
   * agent_got.c looks for it there). */
  if (g_real.malloc == NULL || g_real.free == NULL) {
    return;
  }
#define HOOK(name) add_hook(#name, (void*)hook_##name, (void*)g_real.name, g_canonical.name, 0)
  HOOK(malloc);
  HOOK(free);
  HOOK(calloc);
  HOOK(realloc);
  HOOK(posix_memalign);
  HOOK(aligned_alloc);
  HOOK(memalign);
  HOOK(valloc);
  HOOK(pvalloc);
  HOOK(reallocarray);
#undef HOOK
  void* dlopen_canonical = NULL;
  agent_got_resolve("dlopen", &dlopen_canonical);
  add_hook("dlopen", agent_got_dlopen_hook(), agent_got_real_dlopen(), dlopen_canonical, 1);
}
