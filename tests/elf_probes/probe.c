/* A small program whose executable the ELF symbol tests read
 * (tests/unit/elf_symbols_test.cc): built once per allocator and link mode
 * by CMakeLists.txt beside it. It calls its allocator's API, so the
 * executable names it: defined when the allocator is linked in, undefined
 * (an import) when it is a shared library. With --wait it blocks until
 * stdin closes, so a test can read /proc/<pid>/exe of a live process.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(PROBE_JEMALLOC)
#include <jemalloc/jemalloc.h>
#elif defined(PROBE_TCMALLOC)
#include <gperftools/malloc_extension_c.h>
#include <gperftools/tcmalloc.h>
#endif

int main(int argc, char** argv) {
  char* block = malloc(4096);
  if (block == NULL) return 1;
  memset(block, 1, 4096);
  size_t allocated = 0;
#if defined(PROBE_JEMALLOC)
  uint64_t epoch = 1;
  size_t len = sizeof(epoch);
  mallctl("epoch", &epoch, &len, &epoch, len);
  len = sizeof(allocated);
  if (mallctl("stats.allocated", &allocated, &len, NULL, 0) != 0) return 1;
#elif defined(PROBE_TCMALLOC)
  void* extra = tc_malloc(64);
  tc_free(extra);
  if (!MallocExtension_GetNumericProperty("generic.current_allocated_bytes", &allocated)) return 1;
#endif
  printf("allocated %zu\n", allocated);
  fflush(stdout);
  if (argc > 1 && strcmp(argv[1], "--wait") == 0) {
    char c;
    while (read(0, &c, 1) > 0) {
    }
  }
  free(block);
  return 0;
}
