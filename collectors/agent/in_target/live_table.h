/*
 * The sampler's live table: the sampled allocations still live, with the
 * filter in front of it that keeps frees cheap (live_table.c). Lock-free;
 * used from every allocating thread through the hooks, and walked by the
 * agent thread. Plain C with no other part of the agent, so it is also
 * built on its own for memtrimd's unit tests.
 */
#ifndef MEMTRIMD_AGENT_LIVE_TABLE_H
#define MEMTRIMD_AGENT_LIVE_TABLE_H

#include <stddef.h>
#include <stdint.h>

#define LIVE_SLOTS 65536u /* a power of two */
#define LIVE_PROBES 64
/* Counters in front of the live table, one byte each, indexed by another
 * part of the pointer's hash: every free while on looks here first, and the
 * 64 KiB stay in the CPU's cache where the 2 MiB table would not (a probe of
 * the table was a cache miss on nearly every free, most of the sampler's cost
 * in a malloc-bound program). 0: no sampled pointer of this hash is live. */
#define FILTER_SLOTS 65536u /* a power of two */
#define FILTER_FULL 255u    /* saturated: never decremented again (until a reset) */
#define LIVE_TOMBSTONE ((uintptr_t)1)
/* The largest size a slot keeps (48 bits); larger allocations keep this. */
#define LIVE_SIZE_MAX ((UINT64_C(1) << 48) - 1)

/* One slot: 32 bytes. The allocation's size shares a word with the stack
 * row (16 bits are enough for the stack table's rows). */
struct live_slot {
  uintptr_t key; /* 0 empty, LIVE_TOMBSTONE, else the pointer */
  int64_t bytes; /* unbiased weights of the sample */
  uint32_t objects;
  uint32_t gen;
  uint64_t size : 48; /* the allocation's size as the program asked for it */
  uint64_t row : 16;
};

#ifdef __cplusplus
static_assert(sizeof(struct live_slot) == 32, "live slot size");
extern "C" {
#else
_Static_assert(sizeof(struct live_slot) == 32, "live slot size");
#endif

/* The bytes the table and its filter take (one mapping, table first). */
#define LIVE_TABLE_BYTES (LIVE_SLOTS * sizeof(struct live_slot) + FILTER_SLOTS)

/* A sampled allocation still live, as live_table_each reports it. */
struct live_sample {
  uintptr_t ptr;
  uint64_t size;
  int64_t bytes;
  uint32_t objects;
  uint32_t row;
  uint32_t gen;
};

/* Called with each sample taken out of the table (freed, or found again at
 * an insert because its free was not seen), with the caller's `arg`. */
typedef void (*live_gone_fn)(const struct live_sample* s, void* arg);

/* The table's memory: LIVE_TABLE_BYTES of zeroes (an anonymous mapping; a
 * reset is MADV_DONTNEED of it). */
void live_table_attach(void* memory);

/* Records a sample of `size` bytes at p. 1 when it was recorded, 0 when no
 * slot was found within LIVE_PROBES (the caller counts it as dropped). */
int live_table_insert(uintptr_t p, uint64_t size, int64_t bytes, uint32_t objects, uint32_t row,
                      uint32_t gen, live_gone_fn gone, void* arg);

/* Before the real free: the pointer's sample, if any, is no longer live
 * (`gone` is told). While no sampled pointer with its hash is live this
 * reads one byte of the filter and returns. */
void live_table_remove(uintptr_t p, live_gone_fn gone, void* arg);

/* Calls `cb` for each live sample (of any generation), in slot order. A
 * snapshot of each slot, taken while hooks may run. */
void live_table_each(void (*cb)(const struct live_sample* s, void* arg), void* arg);

#ifdef __cplusplus
}
#endif

#endif
