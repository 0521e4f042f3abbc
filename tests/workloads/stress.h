/*
 * The malloc stress loop that malloc_stress and fragmenter --stress-threads
 * share: threads that malloc, fill, verify and free without pause, to show
 * that something done to the heap from outside (a release call made by
 * libmemtrimd_agent.so) never corrupts live data.
 *
 * Every worker keeps STRESS_SLOTS live chunks of random size (16..64 KiB).
 * Each step picks a slot, verifies the chunk there against the pattern it was
 * filled with, frees it, and puts a new chunk with a new pattern in its place.
 * The verified words are summed into a checksum. On stress_stop the workers
 * finish their step, verify and free what they hold, and the totals are
 * returned.
 *
 * A nice value lowers only the workers' priority (per-thread nice), so that
 * on a small machine a preloaded agent thread is not starved by busy workers
 * while they still keep every CPU busy.
 *
 * The including program defines WORKLOAD_NAME first (workload.h).
 */
#ifndef MEMTRIMD_STRESS_H
#define MEMTRIMD_STRESS_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "workload.h"

#define STRESS_MIN_CHUNK (16u * 1024u)
#define STRESS_MAX_CHUNK (64u * 1024u)
#define STRESS_SLOTS 64

/* Word i of a chunk with key k: cheap, and different for every chunk and
 * position, so a page zeroed or swapped under us never matches. */
static inline uint64_t stress_pattern(uint64_t key, size_t i) {
  return key ^ ((uint64_t)(i + 1) * 0x9e3779b97f4a7c15ull);
}

struct stress_pool;

struct stress_worker {
  pthread_t thread;
  uint64_t rng;
  uint64_t checksum;
  uint64_t errors;
  uint64_t steps;
  uint64_t* chunk[STRESS_SLOTS];
  size_t words[STRESS_SLOTS];
  uint64_t key[STRESS_SLOTS];
  struct stress_pool* pool;
};

struct stress_pool {
  long threads;
  long nice;
  atomic_int stop;
  atomic_long running;
  struct stress_worker* workers; /* mmap'd: outside every malloc heap */
};

struct stress_totals {
  uint64_t checksum;
  uint64_t errors;
  uint64_t steps;
};

static inline void stress_fill(struct stress_worker* w, int s) {
  size_t bytes =
      STRESS_MIN_CHUNK + (size_t)(xorshift64(&w->rng) % (STRESS_MAX_CHUNK - STRESS_MIN_CHUNK + 1));
  size_t words = bytes / sizeof(uint64_t);
  uint64_t* p = malloc(words * sizeof(uint64_t));
  if (p == NULL) {
    fprintf(stderr, WORKLOAD_NAME ": malloc(%zu) failed\n", bytes);
    exit(1);
  }
  uint64_t key = xorshift64(&w->rng);
  for (size_t i = 0; i < words; i++) {
    p[i] = stress_pattern(key, i);
  }
  w->chunk[s] = p;
  w->words[s] = words;
  w->key[s] = key;
}

static inline void stress_verify_and_free(struct stress_worker* w, int s) {
  uint64_t* p = w->chunk[s];
  if (p == NULL) {
    return;
  }
  uint64_t sum = 0;
  for (size_t i = 0; i < w->words[s]; i++) {
    if (p[i] != stress_pattern(w->key[s], i)) {
      w->errors++;
    }
    sum += p[i];
  }
  w->checksum += sum;
  free(p);
  w->chunk[s] = NULL;
}

static inline void* stress_worker_main(void* arg) {
  struct stress_worker* w = arg;
  struct stress_pool* pool = w->pool;
  /* Per-thread nice (Linux): only the workers yield, not a preloaded agent
   * thread, which keeps the nice value the program started with. */
  if (pool->nice != 0 &&
      setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), (int)pool->nice) != 0) {
    fprintf(stderr, WORKLOAD_NAME ": setpriority: %s\n", strerror(errno));
    exit(1);
  }
  for (int s = 0; s < STRESS_SLOTS; s++) {
    stress_fill(w, s);
  }
  atomic_fetch_add(&pool->running, 1);
  while (!atomic_load_explicit(&pool->stop, memory_order_relaxed)) {
    int s = (int)(xorshift64(&w->rng) % STRESS_SLOTS);
    stress_verify_and_free(w, s);
    stress_fill(w, s);
    w->steps++;
  }
  for (int s = 0; s < STRESS_SLOTS; s++) {
    stress_verify_and_free(w, s);
  }
  return NULL;
}

/* Starts `threads` workers and returns once every one of them runs (holds
 * its chunks). 0 on success; -1 after a message on stderr. */
static inline int stress_start(struct stress_pool* pool, long threads, long nice, uint64_t seed) {
  pool->threads = threads;
  pool->nice = nice;
  atomic_init(&pool->stop, 0);
  atomic_init(&pool->running, 0);
  pool->workers = mmap(NULL, sizeof(struct stress_worker) * (size_t)threads, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (pool->workers == MAP_FAILED) {
    fprintf(stderr, WORKLOAD_NAME ": mmap: %s\n", strerror(errno));
    return -1;
  }
  for (long i = 0; i < threads; i++) {
    struct stress_worker* w = &pool->workers[i];
    w->pool = pool;
    w->rng = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1) ^ seed;
    if (w->rng == 0) {
      w->rng = 1;
    }
    int rc = pthread_create(&w->thread, NULL, stress_worker_main, w);
    if (rc != 0) {
      fprintf(stderr, WORKLOAD_NAME ": pthread_create: %s\n", strerror(rc));
      return -1;
    }
  }
  while (atomic_load(&pool->running) < threads) {
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
  return 0;
}

/* Stops the workers, joins them and sums what they verified. */
static inline struct stress_totals stress_stop(struct stress_pool* pool) {
  struct stress_totals t = {0, 0, 0};
  atomic_store(&pool->stop, 1);
  for (long i = 0; i < pool->threads; i++) {
    pthread_join(pool->workers[i].thread, NULL);
    t.checksum += pool->workers[i].checksum;
    t.errors += pool->workers[i].errors;
    t.steps += pool->workers[i].steps;
  }
  munmap(pool->workers, sizeof(struct stress_worker) * (size_t)pool->threads);
  pool->threads = 0;
  return t;
}

#endif
