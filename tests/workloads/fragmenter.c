/*
 * fragmenter - a workload that fragments glibc malloc arenas.
 *
 * Every worker thread performs --rounds bursts. Threads take turns (round
 * robin, one burst at a time), so each thread's first malloc gives it its own
 * arena (until glibc's arena limit of 8 x CPUs) and RSS climbs steadily.
 *
 * A burst mallocs chunks of random size (64..4096 bytes) until --burst-mib MiB
 * were requested, writes into every chunk so its pages are resident, then
 * frees all but --keep-permille chunks per 1000. The kept chunks are spread
 * evenly over the burst and are never freed, so the freed memory between them
 * stays resident in the arena until malloc_trim(0) is called.
 *
 * With --main-top-mib M the main thread first leaves M MiB of free, resident
 * memory in the main arena's top chunk (see hold_main_top), the part of a
 * heap that only malloc_trim's brk step gives back.
 *
 * After every thread finished its rounds the workers block on a condition
 * variable (their arenas stay), the optional ready file is written, and the
 * main thread waits for SIGINT or SIGTERM and exits 0.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define WORKLOAD_NAME "fragmenter"
#include "workload.h"

#define MIN_CHUNK 64u
#define MAX_CHUNK 4096u
#define MIB (1024.0 * 1024.0)

struct options {
  long threads;
  long rounds;
  long burst_mib;
  long keep_permille;
  const char *ready_file;
  int quiet;
  long main_top_mib;
};

static struct options opt = {
    .threads = 16,
    .rounds = 4,
    .burst_mib = 32,
    .keep_permille = 20,
    .ready_file = NULL,
    .quiet = 0,
    .main_top_mib = 0,
};

/* Shared state, protected by `lock`. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t turn_changed = PTHREAD_COND_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static long turn;             /* index of the burst that may run now */
static uint64_t kept_bytes;   /* bytes requested by kept chunks, all threads */
static uint64_t kept_chunks;

/* Reads VmRSS (kB) from /proc/self/status without using malloc. */
static long vm_rss_kib(void) {
  char buf[8192];
  int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return -1;
  }
  size_t used = 0;
  for (;;) {
    ssize_t n = read(fd, buf + used, sizeof buf - 1 - used);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      break;
    }
    used += (size_t)n;
    if (used == sizeof buf - 1) {
      break;
    }
  }
  close(fd);
  buf[used] = '\0';
  const char *line = strstr(buf, "\nVmRSS:");
  if (line == NULL) {
    return -1;
  }
  return strtol(line + strlen("\nVmRSS:"), NULL, 10);
}

static long rss_mib(void) {
  long kib = vm_rss_kib();
  return kib < 0 ? -1 : kib / 1024;
}

struct worker {
  pthread_t thread;
  long index;
  uint64_t rng;
  void **slots;       /* kept chunks first, then the current burst */
  size_t capacity;    /* number of entries `slots` can hold */
  size_t kept;        /* kept chunks at slots[0 .. kept) */
};

/* One burst: allocate, touch, free all but keep_permille per 1000. */
static void burst(struct worker *w) {
  const uint64_t target = (uint64_t)opt.burst_mib * 1024u * 1024u;
  uint64_t requested = 0;
  size_t n = w->kept;
  while (requested < target && n < w->capacity) {
    size_t size = MIN_CHUNK + (size_t)(xorshift64(&w->rng) % (MAX_CHUNK - MIN_CHUNK + 1));
    unsigned char *p = malloc(size);
    if (p == NULL) {
      fprintf(stderr, "fragmenter: malloc(%zu) failed\n", size);
      exit(1);
    }
    /* Touch the chunk: its size goes into the first bytes, a marker at the end. */
    memcpy(p, &size, sizeof size);
    p[size - 1] = 0xa5;
    w->slots[n++] = p;
    requested += size;
  }

  /* Keep chunk j when (j * K) mod 1000 < K: exactly K per 1000, evenly spread. */
  uint64_t burst_kept_bytes = 0;
  size_t burst_kept = 0;
  size_t out = w->kept;
  for (size_t i = w->kept; i < n; i++) {
    size_t j = i - w->kept;
    if ((j * (size_t)opt.keep_permille) % 1000u < (size_t)opt.keep_permille) {
      size_t size;
      memcpy(&size, w->slots[i], sizeof size);
      burst_kept_bytes += size;
      burst_kept++;
      w->slots[out++] = w->slots[i];
    } else {
      free(w->slots[i]);
    }
  }
  w->kept = out;

  pthread_mutex_lock(&lock);
  kept_bytes += burst_kept_bytes;
  kept_chunks += burst_kept;
  pthread_mutex_unlock(&lock);
}

static void *worker_main(void *arg) {
  struct worker *w = arg;
  const long total_turns = opt.threads * opt.rounds;

  for (long round = 0; round < opt.rounds; round++) {
    const long my_turn = round * opt.threads + w->index;

    pthread_mutex_lock(&lock);
    while (turn != my_turn) {
      pthread_cond_wait(&turn_changed, &lock);
    }
    pthread_mutex_unlock(&lock);

    burst(w);

    pthread_mutex_lock(&lock);
    turn++;
    const int round_done = (w->index == opt.threads - 1);
    const int all_done = (turn == total_turns);
    if (round_done && !opt.quiet) {
      printf("round %ld/%ld: rss %ld MiB\n", round + 1, opt.rounds, rss_mib());
      fflush(stdout);
    }
    if (all_done) {
      if (!opt.quiet) {
        printf("ready: pid %ld, rss %ld MiB, kept %.0f MiB\n", (long)getpid(), rss_mib(),
               (double)kept_bytes / MIB);
        fflush(stdout);
      }
      if (opt.ready_file != NULL && write_ready_file(opt.ready_file) != 0) {
        exit(1);
      }
    }
    pthread_cond_broadcast(&turn_changed);
    pthread_mutex_unlock(&lock);
  }

  /* Stay alive without spinning so the arena (and the thread) stay around. */
  pthread_mutex_lock(&lock);
  for (;;) {
    pthread_cond_wait(&never, &lock);
  }
  return NULL;
}

/* Leaves `mib` MiB of free, resident memory in the main arena's top chunk.
 *
 * Freeing a mmapped chunk raises glibc's dynamic thresholds (mmap threshold
 * to the chunk's size, trim threshold to twice that, for chunks up to 32 MiB),
 * so the 1 MiB blocks that follow come from the brk heap, and freeing them
 * all merges them into a top chunk that free() does not trim while it stays
 * below 60 MiB. Only malloc_trim (systrim) gives it back. */
static void hold_main_top(long mib) {
  void *big = malloc(30u << 20);
  if (big == NULL) {
    perror("fragmenter: malloc");
    exit(1);
  }
  free(big);
  void **blocks = mmap(NULL, (size_t)mib * sizeof(void *), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (blocks == MAP_FAILED) {
    perror("fragmenter: mmap");
    exit(1);
  }
  for (long i = 0; i < mib; i++) {
    blocks[i] = malloc((1u << 20) - 64);
    if (blocks[i] == NULL) {
      perror("fragmenter: malloc");
      exit(1);
    }
    memset(blocks[i], 0x5a, (1u << 20) - 64);
  }
  for (long i = mib - 1; i >= 0; i--) {
    free(blocks[i]);
  }
  munmap(blocks, (size_t)mib * sizeof(void *));
}

static void usage(FILE *out) {
  fprintf(out,
          "usage: fragmenter [--threads N] [--rounds R] [--burst-mib M]\n"
          "                  [--keep-permille K] [--ready-file PATH] [--tag STRING]\n"
          "                  [--main-top-mib M] [--quiet]\n"
          "  --threads N        worker threads (default 16)\n"
          "  --rounds R         bursts per thread (default 4)\n"
          "  --burst-mib M      MiB requested per burst (default 32)\n"
          "  --keep-permille K  chunks kept per 1000 (default 20)\n"
          "  --ready-file PATH  write \"<pid>\\n\" to PATH (atomically) when done\n"
          "  --tag STRING       ignored; lets tests find this process by its command line\n"
          "  --main-top-mib M   first leave M MiB (<= 56) free in the main arena's top chunk\n"
          "  --quiet            no progress output\n");
}

int main(int argc, char **argv) {
  enum {
    OPT_THREADS = 1000,
    OPT_ROUNDS,
    OPT_BURST,
    OPT_KEEP,
    OPT_READY,
    OPT_TAG,
    OPT_QUIET,
    OPT_MAIN_TOP
  };
  static const struct option long_options[] = {
      {"threads", required_argument, NULL, OPT_THREADS},
      {"rounds", required_argument, NULL, OPT_ROUNDS},
      {"burst-mib", required_argument, NULL, OPT_BURST},
      {"keep-permille", required_argument, NULL, OPT_KEEP},
      {"ready-file", required_argument, NULL, OPT_READY},
      {"tag", required_argument, NULL, OPT_TAG},
      {"quiet", no_argument, NULL, OPT_QUIET},
      {"main-top-mib", required_argument, NULL, OPT_MAIN_TOP},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };

  for (;;) {
    int c = getopt_long(argc, argv, "h", long_options, NULL);
    if (c == -1) {
      break;
    }
    switch (c) {
      case OPT_THREADS:
        opt.threads = parse_long("--threads", optarg, 1, 1024);
        break;
      case OPT_ROUNDS:
        opt.rounds = parse_long("--rounds", optarg, 1, 1000);
        break;
      case OPT_BURST:
        opt.burst_mib = parse_long("--burst-mib", optarg, 1, 4096);
        break;
      case OPT_KEEP:
        opt.keep_permille = parse_long("--keep-permille", optarg, 0, 1000);
        break;
      case OPT_READY:
        opt.ready_file = optarg;
        break;
      case OPT_TAG:
        break;
      case OPT_QUIET:
        opt.quiet = 1;
        break;
      case OPT_MAIN_TOP:
        opt.main_top_mib = parse_long("--main-top-mib", optarg, 0, 56);
        break;
      case 'h':
        usage(stdout);
        return 0;
      default:
        usage(stderr);
        return 2;
    }
  }
  if (optind != argc) {
    fprintf(stderr, "fragmenter: unexpected argument '%s'\n", argv[optind]);
    usage(stderr);
    return 2;
  }

  /* Block the stop signals before creating threads so all threads inherit the mask
   * and only sigwait() below receives them. */
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  int rc = pthread_sigmask(SIG_BLOCK, &stop, NULL);
  if (rc != 0) {
    fprintf(stderr, "fragmenter: pthread_sigmask: %s\n", strerror(rc));
    return 1;
  }

  if (opt.main_top_mib > 0) {
    hold_main_top(opt.main_top_mib);
  }

  /* Bookkeeping lives in mmap'd memory, outside every malloc arena. */
  struct worker *workers = mmap(NULL, sizeof(struct worker) * (size_t)opt.threads,
                                PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (workers == MAP_FAILED) {
    perror("fragmenter: mmap");
    return 1;
  }
  const size_t per_burst = (size_t)opt.burst_mib * 1024u * 1024u / MIN_CHUNK + 1;
  for (long i = 0; i < opt.threads; i++) {
    struct worker *w = &workers[i];
    w->index = i;
    w->rng = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1); /* deterministic, never 0 */
    w->capacity = per_burst * (size_t)opt.rounds;
    w->kept = 0;
    w->slots = mmap(NULL, w->capacity * sizeof(void *), PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (w->slots == MAP_FAILED) {
      perror("fragmenter: mmap");
      return 1;
    }
  }

  for (long i = 0; i < opt.threads; i++) {
    rc = pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]);
    if (rc != 0) {
      fprintf(stderr, "fragmenter: pthread_create: %s\n", strerror(rc));
      return 1;
    }
  }

  for (;;) {
    int sig = 0;
    rc = sigwait(&stop, &sig);
    if (rc == 0 && (sig == SIGINT || sig == SIGTERM)) {
      break;
    }
  }
  if (!opt.quiet) {
    printf("stopping\n");
    fflush(stdout);
  }
  /* exit() ends the process; the blocked workers need no joining. */
  return 0;
}
