/*
 * Turning the sampler on and off ("sampling on <T>", "sampling off": see
 * agent_protocol.h), and the sampler's shared state (sampler_state.h).
 * "on" after "off", or with another T, starts from empty tables
 * (MADV_DONTNEED gives the pages back). A hook in flight across the switch
 * writes rows tagged with the old generation: they are skipped in "sites"
 * and reclaimed by later inserts and frees.
 */
#define _GNU_SOURCE

#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "agent_got.h"
#include "agent_sampler.h"
#include "collectors/agent/agent_protocol.h"
#include "sampler_state.h"

int g_on;
uint32_t g_gen;
uint64_t g_period;
double g_period_d;
uint64_t g_started_ns;
uint64_t g_samples, g_dropped_live, g_dropped_stacks;
int64_t g_live;
unsigned g_hooked_objects, g_hooked_entries;
int g_opted_out;
size_t g_map_bytes;
struct stack_row* g_rows;
uint64_t g_seen_dlopens, g_repatch_until, g_repatch_next;
int g_on_pid;
struct got_hook g_hooks[11];
size_t g_nhooks;

static void* g_map;

uint64_t sampler_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void answer_error(struct out* o, const char* why, const char* what) {
  o->len = 0;
  o->overflow = 0;
  put_str(o, "1\n");
  put_str(o, why);
  if (what != NULL) {
    put_str(o, what);
  }
  put_str(o, "\n");
}

static void put_on_body(struct out* o) {
  put_str(o, "0\n");
  put_kv(o, "period", g_period);
  put_kv(o, "generation", LOAD(g_gen));
  put_kv(o, "hooked_objects", LOAD(g_hooked_objects));
  put_kv(o, "hooked_entries", LOAD(g_hooked_entries));
}

/* T: decimal, 4096 <= T <= 1 GiB. 0 otherwise. */
static uint64_t parse_period(const char* text) {
  uint64_t v = 0;
  if (*text == '\0') {
    return 0;
  }
  for (const char* p = text; *p != '\0'; ++p) {
    if (*p < '0' || *p > '9' || v > AGENT_SAMPLING_MAX_PERIOD) {
      return 0;
    }
    v = v * 10 + (uint64_t)(*p - '0');
  }
  return v >= AGENT_SAMPLING_MIN_PERIOD && v <= AGENT_SAMPLING_MAX_PERIOD ? v : 0;
}

void agent_sampler_on(const char* period_text, struct out* o) {
  const uint64_t period = parse_period(period_text);
  if (period == 0) {
    answer_error(o, "bad sampling period", NULL);
    return;
  }
  if (g_opted_out) {
    answer_error(o, "sampling disabled by MEMTRIMD_AGENT_SAMPLING=0 in the program's environment",
                 NULL);
    return;
  }
  if (g_nhooks == 0) {
    answer_error(o, "sampling unavailable: malloc and free were not found at load", NULL);
    return;
  }
  if (LOAD(g_on) && period == g_period) {
    put_on_body(o);
    return;
  }
  if (g_map == NULL) {
    const size_t bytes = SAMPLER_MAP_BYTES;
    void* m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (m == MAP_FAILED) {
      answer_error(o, "sampling unavailable: mmap of its tables failed", NULL);
      return;
    }
    g_map = m;
    g_map_bytes = bytes;
    live_table_attach(m);
    g_rows = (struct stack_row*)((char*)m + LIVE_TABLE_BYTES);
  }
  /* Off, a new generation, empty tables, then on. Hooks still in flight
   * carry the old generation: their rows are skipped and reclaimed. */
  STORE(g_on, 0);
  g_period = period;
  g_period_d = (double)period;
  const uint32_t gen = LOAD(g_gen) + 1;
  __atomic_store_n(&g_gen, gen, __ATOMIC_RELEASE);
  madvise(g_map, g_map_bytes, MADV_DONTNEED);
  STORE(g_samples, 0);
  STORE(g_live, 0);
  STORE(g_dropped_live, 0);
  STORE(g_dropped_stacks, 0);
  g_rows[0].tag = (uint64_t)gen << 32 | 1u;
  __atomic_store_n(&g_rows[0].ready, gen, __ATOMIC_RELEASE);
  g_started_ns = sampler_now_ns();
  STORE(g_on_pid, (int)getpid());
  STORE(g_seen_dlopens, agent_got_dlopen_calls());
  STORE(g_repatch_until, 0);
  struct got_result r;
  agent_got_patch(g_hooks, g_nhooks, 1, &r);
  STORE(g_hooked_objects, r.objects);
  STORE(g_hooked_entries, r.entries);
  if (r.failed) {
    /* What is hooked already stays a pass-through. */
    answer_error(o, "sampling unavailable: mprotect refused in ", r.why);
    return;
  }
  if (r.unfinished > 0) {
    STORE(g_repatch_until, sampler_now_ns() + REPATCH_WINDOW_NS);
  }
  __atomic_store_n(&g_on, 1, __ATOMIC_RELEASE);
  put_on_body(o);
}

void agent_sampler_off(struct out* o) {
  const int was = __atomic_exchange_n(&g_on, 0, __ATOMIC_ACQ_REL);
  put_str(o, "0\n");
  put_kv(o, "was_on", (uint64_t)(was != 0));
}
