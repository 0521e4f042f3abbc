/*
 * mmap_latency: what a process pays while something reads its memory map.
 *
 * One thread loops, as fast as it can: mmap an anonymous region (--kib,
 * 64 KiB), write one byte to each of its pages, munmap it. mmap and munmap
 * take the process's mmap lock for writing, so they wait whenever a reader
 * of /proc/<pid>/smaps (memtrimd, pmap -X) holds it for reading. Each
 * mmap+touch+munmap is timed with CLOCK_MONOTONIC and recorded in a
 * histogram (1 us buckets up to 1 s, the worst kept exactly), overall and
 * per window (--window-ms, 1000).
 *
 * Optionally it first makes --mappings N distinct one-page mappings (as
 * many_mappings does: every other page of one reservation made read-only),
 * so that one smaps read walks N mappings and takes correspondingly long.
 *
 * An operation during which the thread made a voluntary context switch
 * (getrusage(RUSAGE_THREAD) ru_nvcsw went up) slept in the kernel: in this
 * loop that is waiting for the mmap lock (or, rarely, for memory). Those are
 * counted apart from the rest, whose long tail is mostly preemption by other
 * work on the machine (ru_nivcsw).
 *
 * With --start-file PATH it writes the ready file, then waits (idle) until
 * PATH exists before the measured period starts, so a driver can start a
 * reader and let its start-up pass first.
 *
 * Runs for --seconds S (0: until SIGTERM/SIGINT), then prints key=value
 * lines on stdout:
 *   ops, seconds, p50_us, p99_us, p999_us, p9999_us, worst_us, worst_at_s,
 *   over_1ms, slept_ops, slept_worst_us, slept_total_ms, windows,
 *   window_worst_p50_us, window_worst_p90_us, window_worst_max_us,
 *   nonvoluntary_ctxt_switches
 * and with --windows one line per window before them:
 *   window=I ops=N worst_us=W p999_us=P
 *
 *   mmap_latency [--seconds S] [--mappings N] [--kib K] [--window-ms W]
 *                [--ready-file PATH] [--start-file PATH] [--windows] [--tag STRING]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define BUCKETS 1000000u /* 1 us each: up to 1 s; the last one collects the rest */
#define MAX_WINDOWS 1000000u

static volatile sig_atomic_t g_stop;

static void on_signal(int sig) {
  (void)sig;
  g_stop = 1;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void usage(FILE* out) {
  fprintf(out,
          "usage: mmap_latency [--seconds S] [--mappings N] [--kib K] [--window-ms W]\n"
          "                    [--ready-file PATH] [--start-file PATH] [--windows] [--tag STRING]\n"
          "  --seconds S        run S seconds; 0 (default) until SIGTERM or SIGINT\n"
          "  --mappings N       first make N distinct one-page mappings (default 0)\n"
          "  --kib K            size of each mmap (default 64)\n"
          "  --window-ms W      window length for per-window worst (default 1000)\n"
          "  --ready-file PATH  write \"<pid>\\n\" to PATH (atomically) once looping\n"
          "  --start-file PATH  after the ready file, wait until PATH exists to start\n"
          "  --windows          print one line per window\n"
          "  --tag STRING       ignored; lets scripts find this process by its command line\n");
}

static long parse_long(const char* name, const char* s, long lo, long hi) {
  char* end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno != 0 || *end != '\0' || end == s || v < lo || v > hi) {
    fprintf(stderr, "mmap_latency: bad %s: %s\n", name, s);
    exit(2);
  }
  return v;
}

static void write_ready(const char* path) {
  char tmp[4200], buf[32];
  snprintf(tmp, sizeof(tmp), "%s.tmp", path);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    perror("mmap_latency: ready file");
    exit(1);
  }
  int n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
  if (write(fd, buf, (size_t)n) != n) perror("mmap_latency: ready file");
  close(fd);
  if (rename(tmp, path) != 0) perror("mmap_latency: ready file");
}

/* The value (us) below which a fraction q of the recorded samples lie. */
static uint64_t quantile(const uint32_t* hist, uint64_t count, double q) {
  if (count == 0) return 0;
  uint64_t target = (uint64_t)((double)count * q), seen = 0;
  if (target >= count) target = count - 1;
  for (uint32_t i = 0; i < BUCKETS; i++) {
    seen += hist[i];
    if (seen > target) return i;
  }
  return BUCKETS - 1;
}

static int cmp_u64(const void* a, const void* b) {
  uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;
  return x < y ? -1 : x > y;
}

static long nonvoluntary_switches(void) {
  FILE* f = fopen("/proc/self/status", "r");
  char line[256];
  long v = -1;
  if (f == NULL) return -1;
  while (fgets(line, sizeof(line), f) != NULL) {
    if (strncmp(line, "nonvoluntary_ctxt_switches:", 27) == 0) v = strtol(line + 27, NULL, 10);
  }
  fclose(f);
  return v;
}

int main(int argc, char** argv) {
  enum { OPT_SECONDS = 1000, OPT_MAPPINGS, OPT_KIB, OPT_WINDOW, OPT_READY, OPT_START, OPT_WINDOWS, OPT_TAG };
  static const struct option long_options[] = {
      {"seconds", required_argument, NULL, OPT_SECONDS},
      {"mappings", required_argument, NULL, OPT_MAPPINGS},
      {"kib", required_argument, NULL, OPT_KIB},
      {"window-ms", required_argument, NULL, OPT_WINDOW},
      {"ready-file", required_argument, NULL, OPT_READY},
      {"start-file", required_argument, NULL, OPT_START},
      {"windows", no_argument, NULL, OPT_WINDOWS},
      {"tag", required_argument, NULL, OPT_TAG},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  long seconds = 0, mappings = 0, kib = 64, window_ms = 1000;
  const char* ready_file = NULL;
  const char* start_file = NULL;
  int print_windows = 0, c;
  while ((c = getopt_long(argc, argv, "h", long_options, NULL)) != -1) {
    switch (c) {
      case OPT_SECONDS: seconds = parse_long("--seconds", optarg, 0, 86400 * 7); break;
      case OPT_MAPPINGS: mappings = parse_long("--mappings", optarg, 0, 1000000); break;
      case OPT_KIB: kib = parse_long("--kib", optarg, 4, 1 << 20); break;
      case OPT_WINDOW: window_ms = parse_long("--window-ms", optarg, 1, 3600000); break;
      case OPT_READY: ready_file = optarg; break;
      case OPT_START: start_file = optarg; break;
      case OPT_WINDOWS: print_windows = 1; break;
      case OPT_TAG: break;
      case 'h': usage(stdout); return 0;
      default: usage(stderr); return 2;
    }
  }
  if (optind != argc) {
    usage(stderr);
    return 2;
  }

  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);

  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  if (mappings > 0) {
    /* N pages, every other one read-only: N distinct mappings. */
    char* base = mmap(NULL, (size_t)mappings * page, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) {
      perror("mmap_latency: mappings");
      return 1;
    }
    for (long i = 0; i < mappings; i++) {
      if (i % 2 == 1) {
        if (mprotect(base + (size_t)i * page, page, PROT_READ) != 0) {
          perror("mmap_latency: mprotect");
          return 1;
        }
      } else {
        base[(size_t)i * page] = 1;
      }
    }
  }

  uint32_t* hist = calloc(BUCKETS, sizeof(uint32_t));
  uint32_t* whist = calloc(BUCKETS, sizeof(uint32_t));
  uint64_t* wworst = calloc(MAX_WINDOWS, sizeof(uint64_t));
  if (hist == NULL || whist == NULL || wworst == NULL) {
    fprintf(stderr, "mmap_latency: out of memory\n");
    return 1;
  }
  const size_t len = (size_t)kib * 1024;
  const uint64_t window_ns = (uint64_t)window_ms * 1000000u;

  /* Warm up (page tables, the kernel's caches) before the ready file. */
  for (int i = 0; i < 1000; i++) {
    char* p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      perror("mmap_latency: mmap");
      return 1;
    }
    for (size_t off = 0; off < len; off += page) p[off] = 1;
    munmap(p, len);
  }
  if (ready_file != NULL) write_ready(ready_file);
  if (start_file != NULL) {
    const struct timespec ms = {0, 1000000};
    while (!g_stop && access(start_file, F_OK) != 0) nanosleep(&ms, NULL);
  }

  const uint64_t start = now_ns();
  const uint64_t end = seconds > 0 ? start + (uint64_t)seconds * 1000000000u : UINT64_MAX;
  uint64_t ops = 0, worst = 0, worst_at = 0, over_1ms = 0;
  uint64_t slept_ops = 0, slept_worst = 0, slept_total = 0;
  struct rusage ru;
  getrusage(RUSAGE_THREAD, &ru);
  long nvcsw = ru.ru_nvcsw;
  uint64_t wstart = start, wops = 0, wmax = 0, nwin = 0;
  uint64_t t0 = start;
  for (;;) {
    char* p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      perror("mmap_latency: mmap");
      return 1;
    }
    for (size_t off = 0; off < len; off += page) p[off] = 1;
    if (munmap(p, len) != 0) {
      perror("mmap_latency: munmap");
      return 1;
    }
    const uint64_t t1 = now_ns();
    const uint64_t d = t1 - t0;
    getrusage(RUSAGE_THREAD, &ru);
    if (ru.ru_nvcsw != nvcsw) {
      nvcsw = ru.ru_nvcsw;
      slept_ops++;
      slept_total += d;
      if (d > slept_worst) slept_worst = d;
    }
    const uint64_t us = d / 1000;
    hist[us < BUCKETS ? us : BUCKETS - 1]++;
    whist[us < BUCKETS ? us : BUCKETS - 1]++;
    ops++;
    wops++;
    if (d > worst) {
      worst = d;
      worst_at = t1 - start;
    }
    if (d > wmax) wmax = d;
    if (d > 1000000u) over_1ms++;
    if (t1 - wstart >= window_ns || g_stop || t1 >= end) {
      if (nwin < MAX_WINDOWS) wworst[nwin] = wmax;
      if (print_windows) {
        printf("window=%llu ops=%llu worst_us=%.1f p999_us=%llu\n", (unsigned long long)nwin,
               (unsigned long long)wops, (double)wmax / 1000.0,
               (unsigned long long)quantile(whist, wops, 0.999));
      }
      nwin++;
      memset(whist, 0, BUCKETS * sizeof(uint32_t));
      wops = 0;
      wmax = 0;
      wstart = t1;
    }
    if (g_stop || t1 >= end) break;
    t0 = now_ns();
  }

  const uint64_t stop = now_ns();
  uint64_t n = nwin < MAX_WINDOWS ? nwin : MAX_WINDOWS;
  qsort(wworst, n, sizeof(uint64_t), cmp_u64);
  printf("ops=%llu\n", (unsigned long long)ops);
  printf("seconds=%.2f\n", (double)(stop - start) / 1e9);
  printf("p50_us=%llu\n", (unsigned long long)quantile(hist, ops, 0.5));
  printf("p99_us=%llu\n", (unsigned long long)quantile(hist, ops, 0.99));
  printf("p999_us=%llu\n", (unsigned long long)quantile(hist, ops, 0.999));
  printf("p9999_us=%llu\n", (unsigned long long)quantile(hist, ops, 0.9999));
  printf("worst_us=%.1f\n", (double)worst / 1000.0);
  printf("worst_at_s=%.2f\n", (double)worst_at / 1e9);
  printf("over_1ms=%llu\n", (unsigned long long)over_1ms);
  printf("slept_ops=%llu\n", (unsigned long long)slept_ops);
  printf("slept_worst_us=%.1f\n", (double)slept_worst / 1000.0);
  printf("slept_total_ms=%.1f\n", (double)slept_total / 1e6);
  printf("windows=%llu\n", (unsigned long long)nwin);
  printf("window_worst_p50_us=%.1f\n", n ? (double)wworst[n / 2] / 1000.0 : 0.0);
  printf("window_worst_p90_us=%.1f\n", n ? (double)wworst[(n * 9) / 10 < n ? (n * 9) / 10 : n - 1] / 1000.0 : 0.0);
  printf("window_worst_max_us=%.1f\n", n ? (double)wworst[n - 1] / 1000.0 : 0.0);
  printf("nonvoluntary_ctxt_switches=%ld\n", nonvoluntary_switches());
  fflush(stdout);
  return 0;
}
