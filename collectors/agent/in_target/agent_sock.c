/*
 * The socket task: all of the agent's descriptor work, in a table the
 * program never sees.
 *
 * The promise (memtrimd_agent.c): nothing the agent opens is in the
 * program's descriptor table, so the program's numbers are never shifted,
 * closefrom(3) cannot close the agent's socket, and a number the program
 * reuses is never the agent's. That needs a task with a descriptor table of
 * its own. The agent used to get one with unshare(CLONE_FILES) on its
 * pthread; Docker's and Kubernetes' RuntimeDefault seccomp profiles allow
 * unshare only with CAP_SYS_ADMIN (Pod Security "restricted" requires that
 * profile), so there the agent could not start. Those profiles allow clone()
 * whenever no namespace flag is set, and a task cloned without CLONE_FILES
 * gets its own copy of the table from birth. So agent_sock_start(), on the
 * agent pthread, clones this task with
 *   CLONE_VM | CLONE_FS | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM
 * (a thread of the process in every way but its descriptor table), on a
 * stack of its own, with the pthread's mask (every signal blocked: it never
 * takes a signal meant for the program). It closes the copies it inherited,
 * opens the socket, accepts, reads requests and writes answers. The agent
 * pthread keeps what needs a real pthread (malloc_trim and the other
 * allocators' calls, malloc_info's stdio, JNI's AttachCurrentThread) and
 * never opens a descriptor: when it needs a file read (/proc/self/statm for
 * a trim, /proc/self/maps or a JDK's release file for jvm_buffers) it asks
 * this task (agent_sock_read).
 *
 * One mechanism everywhere: with or without a seccomp profile the agent works
 * the same way, so what is tested on a laptop is what runs in a restricted
 * cluster. unshare(CLONE_FILES) is not tried first: it would be a second
 * path, taken only where the profile allows it, for no gain (the clone costs
 * one task with a small stack).
 *
 * Without CLONE_SETTLS the task shares the agent pthread's thread pointer:
 * the pthread's errno, its rseq area, its cancellation state. Both tasks run
 * at once, so this task never writes thread-local state: it calls the kernel
 * with raw system calls (agent_sys.h: errors come back as -errno) and, of
 * glibc, only memcpy, memset, strlen, strrchr, memchr and strerrordesc_np,
 * which touch nothing but their arguments and constant tables (the stack
 * protector's canary, which it reads through the shared thread pointer, is
 * the same in every thread). No malloc, no stdio, no lock: a lock another
 * thread holds when the program forks or stops must never stand between
 * memtrimd and an answer.
 * (Its own thread-local state, with CLONE_SETTLS, would need a thread
 * control block glibc knows nothing of; glibc's functions would then read
 * a made-up one.)
 *
 * The hand-off: one futex word, g_turn. The socket task posts a call
 * (TURN_AGENT) and waits; the pthread runs it and answers (TURN_DONE); while
 * it runs, the pthread may ask for a file (TURN_READ), and the socket task
 * reads it and gives the turn back (TURN_AGENT). So exactly one of the two
 * works on a call at any time; the pthread's work is as before (one command
 * at a time, trims never overlap).
 *
 * Credentials are per task, and glibc's setuid() moves only the threads it
 * made: this task would keep the program's first identity after the program
 * dropped root, a root task in the program's address space. So as soon as
 * its socket is bound and listening it drops what it no longer needs: no
 * supplementary groups, gid and uid 65534 (nobody) where it may change them
 * (a root program), else real, effective and saved ids all its effective ones
 * (no way back to another), and no capabilities. Accepting, reading and
 * writing on sockets it holds need no privilege, and /proc/self is its own
 * process whatever its ids. Whom to answer is decided by the pthread, which
 * follows the program's setuid (AGENT_CALL_PEER). memtrimd reads a process
 * through its leader or, when the leader has exited, the first live thread
 * /proc/<pid>/task lists (procfs/target_reader.cc: UseLiveThread). The
 * kernel lists threads in the order they were made, and the agent thread,
 * which makes this task and never ends, always comes before it: memtrimd
 * never takes nobody's identity for the program's.
 *
 * Its name is "memtrimd-sock" (the pthread is "memtrimd-agent"): it is one of
 * the process's threads in /proc/<pid>/task and in the Threads count.
 *
 * Ends with the process: at exit, exec (the kernel ends every other thread)
 * or SIGKILL. A forked child has neither task. The library is never
 * unloaded (pinned with RTLD_NODELETE when it starts: the stack and code stay
 * mapped).
 */
#define _GNU_SOURCE

#include "agent_sock.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "agent_out.h"
#include "agent_sampler.h"
#include "agent_sys.h"
#include "collectors/agent/agent_protocol.h"

/* A client gets this long to send its one line, so a silent client cannot
 * hold the agent (and every later client) up. */
#define READ_DEADLINE_MS 2000
/* And this long to read the answer (malloc_info can be hundreds of kB),
 * counted from when the answer is ready (a trim can itself take seconds). */
#define WRITE_DEADLINE_MS 10000
/* The socket task's stack: its deepest frame holds a few path-sized buffers.
 * Untouched pages never become resident. */
#define STACK_BYTES (128u << 10)
#define NOBODY 65534
#ifndef SYS_close_range
#define SYS_close_range 436 /* the same number on every architecture */
#endif

enum { TURN_SOCK = 0, TURN_AGENT = 1, TURN_DONE = 2, TURN_READ = 3 };

static char g_template[sizeof(((struct sockaddr_un*)0)->sun_path)];
static char g_path[sizeof(((struct sockaddr_un*)0)->sun_path)];
static pid_t g_pid;
static int g_err_fd = -1; /* in the socket task's table while it sets up */
static int g_listen_fd = -1;
static pid_t g_tid;

/* 0 while setting up, 1 listening, -1 failed (futex word). */
static int g_setup;
/* Whose turn it is (futex word; see the top). */
static int g_turn = TURN_SOCK;
static struct agent_call g_call;
/* TURN_READ's arguments and result. */
static struct {
  const char* path;
  uint64_t offset;
  char* buf;
  size_t cap;
  long result;
} g_read;

static int load(const int* word) { return __atomic_load_n(word, __ATOMIC_ACQUIRE); }

static void store_and_wake(int* word, int value) {
  __atomic_store_n(word, value, __ATOMIC_RELEASE);
  SYS3(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1);
}

/* Sleeps while *word == seen (or until `timeout`, NULL: none). */
static void wait_change(int* word, int seen, const struct timespec* timeout) {
  SYS4(SYS_futex, word, FUTEX_WAIT_PRIVATE, seen, timeout);
}

static int64_t now_ms(void) {
  struct timespec ts = {0, 0};
  SYS2(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sys_close(int fd) { SYS1(SYS_close, fd); }

void agent_complain(int fd, const char* what, int err) {
  if (fd < 0) {
    return;
  }
  char buf[256];
  struct out o = {buf, 0, sizeof buf, 0};
  put_str(&o, "memtrimd_agent: not started: ");
  put_str(&o, what);
  if (err != 0) {
    put_str(&o, ": ");
    /* Untranslated, from glibc's table: no locale lookup, no malloc. */
    const char* desc = strerrordesc_np(err);
    put_str(&o, desc != NULL ? desc : "unknown error");
  }
  put_str(&o, "\n");
  SYS3(SYS_write, fd, buf, o.len);
}

/* ---- File reads (socket task) ---- */

/* Up to cap - 1 bytes of `path` from `offset`, NUL-terminated; bytes read
 * or -errno. The descriptor lives for the one read. */
static long read_file(const char* path, uint64_t offset, char* buf, size_t cap) {
  if (cap == 0) {
    return -EINVAL;
  }
  long fd = SYS4(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) {
    return fd;
  }
  long n;
  do {
    n = SYS4(SYS_pread64, fd, buf, cap - 1, offset);
  } while (n == -EINTR);
  sys_close((int)fd);
  buf[n > 0 ? n : 0] = '\0';
  return n;
}

/* Field 22 of /proc/self/stat: clock ticks from boot to this process's
 * start (the same number memtrimd reads from /proc/<pid>/stat). 0 if
 * unreadable. */
static uint64_t start_ticks(void) {
  char buf[1024];
  if (read_file("/proc/self/stat", 0, buf, sizeof buf) <= 0) {
    return 0;
  }
  /* comm (field 2) may hold spaces and ')': count from the last ')'. */
  const char* p = strrchr(buf, ')');
  if (p == NULL) {
    return 0;
  }
  ++p;
  for (int field = 3; field < 22; ++field) {
    while (*p == ' ') {
      ++p;
    }
    while (*p != ' ' && *p != '\0') {
      ++p;
    }
  }
  while (*p == ' ') {
    ++p;
  }
  uint64_t ticks = 0;
  for (; *p >= '0' && *p <= '9'; ++p) {
    ticks = ticks * 10 + (uint64_t)(*p - '0');
  }
  return ticks;
}

/* ---- Setup (socket task) ---- */

/* Builds g_path from g_template; -1 if it does not fit or is not absolute. */
static int build_path(void) {
  char pid[24];
  struct out pid_text = {pid, 0, sizeof pid - 1, 0};
  put_u64(&pid_text, (uint64_t)g_pid);
  pid[pid_text.len] = '\0';
  char start[24];
  struct out start_text = {start, 0, sizeof start - 1, 0};
  put_u64(&start_text, start_ticks());
  start[start_text.len] = '\0';

  struct out o = {g_path, 0, sizeof g_path - 1, 0};
  const char* tmpl = g_template[0] != '\0' ? g_template : AGENT_SOCKET_TEMPLATE;
  if (tmpl[0] != '/') {
    return -1;
  }
  for (const char* p = tmpl; *p != '\0' && !o.overflow; ++p) {
    if (p[0] == '%' && p[1] == 'p') {
      put_str(&o, pid);
      ++p;
    } else if (p[0] == '%' && p[1] == 't') {
      put_str(&o, start);
      ++p;
    } else {
      char c[2] = {*p, '\0'};
      put_str(&o, c);
    }
  }
  if (o.overflow) {
    return -1;
  }
  g_path[o.len] = '\0';
  return 0;
}

static long lstat_path(const char* path, struct stat* st) {
  return SYS4(SYS_newfstatat, AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW);
}

/* Whether a process is listening on the socket at `addr` now. Nonblocking:
 * a full backlog (EAGAIN) also means someone is there. */
static int socket_is_live(const struct sockaddr_un* addr) {
  long fd = SYS3(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    return 0;
  }
  long r = SYS3(SYS_connect, fd, addr, sizeof *addr);
  sys_close((int)fd);
  return r == 0 || r == -EAGAIN || r == -EINPROGRESS;
}

/* Creates, checks and listens on the socket at g_path; the listening fd,
 * or -1. *taken is set when the path is someone else's: another file, a
 * socket another process serves, or one we may not remove. */
static int open_listener(int* taken) {
  struct sockaddr_un addr;
  memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  memcpy(addr.sun_path, g_path, strlen(g_path) + 1);

  /* Whatever sits at the path: a socket nobody listens on is stale (a dead
   * process, or our own pre-exec image) and is removed; a live socket or
   * any other file is not ours to take. */
  struct stat st;
  *taken = 0;
  if (lstat_path(g_path, &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      *taken = 1;
      return -1;
    }
    if (socket_is_live(&addr)) {
      *taken = 1;
      return -1;
    }
    /* May fail (another user's file in /tmp): bind reports it. */
    SYS3(SYS_unlinkat, AT_FDCWD, g_path, 0);
  }

  long fd = SYS3(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    agent_complain(g_err_fd, "socket() failed", (int)-fd);
    return -1;
  }
  /* Linux creates the socket file with the socket inode's mode (minus the
   * umask): fchmod before bind gives 0600 from the start, without touching
   * the process-wide umask under the program's other threads. */
  long r = SYS2(SYS_fchmod, fd, 0600);
  if (r == 0) {
    r = SYS3(SYS_bind, fd, &addr, sizeof addr);
  }
  if (r != 0) {
    /* A stale socket of another user that the sticky /tmp kept us from
     * removing is someone else's too. */
    *taken = r == -EADDRINUSE;
    if (!*taken) {
      agent_complain(g_err_fd, "cannot bind the socket path", (int)-r);
    }
    sys_close((int)fd);
    return -1;
  }
  if (lstat_path(g_path, &st) != 0 || !S_ISSOCK(st.st_mode) ||
      st.st_uid != (uid_t)SYS0(SYS_geteuid) || (st.st_mode & 077) != 0 ||
      SYS2(SYS_listen, fd, 16) != 0) {
    agent_complain(g_err_fd, "the socket file is not private", 0);
    SYS3(SYS_unlinkat, AT_FDCWD, g_path, 0);
    sys_close((int)fd);
    return -1;
  }
  return (int)fd;
}

/* Appends ".<16 hex digits>" from the kernel's random pool to g_path; -1
 * if it does not fit. */
static int add_random_suffix(void) {
  uint64_t r = 0;
  if (SYS3(SYS_getrandom, &r, sizeof r, GRND_NONBLOCK) != (long)sizeof r) {
    /* Early boot without entropy: the clock's nanoseconds and this task's
     * stack address still make a name nobody can plant in advance at scale. */
    struct timespec ts;
    SYS2(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
    r = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)(uintptr_t)&ts;
  }
  size_t len = strlen(g_path);
  if (len + 18 > sizeof g_path) {
    return -1;
  }
  g_path[len++] = '.';
  for (int i = 15; i >= 0; --i) {
    g_path[len++] = "0123456789abcdef"[(r >> (4 * i)) & 0xf];
  }
  g_path[len] = '\0';
  return 0;
}

/* Listens at the default path, or, when someone else holds that name (a
 * user who planted files at the next pids and start times in the shared
 * /tmp), at the same name with a random suffix that nobody can guess in
 * advance; memtrimd looks for those when the default name is not the
 * target's (agent_client.cc). A path set with MEMTRIMD_AGENT_SOCKET is the
 * user's choice and is not changed. */
static int listen_somewhere(void) {
  int taken = 0;
  int fd = open_listener(&taken);
  if (fd >= 0 || !taken) {
    return fd;
  }
  if (g_template[0] != '\0') {
    agent_complain(g_err_fd, "the socket path is another file or another process's socket", 0);
    return -1;
  }
  char base[sizeof g_path];
  memcpy(base, g_path, sizeof base);
  for (int attempt = 0; attempt < 4; ++attempt) {
    memcpy(g_path, base, sizeof g_path);
    if (add_random_suffix() != 0) {
      break;
    }
    fd = open_listener(&taken);
    if (fd >= 0 || !taken) {
      return fd;
    }
  }
  agent_complain(g_err_fd, "the socket path and its random variants are taken", 0);
  return -1;
}

/* Closes every descriptor of the (private) table but stderr. close_range
 * (Linux 5.9+) in one call; before that, one close per possible number. */
static void close_inherited(void) {
  sys_close(0);
  sys_close(1);
  if (SYS3(SYS_close_range, 3u, ~0u, 0u) == 0) {
    return;
  }
  struct rlimit rl;
  unsigned long max = 1u << 20; /* fs.nr_open's default */
  if (SYS4(SYS_prlimit64, 0, RLIMIT_NOFILE, NULL, &rl) == 0 && rl.rlim_max != RLIM_INFINITY &&
      rl.rlim_max > max) {
    max = rl.rlim_max;
  }
  for (unsigned long fd = 3; fd < max; ++fd) {
    sys_close((int)fd);
  }
}

/* The least identity this task may take (see the top). */
static void drop_privileges(void) {
  SYS2(SYS_setgroups, 0, NULL);
  if (SYS3(SYS_setresgid, NOBODY, NOBODY, NOBODY) != 0) {
    long gid = SYS0(SYS_getegid);
    SYS3(SYS_setresgid, gid, gid, gid);
  }
  if (SYS3(SYS_setresuid, NOBODY, NOBODY, NOBODY) != 0) {
    long uid = SYS0(SYS_geteuid);
    SYS3(SYS_setresuid, uid, uid, uid);
  }
  struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct none[2];
  memset(none, 0, sizeof none);
  SYS2(SYS_capset, &header, none);
}

/* Everything before serving. 0 when listening. */
static int setup(void) {
  close_inherited();
  if (SYS3(SYS_fcntl, 2, F_GETFD, 0) < 0) {
    g_err_fd = -1; /* the program started without a stderr */
  }
  int rc = -1;
  if (build_path() != 0) {
    agent_complain(g_err_fd,
                   "MEMTRIMD_AGENT_SOCKET is not an absolute path that fits a UNIX socket", 0);
  } else {
    g_listen_fd = listen_somewhere();
    rc = g_listen_fd >= 0 ? 0 : -1;
  }
  /* Setup said all it had to: drop the private copy of the program's
   * stderr, so the agent never holds the program's pipe or terminal open. */
  if (g_err_fd >= 0) {
    sys_close(g_err_fd);
    g_err_fd = -1;
  }
  return rc;
}

/* ---- Serving (socket task) ---- */

/* Waits for `events` on fd until `deadline` (now_ms()). */
static int wait_fd(int fd, short events, int64_t deadline) {
  for (;;) {
    int64_t left = deadline - now_ms();
    if (left <= 0) {
      return -1;
    }
    struct pollfd p = {.fd = fd, .events = events, .revents = 0};
    struct timespec ts = {(time_t)(left / 1000), (long)(left % 1000) * 1000000};
    long r = SYS5(SYS_ppoll, &p, 1, &ts, NULL, 0);
    if (r > 0) {
      return 0;
    }
    if (r < 0 && r != -EINTR) {
      return -1;
    }
  }
}

/* Sends all of buf, across partial writes and EINTR, before `deadline`.
 * MSG_NOSIGNAL: a client that went away must not SIGPIPE the program. */
static int send_all(int fd, const char* buf, size_t n, int64_t deadline) {
  while (n > 0) {
    long w = sys6(SYS_sendto, fd, (long)buf, (long)n, MSG_NOSIGNAL, 0, 0);
    if (w > 0) {
      buf += w;
      n -= (size_t)w;
      continue;
    }
    if (w < 0 && w != -EINTR && w != -EAGAIN) {
      return -1;
    }
    if (wait_fd(fd, POLLOUT, deadline) != 0) {
      return -1;
    }
  }
  return 0;
}

/* Hands g_call to the agent pthread and waits for its answer, reading files
 * for it meanwhile. */
static void call_agent(void) {
  store_and_wake(&g_turn, TURN_AGENT);
  for (;;) {
    int turn = load(&g_turn);
    if (turn == TURN_DONE) {
      break;
    }
    if (turn == TURN_READ) {
      g_read.result = read_file(g_read.path, g_read.offset, g_read.buf, g_read.cap);
      store_and_wake(&g_turn, TURN_AGENT);
      continue;
    }
    wait_change(&g_turn, turn, NULL);
  }
  __atomic_store_n(&g_turn, TURN_SOCK, __ATOMIC_RELEASE);
}

static void send_text(int fd, const char* text) {
  send_all(fd, text, strlen(text), now_ms() + WRITE_DEADLINE_MS);
}

/* One connection: check the peer, read one line, answer. */
static void serve(int fd) {
  struct ucred cred;
  socklen_t len = sizeof cred;
  if (SYS5(SYS_getsockopt, fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    return;
  }
  memset(&g_call, 0, sizeof g_call);
  g_call.op = AGENT_CALL_PEER;
  g_call.uid = cred.uid;
  call_agent();
  if (!g_call.allowed) {
    return; /* no answer at all: a stranger learns nothing */
  }

  char req[64];
  size_t used = 0;
  const int64_t read_deadline = now_ms() + READ_DEADLINE_MS;
  for (;;) {
    long n = sys6(SYS_recvfrom, fd, (long)(req + used), (long)(sizeof req - used), 0, 0, 0);
    if (n == 0) {
      return; /* closed before a full line: nothing to answer */
    }
    if (n < 0) {
      if (n != -EINTR && n != -EAGAIN) {
        return;
      }
      if (wait_fd(fd, POLLIN, read_deadline) != 0) {
        return; /* silent client: drop it */
      }
      continue;
    }
    used += (size_t)n;
    if (memchr(req, '\n', used) != NULL) {
      break;
    }
    if (used == sizeof req) {
      send_text(fd, "1\nrequest too long\n");
      return;
    }
  }
  *(char*)memchr(req, '\n', used) = '\0';

  memset(&g_call, 0, sizeof g_call);
  g_call.op = AGENT_CALL_COMMAND;
  g_call.line = req;
  call_agent();
  /* The client's time to take the answer, counted from when it is ready. */
  const int64_t deadline = now_ms() + WRITE_DEADLINE_MS;
  if (send_all(fd, g_call.head, g_call.head_len, deadline) == 0 && g_call.tail != NULL) {
    send_all(fd, g_call.tail, g_call.tail_len, deadline);
  }
}

static int sock_main(void* arg) {
  (void)arg;
  /* Named so that top -H, /proc/<pid>/task/<tid>/comm and a debugger show
   * what this task is. */
  SYS5(SYS_prctl, PR_SET_NAME, "memtrimd-sock", 0, 0, 0);
  if (setup() != 0) {
    store_and_wake(&g_setup, -1);
    return 0; /* the task ends (glibc's clone makes it call exit) */
  }
  drop_privileges();
  store_and_wake(&g_setup, 1);
  for (;;) {
    /* While the sampler is on, its lease and budget are checked between
     * connections (agent_sampler_tick: atomics only): a connection is
     * waited for at most until the next check. */
    const int64_t tick = agent_sampler_tick(now_ms());
    if (tick >= 0 && wait_fd(g_listen_fd, POLLIN, now_ms() + tick) != 0) {
      continue;
    }
    long fd = SYS4(SYS_accept4, g_listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (fd == -EINTR || fd == -ECONNABORTED) {
        continue;
      }
      if (fd == -EBADF || fd == -EINVAL || fd == -ENOTSOCK) {
        return 0; /* cannot happen in a private table; never spin */
      }
      /* EMFILE, ENOBUFS, ...: the process is short of something; back off
       * instead of spinning. */
      struct timespec pause = {0, 100 * 1000 * 1000};
      SYS2(SYS_nanosleep, &pause, NULL);
      continue;
    }
    serve((int)fd);
    SYS2(SYS_shutdown, fd, SHUT_RDWR);
    sys_close((int)fd);
  }
}

/* ---- The agent pthread's side ---- */

int agent_sock_start(const char* tmpl, pid_t pid, int err_fd) {
  size_t n = strlen(tmpl);
  if (n >= sizeof g_template) {
    agent_complain(err_fd, "MEMTRIMD_AGENT_SOCKET is not an absolute path that fits a UNIX socket",
                   0);
    return -1;
  }
  memcpy(g_template, tmpl, n + 1);
  g_pid = pid;
  g_err_fd = err_fd; /* the same number in the socket task's copy */

  /* A guard page below the stack: an overflow faults instead of writing
   * over the program's memory. */
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  char* stack = mmap(NULL, STACK_BYTES + page, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) {
    agent_complain(err_fd, "no memory for the socket task's stack", 0);
    return -1;
  }
  mprotect(stack, page, PROT_NONE);
  /* No CLONE_FILES: the new task's table is a copy of this one, its own
   * from birth. The caller has every signal blocked, and so has the task. */
  const int flags = CLONE_VM | CLONE_FS | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM;
  int tid = clone(sock_main, stack + page + STACK_BYTES, flags, NULL);
  if (tid < 0) {
    /* errno is this pthread's own: the task was not made. */
    agent_complain(err_fd,
                   "clone() of the socket task refused, so the agent cannot keep its socket "
                   "out of the program's descriptors",
                   errno);
    munmap(stack, STACK_BYTES + page);
    return -1;
  }
  g_tid = tid;
  /* No deadline here: the setup makes no call that waits on another
   * process, and the constructor, which the program waits on, has its
   * own. */
  for (;;) {
    int state = load(&g_setup);
    if (state != 0) {
      return state == 1 ? 0 : -1;
    }
    wait_change(&g_setup, 0, NULL);
  }
}

const char* agent_sock_path(void) { return g_path; }

void agent_sock_remove(void) {
  /* The raw getpid: a vfork child shares this memory, a fork child a copy
   * of it, and both are other processes whose exit must leave the
   * parent's socket alone (glibc no longer caches the pid, but the raw call
   * needs no thread-local state at all). */
  if (load(&g_setup) != 1 || g_pid == 0 || SYS0(SYS_getpid) != g_pid) {
    return;
  }
  SYS3(SYS_unlinkat, AT_FDCWD, g_path, 0);
}

pid_t agent_sock_tid(void) { return g_tid; }

void agent_sock_serve(agent_handler_fn handler) {
  for (;;) {
    int turn = load(&g_turn);
    if (turn != TURN_AGENT) {
      wait_change(&g_turn, turn, NULL);
      continue;
    }
    handler(&g_call);
    store_and_wake(&g_turn, TURN_DONE);
  }
}

long agent_sock_read(const char* path, uint64_t offset, char* buf, size_t cap) {
  g_read.path = path;
  g_read.offset = offset;
  g_read.buf = buf;
  g_read.cap = cap;
  store_and_wake(&g_turn, TURN_READ);
  for (;;) {
    int turn = load(&g_turn);
    if (turn == TURN_AGENT) {
      return g_read.result;
    }
    wait_change(&g_turn, turn, NULL);
  }
}
