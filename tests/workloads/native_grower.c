/*
 * native_grower - a glibc program whose malloc'd memory grows only when told
 * to, so that a test can walk its RSS up to a memory limit and past it.
 *
 * Commands, one per line on stdin:
 *
 *   grow BYTES   malloc BYTES more, in 64 KiB chunks, writing every page so
 *                that it is resident, and keep it; then print
 *                "grown <total bytes held>"
 *   exit         exit 0 (so does end of input)
 *
 * "ready <pid>" is printed once at start. Every line is flushed at once: the
 * test reads them through a pipe and waits for each before the next step.
 *
 * 64 KiB is below glibc's mmap threshold, so the chunks come from the main
 * arena (brk), as the small allocations of a real program do. Nothing is ever
 * freed: this is the live native memory that trimming cannot give back and
 * that the kernel's OOM killer ends at the limit.
 */
#define _GNU_SOURCE

#define WORKLOAD_NAME "native_grower"
#include "workload.h"

#define CHUNK_BYTES (64 * 1024)

static int grow(unsigned long long bytes, unsigned long long* total) {
  static unsigned char value = 1;
  while (bytes > 0) {
    size_t n = bytes < CHUNK_BYTES ? (size_t)bytes : CHUNK_BYTES;
    unsigned char* p = malloc(n);
    if (p == NULL) {
      fprintf(stderr, WORKLOAD_NAME ": malloc(%zu) failed after %llu bytes\n", n, *total);
      return -1;
    }
    /* Every byte, so every page is resident; the value changes from chunk
     * to chunk so that no page is a zero page or identical to another. */
    memset(p, value++, n);
    if (value == 0) {
      value = 1;
    }
    *total += n;
    bytes -= n;
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 1) {
    fprintf(stderr, "usage: %s  (commands on stdin: 'grow BYTES', 'exit')\n", argv[0]);
    return 2;
  }
  unsigned long long total = 0;
  printf("ready %ld\n", (long)getpid());
  fflush(stdout);
  char line[128];
  while (fgets(line, sizeof line, stdin) != NULL) {
    unsigned long long bytes = 0;
    char extra = 0;
    if (strcmp(line, "exit\n") == 0 || strcmp(line, "exit") == 0) {
      return 0;
    }
    if (sscanf(line, "grow %llu %c", &bytes, &extra) != 1) {
      fprintf(stderr, WORKLOAD_NAME ": bad command: %s", line);
      return 2;
    }
    if (grow(bytes, &total) != 0) {
      return 1;
    }
    printf("grown %llu\n", total);
    fflush(stdout);
  }
  return 0;
}
