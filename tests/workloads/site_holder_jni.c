/*
 * site_holder_jni - JniSiteHolder's native half (libsite_holder_jni.so):
 * native allocation sites in a JVM whose truth is known, for the
 * allocation sampler's accuracy tests (issue 25).
 *
 * jni_hold_200, jni_hold_50 and jni_hold_10 each malloc 200, 50 and 10
 * units in blocks of a given size, write every byte, and keep them until
 * the process ends (jni_hold_50's until jni_free_50). Each calls malloc
 * itself, from its own body: the first frame above the allocator in a
 * sampled stack is the site's own name. The arrays that keep the block
 * pointers are allocated by the JNI entry points, so a site's live bytes
 * are exactly its units.
 *
 * jni_churn mallocs and frees short-lived blocks of mixed sizes (16 B to
 * 64 KiB, below glibc's mmap threshold: they come from the arenas), all
 * freed before it returns: memory a sampler must not show as held.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <jni.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* noinline and (gcc's) noclone: each must stay a function of its own
 * name, as the symbol table has it; default visibility and used: exported
 * (dlsym finds them) and kept. */
#if defined(__clang__)
#define SITE __attribute__((noinline, used, visibility("default")))
#else
#define SITE __attribute__((noinline, noclone, used, visibility("default")))
#endif

/* Inlined into each site, so that malloc's caller is the site itself. */
static inline __attribute__((always_inline)) size_t hold(size_t bytes, size_t block,
                                                         char** blocks) {
  size_t held = 0;
  for (size_t i = 0; held < bytes; i++) {
    size_t size = bytes - held < block ? bytes - held : block;
    char* p = malloc(size);
    if (p == NULL) break;
    memset(p, 1, size); /* resident, as live memory is */
    blocks[i] = p;
    held += size;
  }
  return held;
}

/* Each holds `units` * unit bytes in `block`-byte blocks, their pointers in
 * `blocks` (at least BlockCount(...) entries); returns the bytes held. */
SITE size_t jni_hold_200(size_t unit, size_t block, char** blocks) {
  return hold(200 * unit, block, blocks);
}

SITE size_t jni_hold_50(size_t unit, size_t block, char** blocks) {
  return hold(50 * unit, block, blocks);
}

SITE size_t jni_hold_10(size_t unit, size_t block, char** blocks) {
  return hold(10 * unit, block, blocks);
}

/* `rounds` allocations of mixed sizes, each written in full and freed
 * within the next few rounds (a ring of 32 live blocks), the rest freed
 * before returning. `state` is the caller's xorshift state (never 0). */
SITE size_t jni_churn(unsigned rounds, uint64_t* state) {
  char* ring[32] = {0};
  size_t bytes = 0;
  for (unsigned i = 0; i < rounds; i++) {
    uint64_t r = *state;
    r ^= r << 13;
    r ^= r >> 7;
    r ^= r << 17;
    *state = r;
    unsigned slot = (unsigned)(r & 31u);
    free(ring[slot]);
    size_t top = (size_t)16 << ((r >> 5) % 13); /* 16 B .. 64 KiB */
    size_t size = top - (size_t)((r >> 9) % (top / 2 + 1));
    if (size < 16) size = 16;
    ring[slot] = malloc(size);
    if (ring[slot] != NULL) {
      memset(ring[slot], (int)(r >> 40) | 1, size);
      bytes += size;
    }
  }
  for (unsigned slot = 0; slot < 32; slot++) free(ring[slot]);
  return bytes;
}

/* Block pointers of the three held sites, in the order 200, 50, 10. */
static char** site_blocks[3];
static size_t site_counts[3];

static size_t BlockCount(size_t bytes, size_t block) { return (bytes + block - 1) / block; }

/* Holds the three sites; returns the bytes held by site `which` (0, 1, 2)
 * or -1 when malloc failed (or hold was called before). */
JNIEXPORT jlong JNICALL Java_JniSiteHolder_hold(JNIEnv* env, jclass cls, jint which, jlong unit,
                                                jlong block) {
  (void)env;
  (void)cls;
  static const size_t kUnits[3] = {200, 50, 10};
  if (which < 0 || which > 2 || unit <= 0 || block <= 0 || site_blocks[which] != NULL) return -1;
  size_t bytes = kUnits[which] * (size_t)unit;
  size_t n = BlockCount(bytes, (size_t)block);
  site_blocks[which] = calloc(n, sizeof(char*));
  if (site_blocks[which] == NULL) return -1;
  size_t held = 0;
  switch (which) {
    case 0:
      held = jni_hold_200((size_t)unit, (size_t)block, site_blocks[0]);
      break;
    case 1:
      held = jni_hold_50((size_t)unit, (size_t)block, site_blocks[1]);
      break;
    default:
      held = jni_hold_10((size_t)unit, (size_t)block, site_blocks[2]);
      break;
  }
  site_counts[which] = n;
  return held == bytes ? (jlong)held : -1;
}

/* Frees jni_hold_50's blocks; returns how many were freed. */
JNIEXPORT jint JNICALL Java_JniSiteHolder_free50(JNIEnv* env, jclass cls) {
  (void)env;
  (void)cls;
  if (site_blocks[1] == NULL) return 0;
  size_t n = site_counts[1];
  for (size_t i = 0; i < n; i++) free(site_blocks[1][i]);
  free(site_blocks[1]);
  site_blocks[1] = NULL;
  site_counts[1] = 0;
  return (jint)n;
}

/* The address of function `which`: jni_hold_200, jni_hold_50, jni_hold_10,
 * jni_churn (0..3), taken here, as the loaded library has it. */
JNIEXPORT jlong JNICALL Java_JniSiteHolder_functionAddress(JNIEnv* env, jclass cls, jint which) {
  (void)env;
  (void)cls;
  void* const functions[4] = {(void*)jni_hold_200, (void*)jni_hold_50, (void*)jni_hold_10,
                              (void*)jni_churn};
  return which >= 0 && which < 4 ? (jlong)(uintptr_t)functions[which] : 0;
}

/* The path this library was loaded from (dladdr of one of its functions):
 * the name /proc/<pid>/maps gives its mappings. */
JNIEXPORT jstring JNICALL Java_JniSiteHolder_libraryPath(JNIEnv* env, jclass cls) {
  (void)cls;
  Dl_info info;
  if (dladdr((void*)jni_hold_200, &info) == 0 || info.dli_fname == NULL) return NULL;
  return (*env)->NewStringUTF(env, info.dli_fname);
}

/* One call of jni_churn with the calling thread's state; returns the bytes
 * allocated (and freed). */
JNIEXPORT jlong JNICALL Java_JniSiteHolder_churn(JNIEnv* env, jclass cls, jint rounds,
                                                 jlongArray state) {
  (void)cls;
  jlong s = 0;
  (*env)->GetLongArrayRegion(env, state, 0, 1, &s);
  uint64_t u = (uint64_t)s;
  if (u == 0) u = 0x9e3779b97f4a7c15u;
  size_t bytes = jni_churn(rounds > 0 ? (unsigned)rounds : 0u, &u);
  s = (jlong)u;
  (*env)->SetLongArrayRegion(env, state, 0, 1, &s);
  return (jlong)bytes;
}
