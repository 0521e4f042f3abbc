/*
 * The live table (live_table.h): open addressing of the sampled allocations
 * still live, {pointer, weights, size, stack, generation}, 65,536 slots of
 * 32 bytes (2 MiB). A slot is claimed with a CAS on its key, freed slots
 * become tombstones that inserts reuse, probes stop after LIVE_PROBES slots
 * (an insert that finds no slot is dropped). free, realloc and reallocarray
 * take the pointer out BEFORE the real call (after it another thread may get
 * the same address from malloc and insert it first). While on, every free
 * reads the filter, and probes the table only when the filter says a
 * sampled pointer with its hash is live; while off nothing does.
 */
#include "live_table.h"

static struct live_slot* g_slots;
static uint8_t* g_filter;

void live_table_attach(void* memory) {
  g_slots = memory;
  g_filter = (uint8_t*)memory + LIVE_SLOTS * sizeof(struct live_slot);
}

static uint32_t slot_of(uintptr_t p) {
  return (uint32_t)(((uint64_t)p * 0x9e3779b97f4a7c15ull) >> 48) & (LIVE_SLOTS - 1);
}

static uint8_t* filter_of(uintptr_t p) {
  return &g_filter[(uint32_t)(((uint64_t)p * 0x9e3779b97f4a7c15ull) >> 24) & (FILTER_SLOTS - 1)];
}

/* +1 or -1 on a filter counter, never past 0 or FILTER_FULL (a saturated one
 * stays: a free then probes the table, which is only slower). */
static void filter_step(uint8_t* c, int up) {
  uint8_t v = __atomic_load_n(c, __ATOMIC_RELAXED);
  for (;;) {
    if (v == FILTER_FULL || (!up && v == 0)) {
      return;
    }
    const uint8_t next = (uint8_t)(up ? v + 1 : v - 1);
    if (__atomic_compare_exchange_n(c, &v, next, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
      return;
    }
  }
}

static struct live_sample sample_of(const struct live_slot* s, uintptr_t key) {
  return (struct live_sample){key, s->size, s->bytes, s->objects, (uint32_t)s->row, s->gen};
}

void live_table_remove(uintptr_t p, live_gone_fn gone, void* arg) {
  uint8_t* counter = filter_of(p);
  if (__atomic_load_n(counter, __ATOMIC_ACQUIRE) == 0) {
    return; /* the common case: no sampled pointer like it is live */
  }
  const uint32_t start = slot_of(p);
  for (uint32_t i = 0; i < LIVE_PROBES; ++i) {
    struct live_slot* s = &g_slots[(start + i) & (LIVE_SLOTS - 1)];
    uintptr_t key = __atomic_load_n(&s->key, __ATOMIC_ACQUIRE);
    if (key == 0) {
      return; /* inserts never leave a gap before their slot */
    }
    if (key == p) {
      const struct live_sample copy = sample_of(s, key);
      if (__atomic_compare_exchange_n(&s->key, &key, LIVE_TOMBSTONE, 0, __ATOMIC_ACQ_REL,
                                      __ATOMIC_RELAXED)) {
        gone(&copy, arg);
        filter_step(counter, 0);
      }
      return;
    }
  }
}

int live_table_insert(uintptr_t p, uint64_t size, int64_t bytes, uint32_t objects, uint32_t row,
                      uint32_t gen, live_gone_fn gone, void* arg) {
  const uint32_t start = slot_of(p);
  for (int attempt = 0; attempt < 4; ++attempt) {
    struct live_slot* reuse = NULL;
    for (uint32_t i = 0; i < LIVE_PROBES; ++i) {
      struct live_slot* s = &g_slots[(start + i) & (LIVE_SLOTS - 1)];
      uintptr_t key = __atomic_load_n(&s->key, __ATOMIC_ACQUIRE);
      if (key == p) {
        /* Its free was not seen (a path no hook covers): the memory was
         * freed and handed out again; the old sample is gone. */
        const struct live_sample copy = sample_of(s, key);
        if (__atomic_compare_exchange_n(&s->key, &key, LIVE_TOMBSTONE, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED)) {
          gone(&copy, arg);
          filter_step(filter_of(p), 0);
          key = LIVE_TOMBSTONE;
        }
      }
      if (key == LIVE_TOMBSTONE && reuse == NULL) {
        reuse = s;
      }
      if (key == 0) {
        if (reuse == NULL) {
          reuse = s;
        }
        break;
      }
    }
    if (reuse == NULL) {
      break;
    }
    uintptr_t expected = __atomic_load_n(&reuse->key, __ATOMIC_ACQUIRE);
    if (expected != 0 && expected != LIVE_TOMBSTONE) {
      continue; /* taken meanwhile: look again */
    }
    /* Fields first: the pointer is not handed to the program (so cannot be
     * freed) before this returns, but "sites" and a reset may look. */
    /* Counted before the key is visible, so a free that finds the key also
     * finds the counter above 0. */
    filter_step(filter_of(p), 1);
    if (__atomic_compare_exchange_n(&reuse->key, &expected, p, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_RELAXED)) {
      reuse->bytes = bytes;
      reuse->objects = objects;
      reuse->size = size > LIVE_SIZE_MAX ? LIVE_SIZE_MAX : size;
      reuse->row = row;
      reuse->gen = gen;
      return 1;
    }
    filter_step(filter_of(p), 0);
  }
  return 0;
}

void live_table_each(void (*cb)(const struct live_sample* s, void* arg), void* arg) {
  for (uint32_t i = 0; g_slots != NULL && i < LIVE_SLOTS; ++i) {
    const struct live_slot* s = &g_slots[i];
    const uintptr_t key = __atomic_load_n(&s->key, __ATOMIC_ACQUIRE);
    if (key == 0 || key == LIVE_TOMBSTONE) {
      continue;
    }
    const struct live_sample copy = sample_of(s, key);
    cb(&copy, arg);
  }
}
