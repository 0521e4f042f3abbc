/*
 * The agent's "jvm_buffers" command: the JVM's buffer pool figures, read
 * with JNI field reads when libmemtrimd_agent.so is preloaded into a JVM
 * (see agent_jvm.c).
 */
#ifndef MEMTRIMD_AGENT_JVM_H
#define MEMTRIMD_AGENT_JVM_H

#include <stddef.h>

/* Reads MEMTRIMD_AGENT_JVM from the environment; call from the constructor
 * (getenv is only safe before main). "0" switches the JNI reads off. */
void agent_jvm_configure(void);

/* Writes the "key=value\n" body of a status-0 answer into buf (at most cap
 * bytes) and returns its length; or returns -1 with a one-line reason in
 * why (NUL-terminated, at most why_cap bytes). Runs on the agent thread. */
long agent_jvm_buffers(char* buf, size_t cap, char* why, size_t why_cap);

/* On the agent thread: the program's JavaVM* once it has finished starting,
 * or NULL with the reason (not a JVM, still starting, MEMTRIMD_AGENT_JVM=0).
 * The path of its libjvm.so after a JavaVM was found. */
void* agent_jvm_started_vm(char* why, size_t why_cap);
const char* agent_jvm_library(void);

#endif
