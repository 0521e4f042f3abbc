/*
 * The agent's allocation sampler: malloc-family calls sampled by bytes,
 * their stacks, and the sampled allocations still live (sampler_hooks.c;
 * sampler_control.c, sampler_countdown.c, stack_table.c, live_table.c,
 * sites_encoder.c).
 * memtrimd turns it on and off and reads it through the agent's socket
 * ("sampling on <T>", "sampling off", "sites": agent_protocol.h).
 */
#ifndef MEMTRIMD_AGENT_SAMPLER_H
#define MEMTRIMD_AGENT_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

#include "agent_out.h"

/* In the constructor, on the loading thread (dlsym may malloc): the real
 * functions the program's calls bind to, and MEMTRIMD_AGENT_SAMPLING. */
void agent_sampler_init(void);

/* On the agent thread. Each writes a whole answer ("<status>\n<body>") to
 * `o`. */
void agent_sampler_on(const char* request, struct out* o);
void agent_sampler_off(struct out* o);
/* "ping"'s sampler keys: sampling (0/1), the period in force, the lease
 * left. */
void agent_sampler_ping(struct out* o);
/* A read of the sites: the lease runs again from now (while on). */
void agent_sampler_renew(void);
/* On the socket task, between connections (now_ms: CLOCK_MONOTONIC): ends
 * sampling when its lease ran out, and moves the period to keep the budget.
 * Atomics only (no lock, no TLS, no system call). The milliseconds until it
 * wants to run again, or -1 while off (nothing to watch). */
int64_t agent_sampler_tick(int64_t now_ms);
/* The key=value lines go to `head`, the stack lines to tail (at most
 * tail_cap bytes; *tail_len set); with `live` ("sites live"), the live
 * samples' lines after them. */
void agent_sampler_sites(struct out* head, char* tail, size_t tail_cap, size_t* tail_len, int live);

#endif
