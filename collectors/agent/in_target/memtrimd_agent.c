/*
 * libmemtrimd_agent.so - lets memtrimd ask a glibc program, from outside, to
 * give free heap pages back and to describe its heap. What it answers, and
 * how it is reached, is the contract in collectors/agent/agent_protocol.h
 * (shared with memtrimd's client); this file starts the agent and runs each
 * request.
 *
 * Invisible to the program. Servers close every descriptor they did not
 * open themselves (closefrom(3), os.closerange) and then open their own; a
 * listening socket in the program's descriptor table would be closed under
 * the agent, and the agent would go on accepting on a number that is now the
 * program's (answering the program's own clients). So the agent starts two
 * tasks: the agent thread (a pthread, "memtrimd-agent"), which runs the
 * allocator's calls, malloc_info and JNI and never opens a descriptor, and
 * the socket task ("memtrimd-sock"), cloned without CLONE_FILES, which has a
 * private copy of the descriptor table from birth, closes every descriptor
 * in that copy, and only then opens anything (its socket, and /proc/self
 * files read for the agent thread). agent_sock.c says how the two hand work
 * to each other and why this way. Nothing the agent opens is in the
 * program's table: the program's first pipe() still gets 3 and 4,
 * closefrom() cannot close the agent's socket, the numbers the program
 * reuses are never the agent's, and /proc/<pid>/fd (the main thread's table)
 * does not list them. Closing the copies does not release the program's
 * POSIX record locks: Linux ties those to the table that took them (the
 * lock owner is the files_struct), and the private copy never took any.
 * It needs only clone() without namespace flags, which Docker's and
 * Kubernetes' RuntimeDefault seccomp profiles allow (they refuse unshare
 * without CAP_SYS_ADMIN, which the agent used before). Where even that clone
 * is refused, the agent does not start and says so once on stderr: serving
 * from the program's own table is exactly the harm above.
 *
 * Programs that drop privileges (started as root, then setuid to a service
 * user, like mariadbd --user, nginx, postgres). The socket file is created
 * while the program is root, so it is root's. This library also provides
 * setuid, seteuid, setreuid and setresuid: each calls glibc's, and when a
 * privileged process is about to take a non-root effective uid it first
 * gives the socket file to that uid (lchown, undone if the call fails), and
 * when it takes root back the file goes back to root. A memtrimd running as
 * the program's final uid can then connect, and the program can remove the
 * file at exit. The agent accepts peers by the program's euid at the time of
 * each connection, not the one it started with (the agent thread, which
 * glibc's setuid moves with the program's other threads, decides). The
 * socket task, which glibc does not know of, keeps no privilege to lose: it
 * drops to nobody (or to its effective ids) once it listens. Only the process
 * that made the socket changes its owner: a forked worker that drops privileges (nginx
 * workers) has no agent thread and leaves the parent's file alone.
 *
 * Nothing stays on disk, however the program ends. exit() runs the
 * destructor, which removes the file; _exit and _Exit (every shell's `sh -c`
 * ends so: kubectl exec and podman exec leave one per exec otherwise) are
 * this library's own (agent_exit.c), which remove it first. After a fatal
 * signal, SIGKILL, or an exec into an image without the agent, the file
 * stays until memtrimd's sweep removes it (a socket nobody listens on whose
 * process has ended: collectors/agent/client/socket_sweep.cc). The start
 * time in the default name makes it unique to one process instance (a pid
 * is only reused by a later process, which starts later), so a leftover
 * file, whoever owns it, never stands in the way of a later process that
 * gets the same pid. A leftover at a fixed MEMTRIMD_AGENT_SOCKET path (or
 * one of our own image before an execve) is removed if nobody listens on it
 * and the sticky /tmp lets us.
 *
 * fork and exec: a forked child has neither of the agent's tasks (threads
 * are not inherited) and never saw the socket task's private table, so
 * connections to the path only ever reach the parent. A child that execs with LD_PRELOAD
 * inherited runs this constructor again and serves its own socket named by
 * its own pid (use "%p" in MEMTRIMD_AGENT_SOCKET so children do not compete
 * for one path; without it the first live owner keeps the path and later
 * processes run without an agent).
 *
 * Neither task calls malloc. The agent thread's first malloc would attach it to
 * an arena (creating one, with up to 64 MiB of address space) and a trim must
 * not add to the heap it is trimming. Everything it needs is static or on its
 * stack; the one stdio stream (for malloc_info) is set up by the constructor,
 * and so is the choice of allocator (dlsym and dladdr may malloc). Calls into
 * jemalloc, tcmalloc or mimalloc from the agent thread may make that
 * allocator set up its small per-thread cache for the thread: acceptable, as
 * it is not a glibc arena and every thread of the program gets one (mimalloc's
 * is set up on purpose before its first release, which needs it:
 * agent_allocator.c, mi_release).
 * The exception is jvm_buffers in a JVM: attaching the thread to the JVM
 * mallocs (the JVM's own thread state), so from the first such request on the
 * agent thread has an arena; a JVM is trimmed through its attach socket, not
 * through the agent.
 */
#define _GNU_SOURCE

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent_allocator.h"
#include "agent_attach.h"
#include "agent_jvm.h"
#include "agent_out.h"
#include "agent_sampler.h"
#include "agent_sock.h"
#include "collectors/agent/agent_protocol.h"

/* malloc_info lists up to ~140 size classes per arena (~8 kB of XML) and a
 * program may have 8 arenas per CPU: 4 MiB (memtrimd's default answer cap)
 * covers hundreds of fragmented arenas. Untouched pages of the buffer never
 * become resident. */
#ifndef INFO_BUFFER_BYTES
#define INFO_BUFFER_BYTES (4u << 20)
#endif
/* How long the constructor waits for the agent to set up its socket
 * (microseconds when all is well). */
#define SETUP_DEADLINE_MS 2000

/* MEMTRIMD_AGENT_SOCKET as the constructor found it (getenv is only safe
 * before main); "" for the default. */
static char g_template[108]; /* sun_path's size */
static pid_t g_pid;
static unsigned long g_refused; /* only the agent thread touches it */
/* Taken by the agent thread while the socket task binds and by the setuid
 * wrappers around the uid change, so the socket file is either made before
 * the change (and given to the new uid) or after it (and made by the new
 * uid). */
static pthread_mutex_t g_owner_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_serving; /* the socket path is ours; under g_owner_lock */
static sem_t g_setup_done;

/* malloc_info() writes to a FILE, and stdio allocates a FILE and its buffer
 * with malloc. So the constructor, on the loading thread, opens the stream
 * once over a static buffer (fmemopen) and gives it a static stdio buffer;
 * the agent thread only rewinds it and writes. XML longer than the buffer is
 * reported as an error rather than cut short. */
static char g_info_buf[INFO_BUFFER_BYTES];
static char g_info_stdio_buf[8192];
static FILE* g_info;

/* The answer being built for the socket task to send (agent_sock.h: head;
 * malloc_info's XML is the tail). The unknown allocator's reason names a
 * path. */
static char g_reply_buf[PATH_MAX + 2048];
static struct out g_reply;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Resident bytes from /proc/self/statm (second field, in pages), read by the
 * socket task into the stack: no stdio, no malloc, no descriptor here. 0 if
 * unreadable. */
static uint64_t rss_bytes(void) {
  char buf[256];
  if (agent_sock_read("/proc/self/statm", 0, buf, sizeof buf) <= 0) {
    return 0;
  }
  const char* p = strchr(buf, ' ');
  if (p == NULL) {
    return 0;
  }
  uint64_t pages = 0;
  for (++p; *p >= '0' && *p <= '9'; ++p) {
    pages = pages * 10 + (uint64_t)(*p - '0');
  }
  return pages * (uint64_t)sysconf(_SC_PAGESIZE);
}

static void answer_status(const char* status, const char* why) {
  g_reply.len = 0;
  g_reply.overflow = 0;
  put_str(&g_reply, status);
  put_str(&g_reply, "\n");
  put_str(&g_reply, why);
  put_str(&g_reply, "\n");
}

static void answer_error(const char* why) { answer_status(AGENT_STATUS_ERROR, why); }

/* A status of its own, so that memtrimd tells it apart without reading
 * the text. */
static void answer_too_large(const char* why) { answer_status(AGENT_STATUS_TOO_LARGE, why); }

/* The allocator's own release call (malloc_trim(0) for glibc, exactly as
 * before other allocators were known), timed, with RSS around it and, where
 * the allocator reports one, its free-but-kept bytes (mimalloc: its
 * committed bytes) just before and after. */
static void do_trim(void) {
  char why[PATH_MAX + 200];
  int result = 0;
  if (!agent_allocator_known()) {
    agent_allocator_release(&result, why, sizeof why); /* only says why not */
    answer_error(why);
    return;
  }
  uint64_t kept_before = 0, kept_after = 0, committed_before = 0, committed_after = 0;
  const int has_before = agent_allocator_free_kept(&kept_before);
  const int has_committed_before = agent_allocator_committed(&committed_before);
  uint64_t before = rss_bytes();
  uint64_t t0 = now_ns();
  int rc = agent_allocator_release(&result, why, sizeof why);
  uint64_t duration = now_ns() - t0;
  uint64_t after = rss_bytes();
  if (rc != 0) {
    answer_error(why);
    return;
  }
  const int has_after = agent_allocator_free_kept(&kept_after);
  const int has_committed_after = agent_allocator_committed(&committed_after);
  struct out* o = &g_reply;
  put_str(o, "0\n");
  put_kv(o, "duration_ns", duration);
  put_kv(o, "rss_before", before);
  put_kv(o, "rss_after", after);
  put_kv(o, "result", (uint64_t)(result < 0 ? 0 : result));
  put_kv_str(o, "allocator", agent_allocator_name());
  put_kv_str(o, "call", agent_allocator_call());
  if (has_before) {
    put_kv(o, "free_kept_before", kept_before);
  }
  if (has_after) {
    put_kv(o, "free_kept_after", kept_after);
  }
  if (has_committed_before) {
    put_kv(o, "committed_before", committed_before);
  }
  if (has_committed_after) {
    put_kv(o, "committed_after", committed_after);
  }
}

static void do_allocator(void) {
  put_str(&g_reply, "0\n");
  agent_allocator_stats(&g_reply);
  if (g_reply.overflow) {
    answer_too_large("allocator answer larger than buffer");
  }
}

static void do_mallinfo2(void) {
  struct mallinfo2 m = mallinfo2();
  struct out* o = &g_reply;
  put_str(o, "0\n");
  put_kv(o, "arena", m.arena);
  put_kv(o, "ordblks", m.ordblks);
  put_kv(o, "smblks", m.smblks);
  put_kv(o, "hblks", m.hblks);
  put_kv(o, "hblkhd", m.hblkhd);
  put_kv(o, "usmblks", m.usmblks);
  put_kv(o, "fsmblks", m.fsmblks);
  put_kv(o, "uordblks", m.uordblks);
  put_kv(o, "fordblks", m.fordblks);
  put_kv(o, "keepcost", m.keepcost);
}

/* The XML is the answer's tail, sent from g_info_buf itself. */
static void do_malloc_info(struct agent_call* call) {
  if (g_info == NULL) {
    answer_error("malloc_info unavailable (fmemopen failed at startup)");
    return;
  }
  rewind(g_info); /* also clears the error flag of an earlier overflow */
  int rc = malloc_info(0, g_info);
  fflush(g_info);
  long len = ftell(g_info);
  /* fmemopen keeps one byte for a terminating NUL: a full buffer means the
   * XML did not fit. */
  if (rc != 0 || ferror(g_info) || len < 0 || (size_t)len >= sizeof g_info_buf - 1) {
    answer_too_large("malloc_info larger than buffer");
    return;
  }
  put_str(&g_reply, "0\n");
  call->tail = g_info_buf;
  call->tail_len = (size_t)len;
}

static void do_jvm_buffers(void) {
  char body[512 + 1]; /* and its NUL */
  char why[160];
  long len = agent_jvm_buffers(body, sizeof body - 1, why, sizeof why);
  if (len < 0) {
    answer_error(why);
    return;
  }
  body[len] = '\0';
  put_str(&g_reply, "0\n");
  put_str(&g_reply, body);
}

static void do_ping(void) {
  struct out* o = &g_reply;
  put_str(o, "0\n");
  put_kv(o, "pid", (uint64_t)g_pid);
  put_kv(o, "version", AGENT_PROTOCOL_VERSION);
  put_kv(o, "refused", g_refused);
  agent_sampler_ping(o);
}

/* Every call of the socket task, on the agent thread: one at a time, so
 * trims never overlap. */
static void handle(struct agent_call* call) {
  if (call->op == AGENT_CALL_PEER) {
    /* geteuid() now, not at start: a program that dropped privileges is
     * reached by its new uid (glibc's setuid moves every pthread, this one
     * too). */
    call->allowed = call->uid == 0 || call->uid == geteuid();
    if (!call->allowed) {
      g_refused++;
    }
    return;
  }
  g_reply = (struct out){g_reply_buf, 0, sizeof g_reply_buf, 0};
  call->tail = NULL;
  call->tail_len = 0;
  const char* req = call->line;
  if (strcmp(req, AGENT_VERB_TRIM) == 0) {
    do_trim();
  } else if (strcmp(req, AGENT_VERB_ALLOCATOR) == 0) {
    do_allocator();
  } else if (strcmp(req, AGENT_VERB_MALLOC_INFO) == 0) {
    do_malloc_info(call);
  } else if (strcmp(req, AGENT_VERB_MALLINFO2) == 0) {
    do_mallinfo2();
  } else if (strcmp(req, AGENT_VERB_JVM_BUFFERS) == 0) {
    do_jvm_buffers();
  } else if (strcmp(req, AGENT_VERB_PING) == 0) {
    do_ping();
  } else if (strncmp(req, AGENT_VERB_SAMPLING_ON, sizeof AGENT_VERB_SAMPLING_ON - 1) == 0) {
    agent_sampler_on(req + sizeof AGENT_VERB_SAMPLING_ON - 1, &g_reply);
  } else if (strcmp(req, AGENT_VERB_SAMPLING_OFF) == 0) {
    agent_sampler_off(&g_reply);
  } else if (strcmp(req, AGENT_VERB_SITES) == 0 || strcmp(req, AGENT_VERB_SITES_LIVE) == 0) {
    /* The stack lines (and live lines) are the tail, in malloc_info's
     * buffer (4 MiB, one request at a time; untouched pages never become
     * resident). */
    size_t len = 0;
    agent_sampler_sites(&g_reply, g_info_buf, sizeof g_info_buf, &len,
                        strcmp(req, AGENT_VERB_SITES_LIVE) == 0);
    call->tail = g_info_buf;
    call->tail_len = len;
  } else {
    answer_error("unknown command");
  }
  call->head = g_reply_buf;
  call->head_len = g_reply.len;
}

/* The agent thread. All signals are blocked here (see the constructor), and
 * so they are in the socket task it makes. */
static void* agent_main(void* arg) {
  (void)arg;
  /* Named so that top -H, /proc/<pid>/task/<tid>/comm and a debugger show
   * what this thread is. */
  prctl(PR_SET_NAME, "memtrimd-agent", 0, 0, 0);
  pthread_mutex_lock(&g_owner_lock);
  int ok = agent_sock_start(g_template, g_pid, 2) == 0;
  g_serving = ok;
  pthread_mutex_unlock(&g_owner_lock);
  sem_post(&g_setup_done);
  if (ok) {
    agent_sock_serve(handle);
  }
  return NULL;
}

/* ---- Programs that change uid (see the top of this file). ---- */

/* Gives the socket file to the uid the process is about to run as (or has
 * just taken back). Called with g_owner_lock held; lchown: never follow a
 * link, though only root could have replaced our file in a sticky /tmp. */
static int give_socket_to(uid_t uid) { return lchown(agent_sock_path(), uid, getegid()); }

typedef int (*set1_fn)(uid_t);
typedef int (*set2_fn)(uid_t, uid_t);
typedef int (*set3_fn)(uid_t, uid_t, uid_t);

/* The next definition of `name` (glibc's). */
static void* next_symbol(const char* name) {
  void* f = dlsym(RTLD_NEXT, name);
  if (f == NULL) {
    errno = ENOSYS;
  }
  return f;
}

/* Runs one uid change `call(a, b, c)` that makes `new_euid` effective
 * ((uid_t)-1: the euid stays). */
static int change_uid(const char* name, int nargs, uid_t a, uid_t b, uid_t c, uid_t new_euid) {
  void* f = next_symbol(name);
  if (f == NULL) {
    return -1;
  }
  /* Only the process that made the socket: a forked child (an nginx worker
   * dropping privileges) must leave its parent's file alone, and must not
   * wait on a lock the fork may have copied held. */
  const int ours = getpid() == g_pid;
  if (ours) {
    pthread_mutex_lock(&g_owner_lock);
  }
  const uid_t before = geteuid();
  struct stat st;
  int given = 0;
  if (ours && g_serving && before == 0 && new_euid != (uid_t)-1 && new_euid != 0 &&
      lstat(agent_sock_path(), &st) == 0) {
    given = give_socket_to(new_euid) == 0;
  }
  int rc = nargs == 1 ? ((set1_fn)f)(a) : nargs == 2 ? ((set2_fn)f)(a, b) : ((set3_fn)f)(a, b, c);
  const int err = errno;
  if (rc != 0 && given) {
    lchown(agent_sock_path(), st.st_uid, st.st_gid); /* still privileged: undo */
  } else if (rc == 0 && ours && g_serving && before != 0 && geteuid() == 0) {
    give_socket_to(0); /* root again: the file goes back to root */
  }
  if (ours) {
    pthread_mutex_unlock(&g_owner_lock);
  }
  errno = err;
  return rc;
}

/* Exported (the rest of the library is hidden): these replace glibc's for
 * the whole program, and call it. */
__attribute__((visibility("default"))) int setuid(uid_t uid) {
  return change_uid("setuid", 1, uid, 0, 0, uid);
}

__attribute__((visibility("default"))) int seteuid(uid_t euid) {
  return change_uid("seteuid", 1, euid, 0, 0, euid);
}

__attribute__((visibility("default"))) int setreuid(uid_t ruid, uid_t euid) {
  return change_uid("setreuid", 2, ruid, euid, 0, euid);
}

__attribute__((visibility("default"))) int setresuid(uid_t ruid, uid_t euid, uid_t suid) {
  return change_uid("setresuid", 3, ruid, euid, suid, euid);
}

static int disabled(void) {
  const char* disable = getenv(AGENT_ENV_DISABLE);
  return disable != NULL && strcmp(disable, "1") == 0;
}

/* Once per process: set by the constructor or Agent_OnAttach, which both run
 * under the dynamic loader's lock (one at a time). */
static int g_started;

int agent_start_now(void) {
  if (g_started) {
    return AGENT_ATTACH_RUNNING;
  }
  if (agent_other_copy_loaded()) {
    return AGENT_ATTACH_RUNNING; /* that copy serves; it said why not if not */
  }
  /* The two tasks never end: their code and stacks stay mapped for good,
   * even if whoever loaded the library dlclose()s it. */
  if (agent_pin_self() != 0) {
    agent_complain(2, "the library could not keep itself loaded (dlopen RTLD_NODELETE)", 0);
    return AGENT_ATTACH_FAILED;
  }
  g_started = 1;
  g_pid = getpid();
  agent_jvm_configure();
  /* Here, where dlsym and dladdr may malloc (see agent_allocator.c). */
  agent_allocator_detect();
  const char* env = getenv(AGENT_ENV_SOCKET);
  if (env != NULL) {
    size_t n = strlen(env);
    if (n >= sizeof g_template) {
      agent_complain(2, "MEMTRIMD_AGENT_SOCKET is not an absolute path that fits a UNIX socket", 0);
      return AGENT_ATTACH_FAILED;
    }
    memcpy(g_template, env, n + 1);
  }
  if (sem_init(&g_setup_done, 0, 0) != 0) {
    agent_complain(2, "sem_init failed", errno);
    return AGENT_ATTACH_FAILED;
  }

  /* Here, on the loading thread, malloc is fine (see g_info). fmemopen
   * makes no descriptor. */
  g_info = fmemopen(g_info_buf, sizeof g_info_buf, "w");
  if (g_info != NULL && setvbuf(g_info, g_info_stdio_buf, _IOFBF, sizeof g_info_stdio_buf) != 0) {
    fclose(g_info);
    g_info = NULL;
  }

  /* Block every signal before pthread_create so the new thread (and the
   * socket task it clones) starts with all of them blocked and never takes
   * a signal meant for the program; then give the loading thread its own
   * mask back. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_attr_t attr;
  int rc = pthread_attr_init(&attr);
  if (rc == 0) {
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t thread;
    rc = pthread_create(&thread, &attr, agent_main, NULL);
    pthread_attr_destroy(&attr);
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) {
    agent_complain(2, "pthread_create failed", rc);
    return AGENT_ATTACH_FAILED;
  }
  /* Wait (bounded) until the socket task has its private table and its
   * socket: its copy of the table is then the one the program was started
   * with, before main opened anything, and a setuid() early in main finds
   * the socket file to hand over. */
  struct timespec deadline;
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  deadline.tv_sec += SETUP_DEADLINE_MS / 1000;
  while (sem_clockwait(&g_setup_done, CLOCK_MONOTONIC, &deadline) != 0 && errno == EINTR) {
  }
  pthread_mutex_lock(&g_owner_lock);
  const int serving = g_serving;
  pthread_mutex_unlock(&g_owner_lock);
  return serving ? AGENT_ATTACH_OK : AGENT_ATTACH_FAILED;
}

/* Preloaded (or dlopen()ed by a program): starts here. Loaded into a running
 * JVM by the attach "load" command: Agent_OnAttach starts it, after checking
 * what memtrimd asked for (agent_attach.c). */
__attribute__((constructor)) static void agent_start(void) {
  if (disabled()) {
    return;
  }
  /* Here on the loading thread, also in a running JVM (Agent_OnAttach
   * follows): dlsym may malloc, the agent thread must not. */
  agent_sampler_init();
  if (agent_in_running_jvm()) {
    return;
  }
  agent_start_now();
}

/* JVMTI's entry for a library loaded into a running JVM (JavaVM*, the
 * options string, reserved). The return code is the JVM's answer to
 * memtrimd; anything but 0 makes the JVM unload the library again. The
 * environment is read on the JVM's attach thread: a running JVM does not
 * change its own. */
__attribute__((visibility("default"))) int Agent_OnAttach(void* vm, char* options, void* reserved) {
  (void)vm;
  (void)reserved;
  const long wanted = agent_attach_version(options);
  if (wanted != -1 && wanted != AGENT_PROTOCOL_VERSION) {
    return AGENT_ATTACH_VERSION;
  }
  if (disabled()) {
    return AGENT_ATTACH_DISABLED;
  }
  return agent_start_now();
}

/* At exit (after _exit: agent_exit.c; after a fatal signal or an exec
 * without the agent, memtrimd's sweep: see the top of this file). Only the
 * process that created the socket removes it, never a forked child that
 * merely inherited the path. */
__attribute__((destructor)) static void agent_stop(void) { agent_sock_remove(); }
