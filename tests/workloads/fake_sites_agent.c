/*
 * fake_sites_agent - a process that serves memtrimd's agent protocol
 * itself, as any program may: the hostile neighbour of the sites memory
 * budget's test. It is the target, so it passes every owner and peer check
 * memtrimd makes, and it shapes its "sites" answer as it likes.
 *
 * It maps a file named libmemtrimd_agent.so (a page it writes in a fresh
 * directory under /tmp and removes at once: memtrimd takes a program that
 * maps one for a program with the agent) and listens at the path
 * MEMTRIMD_AGENT_SOCKET names ("%p" its pid), mode 0600. To "sampling on N"
 * it says yes; to "sites" it answers --stacks stacks of --frames distinct
 * return addresses each, all inside one function of its own whose name is
 * --name-bytes long (16384 or 1024: two functions named by asm labels, each
 * with 20 KiB of code, so 256 x 64 addresses are distinct); everything else
 * is refused. One connection at a time, each with a 2 s read deadline. The
 * optional ready file is written once it listens; it runs until killed.
 * With --refuse-java 1 it is an agent from before protocol version 7: a
 * "sampling on" with a java= option is refused as such an agent refuses an
 * option it does not know. --log-requests PATH appends each request line
 * to PATH.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define X16 "xxxxxxxxxxxxxxxx"
#define X256 X16 X16 X16 X16 X16 X16 X16 X16 X16 X16 X16 X16 X16 X16 X16 X16
#define X1K X256 X256 X256 X256
#define X16K X1K X1K X1K X1K X1K X1K X1K X1K X1K X1K X1K X1K X1K X1K X1K X1K

/* Never called: their code is where the answered addresses lie. */
void name_16k(void) __asm__("name_16k_" X16K);
void name_1k(void) __asm__("name_1k_" X1K);
void name_16k(void) { __asm__ volatile(".fill 20480, 1, 0x90"); }
void name_1k(void) { __asm__ volatile(".fill 20480, 1, 0x90"); }

static int write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* The request line, read within 2 s; 0 when it came. */
static int read_line(int fd, char *buf, size_t cap) {
  size_t got = 0;
  while (got + 1 < cap) {
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 2000) <= 0) return -1;
    ssize_t r = read(fd, buf + got, cap - 1 - got);
    if (r <= 0) return -1;
    got += (size_t)r;
    buf[got] = '\0';
    char *nl = strchr(buf, '\n');
    if (nl != NULL) {
      *nl = '\0';
      return 0;
    }
  }
  return -1;
}

static void map_agent_name(void) {
  char dir[] = "/tmp/fake_sites_agent.XXXXXX";
  if (mkdtemp(dir) == NULL) exit(2);
  char path[128];
  snprintf(path, sizeof(path), "%s/libmemtrimd_agent.so", dir);
  int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0 || ftruncate(fd, 4096) != 0) exit(2);
  if (mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0) == MAP_FAILED) exit(2);
  close(fd);
  unlink(path);
  rmdir(dir);
}

int main(int argc, char **argv) {
  long name_bytes = 16384, stacks = 256, frames = 64;
  const char *ready = NULL;
  const char *log_requests = NULL;
  int refuse_java = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--name-bytes") == 0) name_bytes = atol(argv[i + 1]);
    else if (strcmp(argv[i], "--stacks") == 0) stacks = atol(argv[i + 1]);
    else if (strcmp(argv[i], "--frames") == 0) frames = atol(argv[i + 1]);
    else if (strcmp(argv[i], "--ready-file") == 0) ready = argv[i + 1];
    else if (strcmp(argv[i], "--refuse-java") == 0) refuse_java = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--log-requests") == 0) log_requests = argv[i + 1];
    /* Anything else (a test's tag) is only there to be matched. */
  }
  if (stacks * frames > 20000) return 2;
  const uintptr_t code = name_bytes == 1024 ? (uintptr_t)&name_1k : (uintptr_t)&name_16k;

  map_agent_name();
  const char *tmpl = getenv("MEMTRIMD_AGENT_SOCKET");
  if (tmpl == NULL) return 2;
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  char pid[16];
  snprintf(pid, sizeof(pid), "%d", (int)getpid());
  size_t n = 0;
  for (const char *c = tmpl; *c != '\0' && n + 16 < sizeof(addr.sun_path); ++c) {
    if (c[0] == '%' && c[1] == 'p') {
      n += (size_t)snprintf(addr.sun_path + n, sizeof(addr.sun_path) - n, "%s", pid);
      ++c;
    } else {
      addr.sun_path[n++] = *c;
    }
  }
  int ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  unlink(addr.sun_path);
  if (ls < 0 || bind(ls, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
      chmod(addr.sun_path, 0600) != 0 || listen(ls, 16) != 0) {
    perror("fake_sites_agent: listen");
    return 2;
  }
  if (ready != NULL) {
    FILE *f = fopen(ready, "w");
    if (f != NULL) fclose(f);
  }

  /* The whole "sites" answer, made once. */
  size_t cap = 512 + (size_t)stacks * (64 + (size_t)frames * 20);
  char *sites = malloc(cap);
  char *body = malloc(cap);
  if (sites == NULL || body == NULL) return 2;
  unsigned long long period = 0;
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  const unsigned long long started =
      (unsigned long long)now.tv_sec * 1000000000ull + (unsigned long long)now.tv_nsec;
  for (;;) {
    int c = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
    if (c < 0) continue;
    char req[64];
    if (read_line(c, req, sizeof(req)) != 0) {
      close(c);
      continue;
    }
    int len;
    if (log_requests != NULL) {
      FILE *f = fopen(log_requests, "a");
      if (f != NULL) {
        fprintf(f, "%s\n", req);
        fclose(f);
      }
    }
    if (strncmp(req, "sampling on ", 12) == 0 && refuse_java && strstr(req, " java=") != NULL) {
      len = snprintf(body, cap, "1\nbad sampling period or option\n");
    } else if (strncmp(req, "sampling on ", 12) == 0) {
      period = strtoull(req + 12, NULL, 10);
      len = snprintf(body, cap, "0\nperiod=%llu\ngeneration=1\nhooked_objects=1\nhooked_entries=1\n",
                     period);
    } else if (strcmp(req, "sites") == 0) {
      size_t o = (size_t)snprintf(sites, cap,
                                  "on=%d\nperiod=%llu\ngeneration=1\nstarted_ns=%llu\nsamples=%ld\n"
                                  "live_samples=%ld\ndropped_live=0\ndropped_stacks=0\n"
                                  "sampler_bytes=4096\nhooked_objects=1\nstacks=%ld\ntruncated=0\n",
                                  period != 0, period, started, stacks, stacks, stacks);
      for (long s = 0; s < stacks; ++s) {
        o += (size_t)snprintf(sites + o, cap - o, "stack 1 %ld 1 1 %ld 1", (s + 1) * 4096,
                              (s + 1) * 4096);
        for (long f = 0; f < frames; ++f) {
          /* +1: memtrimd looks up a return address less one. */
          o += (size_t)snprintf(sites + o, cap - o, " %lx",
                                (unsigned long)(code + 16 + (uintptr_t)(s * frames + f) + 1));
        }
        sites[o++] = '\n';
      }
      if (write_all(c, "0\n", 2) == 0) write_all(c, sites, o);
      close(c);
      continue;
    } else {
      len = snprintf(body, cap, "1\nunknown command\n");
    }
    write_all(c, body, (size_t)len);
    close(c);
  }
}
