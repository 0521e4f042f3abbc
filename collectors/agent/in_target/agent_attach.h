/*
 * libmemtrimd_agent.so loaded into a running JVM through its attach socket
 * ("load <path> true <options>": JVMTI's Agent_OnAttach), as memtrimd does
 * with --jvm.load-agent. See agent_attach.c.
 */
#ifndef MEMTRIMD_AGENT_ATTACH_H
#define MEMTRIMD_AGENT_ATTACH_H

/* Agent_OnAttach's return codes (AGENT_ATTACH_*) are part of the protocol. */
#include "collectors/agent/agent_protocol.h"

/* Whether a Java VM has been created in this process: this library was then
 * loaded into a running JVM (by the attach "load" command), not preloaded,
 * and starts from Agent_OnAttach rather than from its constructor. Only on
 * the loading thread (dlopen, dlsym). */
int agent_in_running_jvm(void);

/* Whether another file named libmemtrimd_agent.so is loaded in the process
 * (a preloaded one, or a copy loaded by an earlier memtrimd): the agent
 * runs once per process. */
int agent_other_copy_loaded(void);

/* Keeps this library loaded for good (RTLD_NODELETE): its two tasks never
 * end, so their code and stacks must stay mapped. 0 when pinned. */
int agent_pin_self(void);

/* The version in Agent_OnAttach's options ("version=<n>", from memtrimd),
 * or -1 when they name none. Pure. */
long agent_attach_version(const char* options);

/* memtrimd_agent.c: starts the agent's thread and socket task now; 0 once
 * serving, else AGENT_ATTACH_RUNNING or AGENT_ATTACH_FAILED. */
int agent_start_now(void);

#endif
