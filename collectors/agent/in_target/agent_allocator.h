/*
 * Which allocator serves the program's malloc, its own figures, and its own
 * release call, for the agent's "allocator" and "trim" commands (see
 * agent_allocator.c and the protocol at the top of memtrimd_agent.c).
 */
#ifndef MEMTRIMD_AGENT_ALLOCATOR_H
#define MEMTRIMD_AGENT_ALLOCATOR_H

#include <stddef.h>
#include <stdint.h>

#include "agent_out.h"

/* Decides the allocator once. Call from the constructor, on the loading
 * thread: dlsym and dladdr may malloc, and the agent thread must not. */
void agent_allocator_detect(void);

/* "glibc", "jemalloc", "tcmalloc", "mimalloc" or "unknown". */
const char* agent_allocator_name(void);

/* Whether the allocator is one the agent knows how to release (not
 * "unknown"). */
int agent_allocator_known(void);

/* The object that serves malloc (a path; newlines replaced). */
const char* agent_allocator_object(void);

/* The release call's name: "malloc_trim", "arena.4096.purge",
 * "ReleaseFreeMemory" or "mi_collect". */
const char* agent_allocator_call(void);

/* Writes the "allocator" body (allocator=, object=, the allocator's
 * figures) into o. Runs on the agent thread. */
void agent_allocator_stats(struct out* o);

/* The allocator's free-but-kept bytes (jemalloc dirty + muzzy, tcmalloc
 * page heap free) into *v; 0 when it has no such figure. Agent thread. */
int agent_allocator_free_kept(uint64_t* v);

/* mimalloc's committed bytes (mi_process_info's current commit) into *v; 0
 * under any other allocator. Agent thread. */
int agent_allocator_committed(uint64_t* v);

/* Runs the release call. 0 with *result (malloc_trim's return, 1 for the
 * others), or -1 with a one-line reason in why. Agent thread. */
int agent_allocator_release(int* result, char* why, size_t why_cap);

#endif
