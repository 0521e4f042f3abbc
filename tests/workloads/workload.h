/*
 * Helpers the C workloads share. Each program defines WORKLOAD_NAME (used in
 * messages) before including this header.
 */
#ifndef MEMTRIMD_WORKLOAD_H
#define MEMTRIMD_WORKLOAD_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef WORKLOAD_NAME
#error "define WORKLOAD_NAME before including workload.h"
#endif

static inline int write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) {
        continue;
      }
      return -1;
    }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Writes `len` bytes of `text` to PATH.tmp, then renames it to PATH: a
 * reader never sees a half-written file. */
static inline int write_file_atomically(const char* path, const char* text, size_t len) {
  char tmp[PATH_MAX];
  int n = snprintf(tmp, sizeof tmp, "%s.tmp", path);
  if (n < 0 || (size_t)n >= sizeof tmp) {
    fprintf(stderr, WORKLOAD_NAME ": path too long: %s\n", path);
    return -1;
  }
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    fprintf(stderr, WORKLOAD_NAME ": open %s: %s\n", tmp, strerror(errno));
    return -1;
  }
  if (write_all(fd, text, len) != 0 || close(fd) != 0) {
    fprintf(stderr, WORKLOAD_NAME ": write %s: %s\n", tmp, strerror(errno));
    return -1;
  }
  if (rename(tmp, path) != 0) {
    fprintf(stderr, WORKLOAD_NAME ": rename %s: %s\n", tmp, strerror(errno));
    return -1;
  }
  return 0;
}

/* Writes "<pid>\n" to PATH atomically. */
static inline int write_ready_file(const char* path) {
  char line[32];
  int len = snprintf(line, sizeof line, "%ld\n", (long)getpid());
  return write_file_atomically(path, line, (size_t)len);
}

/* A small deterministic PRNG: the same run makes the same heap. */
static inline uint64_t xorshift64(uint64_t* state) {
  uint64_t x = *state;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  *state = x;
  return x;
}

/* An integer flag value in [min, max], or exit 2 with a message. */
static inline long parse_long(const char* name, const char* text, long min, long max) {
  char* end = NULL;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < min || v > max) {
    fprintf(stderr, WORKLOAD_NAME ": %s must be an integer in [%ld, %ld], got '%s'\n", name, min,
            max, text);
    exit(2);
  }
  return v;
}

/* Fills `stop` with SIGINT and SIGTERM and blocks them in the calling
 * thread, and so in every thread it starts afterwards: the program ends when
 * it takes one of them with sigwait (a test stopping it), never in the middle
 * of what one of its threads is doing. Exits 1 if the mask cannot be set. */
static inline void block_stop_signals(sigset_t* stop) {
  sigemptyset(stop);
  sigaddset(stop, SIGINT);
  sigaddset(stop, SIGTERM);
  int rc = pthread_sigmask(SIG_BLOCK, stop, NULL);
  if (rc != 0) {
    fprintf(stderr, WORKLOAD_NAME ": pthread_sigmask: %s\n", strerror(rc));
    exit(1);
  }
}

#endif
