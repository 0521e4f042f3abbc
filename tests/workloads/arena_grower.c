/*
 * arena_grower - threads whose glibc arena heaps grow quickly, the shape of
 * a production reproducer (137 MB to 1.4 GB in 30 s), printing as
 * independent truth how many 64 MiB heaps hold its live chunks.
 *
 * Usage: arena_grower --ready-file PATH --count-file PATH [--threads N]
 *                     [--mib-per-thread M] [--step-kib K] [--pace-us U]
 *
 * Each of N threads (default 4) mallocs 16 KiB chunks, K KiB (default 256)
 * per step, writes every page, keeps them all, and sleeps U microseconds
 * (default 2000) between steps, until it holds M MiB (default 160); then
 * the program idles until SIGTERM. Chunks of 16 KiB are below glibc's mmap
 * threshold, so they come from the thread's arena, whose heaps grow with
 * mprotect at every step.
 *
 * After every step the count file (written to PATH.tmp, then renamed) holds
 *   <distinct 64 MiB-aligned regions holding live non-main-arena chunks>
 *   <bytes held>
 * A chunk is a non-main-arena one when glibc's NON_MAIN_ARENA bit (4) is set
 * in its size field (the word before the pointer); its region is the
 * pointer rounded down to 64 MiB. The count only grows: chunks are never
 * freed. The ready file holds the pid and is written after the first step.
 */
#define _GNU_SOURCE
#define WORKLOAD_NAME "arena_grower"

#include <pthread.h>
#include <signal.h>
#include <time.h>

#include "workload.h"

#define HEAP_BYTES (64ull << 20)

static void die(const char* what) {
  fprintf(stderr, WORKLOAD_NAME ": %s: %s\n", what, strerror(errno));
  exit(1);
}
#define CHUNK_BYTES (16u << 10)
#define MAX_REGIONS 4096

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uintptr_t regions[MAX_REGIONS];
static size_t region_count;
static unsigned long long held_bytes;
static const char* count_file;
static const char* ready_file;
static int ready_written;
static unsigned step_kib = 256;
static unsigned pace_us = 2000;
static unsigned long long bytes_per_thread = 160ull << 20;

/* Under `lock`: the count file. */
static void write_count(void) {
  char tmp[PATH_MAX];
  char text[64];
  int n = snprintf(text, sizeof text, "%zu\n%llu\n", region_count, held_bytes);
  if (snprintf(tmp, sizeof tmp, "%s.tmp", count_file) >= (int)sizeof tmp) die("path too long");
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0 || write_all(fd, text, (size_t)n) != 0 || close(fd) != 0) die("write count file");
  if (rename(tmp, count_file) != 0) die("rename count file");
}

static void add_region(uintptr_t r) {
  for (size_t i = 0; i < region_count; ++i) {
    if (regions[i] == r) return;
  }
  if (region_count == MAX_REGIONS) die("too many regions");
  regions[region_count++] = r;
}

static void* grow(void* arg) {
  (void)arg;
  size_t per_step = (size_t)step_kib * 1024 / CHUNK_BYTES;
  if (per_step == 0) per_step = 1;
  size_t max_chunks = (size_t)(bytes_per_thread / CHUNK_BYTES);
  char** chunks = calloc(max_chunks, sizeof *chunks);
  if (chunks == NULL) die("calloc");
  size_t have = 0;
  while (have < max_chunks) {
    size_t first = have;
    for (size_t i = 0; i < per_step && have < max_chunks; ++i) {
      char* p = malloc(CHUNK_BYTES);
      if (p == NULL) die("malloc");
      for (size_t off = 0; off < CHUNK_BYTES; off += 4096) p[off] = 1;
      chunks[have++] = p;
    }
    pthread_mutex_lock(&lock);
    for (size_t i = first; i < have; ++i) {
      size_t size_field = ((const size_t*)(const void*)chunks[i])[-1];
      if (size_field & 4) add_region((uintptr_t)chunks[i] & ~(uintptr_t)(HEAP_BYTES - 1));
    }
    held_bytes += (unsigned long long)(have - first) * CHUNK_BYTES;
    write_count();
    if (!ready_written) {
      if (write_ready_file(ready_file) != 0) die("write ready file");
      ready_written = 1;
    }
    pthread_mutex_unlock(&lock);
    struct timespec pace = {0, (long)pace_us * 1000};
    nanosleep(&pace, NULL);
  }
  return chunks; /* kept: the chunks stay live */
}

static void usage(void) {
  fprintf(stderr,
          "usage: arena_grower --ready-file PATH --count-file PATH [--threads N] "
          "[--mib-per-thread M] [--step-kib K] [--pace-us U]\n");
  exit(2);
}

int main(int argc, char** argv) {
  unsigned threads = 4;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (v == NULL) usage();
    if (strcmp(a, "--ready-file") == 0) {
      ready_file = v;
    } else if (strcmp(a, "--count-file") == 0) {
      count_file = v;
    } else if (strcmp(a, "--threads") == 0) {
      threads = (unsigned)parse_long(a, v, 1, 64);
    } else if (strcmp(a, "--mib-per-thread") == 0) {
      bytes_per_thread = (unsigned long long)parse_long(a, v, 1, 4096) << 20;
    } else if (strcmp(a, "--step-kib") == 0) {
      step_kib = (unsigned)parse_long(a, v, 16, 65536);
    } else if (strcmp(a, "--pace-us") == 0) {
      pace_us = (unsigned)parse_long(a, v, 0, 999999);
    } else {
      usage();
    }
    ++i;
  }
  if (ready_file == NULL || count_file == NULL) usage();
  sigset_t stop;
  block_stop_signals(&stop);
  pthread_t tid[64];
  for (unsigned t = 0; t < threads; ++t) {
    if (pthread_create(&tid[t], NULL, grow, NULL) != 0) die("pthread_create");
  }
  for (unsigned t = 0; t < threads; ++t) pthread_join(tid[t], NULL);
  int sig = 0;
  sigwait(&stop, &sig);
  return 0;
}
