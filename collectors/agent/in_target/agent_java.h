/*
 * Java frames above a sampled allocation in a JVM (agent_java.c; why the
 * walk is safe and what it costs: docs/java-frames.md). The sampler's stack
 * rows hold them after the native frames, each encoded as one word
 * (AGENT_JAVA_FRAME_TAG in agent_protocol.h: tag, bytecode index, method
 * id), so stacks that differ only in their Java callers are rows of their
 * own.
 */
#ifndef MEMTRIMD_AGENT_JAVA_H
#define MEMTRIMD_AGENT_JAVA_H

#include <stddef.h>
#include <stdint.h>

#include "agent_out.h"

/* In the constructor (getenv is only safe before main):
 * MEMTRIMD_AGENT_JAVA_FRAMES=0 (or MEMTRIMD_AGENT_JVM=0) keeps Java frames
 * off for good. */
void agent_java_configure(void);

/* On the agent thread, at "sampling on" and at "sites" (a JVM still
 * starting at "on" is set up at a later read): `want` is the request's
 * java= option. In a JVM, the first time it is wanted: one JVMTI
 * environment, ClassLoad and ClassPrepare events, method ids for every
 * loaded class, AsyncGetCallTrace found; then the hooks walk. Not wanted:
 * the hooks stop walking (the environment stays: it cannot be taken back
 * cheaply, docs/java-frames.md). Nothing at all outside a JVM. */
void agent_java_start(int want);

/* At "off" (and a lease's end), on the agent thread: ClassLoad and
 * ClassPrepare off again, so a JVM memtrimd no longer samples pays nothing
 * per class it loads; the JVMTI environment itself stays (its method ids
 * must stay valid for the stacks recorded), and the next "on" turns the
 * events back on and makes the ids of the classes loaded meanwhile. */
void agent_java_stop(void);

/* Whether the hooks walk Java frames now (relaxed load). */
extern int g_java_walk;

/* In the sample path only (a hook, with the thread's busy flag set): the
 * calling thread's Java frames, innermost first, encoded into out[0..room),
 * if it is a Java thread in native or VM state; the count (0: none). No
 * malloc, no lock. */
int agent_java_walk(uintptr_t* out, int room);

/* On the agent thread, building "sites": the head's java_* keys other than
 * java_names. */
void agent_java_head(struct out* head);

/* On the agent thread, building "sites": one "java" line for each distinct
 * Java frame among the `n` frames given (repeats are skipped), appended to
 * `o` while it has room. `begin` starts an answer (forgets the frames seen);
 * `end` attaches nothing and returns the lines written. Between the two,
 * the thread is attached to the JVM. */
void agent_java_names_begin(void);
void agent_java_names_add(const uintptr_t* frames, uint32_t n, struct out* o);
uint64_t agent_java_names_end(void);

#endif
