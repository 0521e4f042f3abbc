/*
 * libmemtrimd_agent.so - lets memtrimd ask a glibc program, from outside, to
 * give free heap pages back (malloc_trim) and to describe its heap.
 *
 * Load it with LD_PRELOAD. Its constructor starts one detached thread that
 * serves a UNIX stream socket:
 *
 *   path   $MEMTRIMD_AGENT_SOCKET (absolute; every "%p" becomes the pid), or
 *          /tmp/.memtrimd_agent.<pid>. The pid is getpid(), i.e. the pid in
 *          the program's own pid namespace. Mode 0600, removed at exit.
 *   who    SO_PEERCRED uid 0 or the program's euid; anyone else has the
 *          connection closed without an answer (counted, see "ping").
 *   ask    one line per connection: "trim", "malloc_info", "mallinfo2" or
 *          "ping", ending in '\n'.
 *   answer "<status>\n<body>", then the agent closes. Status 0 = ok,
 *          1 = error (the body says why).
 *          trim        duration_ns, rss_before, rss_after (bytes, from
 *                      /proc/self/statm), result (malloc_trim's return)
 *          malloc_info the XML of malloc_info(0, ...)
 *          mallinfo2   arena ordblks smblks hblks hblkhd usmblks fsmblks
 *                      uordblks fordblks keepcost
 *          ping        pid, version (1), refused (connections refused)
 *          Bodies other than malloc_info are "key=value\n" lines.
 *
 * Set MEMTRIMD_AGENT_DISABLE=1 to load the library without starting it.
 *
 * fork and exec: a forked child has no agent thread (threads are not
 * inherited) and its atfork handler closes the inherited listening socket,
 * so connections to the path only ever reach the parent. A child that execs
 * with LD_PRELOAD inherited runs this constructor again and serves its own
 * socket named by its own pid (use "%p" in MEMTRIMD_AGENT_SOCKET so children
 * do not compete for one path; without it the first live owner keeps the
 * path and later processes run without an agent).
 *
 * The agent thread never calls malloc: its first malloc would attach it to
 * an arena (creating one, with up to 64 MiB of address space) and a trim must
 * not add to the heap it is trimming. Everything it needs is static or on its
 * stack; the one stdio stream (for malloc_info) is set up by the constructor.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define AGENT_VERSION 1
/* A client gets this long to send its one line, so a silent client cannot
 * hold the agent (and every later client) up. */
#define READ_DEADLINE_MS 2000
/* And this long to read the answer (malloc_info can be hundreds of kB). */
#define WRITE_DEADLINE_MS 10000
/* malloc_info lists up to ~140 size classes per arena (~8 kB of XML) and a
 * program may have 8 arenas per CPU: 4 MiB (memtrimd's default answer cap)
 * covers hundreds of fragmented arenas. Untouched pages of the buffer never
 * become resident. */
#ifndef INFO_BUFFER_BYTES
#define INFO_BUFFER_BYTES (4u << 20)
#endif

static char g_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
static int g_listen_fd = -1;
static pid_t g_pid;
static uid_t g_euid;
static unsigned long g_refused; /* only the agent thread touches it */

/* malloc_info() writes to a FILE, and stdio allocates a FILE and its buffer
 * with malloc. So the constructor, on the loading thread, opens the stream
 * once over a static buffer (fmemopen) and gives it a static stdio buffer;
 * the agent thread only rewinds it and writes. XML longer than the buffer is
 * reported as an error rather than cut short. */
static char g_info_buf[INFO_BUFFER_BYTES];
static char g_info_stdio_buf[8192];
static FILE *g_info;

/* A string builder over a caller's fixed buffer; sets `overflow` instead of
 * writing past the end. */
struct out {
  char *p;
  size_t len, cap;
  int overflow;
};

static void put_str(struct out *o, const char *s) {
  size_t n = strlen(s);
  if (o->len + n > o->cap) {
    o->overflow = 1;
    return;
  }
  memcpy(o->p + o->len, s, n);
  o->len += n;
}

static void put_u64(struct out *o, uint64_t v) {
  char digits[24];
  size_t i = sizeof digits;
  digits[--i] = '\0';
  do {
    digits[--i] = (char)('0' + v % 10);
    v /= 10;
  } while (v != 0);
  put_str(o, digits + i);
}

static void put_kv(struct out *o, const char *key, uint64_t v) {
  put_str(o, key);
  put_str(o, "=");
  put_u64(o, v);
  put_str(o, "\n");
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Waits for `events` on a nonblocking fd until `deadline` (now_ms()). */
static int wait_fd(int fd, short events, int64_t deadline) {
  for (;;) {
    int64_t left = deadline - now_ms();
    if (left <= 0) {
      return -1;
    }
    struct pollfd p = {.fd = fd, .events = events, .revents = 0};
    int r = poll(&p, 1, (int)left);
    if (r > 0) {
      return 0;
    }
    if (r < 0 && errno != EINTR) {
      return -1;
    }
  }
}

/* Sends all of buf, across partial writes and EINTR, before `deadline`.
 * MSG_NOSIGNAL: a client that went away must not SIGPIPE the program. */
static int send_all(int fd, const char *buf, size_t n, int64_t deadline) {
  while (n > 0) {
    ssize_t w = send(fd, buf, n, MSG_NOSIGNAL);
    if (w > 0) {
      buf += w;
      n -= (size_t)w;
      continue;
    }
    if (w < 0 && errno != EINTR && errno != EAGAIN) {
      return -1;
    }
    if (wait_fd(fd, POLLOUT, deadline) != 0) {
      return -1;
    }
  }
  return 0;
}

/* The client's time to take the answer, counted from when it is ready (a
 * trim of a large heap can itself take seconds). */
static int64_t answer_deadline(void) { return now_ms() + WRITE_DEADLINE_MS; }

/* Resident bytes from /proc/self/statm (second field, in pages). Plain
 * open/read into the stack: no stdio, no malloc. 0 if unreadable. */
static uint64_t rss_bytes(void) {
  char buf[256];
  int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return 0;
  }
  ssize_t n;
  do {
    n = read(fd, buf, sizeof buf - 1);
  } while (n < 0 && errno == EINTR);
  close(fd);
  if (n <= 0) {
    return 0;
  }
  buf[n] = '\0';
  const char *p = strchr(buf, ' ');
  if (p == NULL) {
    return 0;
  }
  uint64_t pages = 0;
  for (++p; *p >= '0' && *p <= '9'; ++p) {
    pages = pages * 10 + (uint64_t)(*p - '0');
  }
  return pages * (uint64_t)sysconf(_SC_PAGESIZE);
}

static void answer_error(int fd, const char *why) {
  char buf[160];
  struct out o = {buf, 0, sizeof buf, 0};
  put_str(&o, "1\n");
  put_str(&o, why);
  put_str(&o, "\n");
  send_all(fd, buf, o.len, answer_deadline());
}

static void do_trim(int fd) {
  uint64_t before = rss_bytes();
  uint64_t t0 = now_ns();
  int result = malloc_trim(0);
  uint64_t duration = now_ns() - t0;
  uint64_t after = rss_bytes();
  char buf[256];
  struct out o = {buf, 0, sizeof buf, 0};
  put_str(&o, "0\n");
  put_kv(&o, "duration_ns", duration);
  put_kv(&o, "rss_before", before);
  put_kv(&o, "rss_after", after);
  put_kv(&o, "result", (uint64_t)(result < 0 ? 0 : result));
  send_all(fd, buf, o.len, answer_deadline());
}

static void do_mallinfo2(int fd) {
  struct mallinfo2 m = mallinfo2();
  char buf[512];
  struct out o = {buf, 0, sizeof buf, 0};
  put_str(&o, "0\n");
  put_kv(&o, "arena", m.arena);
  put_kv(&o, "ordblks", m.ordblks);
  put_kv(&o, "smblks", m.smblks);
  put_kv(&o, "hblks", m.hblks);
  put_kv(&o, "hblkhd", m.hblkhd);
  put_kv(&o, "usmblks", m.usmblks);
  put_kv(&o, "fsmblks", m.fsmblks);
  put_kv(&o, "uordblks", m.uordblks);
  put_kv(&o, "fordblks", m.fordblks);
  put_kv(&o, "keepcost", m.keepcost);
  send_all(fd, buf, o.len, answer_deadline());
}

static void do_malloc_info(int fd) {
  if (g_info == NULL) {
    answer_error(fd, "malloc_info unavailable (fmemopen failed at startup)");
    return;
  }
  rewind(g_info); /* also clears the error flag of an earlier overflow */
  int rc = malloc_info(0, g_info);
  fflush(g_info);
  long len = ftell(g_info);
  /* fmemopen keeps one byte for a terminating NUL: a full buffer means the
   * XML did not fit. */
  if (rc != 0 || ferror(g_info) || len < 0 || (size_t)len >= sizeof g_info_buf - 1) {
    answer_error(fd, "malloc_info larger than buffer");
    return;
  }
  const int64_t deadline = answer_deadline();
  if (send_all(fd, "0\n", 2, deadline) == 0) {
    send_all(fd, g_info_buf, (size_t)len, deadline);
  }
}

static void do_ping(int fd) {
  char buf[128];
  struct out o = {buf, 0, sizeof buf, 0};
  put_str(&o, "0\n");
  put_kv(&o, "pid", (uint64_t)g_pid);
  put_kv(&o, "version", AGENT_VERSION);
  put_kv(&o, "refused", g_refused);
  send_all(fd, buf, o.len, answer_deadline());
}

/* One connection: check the peer, read one line, answer. */
static void serve(int fd) {
  struct ucred cred;
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
      (cred.uid != 0 && cred.uid != g_euid)) {
    g_refused++;
    return; /* no answer at all: a stranger learns nothing */
  }

  char req[64];
  size_t used = 0;
  const int64_t read_deadline = now_ms() + READ_DEADLINE_MS;
  for (;;) {
    ssize_t n = recv(fd, req + used, sizeof req - used, 0);
    if (n == 0) {
      return; /* closed before a full line: nothing to answer */
    }
    if (n < 0) {
      if (errno != EINTR && errno != EAGAIN) {
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
      answer_error(fd, "request too long");
      return;
    }
  }
  *(char *)memchr(req, '\n', used) = '\0';

  if (strcmp(req, "trim") == 0) {
    do_trim(fd);
  } else if (strcmp(req, "malloc_info") == 0) {
    do_malloc_info(fd);
  } else if (strcmp(req, "mallinfo2") == 0) {
    do_mallinfo2(fd);
  } else if (strcmp(req, "ping") == 0) {
    do_ping(fd);
  } else {
    answer_error(fd, "unknown command");
  }
}

/* The only thread that serves: commands run one at a time, so trims never
 * overlap. All signals are blocked here (see the constructor). */
static void *agent_main(void *arg) {
  (void)arg;
  /* Named so that top -H, /proc/<pid>/task/<tid>/comm and a debugger show
   * what this thread is. */
  prctl(PR_SET_NAME, "memtrimd-agent", 0, 0, 0);
  for (;;) {
    int fd = accept4(g_listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) {
        continue;
      }
      if (errno == EBADF || errno == EINVAL || errno == ENOTSOCK) {
        return NULL; /* the socket is gone: nothing left to serve */
      }
      /* EMFILE, ENOBUFS, ...: the program is short of something; back off
       * instead of spinning. */
      struct timespec pause = {0, 100 * 1000 * 1000};
      nanosleep(&pause, NULL);
      continue;
    }
    serve(fd);
    /* shutdown ends the stream for the client even if a fork() in the
     * program duplicated this descriptor into a child meanwhile. */
    shutdown(fd, SHUT_RDWR);
    close(fd);
  }
}

/* In a forked child: the agent thread did not come along, so nobody would
 * accept on the inherited socket. Close it (close is async-signal-safe, and
 * the parent never closes this descriptor, so the number is still ours). */
static void atfork_child(void) {
  if (g_listen_fd >= 0) {
    close(g_listen_fd);
    g_listen_fd = -1;
  }
}

/* Builds the socket path into g_path; -1 if it does not fit or is not
 * absolute. */
static int build_path(void) {
  char pid[24];
  struct out pid_text = {pid, 0, sizeof pid - 1, 0};
  put_u64(&pid_text, (uint64_t)g_pid);
  pid[pid_text.len] = '\0';

  struct out o = {g_path, 0, sizeof g_path - 1, 0};
  const char *env = getenv("MEMTRIMD_AGENT_SOCKET");
  if (env == NULL || env[0] == '\0') {
    put_str(&o, "/tmp/.memtrimd_agent.");
    put_str(&o, pid);
  } else {
    if (env[0] != '/') {
      return -1;
    }
    for (const char *p = env; *p != '\0' && !o.overflow; ++p) {
      if (p[0] == '%' && p[1] == 'p') {
        put_str(&o, pid);
        ++p;
      } else {
        char c[2] = {*p, '\0'};
        put_str(&o, c);
      }
    }
  }
  if (o.overflow) {
    return -1;
  }
  g_path[o.len] = '\0';
  return 0;
}

/* Whether a process is listening on the socket at `addr` now. Nonblocking:
 * a full backlog (EAGAIN) also means someone is there. */
static int socket_is_live(const struct sockaddr_un *addr) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    return 0;
  }
  int r = connect(fd, (const struct sockaddr *)addr, sizeof *addr);
  int live = r == 0 || errno == EAGAIN || errno == EINPROGRESS;
  close(fd);
  return live;
}

static void complain(const char *what) {
  char buf[256];
  struct out o = {buf, 0, sizeof buf, 0};
  put_str(&o, "memtrimd_agent: not started: ");
  put_str(&o, what);
  put_str(&o, "\n");
  ssize_t ignored = write(STDERR_FILENO, buf, o.len);
  (void)ignored;
}

/* Creates, checks and listens on the socket; the listening fd, or -1. */
static int open_listener(void) {
  struct sockaddr_un addr;
  memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  memcpy(addr.sun_path, g_path, strlen(g_path) + 1);

  /* Whatever sits at the path: a socket nobody listens on is stale (a dead
   * process that had our pid, or our own pre-exec image) and is removed;
   * a live socket or any other file is not ours to take. */
  struct stat st;
  if (lstat(g_path, &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      complain("the socket path exists and is not a socket");
      return -1;
    }
    if (socket_is_live(&addr)) {
      complain("another process serves the socket path");
      return -1;
    }
    unlink(g_path); /* may fail (another user's file in /tmp): bind reports it */
  }

  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    complain("socket() failed");
    return -1;
  }
  /* Linux creates the socket file with the socket inode's mode (minus the
   * umask): fchmod before bind gives 0600 from the start, without touching
   * the process-wide umask under the program's other threads. */
  if (fchmod(fd, 0600) != 0 || bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
    complain("cannot bind the socket path");
    close(fd);
    return -1;
  }
  if (lstat(g_path, &st) != 0 || !S_ISSOCK(st.st_mode) || st.st_uid != g_euid ||
      (st.st_mode & 077) != 0 || listen(fd, 16) != 0) {
    complain("the socket file is not private");
    unlink(g_path);
    close(fd);
    return -1;
  }
  return fd;
}

__attribute__((constructor)) static void agent_start(void) {
  const char *disable = getenv("MEMTRIMD_AGENT_DISABLE");
  if (disable != NULL && strcmp(disable, "1") == 0) {
    return;
  }
  g_pid = getpid();
  g_euid = geteuid();
  if (build_path() != 0) {
    complain("MEMTRIMD_AGENT_SOCKET is not an absolute path that fits a UNIX socket");
    return;
  }
  g_listen_fd = open_listener();
  if (g_listen_fd < 0) {
    return;
  }
  if (pthread_atfork(NULL, NULL, atfork_child) != 0) {
    complain("pthread_atfork failed");
    goto fail;
  }

  /* Here, on the loading thread, malloc is fine (see g_info). */
  g_info = fmemopen(g_info_buf, sizeof g_info_buf, "w");
  if (g_info != NULL && setvbuf(g_info, g_info_stdio_buf, _IOFBF, sizeof g_info_stdio_buf) != 0) {
    fclose(g_info);
    g_info = NULL;
  }

  /* Block every signal before pthread_create so the new thread starts with
   * all of them blocked and never takes a signal meant for the program;
   * then give the loading thread its own mask back. */
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
  if (rc == 0) {
    return;
  }
  complain("pthread_create failed");
fail:
  unlink(g_path);
  close(g_listen_fd);
  g_listen_fd = -1;
}

/* At exit (best effort: not after _exit or a fatal signal; the next process
 * with this pid then removes the stale file). Only the process that created
 * the socket removes it, never a forked child that merely inherited g_path. */
__attribute__((destructor)) static void agent_stop(void) {
  if (g_listen_fd >= 0 && getpid() == g_pid) {
    unlink(g_path);
  }
}
