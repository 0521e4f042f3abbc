/*
 * closing_server - a server that behaves like daemons do at start: it closes
 * every descriptor it did not open itself (closefrom(3)), optionally drops
 * root privileges, and then serves its own listening socket. Used to check
 * that a preloaded agent stays out of the program's descriptors and follows
 * its uid.
 *
 *   closing_server --ready-file PATH [--setuid UID --setgid GID] [--raw]
 *                  [--dumpable] [--lock FILE] [--dlopen LIB [--dlclose]]
 *
 * In order:
 *   1. pipe(): the numbers it got are reported (a preloaded library that
 *      holds a descriptor shifts them).
 *   2. --lock FILE: opens FILE and takes a POSIX write lock on all of it
 *      (fcntl F_SETLK), kept until exit.
 *   3. --dlopen LIB: loads LIB now (its constructor runs while the lock is
 *      held); the lock descriptor is the only one above 2. --dlclose then
 *      unloads it again at once (what a program that dlclose()s a library
 *      it loaded does to the preload agent).
 *   4. Closes every descriptor >= 3 but the lock's (close_range, or a loop).
 *   5. Listens on 127.0.0.1 (a kernel-chosen port) and writes the ready
 *      file: "port=P pipe=R,W listen_fd=F\n".
 *   6. --setgid/--setuid: setgroups(0), setgid, setuid, as servers started
 *      as root do after binding; --dumpable then sets PR_SET_DUMPABLE (as
 *      nginx does), so a process of the same uid may read its /proc files.
 *      --raw: the same with bare system calls, which change only the
 *      calling thread and pass by glibc's (and a preloaded library's)
 *      setuid, as some runtimes do.
 *   7. Serves one connection at a time: reads one line "ask N\n" and answers
 *      "program N\n". Runs until killed.
 */
#define _GNU_SOURCE

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_close_range
#define SYS_close_range 436
#endif

static void die(const char *what) {
  fprintf(stderr, "closing_server: %s: %s\n", what, strerror(errno));
  exit(1);
}

/* Closes every descriptor >= 3 except `keep` (-1: none). */
static void close_from_3(int keep) {
  if (keep < 0) {
    if (syscall(SYS_close_range, 3u, ~0u, 0u) == 0) {
      return;
    }
  } else if ((keep == 3 || syscall(SYS_close_range, 3u, (unsigned)keep - 1, 0u) == 0) &&
             syscall(SYS_close_range, (unsigned)keep + 1, ~0u, 0u) == 0) {
    return;
  }
  struct rlimit rl;
  long max = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? (long)rl.rlim_cur : 1024;
  for (long fd = 3; fd < max; ++fd) {
    if (fd != keep) {
      close((int)fd);
    }
  }
}

/* Reads one line into buf (NUL-terminated, without the '\n'); -1 on EOF or
 * error before a full line. */
static int read_line(int fd, char *buf, size_t cap) {
  size_t used = 0;
  while (used + 1 < cap) {
    ssize_t n = read(fd, buf + used, 1);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return -1;
    }
    if (buf[used] == '\n') {
      buf[used] = '\0';
      return 0;
    }
    used++;
  }
  return -1;
}

int main(int argc, char **argv) {
  const char *ready = NULL, *lock_path = NULL, *lib = NULL;
  long uid = -1, gid = -1;
  int dumpable = 0, raw = 0, unload = 0;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--ready-file") == 0 && i + 1 < argc) {
      ready = argv[++i];
    } else if (strcmp(argv[i], "--setuid") == 0 && i + 1 < argc) {
      uid = atol(argv[++i]);
    } else if (strcmp(argv[i], "--setgid") == 0 && i + 1 < argc) {
      gid = atol(argv[++i]);
    } else if (strcmp(argv[i], "--dumpable") == 0) {
      dumpable = 1;
    } else if (strcmp(argv[i], "--raw") == 0) {
      raw = 1;
    } else if (strcmp(argv[i], "--lock") == 0 && i + 1 < argc) {
      lock_path = argv[++i];
    } else if (strcmp(argv[i], "--dlopen") == 0 && i + 1 < argc) {
      lib = argv[++i];
    } else if (strcmp(argv[i], "--dlclose") == 0) {
      unload = 1;
    } else {
      fprintf(stderr,
              "usage: closing_server --ready-file PATH [--setuid UID --setgid GID] [--raw] "
              "[--dumpable] [--lock FILE] [--dlopen LIB [--dlclose]]\n");
      return 2;
    }
  }
  if (ready == NULL) {
    fprintf(stderr, "closing_server: --ready-file is required\n");
    return 2;
  }

  int p[2];
  if (pipe(p) != 0) {
    die("pipe");
  }
  const int pipe_r = p[0], pipe_w = p[1];

  int lock_fd = -1;
  if (lock_path != NULL) {
    lock_fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    if (lock_fd < 0 || fcntl(lock_fd, F_SETLK, &fl) != 0) {
      die("lock");
    }
  }
  if (lib != NULL) {
    close(pipe_r);
    close(pipe_w);
    void *handle = dlopen(lib, RTLD_NOW);
    if (handle == NULL) {
      fprintf(stderr, "closing_server: dlopen: %s\n", dlerror());
      return 1;
    }
    if (unload && dlclose(handle) != 0) {
      fprintf(stderr, "closing_server: dlclose: %s\n", dlerror());
      return 1;
    }
  }

  /* What a daemon does first: nothing it inherited stays open. */
  close_from_3(lock_fd);

  int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (ls < 0) {
    die("socket");
  }
  struct sockaddr_in addr;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (bind(ls, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(ls, 64) != 0 ||
      getsockname(ls, (struct sockaddr *)&addr, &len) != 0) {
    die("listen");
  }

  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", ready);
  FILE *f = fopen(tmp, "w");
  if (f == NULL) {
    die("ready file");
  }
  fprintf(f, "port=%d pipe=%d,%d listen_fd=%d\n", ntohs(addr.sin_port), pipe_r, pipe_w, ls);
  if (fclose(f) != 0 || rename(tmp, ready) != 0) {
    die("ready file");
  }

  /* Like nginx: bind as root, then drop (the test waits for the new uid). */
  if (raw) {
    if ((gid >= 0 && syscall(SYS_setresgid, gid, gid, gid) != 0) ||
        (uid >= 0 && syscall(SYS_setresuid, uid, uid, uid) != 0)) {
      die("raw setresuid");
    }
  } else {
    if (gid >= 0 && (setgroups(0, NULL) != 0 || setgid((gid_t)gid) != 0)) {
      die("setgid");
    }
    if (uid >= 0 && setuid((uid_t)uid) != 0) {
      die("setuid");
    }
  }
  if (dumpable && prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0) {
    die("prctl");
  }


  for (;;) {
    int c = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
    if (c < 0) {
      if (errno == EINTR || errno == ECONNABORTED) {
        continue;
      }
      die("accept");
    }
    char line[128];
    if (read_line(c, line, sizeof line) == 0 && strncmp(line, "ask ", 4) == 0) {
      char answer[160];
      int n = snprintf(answer, sizeof answer, "program %s\n", line + 4);
      ssize_t ignored = write(c, answer, (size_t)n);
      (void)ignored;
    }
    close(c);
  }
}
