/*
 * malloc_churn - a malloc-bound program for the allocation sampler's
 * overhead benchmark (sites_overhead.sh): N threads, each keeping a ring of
 * 4096 live blocks and replacing the oldest with a new one of a random size
 * (16 B to 16 KiB, log-uniform, as small objects dominate real programs;
 * or with --uniform, uniform from 16 B to --max-size, 16 KiB unless given:
 * 64 KiB is the worst case for a sampler by bytes, many bytes a second in
 * few calls) without pause. Each block's first and last bytes are written, so the
 * allocator's work is not optimised away and little else is done: the cost
 * of a malloc/free pair is most of the loop, the worst case for anything that
 * hooks them.
 *
 *   malloc_churn [--threads N] [--seconds S] [--ready-file PATH] [--go-file PATH]
 *                [--max-size BYTES] [--uniform]
 *
 * Prints "ops=<malloc/free pairs of all threads> seconds=<elapsed>",
 * "ops_per_second=<n>" and "ops_per_cpu_second=<n>" (per second of the
 * process's CPU time in the timed part, user and system: on a machine
 * other work shares, the cost of a pair, where the wall-clock rate also
 * measures the neighbours). --ready-file PATH is written with the pid once every
 * thread has filled its ring; the timed part starts then, or with
 * --go-file once PATH exists too, so that a tool switched on in between
 * (its switch can take a second on a busy machine) sees the whole timed
 * part.
 * SIGTERM/SIGINT end it early (it still prints).
 */
#define _GNU_SOURCE

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define RING 4096

static atomic_int g_stop;
static atomic_int g_go;
static atomic_long g_filled;
static size_t g_max_size = 16384;
static int g_uniform;

struct worker {
  pthread_t thread;
  uint64_t rng;
  uint64_t ops;
  void* ring[RING];
};

static uint64_t next(uint64_t* s) {
  uint64_t x = *s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *s = x;
}

/* 16 B .. --max-size: log-uniform (each power of two as likely), or
 * uniform. */
static size_t random_size(uint64_t* rng) {
  uint64_t r = next(rng);
  if (g_uniform) {
    return 16 + (size_t)(r % (g_max_size - 15));
  }
  unsigned top = 4;
  while (((size_t)2 << top) <= g_max_size) {
    ++top;
  }
  unsigned shift = 4 + (unsigned)(r % (top - 3)); /* 2^4 .. 2^top */
  size_t base = (size_t)1 << shift;
  size_t n = base + (size_t)((r >> 8) % base);
  return n > g_max_size ? g_max_size : n;
}

static void* touch(void* p, size_t n) {
  if (p != NULL) {
    ((volatile char*)p)[0] = 1;
    ((volatile char*)p)[n - 1] = 1;
  }
  return p;
}

static void* run(void* arg) {
  struct worker* w = arg;
  for (int i = 0; i < RING; i++) {
    size_t n = random_size(&w->rng);
    w->ring[i] = touch(malloc(n), n);
  }
  atomic_fetch_add(&g_filled, 1);
  while (!atomic_load(&g_go)) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  size_t at = 0;
  uint64_t ops = 0;
  while (!atomic_load_explicit(&g_stop, memory_order_relaxed)) {
    for (int k = 0; k < 256; k++) {
      free(w->ring[at]);
      size_t n = random_size(&w->rng);
      w->ring[at] = touch(malloc(n), n);
      at = (at + 1) % RING;
    }
    ops += 256;
  }
  w->ops = ops;
  for (int i = 0; i < RING; i++) free(w->ring[i]);
  return NULL;
}

static double cpu_seconds(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec / 1e6 + (double)u.ru_stime.tv_sec +
         (double)u.ru_stime.tv_usec / 1e6;
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char** argv) {
  long threads = 2, seconds = 10;
  const char* ready = NULL;
  const char* go = NULL;
  static const struct option longs[] = {{"threads", required_argument, NULL, 't'},
                                        {"seconds", required_argument, NULL, 's'},
                                        {"ready-file", required_argument, NULL, 'r'},
                                        {"go-file", required_argument, NULL, 'g'},
                                        {"max-size", required_argument, NULL, 'm'},
                                        {"uniform", no_argument, NULL, 'u'},
                                        {NULL, 0, NULL, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
    switch (c) {
      case 't':
        threads = strtol(optarg, NULL, 10);
        break;
      case 's':
        seconds = strtol(optarg, NULL, 10);
        break;
      case 'r':
        ready = optarg;
        break;
      case 'g':
        go = optarg;
        break;
      case 'm':
        g_max_size = (size_t)strtoull(optarg, NULL, 10);
        break;
      case 'u':
        g_uniform = 1;
        break;
      default:
        fprintf(stderr,
                "usage: malloc_churn [--threads N] [--seconds S] [--ready-file PATH] "
                "[--go-file PATH] [--max-size BYTES] [--uniform]\n");
        return 2;
    }
  }
  if (threads < 1 || threads > 256 || seconds < 1 || g_max_size < 32 || g_max_size > (1u << 30)) {
    fprintf(stderr, "malloc_churn: bad --threads, --seconds or --max-size\n");
    return 2;
  }
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, NULL);

  struct worker* w = calloc((size_t)threads, sizeof *w);
  if (w == NULL) return 1;
  for (long i = 0; i < threads; i++) {
    w[i].rng = 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1) ^ (uint64_t)getpid();
    if (pthread_create(&w[i].thread, NULL, run, &w[i]) != 0) return 1;
  }
  while (atomic_load(&g_filled) < threads) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  if (ready != NULL) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", ready);
    FILE* f = fopen(tmp, "w");
    if (f == NULL || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f) != 0 ||
        rename(tmp, ready) != 0) {
      fprintf(stderr, "malloc_churn: cannot write %s: %s\n", ready, strerror(errno));
      return 1;
    }
  }
  while (go != NULL && access(go, F_OK) != 0) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  const double start = now_seconds();
  const double cpu_start = cpu_seconds();
  atomic_store(&g_go, 1);
  struct timespec left = {seconds, 0};
  sigtimedwait(&stop, NULL, &left);
  atomic_store(&g_stop, 1);
  const double elapsed = now_seconds() - start;
  const double cpu = cpu_seconds() - cpu_start;
  uint64_t ops = 0;
  for (long i = 0; i < threads; i++) {
    pthread_join(w[i].thread, NULL);
    ops += w[i].ops;
  }
  printf("ops=%" PRIu64 " seconds=%.3f\nops_per_second=%.0f\nops_per_cpu_second=%.0f\n", ops,
         elapsed, (double)ops / elapsed, (double)ops / cpu);
  free(w);
  return 0;
}
