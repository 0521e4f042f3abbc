/*
 * trim_pause: how long a thread that mallocs waits while its arena is
 * trimmed. One worker thread fragments its own arena (bursts of 64-4096 B
 * chunks, 98% freed), then times malloc+free of small chunks in a loop:
 * first for a baseline period, then (after creating DIR/phase-b) until
 * DIR/done appears, while the bench script trims the process through the
 * preloaded agent. Prints the worst and p99.9 latency of both periods. The
 * chunks are 2 KiB, above tcache, so each call needs the arena's lock.
 *
 *   trim_pause --dir DIR --mib M [--baseline-ms N]
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char* g_dir;
static size_t g_mib = 512;
static long g_baseline_ms = 2000;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int exists(const char* name) {
  char path[4096];
  snprintf(path, sizeof(path), "%s/%s", g_dir, name);
  return access(path, F_OK) == 0;
}

static void touch(const char* name) {
  char path[4096], tmp[4200];
  snprintf(path, sizeof(path), "%s/%s", g_dir, name);
  snprintf(tmp, sizeof(tmp), "%s.tmp", path);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) close(fd);
  rename(tmp, path);
}

/* Latencies in microseconds, bucketed 0..99999 us. */
#define BUCKETS 100000
static uint32_t hist[2][BUCKETS];
static uint64_t worst[2], count[2];

static void record(int phase, uint64_t ns) {
  uint64_t us = ns / 1000;
  if (ns > worst[phase]) worst[phase] = ns;
  hist[phase][us < BUCKETS ? us : BUCKETS - 1]++;
  count[phase]++;
}

static double p999_us(int phase) {
  uint64_t target = count[phase] - count[phase] / 1000, seen = 0;
  for (int i = 0; i < BUCKETS; i++) {
    seen += hist[phase][i];
    if (seen >= target) return i;
  }
  return BUCKETS;
}

static void* worker(void* arg) {
  (void)arg;
  /* Fragment this thread's arena: keep 2% of each burst. */
  uint64_t x = 88172645463325252ull;
  size_t kept_n = 0, cap = 1 << 20;
  void** kept = malloc(cap * sizeof(void*));
  void** burst = malloc((1 << 22) * sizeof(void*));
  for (size_t round = 0; round < g_mib / 32; round++) {
    size_t n = 0, bytes = 0;
    while (bytes < (32u << 20) && n < (1u << 22)) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      size_t sz = 64 + x % 4033;
      char* p = malloc(sz);
      p[0] = 1;
      burst[n++] = p;
      bytes += sz;
    }
    for (size_t i = 0; i < n; i++) {
      if (i % 50 == 0 && kept_n < cap) {
        kept[kept_n++] = burst[i];
      } else {
        free(burst[i]);
      }
    }
  }
  free(burst);
  touch("ready");
  /* Phase A: baseline. Phase B: until the script says the trim is done. */
  uint64_t end_a = now_ns() + (uint64_t)g_baseline_ms * 1000000u;
  for (int phase = 0; phase < 2; phase++) {
    if (phase == 1) touch("phase-b");
    for (uint64_t i = 0;; i++) {
      uint64_t t0 = now_ns();
      /* 2 KiB: above tcache's largest size (1032 B), so every call takes
       * the arena lock, as most allocations of a real program eventually do. */
      void* p = malloc(2048);
      ((volatile char*)p)[0] = 1;
      free(p);
      record(phase, now_ns() - t0);
      if (phase == 0 && (i & 1023) == 0 && now_ns() >= end_a) break;
      if (phase == 1 && (i & 1023) == 0 && exists("done")) break;
    }
  }
  printf("baseline_max_us=%.1f baseline_p999_us=%.0f baseline_calls=%llu\n",
         worst[0] / 1000.0, p999_us(0), (unsigned long long)count[0]);
  printf("during_trim_max_us=%.1f during_trim_p999_us=%.0f during_trim_calls=%llu\n",
         worst[1] / 1000.0, p999_us(1), (unsigned long long)count[1]);
  fflush(stdout);
  (void)kept;
  return NULL;
}

int main(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--dir")) g_dir = argv[i + 1];
    else if (!strcmp(argv[i], "--mib")) g_mib = (size_t)atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--baseline-ms")) g_baseline_ms = atol(argv[i + 1]);
  }
  if (!g_dir) {
    fprintf(stderr, "usage: trim_pause --dir DIR --mib M [--baseline-ms N]\n");
    return 2;
  }
  pthread_t t;
  if (pthread_create(&t, NULL, worker, NULL) != 0) return 1;
  pthread_join(t, NULL);
  return 0;
}
