/*
 * libsampler_plugin.so: a shared library that mallocs from its own code, for
 * the allocation sampler's stress test (malloc_stress --churn-lib): loaded,
 * its GOT patched by the sampler, used and unloaded again in a loop.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Allocates `rounds` blocks through malloc, calloc and realloc from this
 * library's own code, fills and checks them, frees them; the number of
 * wrong bytes found (0 when all is well). */
__attribute__((visibility("default"))) uint64_t plugin_churn(unsigned rounds) {
  uint64_t errors = 0;
  for (unsigned i = 0; i < rounds; ++i) {
    const size_t n = 4096 + (size_t)(i % 16) * 4096;
    unsigned char* a = malloc(n);
    unsigned char* b = calloc(1, n);
    if (a == NULL || b == NULL) {
      free(a);
      free(b);
      return errors + 1;
    }
    memset(a, (int)(i & 0xff), n);
    for (size_t k = 0; k < n; ++k) errors += b[k] != 0;
    unsigned char* c = realloc(a, 2 * n);
    if (c == NULL) {
      free(a);
      free(b);
      return errors + 1;
    }
    for (size_t k = 0; k < n; ++k) errors += c[k] != (unsigned char)(i & 0xff);
    free(c);
    free(b);
  }
  return errors;
}
