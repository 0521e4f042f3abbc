/*
 * attach_server - a process that serves a UNIX socket the way a HotSpot
 * attach listener does, for tests of what memtrimd's attach client refuses.
 *
 * It binds --path ("%p" in it becomes this process's pid), sets --mode on
 * the file and listens. One connection at a time: it reads the request until
 * the five NUL bytes that end a version 1 attach request, end of file, or a
 * 2 s read deadline, logs "request bytes=<n> head=<first bytes, NUL as '.'>"
 * on stdout, then answers "0\n" followed by --answer-bytes bytes of text (or
 * endlessly, until the client hangs up, with --answer-bytes -1), logs
 * "answered bytes=<n>" and closes. A client that sent nothing gets no
 * answer. Used as:
 *
 *   - a squatter at a JVM's socket path (another uid, or the JVM's uid but
 *     another process): memtrimd must refuse it, and send it nothing;
 *   - a fake JVM serving its own /tmp/.java_pid<pid> (--fake-libjvm DIR maps a
 *     file named libjvm.so, which is how memtrimd tells a HotSpot JVM), with
 *     an answer larger than memtrimd's cap.
 *
 * As a fake JVM for what memtrimd does before it signals one:
 *
 *   - --sigquit-log catches SIGQUIT (so the process looks like a JVM that
 *     does) and on each one looks for its trigger file the way HotSpot does
 *     (AttachListener::is_init_trigger: stat .attach_pid<pid> in its working
 *     directory, else in /tmp; honoured only when owned by its effective uid
 *     or root) and logs "sigquit trigger=<path|none> uid=<owner>
 *     honoured=<0|1>": a SIGQUIT without an honoured trigger is what prints
 *     a real JVM's thread dump;
 *   - --stop-file PATH: once PATH exists it stops serving and removes its
 *     socket (logs "stopped serving"), as a JVM that lets its listener go;
 *   - --chroot DIR, --cwd DIR and --uid N: after mapping its libjvm.so, it
 *     chroots into DIR (working directory its new root), changes to --cwd
 *     (inside it) and becomes uid and gid N;
 *   - arguments starting with '@' are ignored: they stand in its command line
 *     for a java launcher's @argfiles;
 *   - without --path it serves nothing.
 *
 * The optional ready file is written once it listens; it runs until killed.
 * While the optional --pause-file exists it accepts nothing (it logs "paused"
 * once, after the answer it was sending): a test measures its client between
 * answers, with no answer half read.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define WORKLOAD_NAME "attach_server"
#include "workload.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: attach_server --path PATH [--mode OCTAL] [--answer-bytes N] [--fake-libjvm DIR]\n"
          "                     [--ready-file PATH] [--pause-file PATH] [--tag STRING]\n"
          "                     [--sigquit-log] [--stop-file PATH] [--chroot DIR] [--uid N] "
          "[--cwd DIR] [@ARGFILE...]\n"
          "  --path PATH         socket to bind (\"%%p\" is replaced by this process's pid)\n"
          "  --mode OCTAL        file mode of the socket (default 600)\n"
          "  --answer-bytes N    body bytes after the \"0\\n\" status line; -1: endless "
          "(default 0)\n"
          "  --fake-libjvm DIR   create DIR/libjvm.so and map it, so the process looks like a JVM\n"
          "  --ready-file PATH   write \"<pid>\\n\" to PATH (atomically) once listening\n"
          "  --pause-file PATH   accept no connection while PATH exists\n"
          "  --tag STRING        ignored; lets tests find this process by its command line\n"
          "  --sigquit-log       catch SIGQUIT; log the trigger file HotSpot would look at\n"
          "  --stop-file PATH    once PATH exists, stop serving and remove the socket\n"
          "  --chroot DIR        chroot into DIR (after mapping libjvm.so)\n"
          "  --cwd DIR           then change to DIR\n"
          "  --uid N             then run as uid and gid N\n"
          "  @ARGFILE            ignored (a java launcher's argfile, for option readers)\n");
}

/* PATH with every "%p" replaced by the pid. */
static int expand_path(const char *in, char *out, size_t size) {
  size_t o = 0;
  for (size_t i = 0; in[i] != '\0'; ++i) {
    char piece[32];
    const char *add = piece;
    if (in[i] == '%' && in[i + 1] == 'p') {
      snprintf(piece, sizeof piece, "%ld", (long)getpid());
      ++i;
    } else {
      piece[0] = in[i];
      piece[1] = '\0';
    }
    size_t n = strlen(add);
    if (o + n + 1 > size) {
      return -1;
    }
    memcpy(out + o, add, n);
    o += n;
  }
  out[o] = '\0';
  return 0;
}

static int map_fake_libjvm(const char *dir) {
  char path[PATH_MAX];
  if (snprintf(path, sizeof path, "%s/libjvm.so", dir) >= (int)sizeof path) {
    return -1;
  }
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    fprintf(stderr, "attach_server: open %s: %s\n", path, strerror(errno));
    return -1;
  }
  long page = sysconf(_SC_PAGESIZE);
  if (ftruncate(fd, page) != 0) {
    close(fd);
    return -1;
  }
  void *p = mmap(NULL, (size_t)page, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    fprintf(stderr, "attach_server: mmap %s: %s\n", path, strerror(errno));
    return -1;
  }
  return 0; /* stays mapped for the life of the process */
}

/* Reads a request: until five NULs, EOF, or 2 s without data. */
static size_t read_request(int fd, char *head, size_t head_size) {
  size_t total = 0;
  int nuls = 0;
  char buf[4096];
  while (nuls < 5) {
    struct pollfd p = {fd, POLLIN, 0};
    int r = poll(&p, 1, 2000);
    if (r < 0 && errno == EINTR) {
      continue;
    }
    if (r <= 0) {
      break;
    }
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      break;
    }
    for (ssize_t i = 0; i < n; ++i) {
      if (total + (size_t)i + 1 < head_size) {
        head[total + (size_t)i] = buf[i] == '\0' ? '.' : buf[i];
      }
      nuls += buf[i] == '\0';
    }
    total += (size_t)n;
  }
  head[total < head_size ? total : head_size - 1] = '\0';
  return total;
}

static long long answer(int fd, long long body_bytes) {
  static char chunk[65536];
  if (chunk[0] == '\0') {
    for (size_t i = 0; i < sizeof chunk; ++i) {
      chunk[i] = (i % 64 == 63) ? '\n' : 'x';
    }
  }
  long long sent = 0;
  if (send(fd, "0\n", 2, MSG_NOSIGNAL) != 2) {
    return sent;
  }
  sent = 2;
  long long left = body_bytes;
  while (body_bytes < 0 || left > 0) {
    size_t n = sizeof chunk;
    if (body_bytes >= 0 && (long long)n > left) {
      n = (size_t)left;
    }
    ssize_t w = send(fd, chunk, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) {
      continue;
    }
    if (w <= 0) {
      break; /* the client hung up */
    }
    sent += w;
    left -= w;
  }
  return sent;
}

/* Decimal of v into buf (no NUL); returns the length. Async-signal-safe. */
static size_t format_ulong(unsigned long v, char *buf) {
  char tmp[24];
  size_t n = 0;
  do {
    tmp[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v != 0);
  for (size_t i = 0; i < n; ++i) buf[i] = tmp[n - 1 - i];
  return n;
}

static void append(char *line, size_t *len, const char *text) {
  size_t n = strlen(text);
  memcpy(line + *len, text, n);
  *len += n;
}

/* HotSpot's check of its trigger file, in a signal handler: only stat,
 * getpid, geteuid and write. */
static void on_sigquit(int sig) {
  (void)sig;
  int saved = errno;
  char pid[24];
  size_t pid_len = format_ulong((unsigned long)getpid(), pid);
  char cwd_name[64] = ".attach_pid";
  memcpy(cwd_name + strlen(cwd_name), pid, pid_len);
  cwd_name[11 + pid_len] = '\0';
  char tmp_name[80] = "/tmp/";
  memcpy(tmp_name + 5, cwd_name, 12 + pid_len);
  struct stat st;
  const char *found = NULL;
  if (stat(cwd_name, &st) == 0) {
    found = cwd_name;
  } else if (stat(tmp_name, &st) == 0) {
    found = tmp_name;
  }
  char line[256];
  size_t len = 0;
  append(line, &len, "sigquit trigger=");
  if (found == NULL) {
    append(line, &len, "none\n");
  } else {
    append(line, &len, found);
    append(line, &len, " uid=");
    len += format_ulong((unsigned long)st.st_uid, line + len);
    append(line, &len,
           st.st_uid == geteuid() || st.st_uid == 0 ? " honoured=1\n" : " honoured=0\n");
  }
  ssize_t w = write(STDOUT_FILENO, line, len);
  (void)w;
  errno = saved;
}

/* The ready file through a directory opened before a chroot. */
static int write_ready_at(int dir_fd, const char *name) {
  char tmp[PATH_MAX];
  if (snprintf(tmp, sizeof tmp, "%s.tmp", name) >= (int)sizeof tmp) return -1;
  int fd = openat(dir_fd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return -1;
  char line[32];
  int len = snprintf(line, sizeof line, "%ld\n", (long)getpid());
  int ok = write(fd, line, (size_t)len) == len;
  close(fd);
  return ok && renameat(dir_fd, tmp, dir_fd, name) == 0 ? 0 : -1;
}

int main(int argc, char **argv) {
  enum {
    OPT_PATH = 1000,
    OPT_MODE,
    OPT_ANSWER,
    OPT_LIBJVM,
    OPT_READY,
    OPT_PAUSE,
    OPT_TAG,
    OPT_SIGQUIT,
    OPT_SERVE,
    OPT_CHROOT,
    OPT_UID,
    OPT_CWD
  };
  static const struct option long_options[] = {
      {"path", required_argument, NULL, OPT_PATH},
      {"mode", required_argument, NULL, OPT_MODE},
      {"answer-bytes", required_argument, NULL, OPT_ANSWER},
      {"fake-libjvm", required_argument, NULL, OPT_LIBJVM},
      {"ready-file", required_argument, NULL, OPT_READY},
      {"pause-file", required_argument, NULL, OPT_PAUSE},
      {"tag", required_argument, NULL, OPT_TAG},
      {"sigquit-log", no_argument, NULL, OPT_SIGQUIT},
      {"stop-file", required_argument, NULL, OPT_SERVE},
      {"chroot", required_argument, NULL, OPT_CHROOT},
      {"uid", required_argument, NULL, OPT_UID},
      {"cwd", required_argument, NULL, OPT_CWD},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  const char *path_arg = NULL;
  const char *libjvm_dir = NULL;
  const char *ready_file = NULL;
  const char *pause_file = NULL;
  long mode = 0600;
  long long answer_bytes = 0;
  int sigquit_log = 0;
  const char *stop_file = NULL;
  const char *chroot_dir = NULL;
  long uid = -1;
  const char *cwd = NULL;
  for (;;) {
    int c = getopt_long(argc, argv, "h", long_options, NULL);
    if (c == -1) {
      break;
    }
    switch (c) {
      case OPT_PATH:
        path_arg = optarg;
        break;
      case OPT_MODE: {
        char *end = NULL;
        errno = 0;
        mode = strtol(optarg, &end, 8);
        if (errno != 0 || end == optarg || *end != '\0' || mode < 0 || mode > 07777) {
          fprintf(stderr, "attach_server: --mode must be octal\n");
          return 2;
        }
        break;
      }
      case OPT_ANSWER:
        answer_bytes = parse_long("--answer-bytes", optarg, -1, LONG_MAX);
        break;
      case OPT_LIBJVM:
        libjvm_dir = optarg;
        break;
      case OPT_READY:
        ready_file = optarg;
        break;
      case OPT_PAUSE:
        pause_file = optarg;
        break;
      case OPT_TAG:
        break;
      case OPT_SIGQUIT:
        sigquit_log = 1;
        break;
      case OPT_SERVE:
        stop_file = optarg;
        break;
      case OPT_CHROOT:
        chroot_dir = optarg;
        break;
      case OPT_CWD:
        cwd = optarg;
        break;
      case OPT_UID:
        uid = parse_long("--uid", optarg, 0, 4294967294L);
        break;
      case 'h':
        usage(stdout);
        return 0;
      default:
        usage(stderr);
        return 2;
    }
  }
  for (int i = optind; i < argc; ++i) {
    if (argv[i][0] != '@') {
      usage(stderr);
      return 2;
    }
  }
  signal(SIGPIPE, SIG_IGN);
  if (sigquit_log) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigquit;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGQUIT, &sa, NULL);
  }
  if (libjvm_dir != NULL && map_fake_libjvm(libjvm_dir) != 0) {
    return 1;
  }
  /* Where the ready file goes, opened before a chroot hides it. */
  int ready_dir = -1;
  const char *ready_name = NULL;
  if (ready_file != NULL) {
    char dir[PATH_MAX];
    const char *slash = strrchr(ready_file, '/');
    if (slash == NULL) {
      strcpy(dir, ".");
      ready_name = ready_file;
    } else {
      size_t n = (size_t)(slash - ready_file);
      if (n >= sizeof dir) return 2;
      memcpy(dir, ready_file, n);
      dir[n] = '\0';
      if (n == 0) strcpy(dir, "/");
      ready_name = slash + 1;
    }
    ready_dir = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (ready_dir < 0) {
      fprintf(stderr, "attach_server: open %s: %s\n", dir, strerror(errno));
      return 1;
    }
  }
  if (chroot_dir != NULL && (chroot(chroot_dir) != 0 || chdir("/") != 0)) {
    fprintf(stderr, "attach_server: chroot %s: %s\n", chroot_dir, strerror(errno));
    return 1;
  }
  if (cwd != NULL && chdir(cwd) != 0) {
    fprintf(stderr, "attach_server: chdir %s: %s\n", cwd, strerror(errno));
    return 1;
  }
  if (uid >= 0 && (setgroups(0, NULL) != 0 || setgid((gid_t)uid) != 0 || setuid((uid_t)uid) != 0)) {
    fprintf(stderr, "attach_server: setuid %ld: %s\n", uid, strerror(errno));
    return 1;
  }
  if (path_arg == NULL) {
    if (ready_dir >= 0 && write_ready_at(ready_dir, ready_name) != 0) return 1;
    for (;;) pause();
  }

  struct sockaddr_un addr;
  memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  if (expand_path(path_arg, addr.sun_path, sizeof addr.sun_path) != 0) {
    fprintf(stderr, "attach_server: socket path too long\n");
    return 2;
  }
  /* A socket nobody listens on is what a SIGKILLed process of the same pid
   * left behind; replace it, as HotSpot does with its own. */
  struct stat st;
  if (lstat(addr.sun_path, &st) == 0 && S_ISSOCK(st.st_mode)) {
    int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (probe >= 0 && connect(probe, (struct sockaddr *)&addr, sizeof addr) != 0 &&
        errno == ECONNREFUSED) {
      unlink(addr.sun_path);
    }
    if (probe >= 0) close(probe);
  }
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0 || bind(s, (struct sockaddr *)&addr, sizeof addr) != 0) {
    fprintf(stderr, "attach_server: bind %s: %s\n", addr.sun_path, strerror(errno));
    return 1;
  }
  if (chmod(addr.sun_path, (mode_t)mode) != 0 || listen(s, 16) != 0) {
    fprintf(stderr, "attach_server: chmod/listen %s: %s\n", addr.sun_path, strerror(errno));
    return 1;
  }
  if (ready_dir >= 0 && write_ready_at(ready_dir, ready_name) != 0) {
    return 1;
  }
  for (;;) {
    if (stop_file != NULL) {
      /* Looked at every 50 ms while no client comes. */
      struct pollfd p = {s, POLLIN, 0};
      int ready = access(stop_file, F_OK) == 0 ? 0 : poll(&p, 1, 50);
      if (ready < 0 || (ready == 0 && access(stop_file, F_OK) != 0)) continue;
      if (ready == 0) {
        unlink(addr.sun_path);
        close(s);
        printf("stopped serving\n");
        fflush(stdout);
        for (;;) pause();
      }
    }
    if (pause_file != NULL && access(pause_file, F_OK) == 0) {
      printf("paused\n");
      fflush(stdout);
      while (access(pause_file, F_OK) == 0) {
        poll(NULL, 0, 10);
      }
    }
    int c = accept4(s, NULL, NULL, SOCK_CLOEXEC);
    if (c < 0) {
      if (errno == EINTR || errno == ECONNABORTED) {
        continue;
      }
      fprintf(stderr, "attach_server: accept: %s\n", strerror(errno));
      return 1;
    }
    char head[40];
    size_t got = read_request(c, head, sizeof head);
    printf("request bytes=%zu head=%s\n", got, head);
    fflush(stdout);
    if (got > 0) {
      long long sent = answer(c, answer_bytes);
      printf("answered bytes=%lld\n", sent);
      fflush(stdout);
    }
    close(c);
  }
}
