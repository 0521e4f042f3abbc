/*
 * dlopen_allocator - a glibc program that loads another allocator's shared
 * object with dlopen() without letting it serve malloc, as a program does
 * when a plugin or library brings its own jemalloc. The preload agent must
 * still say glibc: an allocator's API only counts when it lives in the same
 * object as the malloc the program calls.
 *
 *   dlopen_allocator [--library PATH [--global]] --ready-file PATH
 *
 * dlopen(PATH, RTLD_NOW | RTLD_LOCAL), or RTLD_GLOBAL with --global (malloc
 * still binds to glibc's, which comes first in the lookup order). Then it
 * mallocs and frees a few MiB with glibc, writes the ready file, and waits
 * for SIGINT or SIGTERM, then exits 0. jemalloc's TLS model needs
 * GLIBC_TUNABLES=glibc.rtld.optional_static_tls=<bytes> for a dlopen.
 *
 * Built three times: dlopen_allocator, and glibc_beside_jemalloc, the same program
 * linked with libjemalloc.so.2 as a dependency after libc.so.6. There
 * jemalloc is loaded from the start and its mallctl is in the global scope
 * (dlsym(RTLD_DEFAULT, "mallctl") finds it), yet malloc binds to glibc's,
 * which comes first: the case the agent's same-object rule is for.
 * And hidden_allocator: jemalloc linked into the executable without
 * exporting its API (no -rdynamic), so malloc is the executable's and the
 * agent finds no release call for it.
 */
#define _GNU_SOURCE

#include <dlfcn.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WORKLOAD_NAME "dlopen_allocator"
#include "workload.h"

int main(int argc, char** argv) {
  const char* library = NULL;
  const char* ready = NULL;
  int global = 0;
  static const struct option longopts[] = {
      {"library", required_argument, NULL, 'l'},
      {"global", no_argument, NULL, 'g'},
      {"ready-file", required_argument, NULL, 'r'},
      {NULL, 0, NULL, 0},
  };
  int c;
  while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
    switch (c) {
      case 'l':
        library = optarg;
        break;
      case 'g':
        global = 1;
        break;
      case 'r':
        ready = optarg;
        break;
      default:
        fprintf(stderr, "usage: dlopen_allocator [--library PATH [--global]] --ready-file PATH\n");
        return 2;
    }
  }
  if (ready == NULL) {
    fprintf(stderr, "usage: dlopen_allocator [--library PATH [--global]] --ready-file PATH\n");
    return 2;
  }

  sigset_t stop;
  block_stop_signals(&stop);

  if (library != NULL && dlopen(library, RTLD_NOW | (global ? RTLD_GLOBAL : RTLD_LOCAL)) == NULL) {
    fprintf(stderr, "dlopen_allocator: %s\n", dlerror());
    return 1;
  }
  /* Some glibc heap, so there is something for glibc's figures to show. */
  enum { kChunks = 1024 };
  static void* chunks[kChunks];
  for (int i = 0; i < kChunks; ++i) {
    chunks[i] = malloc(4096);
    if (chunks[i] == NULL) {
      fprintf(stderr, "dlopen_allocator: malloc failed\n");
      return 1;
    }
    memset(chunks[i], 0x5a, 4096);
  }
  for (int i = 0; i < kChunks; i += 2) {
    free(chunks[i]);
  }
  if (write_ready_file(ready) != 0) {
    return 1; /* write_ready_file said why */
  }
  for (;;) {
    int sig = 0;
    if (sigwait(&stop, &sig) == 0 && (sig == SIGINT || sig == SIGTERM)) {
      return 0;
    }
  }
}
