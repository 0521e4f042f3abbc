/*
 * The agent's socket task: every descriptor the agent ever holds lives in
 * this task's private descriptor table, never in the program's, and every
 * request reaches the agent pthread as a call (agent_sock.c says how and
 * why; memtrimd_agent.c has the protocol).
 */
#ifndef MEMTRIMD_AGENT_SOCK_H
#define MEMTRIMD_AGENT_SOCK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum agent_call_op {
  AGENT_CALL_PEER = 1,    /* may this client (uid) be answered? */
  AGENT_CALL_COMMAND = 2, /* run one request line */
};

/* One call from the socket task to the agent pthread. The socket task fills
 * op and uid or line; the handler fills the rest. */
struct agent_call {
  int op;
  uint32_t uid;     /* AGENT_CALL_PEER: the client's uid (SO_PEERCRED) */
  const char* line; /* AGENT_CALL_COMMAND: the request, without its '\n' */
  int allowed;      /* AGENT_CALL_PEER: nonzero to serve the client */
  /* AGENT_CALL_COMMAND: the whole answer is head, then tail (tail may be
   * NULL); both must stay valid until the next call. */
  const char* head;
  size_t head_len;
  const char* tail;
  size_t tail_len;
};

typedef void (*agent_handler_fn)(struct agent_call* call);

/* On the agent pthread: makes the socket task, which takes its private
 * table, closes what it inherited and binds the socket named by `tmpl`
 * ("" for the default; "%p" the pid, "%t" the start time) for process
 * `pid`. Setup complaints go to `err_fd` (the program's stderr, or -1).
 * Waits (bounded) for the setup: 0 when the socket is listening. */
int agent_sock_start(const char* tmpl, pid_t pid, int err_fd);

/* The socket path after a successful start. */
const char* agent_sock_path(void);

/* Removes the socket file, when the caller's process is the one that bound
 * it and it is listening; else nothing. Async-signal-safe (raw system calls
 * on static state): called from the library's _exit and at exit. */
void agent_sock_remove(void);

/* The socket task's id (for tests and debuggers: it is named
 * "memtrimd-sock"); 0 before a start. */
pid_t agent_sock_tid(void);

/* On the agent pthread, after a successful start: runs `handler` for each
 * call of the socket task, one at a time, for good. */
void agent_sock_serve(agent_handler_fn handler);

/* On the agent pthread, inside the handler: has the socket task read up to
 * cap - 1 bytes of the file `path` from `offset` into buf (NUL-terminated).
 * The bytes read, or a negative errno value. */
long agent_sock_read(const char* path, uint64_t offset, char* buf, size_t cap);

/* "memtrimd_agent: not started: <what>[: <err's text>]\n" on `fd` (if >= 0),
 * with a raw write: callable from either task. */
void agent_complain(int fd, const char* what, int err);

#endif
