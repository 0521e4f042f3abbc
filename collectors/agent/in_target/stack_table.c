/*
 * The sampler's stack table: 4,096 rows of 320 bytes (1.25 MiB), stacks
 * deduplicated by a hash of their frames (lock-free insert: CAS on the row's
 * tag), each with atomic counters: live samples, bytes and objects,
 * allocated samples, bytes and objects (bytes and objects unbiased; objects
 * in 16.16 fixed point). Row 0 is "[stack table full]", where a sample goes
 * when its stack finds no row (dropped_stacks). Rows tagged with an earlier
 * generation are skipped by "sites" and reclaimed by later inserts.
 */
#include <string.h>

#include "sampler_state.h"

static uint32_t hash_frames(const uintptr_t* pcs, int n) {
  uint64_t h = 0x84222325cbf29ce4ull;
  for (int i = 0; i < n; ++i) {
    h ^= pcs[i];
    h *= 0x9e3779b97f4a7c15ull;
    h ^= h >> 29;
  }
  return (uint32_t)(h ^ (h >> 32));
}

uint32_t stack_row_of(const uintptr_t* pcs, int n, uint32_t gen) {
  const uint32_t h = hash_frames(pcs, n);
  const uint64_t tag = (uint64_t)gen << 32 | (h | 1u);
  for (uint32_t i = 0; i < STACK_PROBES; ++i) {
    const uint32_t at = 1 + (h + i) % (STACK_ROWS - 1);
    struct stack_row* r = &g_rows[at];
    uint64_t seen = __atomic_load_n(&r->tag, __ATOMIC_ACQUIRE);
    if (seen == tag) {
      /* Frames not yet written by the thread that claimed it: look on (at
       * worst the stack gets a second row). */
      if (__atomic_load_n(&r->ready, __ATOMIC_ACQUIRE) == gen && r->nframes == (uint32_t)n &&
          memcmp(r->frames, pcs, (size_t)n * sizeof *pcs) == 0) {
        return at;
      }
      continue;
    }
    if (seen != 0 && (uint32_t)(seen >> 32) == gen) {
      continue;
    }
    /* Empty, or left by an earlier generation: claim it. */
    if (__atomic_compare_exchange_n(&r->tag, &seen, tag, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
      STORE(r->live_samples, 0);
      STORE(r->live_bytes, 0);
      STORE(r->live_objects, 0);
      STORE(r->alloc_samples, 0);
      STORE(r->alloc_bytes, 0);
      STORE(r->alloc_objects, 0);
      memcpy(r->frames, pcs, (size_t)n * sizeof *pcs);
      r->nframes = (uint32_t)n;
      __atomic_store_n(&r->ready, gen, __ATOMIC_RELEASE);
      return at;
    }
    if (seen == tag) {
      --i; /* another thread claimed it for a stack with this hash: look again */
    }
  }
  ADD(g_dropped_stacks, 1);
  return 0;
}
