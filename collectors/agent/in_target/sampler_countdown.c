/*
 * The sampler's countdown: each thread counts down a number of bytes drawn
 * from an exponential with mean T, the period in force when it is drawn
 * (agent_sampler.h, sampler_hooks.c says why); the count and the random
 * state are the thread's own (TLS).
 */
#define _GNU_SOURCE

#include <math.h>
#include <unistd.h>

#include "sampler_state.h"

static uint64_t next_random(struct thread_state* t) {
  uint64_t x = t->rng; /* xorshift64* */
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  t->rng = x;
  return x * 0x2545f4914f6cdd1dull;
}

int64_t countdown_draw(struct thread_state* t) {
  if (t->rng == 0) {
    t->rng = ((uint64_t)gettid() << 32) ^ sampler_now_ns() ^ (uintptr_t)t;
    if (t->rng == 0) {
      t->rng = 0x9e3779b97f4a7c15ull;
    }
  }
  const double u = (double)((next_random(t) >> 11) + 1) * 0x1.0p-53; /* (0, 1] */
  return (int64_t)(-log(u) * (double)t->period) + 1;
}
