/*
 * The allocation sampler's shared state, for its own files only (the rest of
 * the agent sees agent_sampler.h): the stack table's rows, the per-thread
 * countdown, and the switches and counters that "sampling on|off" sets and
 * "sites" reads. Defined in sampler_control.c (t_state: sampler_hooks.c).
 */
#ifndef MEMTRIMD_AGENT_SAMPLER_STATE_H
#define MEMTRIMD_AGENT_SAMPLER_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "agent_got.h"
#include "live_table.h"

#define STACK_ROWS 4096u
#define STACK_PROBES 32
#define MAX_FRAMES 32
#define OBJ_ONE 65536.0 /* objects in 16.16 fixed point */
/* After a dlopen, sampled allocations run a GOT pass at most this often, for
 * this long (agent_got.c: the hook cannot run after the real dlopen). */
#define REPATCH_EVERY_NS 10000000ull
#define REPATCH_WINDOW_NS 1000000000ull
#define REPATCH_EAGER_NS 20000000ull      /* the first 20 ms of the window */
#define REPATCH_EAGER_EVERY_NS 1000000ull /* a pass at most every 1 ms then */
/* While on, the socket task checks the lease and the budget this often
 * (agent_sampler_tick). */
#define SAMPLER_TICK_MS 250u

struct stack_row {
  uint64_t tag;   /* 0 empty, else generation << 32 | (hash | 1) */
  uint32_t ready; /* the generation, once the frames are written */
  uint32_t nframes;
  int64_t live_samples, live_bytes, live_objects;
  int64_t alloc_samples, alloc_bytes, alloc_objects;
  uintptr_t frames[MAX_FRAMES];
};

_Static_assert(sizeof(struct stack_row) == 320, "stack row size");
_Static_assert(STACK_ROWS <= (1u << 16), "a live slot keeps its row in 16 bits");
/* The sampler's one mapping: the live table and its filter, then the rows. */
#define SAMPLER_MAP_BYTES (LIVE_TABLE_BYTES + STACK_ROWS * sizeof(struct stack_row))
_Static_assert(SAMPLER_MAP_BYTES <= (4u << 20), "the sampler's tables must stay within 4 MiB");

struct thread_state {
  int64_t countdown;
  uint64_t rng;
  uint64_t period; /* the period countdown was drawn at: its samples' weight */
  uint32_t gen;    /* the generation countdown was drawn for */
  uint32_t busy;
};
extern __thread struct thread_state t_state __attribute__((tls_model("initial-exec")));

extern int g_on;
extern uint32_t g_gen;
extern uint64_t g_period;      /* in force: g_base_period, or raised by the budget */
extern uint64_t g_base_period; /* the T of "sampling on" */
extern uint64_t g_max_rate;    /* samples per second at most; 0: no bound */
extern uint64_t g_raised;      /* times the budget raised the period since "on" */
extern uint64_t g_lease_ns;    /* how long "on" lasts without a read */
extern uint64_t g_lease_until; /* CLOCK_MONOTONIC ns; 0 while off */
extern uint64_t g_lease_ended; /* times the lease turned sampling off (since load) */
extern uint64_t g_started_ns;
extern uint64_t g_samples, g_dropped_live, g_dropped_stacks;
extern int64_t g_live;
extern unsigned g_hooked_objects, g_hooked_entries;
extern unsigned g_hooked_now;       /* entries still hooked after the last "off" */
extern unsigned g_unhooked_objects; /* got_result.unhooked_objects of the last pass */
extern int g_opted_out;
extern size_t g_map_bytes;
extern struct stack_row* g_rows;
extern uint64_t g_seen_dlopens, g_repatch_until, g_repatch_next;
extern int g_on_pid; /* the process that turned sampling on */
extern struct got_hook g_hooks[11];
extern size_t g_nhooks;

#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
#define ADD(x, v) __atomic_fetch_add(&(x), (v), __ATOMIC_RELAXED)

/* A GOT pass's counts, for "sampling on" and "sites" (sampler_control.c). */
void sampler_store_pass(const struct got_result* r);

/* CLOCK_MONOTONIC in nanoseconds (sampler_control.c). */
uint64_t sampler_now_ns(void);

/* sampler_countdown.c: bytes until this thread's next sample, exponential
 * with mean t->period, at least 1. */
int64_t countdown_draw(struct thread_state* t);

/* stack_table.c: the row of this stack (claimed if new), or 0 ("[stack
 * table full]", counted in g_dropped_stacks). */
uint32_t stack_row_of(const uintptr_t* pcs, int n, uint32_t gen);

#endif
