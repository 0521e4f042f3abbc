/*
 * bindings_probe: one program built in the shapes a distribution ships
 * (tests/workloads/CMakeLists.txt: PIE with lazy binding, non-PIE taking
 * malloc's address, -fno-plt, full RELRO, linked with tcmalloc, with
 * jemalloc linked in statically, a static executable), for the allocation sampler's binding
 * tests (tests/integration/agent_bindings_test.cc).
 *
 *   bindings_probe <blocks> <block_bytes> [<plugin.so> [deepbind]]
 *
 * Prints "ready" and waits for a line on stdin (the test turns sampling on
 * first), then: loads the plugin if one is named (so it is loaded after
 * sampling started; with "deepbind" as RTLD_DEEPBIND), holds <blocks>
 * blocks of <block_bytes> malloc'd in hold() (its site) and as many again
 * through the plugin's plugin_hold(), prints "held <bytes held by hold()>
 * <bytes held by the plugin>", and waits for end of file on stdin.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Called with malloc's address taken in code: in a non-PIE build the
 * linker then gives the executable a canonical PLT entry for malloc, and
 * dlsym(RTLD_DEFAULT, "malloc") returns it (as in Debian's python3.11). */
__attribute__((noipa)) static void* call_alloc(void* (*alloc)(size_t), size_t n) {
  return alloc(n);
}

__attribute__((noinline)) static size_t hold(void** out, size_t blocks, size_t bytes) {
  size_t held = 0;
  for (size_t i = 0; i < blocks; ++i) {
    out[i] = malloc(bytes);
    if (out[i] == NULL) {
      return held;
    }
    memset(out[i], (int)(i & 0xff), bytes); /* resident: a real holder */
    held += bytes;
  }
  return held;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: bindings_probe <blocks> <block_bytes> [<plugin.so> [deepbind]]\n");
    return 2;
  }
  const size_t blocks = strtoul(argv[1], NULL, 10), bytes = strtoul(argv[2], NULL, 10);
  printf("ready\n");
  fflush(stdout);
  char line[64];
  if (fgets(line, sizeof line, stdin) == NULL) {
    return 0;
  }
  size_t (*plugin_hold)(size_t, size_t) = NULL;
  if (argc > 3) {
#ifdef BINDINGS_NO_DLOPEN /* the static build: dlopen there needs the shared libc */
    fprintf(stderr, "this build loads no plugin\n");
    return 2;
#else
    const int deep = argc > 4 && strcmp(argv[4], "deepbind") == 0;
    void* lib = dlopen(argv[3], RTLD_NOW | RTLD_LOCAL | (deep ? RTLD_DEEPBIND : 0));
    if (lib == NULL) {
      fprintf(stderr, "dlopen: %s\n", dlerror());
      return 1;
    }
    *(void**)&plugin_hold = dlsym(lib, "plugin_hold");
    if (plugin_hold == NULL) {
      fprintf(stderr, "dlsym: %s\n", dlerror());
      return 1;
    }
#endif
  }
  void** held = call_alloc(malloc, blocks * sizeof *held);
  if (held == NULL) {
    return 1;
  }
  const size_t own = hold(held, blocks, bytes);
  const size_t plugin = plugin_hold != NULL ? plugin_hold(blocks, bytes) : 0;
  printf("held %zu %zu\n", own, plugin);
  fflush(stdout);
  while (fgets(line, sizeof line, stdin) != NULL) {
  }
  return 0;
}
