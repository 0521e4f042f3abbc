/*
 * _exit and _Exit: the program's own, replaced so that a program that ends
 * through them leaves no socket file behind.
 *
 * Shells end with _exit (every `sh -c` that kubectl exec or podman exec
 * starts, in a container whose environment holds LD_PRELOAD), and so do
 * forked children and programs that skip atexit on purpose. exit() runs the
 * library's destructor, _exit does not: without these, each such process
 * left /tmp/.memtrimd_agent.<pid>.<start> for good.
 *
 * Each removes the socket file (agent_sock_remove: only in the process that
 * bound it, so a vfork or fork child calling _exit, as they must, never
 * removes its parent's), then ends the process as glibc's _exit does, with
 * exit_group. Both may be called from a signal handler: nothing here takes a
 * lock, allocates or touches errno (raw system calls only, agent_sys.h).
 * Only a preload puts them in front of glibc's; in a JVM the library is
 * loaded later, without interposing, and memtrimd's sweep removes what a JVM
 * that ends without exit() leaves.
 */
#define _GNU_SOURCE

#include <stdlib.h>
#include <unistd.h>

#include "agent_sock.h"
#include "agent_sys.h"

static __attribute__((noreturn)) void end_process(int status) {
  agent_sock_remove();
  for (;;) {
    SYS1(SYS_exit_group, status);
  }
}

/* Exported (the rest of the library is hidden): these replace glibc's. */
__attribute__((visibility("default"), noreturn)) void _exit(int status) { end_process(status); }

__attribute__((visibility("default"), noreturn)) void _Exit(int status) { end_process(status); }
