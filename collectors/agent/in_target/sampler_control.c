/*
 * Turning the sampler on and off ("sampling on <T>", "sampling off": see
 * agent_protocol.h), and the sampler's shared state (sampler_state.h).
 * "on" after "off", or with another T, starts from empty tables
 * (MADV_DONTNEED gives the pages back). A hook in flight across the switch
 * writes rows tagged with the old generation: they are skipped in "sites"
 * and reclaimed by later inserts and frees.
 *
 * The lease: "on" lasts lease_s seconds from the last "on" or "sites", then
 * the socket task turns the sampler off by itself (agent_sampler_tick), so
 * a memtrimd that was killed, or whose node agent is gone, costs the program
 * nothing after that. memtrimd renews it with every read of its sites.
 *
 * The budget: at most max_rate samples a second. Every SAMPLER_TICK_MS the
 * socket task counts the samples since the last tick; above the budget it
 * raises the period in force in proportion (with a quarter of headroom, so
 * one raise usually settles it), and while the rate stays under a quarter
 * of the budget it halves the period back, never below the T asked for.
 * async-profiler and Go pick a fixed mean per process; here the program's
 * own allocation rate picks it, so the cost has a bound whatever the
 * program does.
 */
#define _GNU_SOURCE

#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "agent_got.h"
#include "agent_java.h"
#include "agent_sampler.h"
#include "collectors/agent/agent_protocol.h"
#include "sampler_state.h"

int g_on;
uint32_t g_gen;
uint64_t g_period;
uint64_t g_base_period;
uint64_t g_max_rate;
uint64_t g_raised;
uint64_t g_lease_ns;
uint64_t g_lease_until;
uint64_t g_lease_ended;
uint64_t g_started_ns;
uint64_t g_samples, g_dropped_live, g_dropped_stacks;
int64_t g_live;
unsigned g_hooked_objects, g_hooked_entries;
unsigned g_unhooked_objects;
int g_opted_out;
size_t g_map_bytes;
struct stack_row* g_rows;
uint64_t g_seen_dlopens, g_repatch_until, g_repatch_next;
int g_on_pid;
unsigned g_hooked_now; /* entries still holding a hook after the last unpatch */
struct got_hook g_hooks[11];
size_t g_nhooks;

static void* g_map;
/* The socket task's last tick: when, and g_samples then (its own). */
static uint64_t g_tick_at, g_tick_samples;
/* The dlopen count the socket task's last pass covered. */
static uint64_t g_tick_dlopens;

uint64_t sampler_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void sampler_store_pass(const struct got_result* r) {
  STORE(g_hooked_objects, r->objects);
  STORE(g_hooked_entries, r->entries);
  STORE(g_unhooked_objects, r->unhooked_objects);
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
  put_kv(o, "period", g_base_period);
  put_kv(o, "generation", LOAD(g_gen));
  put_kv(o, "hooked_objects", LOAD(g_hooked_objects));
  put_kv(o, "hooked_entries", LOAD(g_hooked_entries));
  put_kv(o, "unhooked_objects", LOAD(g_unhooked_objects));
  put_kv(o, "lease_s", g_lease_ns / 1000000000u);
  put_kv(o, "max_rate", g_max_rate);
}

/* Decimal digits only, at most `max`; else -1. */
static int64_t parse_decimal(const char* text, size_t len, uint64_t max) {
  uint64_t v = 0;
  if (len == 0) {
    return -1;
  }
  for (size_t i = 0; i < len; ++i) {
    if (text[i] < '0' || text[i] > '9' || v > max) {
      return -1;
    }
    v = v * 10 + (uint64_t)(text[i] - '0');
  }
  return v <= max ? (int64_t)v : -1;
}

struct on_request {
  uint64_t period;
  uint64_t lease_s;
  uint64_t max_rate;
  uint64_t java; /* 1: Java frames in a JVM (agent_java.c) */
};

/* "<T>[ lease=<s>][ max_rate=<n>][ java=<0|1>]" (agent_protocol.h). 0 when
 * well formed. */
static int parse_on(const char* text, struct on_request* r) {
  r->lease_s = AGENT_SAMPLING_DEFAULT_LEASE_S;
  r->max_rate = AGENT_SAMPLING_DEFAULT_MAX_RATE;
  r->java = 1;
  const char* end = strchr(text, ' ');
  const size_t len = end != NULL ? (size_t)(end - text) : strlen(text);
  const int64_t period = parse_decimal(text, len, AGENT_SAMPLING_MAX_PERIOD);
  if (period < (int64_t)AGENT_SAMPLING_MIN_PERIOD) {
    return -1;
  }
  r->period = (uint64_t)period;
  while (end != NULL) {
    const char* word = end + 1;
    end = strchr(word, ' ');
    const size_t n = end != NULL ? (size_t)(end - word) : strlen(word);
    const size_t lease_len = sizeof AGENT_SAMPLING_LEASE - 1;
    const size_t rate_len = sizeof AGENT_SAMPLING_MAX_RATE - 1;
    const size_t java_len = sizeof AGENT_SAMPLING_JAVA - 1;
    int64_t v;
    if (n > lease_len && memcmp(word, AGENT_SAMPLING_LEASE, lease_len) == 0) {
      v = parse_decimal(word + lease_len, n - lease_len, AGENT_SAMPLING_MAX_LEASE_S);
      if (v < 1) {
        return -1;
      }
      r->lease_s = (uint64_t)v;
    } else if (n > rate_len && memcmp(word, AGENT_SAMPLING_MAX_RATE, rate_len) == 0) {
      v = parse_decimal(word + rate_len, n - rate_len, AGENT_SAMPLING_MAX_RATE_LIMIT);
      if (v < 0) {
        return -1;
      }
      r->max_rate = (uint64_t)v;
    } else if (n > java_len && memcmp(word, AGENT_SAMPLING_JAVA, java_len) == 0) {
      v = parse_decimal(word + java_len, n - java_len, 1);
      if (v < 0) {
        return -1;
      }
      r->java = (uint64_t)v;
    } else {
      return -1;
    }
  }
  return 0;
}

/* Off: every hook a pass-through at once, then the GOT entries put back
 * (agent_got_unpatch), so the program's calls no longer pass through the
 * agent at all. The counts of the last pass while on stay for "sites". */
static void turn_off(void) {
  STORE(g_lease_until, 0);
  agent_java_stop();
  struct got_result r;
  agent_got_unpatch(g_hooks, g_nhooks, &r);
  STORE(g_hooked_now, r.entries);
}

void agent_sampler_renew(void) {
  if (LOAD(g_on)) {
    STORE(g_lease_until, sampler_now_ns() + g_lease_ns);
  }
}

void agent_sampler_on(const char* request, struct out* o) {
  struct on_request req;
  if (parse_on(request, &req) != 0) {
    answer_error(o, "bad sampling period or option", NULL);
    return;
  }
  const uint64_t period = req.period;
  if (g_opted_out) {
    answer_error(o, "sampling disabled by MEMTRIMD_AGENT_SAMPLING=0 in the program's environment",
                 NULL);
    return;
  }
  if (g_nhooks == 0) {
    answer_error(o, "sampling unavailable: malloc and free were not found at load", NULL);
    return;
  }
  g_lease_ns = req.lease_s * 1000000000u;
  STORE(g_max_rate, req.max_rate);
  /* The setup's own allocations (JVMTI's, the method ids) are not the
   * program's to be sampled, also when the hooks are on already. */
  const uint32_t was_busy = t_state.busy;
  t_state.busy = 1;
  agent_java_start((int)req.java);
  t_state.busy = was_busy;
  if (LOAD(g_on) && period == g_base_period) {
    /* The same T: the lease renewed, the budget as asked, nothing reset. */
    agent_sampler_renew();
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
  STORE(g_period, period);
  g_base_period = period;
  STORE(g_raised, 0);
  g_tick_at = 0;
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
  g_tick_dlopens = agent_got_dlopen_calls();
  STORE(g_repatch_until, 0);
  struct got_result r;
  agent_got_patch(g_hooks, g_nhooks, 1, &r);
  sampler_store_pass(&r);
  if (r.failed) {
    /* What was hooked already is put back. */
    turn_off();
    answer_error(o, "sampling unavailable: mprotect refused in ", r.why);
    return;
  }
  if (r.unfinished > 0) {
    STORE(g_repatch_until, sampler_now_ns() + REPATCH_WINDOW_NS);
  }
  STORE(g_lease_until, sampler_now_ns() + g_lease_ns);
  __atomic_store_n(&g_on, 1, __ATOMIC_RELEASE);
  put_on_body(o);
}

void agent_sampler_off(struct out* o) {
  const int was = __atomic_exchange_n(&g_on, 0, __ATOMIC_ACQ_REL);
  turn_off();
  put_str(o, "0\n");
  put_kv(o, "was_on", (uint64_t)(was != 0));
}

void agent_sampler_ping(struct out* o) {
  put_kv(o, "sampling", (uint64_t)(LOAD(g_on) != 0));
  put_kv(o, "period", LOAD(g_period));
  const uint64_t until = LOAD(g_lease_until), now = sampler_now_ns();
  put_kv(o, "lease_left_ms", LOAD(g_on) && until > now ? (until - now) / 1000000u : 0);
  put_kv(o, "hooked_now", LOAD(g_on) ? LOAD(g_hooked_entries) : LOAD(g_hooked_now));
}

/* Objects dlopen()ed since the last pass are patched from the socket task
 * too, within a tick, not only from the next allocation through a hook: that one
 * may never come from them (a library whose calls go straight to malloc
 * until its GOT is patched is unseen meanwhile: Temurin 25 loads libzip at
 * its first Deflater, whose zlib streams were half missed). The socket task
 * holds no loader lock, so it may wait for a pass. An object still being
 * loaded is tried again at the next tick. */
static void repatch_after_dlopen(void) {
  const uint64_t calls = agent_got_dlopen_calls();
  if (calls == g_tick_dlopens) {
    return;
  }
  struct got_result r;
  if (agent_got_patch(g_hooks, g_nhooks, 1, &r) == 0) {
    sampler_store_pass(&r);
    if (r.unfinished == 0) {
      g_tick_dlopens = calls;
    }
  }
}

/* One tick of the budget: the rate since the last tick moves the period. */
static void adapt(uint64_t now) {
  const uint64_t samples = LOAD(g_samples);
  if (g_tick_at == 0 || now <= g_tick_at || samples < g_tick_samples) {
    g_tick_at = now;
    g_tick_samples = samples;
    return;
  }
  const uint64_t dt = now - g_tick_at;
  if (dt < SAMPLER_TICK_MS * 1000000ull / 2) {
    return; /* too short a window to judge a rate by */
  }
  const double rate = (double)(samples - g_tick_samples) * 1e9 / (double)dt;
  g_tick_at = now;
  g_tick_samples = samples;
  const uint64_t max_rate = LOAD(g_max_rate);
  const uint64_t period = LOAD(g_period);
  if (max_rate == 0) {
    return;
  }
  if (rate > (double)max_rate) {
    double next = (double)period * rate / (double)max_rate * 1.25;
    if (next > (double)AGENT_SAMPLING_MAX_PERIOD) {
      next = (double)AGENT_SAMPLING_MAX_PERIOD;
    }
    if ((uint64_t)next > period) {
      STORE(g_period, (uint64_t)next);
      ADD(g_raised, 1);
    }
  } else if (period > g_base_period && rate * 4 < (double)max_rate) {
    const uint64_t half = period / 2;
    STORE(g_period, half > g_base_period ? half : g_base_period);
  }
}

int64_t agent_sampler_tick(int64_t now_ms) {
  if (!LOAD(g_on)) {
    return -1;
  }
  const uint64_t now = (uint64_t)now_ms * 1000000u;
  const uint64_t until = LOAD(g_lease_until);
  if (until != 0 && now >= until) {
    /* No memtrimd read the sites for a whole lease: off, every hook a
     * pass-through. */
    if (__atomic_exchange_n(&g_on, 0, __ATOMIC_ACQ_REL)) {
      ADD(g_lease_ended, 1);
    }
    turn_off();
    return -1;
  }
  repatch_after_dlopen();
  adapt(now);
  const uint64_t left_ms = until == 0 ? SAMPLER_TICK_MS : (until - now) / 1000000u + 1;
  return (int64_t)(left_ms < SAMPLER_TICK_MS ? left_ms : SAMPLER_TICK_MS);
}
