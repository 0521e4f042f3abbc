/*
 * The "sites" answer (agent_protocol.h): the sampler's counters, then one
 * line per stack of this generation that was sampled, and for "sites live"
 * one line per live sample of those stacks, encoded without malloc into the
 * caller's buffers.
 */
#include <string.h>

#include "agent_got.h"
#include "agent_java.h"
#include "agent_sampler.h"
#include "collectors/agent/agent_protocol.h"
#include "sampler_state.h"

static uint64_t clamp(int64_t v) { return v < 0 ? 0 : (uint64_t)v; }

/* Each row's index among the stack lines of the answer being built, or
 * NOT_LISTED (the agent thread only: one answer at a time). */
#define NOT_LISTED UINT32_MAX
static uint32_t g_listed_as[STACK_ROWS];

struct live_walk {
  struct out* o;
  uint32_t gen;
  uint64_t seen, listed;
  int full;
};

/* One "live" line per sample of this generation whose stack was listed;
 * once one does not fit, the rest are only counted. */
static void put_live(const struct live_sample* s, void* arg) {
  struct live_walk* w = arg;
  if (s->gen != w->gen || s->row >= STACK_ROWS || g_listed_as[s->row] == NOT_LISTED) {
    return;
  }
  ++w->seen;
  if (w->full) {
    return;
  }
  char line[8 + 4 * 24];
  struct out l = {line, 0, sizeof line, 0};
  put_str(&l, AGENT_SITES_LIVE " ");
  put_u64(&l, g_listed_as[s->row]);
  put_str(&l, " ");
  put_hex(&l, s->ptr);
  put_str(&l, " ");
  put_u64(&l, s->size);
  put_str(&l, " ");
  put_u64(&l, clamp(s->bytes));
  put_str(&l, "\n");
  if (l.overflow || w->o->len + l.len > w->o->cap) {
    w->full = 1;
    return;
  }
  memcpy(w->o->p + w->o->len, line, l.len);
  w->o->len += l.len;
  ++w->listed;
}

void agent_sampler_sites(struct out* head, char* tail, size_t tail_cap, size_t* tail_len,
                         int live) {
  /* memtrimd still reads: the lease runs again from now. */
  agent_sampler_renew();
  const int on = LOAD(g_on);
  const uint32_t gen = __atomic_load_n(&g_gen, __ATOMIC_ACQUIRE);
  if (on && agent_got_dlopen_calls() != LOAD(g_seen_dlopens)) {
    /* Objects loaded since the last pass: hook them now (the agent thread
     * may wait for a pass; it holds no loader lock). */
    STORE(g_seen_dlopens, agent_got_dlopen_calls());
    struct got_result r;
    agent_got_patch(g_hooks, g_nhooks, 1, &r);
    sampler_store_pass(&r);
  }
  struct out stacks = {tail, 0, tail_cap, 0};
  unsigned listed = 0;
  int truncated = 0;
  for (uint32_t i = 0; i < STACK_ROWS; ++i) {
    g_listed_as[i] = NOT_LISTED;
  }
  for (uint32_t i = 0; g_rows != NULL && i < STACK_ROWS && !truncated; ++i) {
    const struct stack_row* r = &g_rows[i];
    if ((uint32_t)(__atomic_load_n(&r->tag, __ATOMIC_ACQUIRE) >> 32) != gen ||
        __atomic_load_n(&r->ready, __ATOMIC_ACQUIRE) != gen) {
      continue;
    }
    const int64_t alloc_samples = LOAD(r->alloc_samples);
    if (alloc_samples <= 0) {
      continue;
    }
    char line[64 + 7 * 24 + MAX_FRAMES * 17];
    struct out l = {line, 0, sizeof line, 0};
    put_str(&l, AGENT_SITES_STACK " ");
    put_u64(&l, clamp(LOAD(r->live_samples)));
    put_str(&l, " ");
    put_u64(&l, clamp(LOAD(r->live_bytes)));
    put_str(&l, " ");
    put_u64(&l, (clamp(LOAD(r->live_objects)) + 32768) >> 16);
    put_str(&l, " ");
    put_u64(&l, (uint64_t)alloc_samples);
    put_str(&l, " ");
    put_u64(&l, clamp(LOAD(r->alloc_bytes)));
    put_str(&l, " ");
    put_u64(&l, (clamp(LOAD(r->alloc_objects)) + 32768) >> 16);
    const uint32_t n = i == 0 ? 0 : r->nframes;
    for (uint32_t f = 0; f < n && f < MAX_FRAMES; ++f) {
      put_str(&l, " ");
      put_hex(&l, r->frames[f]);
    }
    put_str(&l, "\n");
    if (stacks.len + l.len > stacks.cap) {
      truncated = 1; /* the list ends here; the head says so */
      break;
    }
    memcpy(stacks.p + stacks.len, line, l.len);
    stacks.len += l.len;
    g_listed_as[i] = listed;
    ++listed;
  }
  struct live_walk walk = {&stacks, gen, 0, 0, 0};
  if (live && g_rows != NULL) {
    live_table_each(put_live, &walk);
  }
  /* The listed stacks' Java frames named, after everything else. The JVM
   * allocates for the names on this thread: not the program's memory, so
   * not sampled. */
  const uint32_t was_busy = t_state.busy;
  t_state.busy = 1;
  agent_java_names_begin();
  for (uint32_t i = 0; g_rows != NULL && i < STACK_ROWS; ++i) {
    if (g_listed_as[i] != NOT_LISTED && i != 0) {
      const struct stack_row* r = &g_rows[i];
      agent_java_names_add(r->frames, r->nframes < MAX_FRAMES ? r->nframes : MAX_FRAMES, &stacks);
    }
  }
  const uint64_t java_names = agent_java_names_end();
  t_state.busy = was_busy;
  *tail_len = stacks.len;
  put_str(head, "0\n");
  put_kv(head, "on", (uint64_t)(on != 0));
  put_kv(head, "period", LOAD(g_period));
  put_kv(head, "base_period", g_base_period);
  put_kv(head, "max_rate", LOAD(g_max_rate));
  put_kv(head, "raised", LOAD(g_raised));
  put_kv(head, "lease_s", g_lease_ns / 1000000000u);
  const uint64_t until = LOAD(g_lease_until), now = sampler_now_ns();
  put_kv(head, "lease_left_ms", on && until > now ? (until - now) / 1000000u : 0);
  put_kv(head, "lease_ended", LOAD(g_lease_ended));
  put_kv(head, "generation", gen);
  put_kv(head, "started_ns", g_started_ns);
  put_kv(head, "samples", LOAD(g_samples));
  put_kv(head, "live_samples", clamp(LOAD(g_live)));
  put_kv(head, "dropped_live", LOAD(g_dropped_live));
  put_kv(head, "dropped_stacks", LOAD(g_dropped_stacks));
  put_kv(head, "sampler_bytes", g_map_bytes);
  put_kv(head, "hooked_objects", LOAD(g_hooked_objects));
  put_kv(head, "hooked_entries", LOAD(g_hooked_entries));
  put_kv(head, "unhooked_objects", LOAD(g_unhooked_objects));
  if (truncated) {
    put_kv(head, "truncated", 1);
  }
  put_kv(head, "stacks", listed);
  if (live) {
    put_kv(head, "live_seen", walk.seen);
    put_kv(head, "live_listed", walk.listed);
  }
  agent_java_head(head);
  put_kv(head, "java_names", java_names);
}
