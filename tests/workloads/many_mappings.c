/*
 * many_mappings - a workload with a large number of distinct memory mappings.
 *
 * Reserves --mappings pages of anonymous memory in one mmap, then makes every
 * other page read-only, so adjacent pages have different protections and the
 * kernel keeps each page as its own mapping: /proc/<pid>/maps gets about
 * --mappings lines (plus the usual few dozen). The writable pages are touched
 * so they are resident.
 *
 * Then the optional ready file is written and the process waits for SIGINT or
 * SIGTERM and exits 0.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define WORKLOAD_NAME "many_mappings"
#include "workload.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: many_mappings [--mappings N] [--ready-file PATH] [--tag STRING] [--quiet]\n"
          "  --mappings N       number of distinct one-page mappings (default 5000)\n"
          "  --ready-file PATH  write \"<pid>\\n\" to PATH (atomically) when done\n"
          "  --tag STRING       ignored; lets tests find this process by its command line\n"
          "  --quiet            no progress output\n");
}

int main(int argc, char **argv) {
  enum { OPT_MAPPINGS = 1000, OPT_READY, OPT_TAG, OPT_QUIET };
  static const struct option long_options[] = {
      {"mappings", required_argument, NULL, OPT_MAPPINGS},
      {"ready-file", required_argument, NULL, OPT_READY},
      {"tag", required_argument, NULL, OPT_TAG},
      {"quiet", no_argument, NULL, OPT_QUIET},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  long mappings = 5000;
  const char *ready_file = NULL;
  int quiet = 0;

  for (;;) {
    int c = getopt_long(argc, argv, "h", long_options, NULL);
    if (c == -1) {
      break;
    }
    switch (c) {
      case OPT_MAPPINGS: {
        char *end = NULL;
        errno = 0;
        mappings = strtol(optarg, &end, 10);
        if (errno != 0 || end == optarg || *end != '\0' || mappings < 1 || mappings > 10000000) {
          fprintf(stderr, "many_mappings: --mappings must be an integer in [1, 10000000]\n");
          return 2;
        }
        break;
      }
      case OPT_READY:
        ready_file = optarg;
        break;
      case OPT_TAG:
        break;
      case OPT_QUIET:
        quiet = 1;
        break;
      case 'h':
        usage(stdout);
        return 0;
      default:
        usage(stderr);
        return 2;
    }
  }
  if (optind != argc) {
    fprintf(stderr, "many_mappings: unexpected argument '%s'\n", argv[optind]);
    usage(stderr);
    return 2;
  }

  sigset_t stop;
  block_stop_signals(&stop);

  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  const size_t count = (size_t)mappings;
  unsigned char *base =
      mmap(NULL, count * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) {
    perror("many_mappings: mmap");
    return 1;
  }
  /* Touch the pages that stay writable: even indices. */
  for (size_t i = 0; i < count; i += 2) {
    base[i * page] = (unsigned char)(i | 1u);
  }
  /* Odd pages become read-only; each protection change splits off one mapping. */
  for (size_t i = 1; i < count; i += 2) {
    if (mprotect(base + i * page, page, PROT_READ) != 0) {
      fprintf(stderr,
              "many_mappings: mprotect of page %zu failed: %s (vm.max_map_count is too low for "
              "--mappings %ld?)\n",
              i, strerror(errno), mappings);
      return 1;
    }
  }

  if (!quiet) {
    printf("ready: pid %ld, mappings %ld\n", (long)getpid(), mappings);
    fflush(stdout);
  }
  if (ready_file != NULL && write_ready_file(ready_file) != 0) {
    return 1;
  }

  for (;;) {
    int sig = 0;
    if (sigwait(&stop, &sig) == 0 && (sig == SIGINT || sig == SIGTERM)) {
      break;
    }
  }
  return 0;
}
