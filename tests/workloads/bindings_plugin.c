/*
 * libbindings_plugin.so: what bindings_probe dlopens after sampling started
 * (its GOT must be hooked then). Built twice: plain, and as
 * libbindings_deep.so with BINDINGS_OWN_MALLOC, a library that brings its
 * own malloc: loaded with RTLD_DEEPBIND its calls bind to that one, which
 * the sampler must leave alone and report as not hooked.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#ifdef BINDINGS_OWN_MALLOC
/* A bump allocator over one mapping: enough for the test's blocks. */
static unsigned char* g_arena;
static size_t g_used, g_size;

__attribute__((visibility("default"))) void* malloc(size_t n) {
  if (g_arena == NULL) {
    g_size = (size_t)256 << 20;
    void* m = mmap(NULL, g_size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
      return NULL;
    }
    g_arena = m;
  }
  n = (n + 15) & ~(size_t)15;
  if (n > g_size - g_used) {
    return NULL;
  }
  void* p = g_arena + g_used;
  g_used += n;
  return p;
}

__attribute__((visibility("default"))) void free(void* p) { (void)p; }
#endif

/* Holds `blocks` blocks of `bytes` from this library's own calls to malloc
 * (never freed: the test reads them live); the bytes held. */
__attribute__((visibility("default"))) size_t plugin_hold(size_t blocks, size_t bytes) {
  size_t held = 0;
  for (size_t i = 0; i < blocks; ++i) {
    unsigned char* p = malloc(bytes);
    if (p == NULL) {
      break;
    }
    memset(p, 1, bytes);
    held += bytes;
  }
  return held;
}
