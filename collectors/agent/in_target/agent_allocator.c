/*
 * The allocator that serves the program's malloc, read and released with
 * its own public API, found with dlsym (never by reading its memory):
 *
 *   jemalloc  mallctl: "epoch" (refreshes the cached statistics), then
 *             stats.*, stats.arenas.<all>.pdirty / pmuzzy (pages) times
 *             arenas.page, arenas.dirty_decay_ms / muzzy_decay_ms; release
 *             "arena.<all>.purge"
 *   tcmalloc  MallocExtension_GetNumericProperty; release
 *             MallocExtension_ReleaseFreeMemory
 *   mimalloc  mi_process_info (commit figures; the packaged build keeps no
 *             allocation statistics); release mi_collect(true), after
 *             mi_thread_init() once (see mi_release)
 *   glibc     mallinfo2; release malloc_trim(0)
 *
 * Decided once, by the constructor (dlsym and dladdr may malloc; the agent
 * thread must not): malloc is what dlsym(RTLD_DEFAULT, "malloc") finds,
 * i.e. what the program's own calls bind to. An allocator's API counts only
 * when dladdr() puts it in the same object as that malloc: a jemalloc that
 * some library links for its own use (or that was dlopen()ed) does not serve
 * malloc and says nothing about the program's heap. glibc when malloc's
 * object also defines malloc_trim; anything else is "unknown", and the agent
 * then refuses to trim rather than run malloc_trim on a glibc heap nobody
 * uses.
 *
 * jemalloc, tcmalloc and mimalloc keep per-thread state: the first call from
 * the agent thread may give that thread a small cache of the allocator's
 * (jemalloc's tsd and tcache, tcmalloc's thread cache), and the first
 * mimalloc release gives it mimalloc's thread heap on purpose
 * (mi_thread_init, see mi_release). That is the allocator's own bookkeeping,
 * sized in kilobytes, not a glibc arena, and it is what any thread of the
 * program gets on its first malloc.
 */
#define _GNU_SOURCE

#include "agent_allocator.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

enum kind { KIND_UNKNOWN, KIND_GLIBC, KIND_JEMALLOC, KIND_TCMALLOC, KIND_MIMALLOC };

typedef int (*mallctl_fn)(const char*, void*, size_t*, void*, size_t);
typedef int (*tc_property_fn)(const char*, size_t*);
typedef void (*tc_release_fn)(void);
typedef void (*mi_process_info_fn)(size_t*, size_t*, size_t*, size_t*, size_t*, size_t*, size_t*,
                                   size_t*);
typedef void (*mi_collect_fn)(bool);
typedef void (*mi_thread_init_fn)(void);

static enum kind g_kind = KIND_UNKNOWN;
static char g_object[PATH_MAX] = "unknown";
static mallctl_fn g_mallctl;
static tc_property_fn g_tc_property;
static tc_release_fn g_tc_release;
static mi_process_info_fn g_mi_process_info;
static mi_collect_fn g_mi_collect;
static mi_thread_init_fn g_mi_thread_init; /* NULL: not exported by malloc's object */
static int g_mi_thread_ready;              /* agent thread only */

/* The symbol `name` as the program would bind it, if it is defined by the
 * object at `base` (malloc's); else NULL. */
static void* in_object(const char* name, const void* base) {
  void* s = dlsym(RTLD_DEFAULT, name);
  Dl_info info;
  if (s == NULL || dladdr(s, &info) == 0 || info.dli_fbase != base) {
    return NULL;
  }
  return s;
}

/* Copies a path into g_object; a newline would break the answer's lines. */
static void set_object(const char* path) {
  if (path == NULL || path[0] == '\0') {
    return;
  }
  size_t n = strlen(path);
  if (n >= sizeof g_object) {
    n = sizeof g_object - 1;
  }
  for (size_t i = 0; i < n; ++i) {
    g_object[i] = path[i] == '\n' ? '?' : path[i];
  }
  g_object[n] = '\0';
}

void agent_allocator_detect(void) {
  void* m = dlsym(RTLD_DEFAULT, "malloc");
  Dl_info info;
  struct link_map* map = NULL;
  if (m == NULL || dladdr1(m, &info, (void**)&map, RTLD_DL_LINKMAP) == 0) {
    return; /* unknown, object "unknown" */
  }
  /* The executable's link map has an empty name (dladdr then reports
   * argv[0], which may be relative or made up): say which file it is. */
  if (map != NULL && map->l_name[0] == '\0') {
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
      exe[n] = '\0';
      set_object(exe);
    } else {
      set_object(info.dli_fname);
    }
  } else {
    set_object(info.dli_fname);
  }
  const void* base = info.dli_fbase;

  g_mallctl = (mallctl_fn)in_object("mallctl", base);
  g_tc_property = (tc_property_fn)in_object("MallocExtension_GetNumericProperty", base);
  g_tc_release = (tc_release_fn)in_object("MallocExtension_ReleaseFreeMemory", base);
  g_mi_process_info = (mi_process_info_fn)in_object("mi_process_info", base);
  g_mi_collect = (mi_collect_fn)in_object("mi_collect", base);
  g_mi_thread_init = (mi_thread_init_fn)in_object("mi_thread_init", base);
  if (g_mallctl != NULL) {
    g_kind = KIND_JEMALLOC;
  } else if (g_tc_property != NULL && g_tc_release != NULL) {
    g_kind = KIND_TCMALLOC;
  } else if (g_mi_process_info != NULL && g_mi_collect != NULL) {
    g_kind = KIND_MIMALLOC;
  } else if (in_object("malloc_trim", base) != NULL) {
    g_kind = KIND_GLIBC;
  }
}

const char* agent_allocator_name(void) {
  switch (g_kind) {
    case KIND_GLIBC:
      return "glibc";
    case KIND_JEMALLOC:
      return "jemalloc";
    case KIND_TCMALLOC:
      return "tcmalloc";
    case KIND_MIMALLOC:
      return "mimalloc";
    case KIND_UNKNOWN:
      break;
  }
  return "unknown";
}

int agent_allocator_known(void) { return g_kind != KIND_UNKNOWN; }

const char* agent_allocator_object(void) { return g_object; }

const char* agent_allocator_call(void) {
  switch (g_kind) {
    case KIND_GLIBC:
      return "malloc_trim";
    case KIND_JEMALLOC:
      return "arena.4096.purge";
    case KIND_TCMALLOC:
      return "ReleaseFreeMemory";
    case KIND_MIMALLOC:
      return "mi_collect";
    case KIND_UNKNOWN:
      break;
  }
  return "";
}

/* ---- jemalloc ---- */

/* jemalloc caches its statistics; writing "epoch" refreshes them. */
static void je_refresh(void) {
  uint64_t epoch = 1;
  size_t len = sizeof epoch;
  g_mallctl("epoch", &epoch, &len, &epoch, sizeof epoch);
}

static int je_size(const char* name, size_t* v) {
  size_t len = sizeof *v;
  return g_mallctl(name, v, &len, NULL, 0) == 0 && len == sizeof *v;
}

/* stats.arenas.4096.<pages> (4096 = MALLCTL_ARENAS_ALL: all arenas merged)
 * in bytes. */
static int je_pages(const char* name, size_t* bytes) {
  size_t pages, page;
  if (!je_size(name, &pages) || !je_size("arenas.page", &page)) {
    return 0;
  }
  *bytes = pages * page;
  return 1;
}

static void je_stats(struct out* o) {
  static const char* const kStats[][2] = {
      {"allocated", "stats.allocated"}, {"active", "stats.active"},
      {"resident", "stats.resident"},   {"mapped", "stats.mapped"},
      {"retained", "stats.retained"},   {"metadata", "stats.metadata"},
  };
  je_refresh();
  size_t v;
  for (size_t i = 0; i < sizeof kStats / sizeof kStats[0]; ++i) {
    if (je_size(kStats[i][1], &v)) {
      put_kv(o, kStats[i][0], v);
    }
  }
  if (je_pages("stats.arenas.4096.pdirty", &v)) {
    put_kv(o, "dirty", v);
  }
  if (je_pages("stats.arenas.4096.pmuzzy", &v)) {
    put_kv(o, "muzzy", v);
  }
  /* ssize_t: -1 means decay never purges. */
  ssize_t ms;
  size_t len = sizeof ms;
  if (g_mallctl("arenas.dirty_decay_ms", &ms, &len, NULL, 0) == 0 && len == sizeof ms) {
    put_kv_i64(o, "dirty_decay_ms", (int64_t)ms);
  }
  len = sizeof ms;
  if (g_mallctl("arenas.muzzy_decay_ms", &ms, &len, NULL, 0) == 0 && len == sizeof ms) {
    put_kv_i64(o, "muzzy_decay_ms", (int64_t)ms);
  }
}

/* ---- tcmalloc ---- */

static void tc_stats(struct out* o) {
  static const char* const kProps[][2] = {
      {"allocated", "generic.current_allocated_bytes"},
      {"heap_size", "generic.heap_size"},
      {"pageheap_free", "tcmalloc.pageheap_free_bytes"},
      {"pageheap_unmapped", "tcmalloc.pageheap_unmapped_bytes"},
      {"central_cache_free", "tcmalloc.central_cache_free_bytes"},
      {"transfer_cache_free", "tcmalloc.transfer_cache_free_bytes"},
      {"thread_cache_free", "tcmalloc.thread_cache_free_bytes"},
  };
  for (size_t i = 0; i < sizeof kProps / sizeof kProps[0]; ++i) {
    size_t v = 0;
    if (g_tc_property(kProps[i][1], &v) == 1) {
      put_kv(o, kProps[i][0], v);
    }
  }
}

/* ---- mimalloc ---- */

static void mi_stats(struct out* o) {
  size_t elapsed = 0, user = 0, sys = 0, rss = 0, peak_rss = 0, commit = 0, peak_commit = 0,
         faults = 0;
  g_mi_process_info(&elapsed, &user, &sys, &rss, &peak_rss, &commit, &peak_commit, &faults);
  put_kv(o, "committed", commit);
  put_kv(o, "committed_peak", peak_commit);
}

/* mi_process_info's current commit: the bytes mimalloc has committed, for
 * the whole process (one global counter). */
static size_t mi_committed(void) {
  size_t elapsed = 0, user = 0, sys = 0, rss = 0, peak_rss = 0, commit = 0, peak_commit = 0,
         faults = 0;
  g_mi_process_info(&elapsed, &user, &sys, &rss, &peak_rss, &commit, &peak_commit, &faults);
  return commit;
}

/* mi_collect(true) collects the calling thread's heap, then the segments of
 * threads that exited (abandoned) and the global cache of free segments. It
 * begins with "if the calling thread's heap is not initialized, return"
 * (every 2.x release, 2.0.9 among them), and the agent thread's heap is
 * mimalloc's empty placeholder until the thread allocates, which it never
 * does: without mi_thread_init() first the call does nothing at all.
 *
 * mi_thread_init() is public API, what every thread's first malloc calls. It
 * gives the agent thread a heap and thread data of its own, taken from
 * mimalloc's cache of an exited thread's or mmapped directly (never through
 * malloc), seeds the heap's random keys (getrandom) and stores the heap in
 * mimalloc's pthread key (glibc callocs only for a key past its first 32,
 * and then from mimalloc, for this thread). That is all the allocation it
 * makes. Safe from this thread: it writes only this thread's own data and
 * global counters mimalloc updates atomically, never another thread's heap;
 * the collect that follows works on the state mimalloc shares between
 * threads by design (the abandoned segment list and the segment cache, each
 * entry claimed atomically before it is touched), and on this thread's own,
 * empty heap. Nothing of it is visible to the program: no descriptor, no
 * glibc arena, and the thread data stays with the agent thread, which never
 * exits. (A deferred-free callback the program registered with
 * mi_register_deferred_free runs in the collect, as in any thread's.)
 *
 * Still out of reach: free pages in a segment a live thread still has a
 * page in (its first, and the one of the last page it emptied, which
 * mimalloc keeps for reuse), which only that thread decommits, when it next
 * allocates; about one 32 MiB segment's worth per idle thread. Done once, on
 * the agent thread only (the only thread that reads or writes
 * g_mi_thread_ready). When malloc's object does not export mi_thread_init
 * the collect runs without it, as it always did (and does nothing). */
static void mi_release(void) {
  if (!g_mi_thread_ready && g_mi_thread_init != NULL) {
    g_mi_thread_init();
    g_mi_thread_ready = 1;
  }
  g_mi_collect(true);
}

/* ---- glibc ---- */

static void glibc_stats(struct out* o) {
  struct mallinfo2 m = mallinfo2();
  put_kv(o, "arena", m.arena);
  put_kv(o, "hblkhd", m.hblkhd);
  put_kv(o, "uordblks", m.uordblks);
  put_kv(o, "fordblks", m.fordblks);
  put_kv(o, "keepcost", m.keepcost);
}

void agent_allocator_stats(struct out* o) {
  put_kv_str(o, "allocator", agent_allocator_name());
  put_kv_str(o, "object", g_object);
  switch (g_kind) {
    case KIND_GLIBC:
      glibc_stats(o);
      break;
    case KIND_JEMALLOC:
      je_stats(o);
      break;
    case KIND_TCMALLOC:
      tc_stats(o);
      break;
    case KIND_MIMALLOC:
      mi_stats(o);
      break;
    case KIND_UNKNOWN:
      break;
  }
}

int agent_allocator_free_kept(uint64_t* v) {
  if (g_kind == KIND_JEMALLOC) {
    size_t dirty, muzzy;
    je_refresh();
    if (!je_pages("stats.arenas.4096.pdirty", &dirty) ||
        !je_pages("stats.arenas.4096.pmuzzy", &muzzy)) {
      return 0;
    }
    *v = (uint64_t)dirty + (uint64_t)muzzy;
    return 1;
  }
  if (g_kind == KIND_TCMALLOC) {
    size_t free_bytes = 0;
    if (g_tc_property("tcmalloc.pageheap_free_bytes", &free_bytes) != 1) {
      return 0;
    }
    *v = free_bytes;
    return 1;
  }
  return 0;
}

int agent_allocator_committed(uint64_t* v) {
  if (g_kind != KIND_MIMALLOC) {
    return 0;
  }
  *v = mi_committed();
  return 1;
}

int agent_allocator_release(int* result, char* why, size_t why_cap) {
  switch (g_kind) {
    case KIND_GLIBC:
      *result = malloc_trim(0);
      return 0;
    case KIND_JEMALLOC: {
      int rc = g_mallctl("arena.4096.purge", NULL, NULL, NULL, 0);
      if (rc != 0) {
        /* mallctl returns an errno value. Untranslated, from glibc's table:
         * no locale lookup, no malloc. */
        const char* desc = strerrordesc_np(rc);
        snprintf(why, why_cap, "mallctl(\"arena.4096.purge\") failed: %s",
                 desc != NULL ? desc : "unknown error");
        return -1;
      }
      *result = 1;
      return 0;
    }
    case KIND_TCMALLOC:
      g_tc_release();
      *result = 1;
      return 0;
    case KIND_MIMALLOC:
      mi_release();
      *result = 1;
      return 0;
    case KIND_UNKNOWN:
      break;
  }
  snprintf(why, why_cap,
           "malloc is served by %s, which has no release call memtrimd knows (malloc_trim would "
           "only trim glibc's unused heap)",
           g_object);
  return -1;
}
