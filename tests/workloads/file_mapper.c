/*
 * file_mapper - maps one file shared and read-only and reads every page of
 * it, so its VmRSS holds the whole file (RssFile) while it holds almost
 * nothing of its own: many of them over one file show the file's size in
 * each VmRSS, though the node holds its pages once.
 *
 *   file_mapper --file PATH --ready-file PATH
 *
 * Writes "<pid>\n" to the ready file once every page was read, then waits
 * for SIGINT or SIGTERM and exits 0.
 */
#define _GNU_SOURCE

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#define WORKLOAD_NAME "file_mapper"
#include "workload.h"

int main(int argc, char** argv) {
  const char* file = NULL;
  const char* ready = NULL;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--file") == 0 && i + 1 < argc) {
      file = argv[++i];
    } else if (strcmp(argv[i], "--ready-file") == 0 && i + 1 < argc) {
      ready = argv[++i];
    } else {
      file = NULL;
      break;
    }
  }
  if (file == NULL || ready == NULL) {
    fprintf(stderr, "usage: " WORKLOAD_NAME " --file PATH --ready-file PATH\n");
    return 2;
  }
  sigset_t stop;
  block_stop_signals(&stop);
  int fd = open(file, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0) {
    fprintf(stderr, WORKLOAD_NAME ": open %s: %s\n", file, strerror(errno));
    return 1;
  }
  size_t size = (size_t)st.st_size;
  const volatile char* p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    fprintf(stderr, WORKLOAD_NAME ": mmap: %s\n", strerror(errno));
    return 1;
  }
  unsigned sum = 0;
  for (size_t off = 0; off < size; off += 4096) {
    sum += (unsigned char)p[off];
  }
  (void)sum;
  if (write_ready_file(ready) != 0) {
    return 1;
  }
  int sig = 0;
  while (sigwait(&stop, &sig) != 0 || (sig != SIGINT && sig != SIGTERM)) {
  }
  return 0;
}
