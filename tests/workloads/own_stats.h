/*
 * The allocator's own statistics, read inside the process with the
 * allocator's public API (found with dlsym), written plainly and apart from
 * libmemtrimd_agent.so so that tests can compare memtrimd's figures against
 * an independent reading taken at the same moment.
 *
 * Which allocator serves malloc: m = dlsym(RTLD_DEFAULT, "malloc"); an
 * allocator's API counts only when dladdr() puts it in the same object as m
 * (a jemalloc some library links but that does not serve malloc does not
 * count); glibc when malloc's object also defines malloc_trim; unknown
 * otherwise. A program built with musl-gcc is "musl" (musl has no
 * statistics API).
 *
 * The output is "key=value\n" lines with the agent's key names and units
 * (bytes, decay times in milliseconds): allocator=, object= (the object
 * serving malloc: its dladdr() name, or /proc/self/exe's target when malloc
 * is linked into the executable), then
 *   glibc     arena hblkhd uordblks fordblks keepcost            (mallinfo2)
 *   jemalloc  allocated active resident mapped retained metadata  (after "epoch")
 *             dirty muzzy (all arenas' pdirty / pmuzzy pages x arenas.page)
 *             dirty_decay_ms muzzy_decay_ms
 *   tcmalloc  allocated heap_size pageheap_free pageheap_unmapped
 *             central_cache_free transfer_cache_free thread_cache_free
 *   mimalloc  committed committed_peak                            (mi_process_info)
 * and last rss_anon (RssAnon of /proc/self/status, bytes). A figure the
 * allocator refuses is left out.
 *
 * The including program defines WORKLOAD_NAME first (workload.h).
 */
#ifndef MEMTRIMD_OWN_STATS_H
#define MEMTRIMD_OWN_STATS_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "workload.h"

#ifdef __GLIBC__
#include <dlfcn.h>
#include <malloc.h>
#endif

enum own_allocator { OWN_UNKNOWN, OWN_GLIBC, OWN_JEMALLOC, OWN_TCMALLOC, OWN_MIMALLOC, OWN_MUSL };

typedef int (*own_mallctl_fn)(const char*, void*, size_t*, void*, size_t);
typedef int (*own_tc_property_fn)(const char*, size_t*);
typedef void (*own_mi_process_info_fn)(size_t*, size_t*, size_t*, size_t*, size_t*, size_t*,
                                       size_t*, size_t*);

struct own_stats {
  enum own_allocator allocator;
  char object[PATH_MAX];
  own_mallctl_fn mallctl;
  own_tc_property_fn tc_property;
  own_mi_process_info_fn mi_process_info;
};

static inline const char* own_allocator_name(enum own_allocator a) {
  switch (a) {
    case OWN_GLIBC:
      return "glibc";
    case OWN_JEMALLOC:
      return "jemalloc";
    case OWN_TCMALLOC:
      return "tcmalloc";
    case OWN_MIMALLOC:
      return "mimalloc";
    case OWN_MUSL:
      return "musl";
    case OWN_UNKNOWN:
      break;
  }
  return "unknown";
}

/* A field of /proc/self/status in kB (e.g. "VmRSS", "RssAnon"), read without
 * malloc; -1 when absent. */
static inline long proc_status_kib(const char* field) {
  char buf[8192];
  int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return -1;
  }
  size_t used = 0;
  for (;;) {
    ssize_t n = read(fd, buf + used, sizeof buf - 1 - used);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      break;
    }
    used += (size_t)n;
    if (used == sizeof buf - 1) {
      break;
    }
  }
  close(fd);
  buf[used] = '\0';
  char key[64];
  int len = snprintf(key, sizeof key, "\n%s:", field);
  if (len < 0 || (size_t)len >= sizeof key) {
    return -1;
  }
  const char* line = strstr(buf, key);
  if (line == NULL) {
    return -1;
  }
  return strtol(line + len, NULL, 10);
}

#ifdef __GLIBC__
/* An object of the executable, to tell when malloc is linked into it. */
static const char own_executable_anchor = 0;

/* The dladdr() base of the object holding `sym` (NULL when unknown). */
static inline void* own_object_base(void* sym) {
  Dl_info info;
  if (sym == NULL || dladdr(sym, &info) == 0) {
    return NULL;
  }
  return info.dli_fbase;
}

/* `name` when it is defined in the object whose base is `base`. */
static inline void* own_symbol_in(void* base, const char* name) {
  void* sym = dlsym(RTLD_DEFAULT, name);
  return sym != NULL && own_object_base(sym) == base ? sym : NULL;
}
#endif

/* Finds the allocator that serves malloc. Called once, from the main thread
 * before other threads start (dlsym and dladdr may themselves malloc).
 * 0 on success; -1 after a message on stderr. */
static inline int own_stats_detect(struct own_stats* s) {
  memset(s, 0, sizeof *s);
#ifdef __GLIBC__
  void* m = dlsym(RTLD_DEFAULT, "malloc");
  Dl_info info;
  if (m == NULL || dladdr(m, &info) == 0) {
    fprintf(stderr, WORKLOAD_NAME ": dladdr(malloc) failed\n");
    return -1;
  }
  void* base = info.dli_fbase;
  if (base == own_object_base((void*)&own_executable_anchor)) {
    /* Linked into the executable: dladdr would only give argv[0]. */
    ssize_t n = readlink("/proc/self/exe", s->object, sizeof s->object - 1);
    if (n < 0) {
      fprintf(stderr, WORKLOAD_NAME ": readlink /proc/self/exe: %s\n", strerror(errno));
      return -1;
    }
    s->object[n] = '\0';
  } else {
    snprintf(s->object, sizeof s->object, "%s", info.dli_fname != NULL ? info.dli_fname : "");
  }
  /* Function pointers from dlsym: converted through memcpy, the one way ISO C
   * allows from void *. */
  void* sym;
  if ((sym = own_symbol_in(base, "mallctl")) != NULL) {
    s->allocator = OWN_JEMALLOC;
    memcpy(&s->mallctl, &sym, sizeof sym);
  } else if ((sym = own_symbol_in(base, "MallocExtension_GetNumericProperty")) != NULL &&
             own_symbol_in(base, "MallocExtension_ReleaseFreeMemory") != NULL) {
    s->allocator = OWN_TCMALLOC;
    memcpy(&s->tc_property, &sym, sizeof sym);
  } else if ((sym = own_symbol_in(base, "mi_process_info")) != NULL &&
             own_symbol_in(base, "mi_collect") != NULL) {
    s->allocator = OWN_MIMALLOC;
    memcpy(&s->mi_process_info, &sym, sizeof sym);
  } else if (own_symbol_in(base, "malloc_trim") != NULL) {
    s->allocator = OWN_GLIBC;
  } else {
    s->allocator = OWN_UNKNOWN;
  }
#else
  s->allocator = OWN_MUSL;
#endif
  return 0;
}

struct own_text {
  char buf[4096];
  size_t len;
};

static inline void own_printf(struct own_text* t, const char* fmt, ...) {
  if (t->len >= sizeof t->buf) {
    return;
  }
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(t->buf + t->len, sizeof t->buf - t->len, fmt, ap);
  va_end(ap);
  if (n > 0) {
    t->len += (size_t)n;
  }
}

#ifdef __GLIBC__
static inline void own_jemalloc(const struct own_stats* s, struct own_text* t) {
  uint64_t epoch = 1;
  size_t len = sizeof epoch;
  /* Writing "epoch" refreshes the cached statistics. */
  s->mallctl("epoch", &epoch, &len, &epoch, sizeof epoch);
  static const char* const names[][2] = {
      {"allocated", "stats.allocated"}, {"active", "stats.active"},
      {"resident", "stats.resident"},   {"mapped", "stats.mapped"},
      {"retained", "stats.retained"},   {"metadata", "stats.metadata"},
  };
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    size_t v = 0;
    len = sizeof v;
    if (s->mallctl(names[i][1], &v, &len, NULL, 0) == 0) {
      own_printf(t, "%s=%zu\n", names[i][0], v);
    }
  }
  /* 4096 is MALLCTL_ARENAS_ALL: the sum over every arena. */
  size_t page = 0;
  len = sizeof page;
  if (s->mallctl("arenas.page", &page, &len, NULL, 0) == 0) {
    static const char* const pages[][2] = {{"dirty", "stats.arenas.4096.pdirty"},
                                           {"muzzy", "stats.arenas.4096.pmuzzy"}};
    for (size_t i = 0; i < 2; i++) {
      size_t v = 0;
      len = sizeof v;
      if (s->mallctl(pages[i][1], &v, &len, NULL, 0) == 0) {
        own_printf(t, "%s=%zu\n", pages[i][0], v * page);
      }
    }
  }
  static const char* const decay[][2] = {{"dirty_decay_ms", "arenas.dirty_decay_ms"},
                                         {"muzzy_decay_ms", "arenas.muzzy_decay_ms"}};
  for (size_t i = 0; i < 2; i++) {
    ssize_t v = 0;
    len = sizeof v;
    if (s->mallctl(decay[i][1], &v, &len, NULL, 0) == 0) {
      own_printf(t, "%s=%zd\n", decay[i][0], v);
    }
  }
}

static inline void own_tcmalloc(const struct own_stats* s, struct own_text* t) {
  static const char* const names[][2] = {
      {"allocated", "generic.current_allocated_bytes"},
      {"heap_size", "generic.heap_size"},
      {"pageheap_free", "tcmalloc.pageheap_free_bytes"},
      {"pageheap_unmapped", "tcmalloc.pageheap_unmapped_bytes"},
      {"central_cache_free", "tcmalloc.central_cache_free_bytes"},
      {"transfer_cache_free", "tcmalloc.transfer_cache_free_bytes"},
      {"thread_cache_free", "tcmalloc.thread_cache_free_bytes"},
  };
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    size_t v = 0;
    if (s->tc_property(names[i][1], &v) == 1) {
      own_printf(t, "%s=%zu\n", names[i][0], v);
    }
  }
}

static inline void own_mimalloc(const struct own_stats* s, struct own_text* t) {
  size_t elapsed = 0, user = 0, sys = 0, rss = 0, peak_rss = 0, commit = 0, peak_commit = 0,
         faults = 0;
  s->mi_process_info(&elapsed, &user, &sys, &rss, &peak_rss, &commit, &peak_commit, &faults);
  own_printf(t, "committed=%zu\ncommitted_peak=%zu\n", commit, peak_commit);
}

static inline void own_glibc(struct own_text* t) {
  struct mallinfo2 mi = mallinfo2();
  own_printf(t, "arena=%zu\nhblkhd=%zu\nuordblks=%zu\nfordblks=%zu\nkeepcost=%zu\n", mi.arena,
             mi.hblkhd, mi.uordblks, mi.fordblks, mi.keepcost);
}
#endif

/* Reads the figures now and writes them to `path` atomically. */
static inline int own_stats_write(const struct own_stats* s, const char* path) {
  static struct own_text t; /* only the main thread writes */
  t.len = 0;
  own_printf(&t, "allocator=%s\n", own_allocator_name(s->allocator));
#ifdef __GLIBC__
  own_printf(&t, "object=%s\n", s->object);
  switch (s->allocator) {
    case OWN_JEMALLOC:
      own_jemalloc(s, &t);
      break;
    case OWN_TCMALLOC:
      own_tcmalloc(s, &t);
      break;
    case OWN_MIMALLOC:
      own_mimalloc(s, &t);
      break;
    case OWN_GLIBC:
      own_glibc(&t);
      break;
    case OWN_UNKNOWN:
    case OWN_MUSL:
      break;
  }
#endif
  long anon = proc_status_kib("RssAnon");
  if (anon >= 0) {
    own_printf(&t, "rss_anon=%ld\n", anon * 1024);
  }
  if (t.len >= sizeof t.buf) {
    fprintf(stderr, WORKLOAD_NAME ": statistics longer than %zu bytes\n", sizeof t.buf);
    return -1;
  }
  return write_file_atomically(path, t.buf, t.len);
}

#endif
