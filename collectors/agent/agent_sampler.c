/*
 * The allocation sampler: which code holds a program's native memory,
 * measured inside it at a cost memtrimd chooses, without a restart.
 *
 * On "sampling on <T>" every loaded object's malloc-family GOT entries are
 * pointed at the hooks below (agent_got.c: how, and why GOT patching rather
 * than interposition). Before the first "on" nothing in the program changes;
 * after "off" every hook is a pass-through (one relaxed load and a branch
 * before the real call). Allocations made before "on" are not seen, nor
 * calls from objects that bind malloc elsewhere (another interposer's
 * choice, DEEPBIND), nor anything in a static executable (no GOT).
 *
 * Sampling by bytes, as tcmalloc, jemalloc and Go do: each thread counts down
 * a number of bytes drawn from an exponential with mean T; the allocation
 * that takes the count to zero or below is sampled and a new count is drawn.
 * So an allocation of s bytes is sampled with probability 1 - exp(-s/T),
 * whatever the allocation pattern, and a sample stands for s/(1-exp(-s/T))
 * bytes and 1/(1-exp(-s/T)) objects (Go's scaleHeapSample, jemalloc's
 * prof_unbias): the counters below hold those unbiased weights. The count
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
 * memory):
 *   live   65,536 slots of 32 bytes (2 MiB): open addressing of the sampled
 *          allocations still live, {pointer, weights, stack, generation};
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

#include "agent_sampler.h"

#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <unwind.h>

#include "agent_got.h"

#define LIVE_SLOTS 65536u /* a power of two */
#define LIVE_PROBES 64
/* Counters in front of the live table, one byte each, indexed by another
 * part of the pointer's hash: every free while on looks here first, and the
 * 64 KiB stay in the CPU's cache where the 2 MiB table would not (a probe of
 * the table was a cache miss on nearly every free, most of the sampler's cost
 * in a malloc-bound program). 0: no sampled pointer of this hash is live. */
#define FILTER_SLOTS 65536u /* a power of two */
#define FILTER_FULL 255u    /* saturated: never decremented again (until a reset) */
#define STACK_ROWS 4096u
#define STACK_PROBES 32
#define MAX_FRAMES 32
#define MIN_PERIOD 4096ull
#define MAX_PERIOD (1ull << 30)
#define TOMBSTONE ((uintptr_t)1)
#define OBJ_ONE 65536.0 /* objects in 16.16 fixed point */
/* After a dlopen, sampled allocations run a GOT pass at most this often, for
 * this long (agent_got.c: the hook cannot run after the real dlopen). */
#define REPATCH_EVERY_NS 10000000ull
#define REPATCH_WINDOW_NS 1000000000ull

struct live_slot {
  uintptr_t key; /* 0 empty, TOMBSTONE, else the pointer */
  int64_t bytes; /* unbiased weights of the sample */
  uint32_t objects;
  uint32_t row;
  uint32_t gen;
  uint32_t pad;
};

struct stack_row {
  uint64_t tag;   /* 0 empty, else generation << 32 | (hash | 1) */
  uint32_t ready; /* the generation, once the frames are written */
  uint32_t nframes;
  int64_t live_samples, live_bytes, live_objects;
  int64_t alloc_samples, alloc_bytes, alloc_objects;
  uintptr_t frames[MAX_FRAMES];
};

_Static_assert(sizeof(struct live_slot) == 32, "live slot size");
_Static_assert(sizeof(struct stack_row) == 320, "stack row size");
_Static_assert(LIVE_SLOTS * sizeof(struct live_slot) + STACK_ROWS * sizeof(struct stack_row) +
                       FILTER_SLOTS <=
                   (4u << 20),
               "the sampler's tables must stay within 4 MiB");

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

struct thread_state {
  int64_t countdown;
  uint64_t rng;
  uint32_t gen; /* the generation countdown was drawn for */
  uint32_t busy;
};
static __thread struct thread_state t_state __attribute__((tls_model("initial-exec")));

static int g_on;
static uint32_t g_gen;
static uint64_t g_period;
static double g_period_d;
static uint64_t g_started_ns;
static uint64_t g_samples, g_dropped_live, g_dropped_stacks;
static int64_t g_live;
static unsigned g_hooked_objects, g_hooked_entries;
static int g_opted_out;
static int g_inited;

static void* g_map;
static size_t g_map_bytes;
static struct live_slot* g_slots;
static struct stack_row* g_rows;
static uint8_t* g_filter;

static uint64_t g_seen_dlopens, g_repatch_until, g_repatch_next;
static int g_on_pid; /* the process that turned sampling on */

static struct got_hook g_hooks[11];
static size_t g_nhooks;

#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
#define ADD(x, v) __atomic_fetch_add(&(x), (v), __ATOMIC_RELAXED)

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- The countdown ---- */

static uint64_t next_random(struct thread_state* t) {
  uint64_t x = t->rng; /* xorshift64* */
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  t->rng = x;
  return x * 0x2545f4914f6cdd1dull;
}

/* Bytes until the next sample: exponential with mean T, at least 1. */
static int64_t draw(struct thread_state* t) {
  if (t->rng == 0) {
    t->rng = ((uint64_t)gettid() << 32) ^ now_ns() ^ (uintptr_t)t;
    if (t->rng == 0) {
      t->rng = 0x9e3779b97f4a7c15ull;
    }
  }
  const double u = (double)((next_random(t) >> 11) + 1) * 0x1.0p-53; /* (0, 1] */
  return (int64_t)(-log(u) * g_period_d) + 1;
}

/* ---- The stack table ---- */

static uint32_t hash_frames(const uintptr_t* pcs, int n) {
  uint64_t h = 0x84222325cbf29ce4ull;
  for (int i = 0; i < n; ++i) {
    h ^= pcs[i];
    h *= 0x9e3779b97f4a7c15ull;
    h ^= h >> 29;
  }
  return (uint32_t)(h ^ (h >> 32));
}

/* The row of this stack (claimed if new), or 0 ("[stack table full]"). */
static uint32_t stack_row_of(const uintptr_t* pcs, int n, uint32_t gen) {
  const uint32_t h = hash_frames(pcs, n);
  const uint64_t tag = (uint64_t)gen << 32 | (h | 1u);
  for (uint32_t i = 0; i < STACK_PROBES; ++i) {
    const uint32_t at = 1 + (h + i) % (STACK_ROWS - 1);
    struct stack_row* r = &g_rows[at];
    uint64_t seen = __atomic_load_n(&r->tag, __ATOMIC_ACQUIRE);
    if (seen == tag) {
      /* Frames not yet written by the thread that claimed it: look on (at
       * worst the stack gets a second row). */
      if (__atomic_load_n(&r->ready, __ATOMIC_ACQUIRE) == gen && r->nframes == (uint32_t)n &&
          memcmp(r->frames, pcs, (size_t)n * sizeof *pcs) == 0) {
        return at;
      }
      continue;
    }
    if (seen != 0 && (uint32_t)(seen >> 32) == gen) {
      continue;
    }
    /* Empty, or left by an earlier generation: claim it. */
    if (__atomic_compare_exchange_n(&r->tag, &seen, tag, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
      STORE(r->live_samples, 0);
      STORE(r->live_bytes, 0);
      STORE(r->live_objects, 0);
      STORE(r->alloc_samples, 0);
      STORE(r->alloc_bytes, 0);
      STORE(r->alloc_objects, 0);
      memcpy(r->frames, pcs, (size_t)n * sizeof *pcs);
      r->nframes = (uint32_t)n;
      __atomic_store_n(&r->ready, gen, __ATOMIC_RELEASE);
      return at;
    }
    if (seen == tag) {
      --i; /* another thread claimed it for a stack with this hash: look again */
    }
  }
  ADD(g_dropped_stacks, 1);
  return 0;
}

/* ---- The live table ---- */

static uint32_t slot_of(uintptr_t p) {
  return (uint32_t)(((uint64_t)p * 0x9e3779b97f4a7c15ull) >> 48) & (LIVE_SLOTS - 1);
}

static uint8_t* filter_of(uintptr_t p) {
  return &g_filter[(uint32_t)(((uint64_t)p * 0x9e3779b97f4a7c15ull) >> 24) & (FILTER_SLOTS - 1)];
}

/* +1 or -1 on a filter counter, never past 0 or FILTER_FULL (a saturated one
 * stays: a free then probes the table, which is only slower). */
static void filter_step(uint8_t* c, int up) {
  uint8_t v = __atomic_load_n(c, __ATOMIC_RELAXED);
  for (;;) {
    if (v == FILTER_FULL || (!up && v == 0)) {
      return;
    }
    const uint8_t next = (uint8_t)(up ? v + 1 : v - 1);
    if (__atomic_compare_exchange_n(c, &v, next, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
      return;
    }
  }
}

/* Takes a sample's weights off its row (current generation only). */
static void forget(const struct live_slot* s, uint32_t gen) {
  if (s->gen != gen) {
    return; /* an earlier generation's: its row is gone */
  }
  struct stack_row* r = &g_rows[s->row];
  ADD(r->live_samples, -1);
  ADD(r->live_bytes, -s->bytes);
  ADD(r->live_objects, -(int64_t)s->objects);
  ADD(g_live, -1);
}

/* Before the real free: the pointer's sample, if any, is no longer live. */
static void live_remove(uintptr_t p) {
  uint8_t* counter = filter_of(p);
  if (__atomic_load_n(counter, __ATOMIC_ACQUIRE) == 0) {
    return; /* the common case: no sampled pointer like it is live */
  }
  const uint32_t gen = __atomic_load_n(&g_gen, __ATOMIC_ACQUIRE);
  const uint32_t start = slot_of(p);
  for (uint32_t i = 0; i < LIVE_PROBES; ++i) {
    struct live_slot* s = &g_slots[(start + i) & (LIVE_SLOTS - 1)];
    uintptr_t key = __atomic_load_n(&s->key, __ATOMIC_ACQUIRE);
    if (key == 0) {
      return; /* inserts never leave a gap before their slot */
    }
    if (key == p) {
      struct live_slot copy = *s;
      if (__atomic_compare_exchange_n(&s->key, &key, TOMBSTONE, 0, __ATOMIC_ACQ_REL,
                                      __ATOMIC_RELAXED)) {
        forget(&copy, gen);
        filter_step(counter, 0);
      }
      return;
    }
  }
}

/* 1 when the sample was recorded as live. */
static int live_insert(uintptr_t p, int64_t bytes, uint32_t objects, uint32_t row, uint32_t gen) {
  const uint32_t start = slot_of(p);
  for (int attempt = 0; attempt < 4; ++attempt) {
    struct live_slot* reuse = NULL;
    for (uint32_t i = 0; i < LIVE_PROBES; ++i) {
      struct live_slot* s = &g_slots[(start + i) & (LIVE_SLOTS - 1)];
      uintptr_t key = __atomic_load_n(&s->key, __ATOMIC_ACQUIRE);
      if (key == p) {
        /* Its free was not seen (a path no hook covers): the memory was
         * freed and handed out again; the old sample is gone. */
        struct live_slot copy = *s;
        if (__atomic_compare_exchange_n(&s->key, &key, TOMBSTONE, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED)) {
          forget(&copy, gen);
          filter_step(filter_of(p), 0);
          key = TOMBSTONE;
        }
      }
      if (key == TOMBSTONE && reuse == NULL) {
        reuse = s;
      }
      if (key == 0) {
        if (reuse == NULL) {
          reuse = s;
        }
        break;
      }
    }
    if (reuse == NULL) {
      break;
    }
    uintptr_t expected = __atomic_load_n(&reuse->key, __ATOMIC_ACQUIRE);
    if (expected != 0 && expected != TOMBSTONE) {
      continue; /* taken meanwhile: look again */
    }
    /* Fields first: the pointer is not handed to the program (so cannot be
     * freed) before this returns, but "sites" and a reset may look. */
    /* Counted before the key is visible, so a free that finds the key also
     * finds the counter above 0. */
    filter_step(filter_of(p), 1);
    if (__atomic_compare_exchange_n(&reuse->key, &expected, p, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_RELAXED)) {
      reuse->bytes = bytes;
      reuse->objects = objects;
      reuse->row = row;
      reuse->gen = gen;
      return 1;
    }
    filter_step(filter_of(p), 0);
  }
  ADD(g_dropped_live, 1);
  return 0;
}

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
 * 10 ms for a second after each dlopen the hook saw. Never waits for a pass
 * running elsewhere. */
static void maybe_repatch(void) {
  const uint64_t calls = agent_got_dlopen_calls();
  uint64_t now = 0;
  if (calls != LOAD(g_seen_dlopens)) {
    STORE(g_seen_dlopens, calls);
    now = now_ns();
    STORE(g_repatch_until, now + REPATCH_WINDOW_NS);
  }
  const uint64_t until = LOAD(g_repatch_until);
  if (until == 0) {
    return;
  }
  if (now == 0) {
    now = now_ns();
  }
  if (now > until || now < LOAD(g_repatch_next)) {
    return;
  }
  /* Never in a forked child: a loader lock another thread of the parent
   * held at the fork stays held there for good (dl_iterate_phdr would hang). */
  if ((int)getpid() != LOAD(g_on_pid)) {
    STORE(g_repatch_until, 0);
    return;
  }
  STORE(g_repatch_next, now + REPATCH_EVERY_NS);
  struct got_result r;
  if (agent_got_patch(g_hooks, g_nhooks, 0, &r) == 0) {
    STORE(g_hooked_objects, r.objects);
    STORE(g_hooked_entries, r.entries);
    if (r.unfinished > 0) {
      STORE(g_repatch_until, now + REPATCH_WINDOW_NS);
    }
  }
}

static void record(uintptr_t p, size_t size, uint32_t gen) {
  uintptr_t pcs[MAX_FRAMES];
  struct backtrace b = {pcs, 0};
  _Unwind_Backtrace(one_frame, &b);
  const uint32_t row = stack_row_of(pcs, b.n, gen);
  /* 1 - exp(-s/T), without losing small s to rounding. */
  const double taken = -expm1(-(double)size / g_period_d);
  const int64_t bytes = llround((double)size / taken);
  const double objects_fp = OBJ_ONE / taken;
  const uint32_t objects = objects_fp >= 4294967295.0 ? 0xffffffffu : (uint32_t)lround(objects_fp);
  struct stack_row* r = &g_rows[row];
  ADD(r->alloc_samples, 1);
  ADD(r->alloc_bytes, bytes);
  ADD(r->alloc_objects, (int64_t)objects);
  ADD(g_samples, 1);
  if (live_insert(p, bytes, objects, row, gen)) {
    ADD(r->live_samples, 1);
    ADD(r->live_bytes, bytes);
    ADD(r->live_objects, (int64_t)objects);
    ADD(g_live, 1);
  }
}

/* Every allocation of `size` bytes at `p` while on (and not re-entered). */
static void note_alloc(void* p, size_t size) {
  struct thread_state* t = &t_state;
  const uint32_t gen = __atomic_load_n(&g_gen, __ATOMIC_ACQUIRE);
  if (t->gen != gen) {
    t->gen = gen;
    t->countdown = draw(t);
  }
  const int64_t s = size > (size_t)INT64_MAX / 2 ? INT64_MAX / 2 : (int64_t)size;
  t->countdown -= s;
  if (t->countdown > 0) {
    return;
  }
  t->countdown = draw(t);
  maybe_repatch();
  record((uintptr_t)p, size, gen);
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

/* ---- Setup and requests ---- */

static void add_hook(const char* name, void* hook, void* real) {
  if (real != NULL && hook != NULL) {
    g_hooks[g_nhooks++] = (struct got_hook){name, hook, real};
  }
}

void agent_sampler_init(void) {
  if (g_inited) {
    return;
  }
  g_inited = 1;
  const char* env = getenv("MEMTRIMD_AGENT_SAMPLING");
  g_opted_out = env != NULL && strcmp(env, "0") == 0;
  agent_got_init();
#define REAL(name) g_real.name = (__typeof__(g_real.name))dlsym(RTLD_DEFAULT, #name)
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
  /* malloc and free first: without both nothing is hooked. */
  if (g_real.malloc == NULL || g_real.free == NULL) {
    return;
  }
  add_hook("malloc", (void*)hook_malloc, (void*)g_real.malloc);
  add_hook("free", (void*)hook_free, (void*)g_real.free);
  add_hook("calloc", (void*)hook_calloc, (void*)g_real.calloc);
  add_hook("realloc", (void*)hook_realloc, (void*)g_real.realloc);
  add_hook("posix_memalign", (void*)hook_posix_memalign, (void*)g_real.posix_memalign);
  add_hook("aligned_alloc", (void*)hook_aligned_alloc, (void*)g_real.aligned_alloc);
  add_hook("memalign", (void*)hook_memalign, (void*)g_real.memalign);
  add_hook("valloc", (void*)hook_valloc, (void*)g_real.valloc);
  add_hook("pvalloc", (void*)hook_pvalloc, (void*)g_real.pvalloc);
  add_hook("reallocarray", (void*)hook_reallocarray, (void*)g_real.reallocarray);
  add_hook("dlopen", agent_got_dlopen_hook(), agent_got_real_dlopen());
}

static void answer_error(struct out* o, const char* why, const char* what) {
  o->len = 0;
  o->overflow = 0;
  put_str(o, "1\n");
  put_str(o, why);
  if (what != NULL) {
    put_str(o, what);
  }
  put_str(o, "\n");
}

static void put_on_body(struct out* o) {
  put_str(o, "0\n");
  put_kv(o, "period", g_period);
  put_kv(o, "generation", LOAD(g_gen));
  put_kv(o, "hooked_objects", LOAD(g_hooked_objects));
  put_kv(o, "hooked_entries", LOAD(g_hooked_entries));
}

/* T: decimal, 4096 <= T <= 1 GiB. 0 otherwise. */
static uint64_t parse_period(const char* text) {
  uint64_t v = 0;
  if (*text == '\0') {
    return 0;
  }
  for (const char* p = text; *p != '\0'; ++p) {
    if (*p < '0' || *p > '9' || v > MAX_PERIOD) {
      return 0;
    }
    v = v * 10 + (uint64_t)(*p - '0');
  }
  return v >= MIN_PERIOD && v <= MAX_PERIOD ? v : 0;
}

void agent_sampler_on(const char* period_text, struct out* o) {
  const uint64_t period = parse_period(period_text);
  if (period == 0) {
    answer_error(o, "bad sampling period", NULL);
    return;
  }
  if (g_opted_out) {
    answer_error(o, "sampling disabled by MEMTRIMD_AGENT_SAMPLING=0 in the program's environment",
                 NULL);
    return;
  }
  if (g_nhooks == 0) {
    answer_error(o, "sampling unavailable: malloc and free were not found at load", NULL);
    return;
  }
  if (LOAD(g_on) && period == g_period) {
    put_on_body(o);
    return;
  }
  if (g_map == NULL) {
    const size_t bytes = LIVE_SLOTS * sizeof(struct live_slot) +
                         STACK_ROWS * sizeof(struct stack_row) + FILTER_SLOTS;
    void* m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (m == MAP_FAILED) {
      answer_error(o, "sampling unavailable: mmap of its tables failed", NULL);
      return;
    }
    g_map = m;
    g_map_bytes = bytes;
    g_slots = m;
    g_rows = (struct stack_row*)((char*)m + LIVE_SLOTS * sizeof(struct live_slot));
    g_filter = (uint8_t*)g_rows + STACK_ROWS * sizeof(struct stack_row);
  }
  /* Off, a new generation, empty tables, then on. Hooks still in flight
   * carry the old generation: their rows are skipped and reclaimed. */
  STORE(g_on, 0);
  g_period = period;
  g_period_d = (double)period;
  const uint32_t gen = LOAD(g_gen) + 1;
  __atomic_store_n(&g_gen, gen, __ATOMIC_RELEASE);
  madvise(g_map, g_map_bytes, MADV_DONTNEED);
  STORE(g_samples, 0);
  STORE(g_live, 0);
  STORE(g_dropped_live, 0);
  STORE(g_dropped_stacks, 0);
  g_rows[0].tag = (uint64_t)gen << 32 | 1u;
  __atomic_store_n(&g_rows[0].ready, gen, __ATOMIC_RELEASE);
  g_started_ns = now_ns();
  STORE(g_on_pid, (int)getpid());
  STORE(g_seen_dlopens, agent_got_dlopen_calls());
  STORE(g_repatch_until, 0);
  struct got_result r;
  agent_got_patch(g_hooks, g_nhooks, 1, &r);
  STORE(g_hooked_objects, r.objects);
  STORE(g_hooked_entries, r.entries);
  if (r.failed) {
    /* What is hooked already stays a pass-through. */
    answer_error(o, "sampling unavailable: mprotect refused in ", r.why);
    return;
  }
  if (r.unfinished > 0) {
    STORE(g_repatch_until, now_ns() + REPATCH_WINDOW_NS);
  }
  __atomic_store_n(&g_on, 1, __ATOMIC_RELEASE);
  put_on_body(o);
}

void agent_sampler_off(struct out* o) {
  const int was = __atomic_exchange_n(&g_on, 0, __ATOMIC_ACQ_REL);
  put_str(o, "0\n");
  put_kv(o, "was_on", (uint64_t)(was != 0));
}

static uint64_t clamp(int64_t v) { return v < 0 ? 0 : (uint64_t)v; }

static void put_hex(struct out* o, uintptr_t v) {
  char digits[2 * sizeof v + 1];
  size_t i = sizeof digits;
  digits[--i] = '\0';
  do {
    digits[--i] = "0123456789abcdef"[v & 15];
    v >>= 4;
  } while (v != 0);
  put_str(o, digits + i);
}

void agent_sampler_sites(struct out* head, char* tail, size_t tail_cap, size_t* tail_len) {
  const int on = LOAD(g_on);
  const uint32_t gen = __atomic_load_n(&g_gen, __ATOMIC_ACQUIRE);
  if (on && agent_got_dlopen_calls() != LOAD(g_seen_dlopens)) {
    /* Objects loaded since the last pass: hook them now (the agent thread
     * may wait for a pass; it holds no loader lock). */
    STORE(g_seen_dlopens, agent_got_dlopen_calls());
    struct got_result r;
    agent_got_patch(g_hooks, g_nhooks, 1, &r);
    STORE(g_hooked_objects, r.objects);
    STORE(g_hooked_entries, r.entries);
  }
  struct out stacks = {tail, 0, tail_cap, 0};
  unsigned listed = 0;
  int truncated = 0;
  for (uint32_t i = 0; g_rows != NULL && i < STACK_ROWS && !truncated; ++i) {
    const struct stack_row* r = &g_rows[i];
    if ((uint32_t)(__atomic_load_n(&r->tag, __ATOMIC_ACQUIRE) >> 32) != gen ||
        __atomic_load_n(&r->ready, __ATOMIC_ACQUIRE) != gen) {
      continue;
    }
    const int64_t alloc_samples = LOAD(r->alloc_samples);
    if (alloc_samples <= 0) {
      continue;
    }
    char line[64 + 7 * 24 + MAX_FRAMES * 17];
    struct out l = {line, 0, sizeof line, 0};
    put_str(&l, "stack ");
    put_u64(&l, clamp(LOAD(r->live_samples)));
    put_str(&l, " ");
    put_u64(&l, clamp(LOAD(r->live_bytes)));
    put_str(&l, " ");
    put_u64(&l, (clamp(LOAD(r->live_objects)) + 32768) >> 16);
    put_str(&l, " ");
    put_u64(&l, (uint64_t)alloc_samples);
    put_str(&l, " ");
    put_u64(&l, clamp(LOAD(r->alloc_bytes)));
    put_str(&l, " ");
    put_u64(&l, (clamp(LOAD(r->alloc_objects)) + 32768) >> 16);
    const uint32_t n = i == 0 ? 0 : r->nframes;
    for (uint32_t f = 0; f < n && f < MAX_FRAMES; ++f) {
      put_str(&l, " ");
      put_hex(&l, r->frames[f]);
    }
    put_str(&l, "\n");
    if (stacks.len + l.len > stacks.cap) {
      truncated = 1; /* the list ends here; the head says so */
      break;
    }
    memcpy(stacks.p + stacks.len, line, l.len);
    stacks.len += l.len;
    ++listed;
  }
  *tail_len = stacks.len;
  put_str(head, "0\n");
  put_kv(head, "on", (uint64_t)(on != 0));
  put_kv(head, "period", g_period);
  put_kv(head, "generation", gen);
  put_kv(head, "started_ns", g_started_ns);
  put_kv(head, "samples", LOAD(g_samples));
  put_kv(head, "live_samples", clamp(LOAD(g_live)));
  put_kv(head, "dropped_live", LOAD(g_dropped_live));
  put_kv(head, "dropped_stacks", LOAD(g_dropped_stacks));
  put_kv(head, "sampler_bytes", g_map_bytes);
  put_kv(head, "hooked_objects", LOAD(g_hooked_objects));
  if (truncated) {
    put_kv(head, "truncated", 1);
  }
  put_kv(head, "stacks", listed);
}
