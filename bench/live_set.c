/*
 * live_set - a known live set for the allocation sampler's error by site
 * size (sites_error.sh). Four functions hold 200, 50, 10 and 1 MiB of
 * malloc'd memory, exactly, in blocks of varied sizes (log-uniform, 16 B to
 * 256 KiB: most blocks small, most bytes in large ones, as in real
 * programs), taken by malloc, calloc, and realloc growing a block by
 * doubling from an eighth of its size. Then a second thread replaces blocks
 * of each site: it takes two blocks of one site, frees both (or reallocs
 * each to the other's size) and allocates them again with their sizes
 * swapped, so the site's total stays what it was while most of its first
 * samples are freed (the path a sampler must not leave live), some of them
 * freed by a thread that did not allocate them. A third thread churns
 * short-lived blocks in a function of its own meanwhile.
 *
 *   live_set TRIGGER SEED PERIOD
 *
 * Prints "armed" and waits for the file TRIGGER (sampling is turned on
 * before anything is taken); SEED picks the sizes; PERIOD (the sampler's
 * mean, bytes) is only used for the predicted spread below. Then, per site:
 *   site <name> <hex> <bytes> <variance>
 * with <hex> the return address in the site's function of its call to
 * work() (in every sampled stack of the site), <bytes> the live bytes it
 * holds, <variance> what theory gives for the variance of an estimate by
 * bytes at PERIOD (sum over its blocks of s^2 (1-p)/p, p = 1 - e^(-s/T)),
 * then "ready", flushed, and holds everything until killed.
 */
#define _GNU_SOURCE

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* Each must stay a function of its own, as the stacks show it. */
#if defined(__clang__)
#define SITE __attribute__((noinline))
#else
#define SITE __attribute__((noinline, noclone))
#endif

#define SITES 4
#define MIN_BLOCK 16.0
#define MAX_BLOCK (256.0 * 1024)

struct site {
  const char* name;
  size_t truth;
  char** p;       /* mmap'd: the site holds exactly its blocks in malloc'd memory */
  size_t* size;
  size_t n;
  void* ret;      /* return address of its call to work() */
  uint64_t rng;
};

static struct site g_sites[SITES] = {
    {"hold_200", 200u << 20, NULL, NULL, 0, NULL, 0},
    {"hold_50", 50u << 20, NULL, NULL, 0, NULL, 0},
    {"hold_10", 10u << 20, NULL, NULL, 0, NULL, 0},
    {"hold_1", 1u << 20, NULL, NULL, 0, NULL, 0},
};

static volatile int g_stop;

static uint64_t next(uint64_t* x) {
  *x ^= *x << 13;
  *x ^= *x >> 7;
  *x ^= *x << 17;
  return *x;
}

static double uniform(uint64_t* x) { return (double)(next(x) >> 11) * 0x1.0p-53; }

static size_t draw_size(uint64_t* x) {
  return (size_t)(MIN_BLOCK * pow(MAX_BLOCK / MIN_BLOCK, uniform(x)));
}

static void* zmap(size_t bytes) {
  void* m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return m == MAP_FAILED ? NULL : m;
}

/* A block of `size` bytes, taken one of three ways. */
static char* take(size_t size, uint64_t* x) {
  char* p = NULL;
  switch (next(x) % 4) {
    case 0:
      p = calloc(1, size);
      break;
    case 1: {
      /* Grown as a vector grows: every step a free and an allocation to
       * the sampler, the last size the one that stays. */
      size_t have = size / 8 > 0 ? size / 8 : 1;
      p = malloc(have);
      while (p != NULL && have < size) {
        have = have * 2 < size ? have * 2 : size;
        char* q = realloc(p, have);
        if (q == NULL) free(p);
        p = q;
      }
      break;
    }
    default:
      p = malloc(size);
  }
  if (p != NULL) memset(p, 1, size);
  return p;
}

/* The site's work, from its own function: build (mode 0) or replace
 * `rounds` pairs of blocks (mode 1). 0 when done, -1 on a failed allocation. */
SITE static int work(struct site* s, int mode, size_t rounds) {
  uint64_t* x = &s->rng;
  s->ret = __builtin_return_address(0);
  if (mode == 0) {
    size_t cap = s->truth / 64 + 16;
    s->p = zmap(cap * sizeof *s->p);
    s->size = zmap(cap * sizeof *s->size);
    if (s->p == NULL || s->size == NULL) return -1;
    size_t left = s->truth;
    while (left > 0) {
      size_t size = draw_size(x);
      if (size > left || left - size < (size_t)MIN_BLOCK) size = left;
      if (s->n == cap) return -1;
      s->p[s->n] = take(size, x);
      if (s->p[s->n] == NULL) return -1;
      s->size[s->n++] = size;
      left -= size;
    }
    return 0;
  }
  for (size_t r = 0; r < rounds && s->n >= 2; ++r) {
    const size_t i = next(x) % s->n;
    size_t j = next(x) % s->n;
    if (j == i) j = (i + 1) % s->n;
    const size_t a = s->size[i], b = s->size[j];
    if (next(x) % 2 == 0) {
      free(s->p[i]);
      free(s->p[j]);
      s->p[i] = take(b, x);
      s->p[j] = take(a, x);
    } else {
      char* pi = realloc(s->p[i], b);
      char* pj = pi != NULL ? realloc(s->p[j], a) : NULL;
      if (pi == NULL || pj == NULL) return -1;
      s->p[i] = pi;
      s->p[j] = pj;
      memset(pi, 2, b);
      memset(pj, 2, a);
    }
    if (s->p[i] == NULL || s->p[j] == NULL) return -1;
    s->size[i] = b;
    s->size[j] = a;
  }
  return 0;
}

SITE int hold_200(int mode, size_t rounds) {
  const int rc = work(&g_sites[0], mode, rounds);
  __asm__ volatile("" ::: "memory"); /* the call stays a call, not a jump */
  return rc;
}

SITE int hold_50(int mode, size_t rounds) {
  const int rc = work(&g_sites[1], mode, rounds);
  __asm__ volatile("" ::: "memory");
  return rc;
}

SITE int hold_10(int mode, size_t rounds) {
  const int rc = work(&g_sites[2], mode, rounds);
  __asm__ volatile("" ::: "memory");
  return rc;
}

SITE int hold_1(int mode, size_t rounds) {
  const int rc = work(&g_sites[3], mode, rounds);
  __asm__ volatile("" ::: "memory");
  return rc;
}

static int (*const g_hold[SITES])(int, size_t) = {hold_200, hold_50, hold_10, hold_1};

/* Each site's blocks replaced about twice over, site by site. */
static void* replace(void* arg) {
  (void)arg;
  for (int i = 0; i < SITES; ++i) {
    if (g_hold[i](1, g_sites[i].n) != 0) return (void*)1;
  }
  return NULL;
}

/* Short-lived blocks beside the held ones (16 B to 64 KiB, 32 live at a
 * time, a 1 ms pause every 256) until the live set is built and replaced. */
SITE static void* churn(void* arg) {
  uint64_t x = (uintptr_t)arg * 0x9E3779B97F4A7C15ull + 1;
  char* ring[32] = {0};
  const struct timespec pause_ns = {0, 1000 * 1000};
  for (unsigned k = 0; !g_stop; ++k) {
    const size_t size = 16 + (size_t)(next(&x) % (64 * 1024 - 16));
    free(ring[k % 32]);
    ring[k % 32] = malloc(size);
    if (ring[k % 32] != NULL) ring[k % 32][size - 1] = 1;
    if (k % 256 == 255) nanosleep(&pause_ns, NULL);
  }
  for (int i = 0; i < 32; ++i) free(ring[i]);
  return NULL;
}

static void wait_for_file(const char* path) {
  const struct timespec tick = {0, 10 * 1000 * 1000};
  while (access(path, F_OK) != 0) nanosleep(&tick, NULL);
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: live_set TRIGGER SEED PERIOD\n");
    return 2;
  }
  const uint64_t seed = strtoull(argv[2], NULL, 10);
  const double period = strtod(argv[3], NULL);
  if (period <= 0) {
    fprintf(stderr, "live_set: PERIOD must be positive\n");
    return 2;
  }
  for (int i = 0; i < SITES; ++i) {
    g_sites[i].rng = (seed + 1) * 0x9E3779B97F4A7C15ull + (uint64_t)i * 0xBF58476D1CE4E5B9ull;
    if (g_sites[i].rng == 0) g_sites[i].rng = 1;
  }
  printf("armed\n");
  fflush(stdout);
  wait_for_file(argv[1]);

  pthread_t churner, replacer;
  if (pthread_create(&churner, NULL, churn, (void*)(uintptr_t)(seed + 1)) != 0) return 1;
  for (int i = 0; i < SITES; ++i) {
    if (g_hold[i](0, 0) != 0) return 1;
  }
  void* failed = NULL;
  if (pthread_create(&replacer, NULL, replace, NULL) != 0) return 1;
  pthread_join(replacer, &failed);
  g_stop = 1;
  pthread_join(churner, NULL);
  if (failed != NULL) return 1;
  for (int i = 0; i < SITES; ++i) {
    const struct site* s = &g_sites[i];
    double var = 0;
    size_t sum = 0;
    for (size_t k = 0; k < s->n; ++k) {
      const double b = (double)s->size[k];
      const double p = -expm1(-b / period);
      var += b * b * (1 - p) / p;
      sum += s->size[k];
    }
    printf("site %s %#lx %zu %.0f\n", s->name, (unsigned long)(uintptr_t)s->ret, sum, var);
  }
  printf("ready\n");
  fflush(stdout);
  for (;;) pause();
}
