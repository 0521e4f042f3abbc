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
 *
 * The same source builds against every allocator a target may run on
 * (tests/workloads/CMakeLists.txt: linked with jemalloc, tcmalloc or
 * mimalloc, jemalloc linked statically, and musl), and runs under any
 * LD_PRELOADed one. Options for allocator tests (all off by default):
 *
 * --stats-file PATH writes the allocator's own statistics (own_stats.h) to
 * PATH atomically when ready, and again on every SIGUSR1 (taken by the main
 * thread with sigwait, never in a handler).
 *
 * --free-mib N: when the rounds are done and before ready, the main thread
 * mallocs N MiB in --free-chunk byte chunks, writes every page and frees
 * them all: free memory the allocator keeps and that its release call gives
 * back. Measured on Debian 12 with libmemtrimd_agent.so preloaded after the
 * allocator (--threads 1 --rounds 1 --burst-mib 1 --free-mib 128, then
 * `memtrimd trim --pid`), RssAnon after 2 s idle -> after that one release:
 *   glibc             1000 B chunks 130 -> 0 MiB   300 KB chunks 128 -> 0 MiB
 *   jemalloc 5.3               137 -> 5 MiB                  69 -> 1 MiB
 *   tcmalloc 2.10              136 -> 6 MiB                 133 -> 4 MiB
 *   mimalloc 2.0.9             134 -> 39 MiB                131 -> 31 MiB
 * jemalloc already gives back half of chunks of 64 KiB and more during the
 * frees. mimalloc's mi_collect(true) (the agent calls mi_thread_init() on its
 * thread first: a thread that never allocated has no heap, and collects
 * nothing) gives back the 32 MiB segments that became wholly free, which
 * mimalloc keeps in its segment cache. What the main thread freed into a
 * segment it still has a page in stays until the main thread itself
 * allocates again: its first segment (its earliest blocks live there) and,
 * for chunks up to 128 KiB, the segment of the last page it emptied, which
 * mimalloc keeps for reuse. That is one segment's worth when the freed total
 * is a multiple of 32 MiB: of 64 MiB, 32 MiB came back (1000 B chunks; 35 MiB
 * of 300 KB ones), of 128 MiB 96 and 100 MiB. Chunks over 16 MiB go back at
 * free(); with MIMALLOC_DECOMMIT_DELAY=0 freed pages go back at free() too.
 * The default chunk is 1000 B. Under glibc, free() itself gives a large free
 * top chunk back (M_TRIM_THRESHOLD), so --free-mib first disables that with
 * mallopt and keeps chunks up to 32 MiB out of mmap (M_MMAP_THRESHOLD).
 *
 * --verify fills every kept chunk with a pattern derived from its address;
 * on SIGINT / SIGTERM (once the rounds are done) all kept chunks are checked
 * and "checksum=<n> errors=<k>" printed (also with --quiet); the exit status
 * is 1 if k > 0.
 *
 * --stress-threads N starts, before the ready file (so ready means they
 * run), N threads that malloc, fill, verify and free until SIGINT / SIGTERM
 * (stress.h, as malloc_stress); their errors count in the final line too.
 * --nice N lowers only their priority.
 *
 * Under musl --main-top-mib (a glibc heap shape) is refused with exit 2.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
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
#include "own_stats.h"
#include "stress.h"
#include "workload.h"

#define MIN_CHUNK 64u
#define MAX_CHUNK 4096u
#define MIB (1024.0 * 1024.0)

struct options {
  long threads;
  long rounds;
  long burst_mib;
  long keep_permille;
  const char* ready_file;
  int quiet;
  long main_top_mib;
  const char* stats_file;
  long free_mib;
  long free_chunk;
  int verify;
  long stress_threads;
  long nice;
};

static struct options opt = {
    .threads = 16,
    .rounds = 4,
    .burst_mib = 32,
    .keep_permille = 20,
    .ready_file = NULL,
    .quiet = 0,
    .main_top_mib = 0,
    .stats_file = NULL,
    .free_mib = 0,
    .free_chunk = 1000,
    .verify = 0,
    .stress_threads = 0,
    .nice = 0,
};

/* Shared state, protected by `lock`. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t turn_changed = PTHREAD_COND_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static long turn;           /* index of the burst that may run now */
static uint64_t kept_bytes; /* bytes requested by kept chunks, all threads */
static uint64_t kept_chunks;
static pthread_t main_thread; /* told with SIGUSR2 when the rounds are done */

static long rss_mib(void) {
  long kib = proc_status_kib("VmRSS");
  return kib < 0 ? -1 : kib / 1024;
}

struct worker {
  pthread_t thread;
  long index;
  uint64_t rng;
  void** slots;    /* kept chunks first, then the current burst */
  size_t capacity; /* number of entries `slots` can hold */
  size_t kept;     /* kept chunks at slots[0 .. kept) */
};

/* Walks the pattern words of a kept chunk after its size word (key: the
 * chunk's address; a last partial word holds the low bytes of its pattern):
 * fills them (fill != 0), or counts the words that differ and adds what it
 * read to *sum. */
static uint64_t kept_pattern(unsigned char* p, size_t size, int fill, uint64_t* sum) {
  const uint64_t key = (uint64_t)(uintptr_t)p;
  uint64_t errors = 0;
  size_t i = 1;
  for (size_t off = sizeof(size_t); off < size; off += sizeof(uint64_t), i++) {
    const size_t n = size - off < sizeof(uint64_t) ? size - off : sizeof(uint64_t);
    const uint64_t want = stress_pattern(key, i);
    if (fill) {
      memcpy(p + off, &want, n);
      continue;
    }
    const uint64_t mask = n == sizeof(uint64_t) ? ~0ull : (1ull << (8 * n)) - 1;
    uint64_t got = 0;
    memcpy(&got, p + off, n);
    errors += (got != (want & mask));
    *sum += got;
  }
  return errors;
}

/* One burst: allocate, touch, free all but keep_permille per 1000. */
static void burst(struct worker* w) {
  const uint64_t target = (uint64_t)opt.burst_mib * 1024u * 1024u;
  uint64_t requested = 0;
  size_t n = w->kept;
  while (requested < target && n < w->capacity) {
    size_t size = MIN_CHUNK + (size_t)(xorshift64(&w->rng) % (MAX_CHUNK - MIN_CHUNK + 1));
    unsigned char* p = malloc(size);
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
      if (opt.verify) {
        kept_pattern(w->slots[i], size, 1, NULL);
      }
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

static void* worker_main(void* arg) {
  struct worker* w = arg;
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
      /* The main thread finishes getting ready (sigwait in main). */
      pthread_kill(main_thread, SIGUSR2);
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

#ifdef __GLIBC__
/* Leaves `mib` MiB of free, resident memory in the main arena's top chunk.
 *
 * Freeing a mmapped chunk raises glibc's dynamic thresholds (mmap threshold
 * to the chunk's size, trim threshold to twice that, for chunks up to 32 MiB),
 * so the 1 MiB blocks that follow come from the brk heap, and freeing them
 * all merges them into a top chunk that free() does not trim while it stays
 * below 60 MiB. Only malloc_trim (systrim) gives it back. */
static void hold_main_top(long mib) {
  void* big = malloc(30u << 20);
  if (big == NULL) {
    perror("fragmenter: malloc");
    exit(1);
  }
  free(big);
  void** blocks = mmap(NULL, (size_t)mib * sizeof(void*), PROT_READ | PROT_WRITE,
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
  munmap(blocks, (size_t)mib * sizeof(void*));
}
#endif

/* --free-mib: mallocs `mib` MiB in `chunk` byte chunks, writes every page,
 * frees them all (see the header comment for what each allocator keeps). */
static void leave_free_memory(const struct own_stats* stats, long mib, size_t chunk) {
#ifdef __GLIBC__
  if (stats->allocator == OWN_GLIBC) {
    /* Otherwise free() itself gives the merged top chunk back, and chunks
     * above 128 KiB would be mmapped and unmapped at once. */
    mallopt(M_TRIM_THRESHOLD, -1);
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
  }
#else
  (void)stats;
#endif
  const size_t count = (size_t)mib * 1024u * 1024u / chunk;
  void** blocks =
      mmap(NULL, count * sizeof(void*), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (blocks == MAP_FAILED) {
    perror("fragmenter: mmap");
    exit(1);
  }
  for (size_t i = 0; i < count; i++) {
    blocks[i] = malloc(chunk);
    if (blocks[i] == NULL) {
      fprintf(stderr, "fragmenter: malloc(%zu) failed\n", chunk);
      exit(1);
    }
    memset(blocks[i], 0x3c, chunk);
  }
  for (size_t i = 0; i < count; i++) {
    free(blocks[i]);
  }
  munmap(blocks, count * sizeof(void*));
}

static int rounds_done(void) {
  pthread_mutex_lock(&lock);
  const int done = (turn == opt.threads * opt.rounds);
  pthread_mutex_unlock(&lock);
  return done;
}

static void wait_for_rounds(void) {
  pthread_mutex_lock(&lock);
  while (turn != opt.threads * opt.rounds) {
    pthread_cond_wait(&turn_changed, &lock);
  }
  pthread_mutex_unlock(&lock);
}

/* What happens between the last burst and the ready file, in the main thread. */
static int get_ready(const struct own_stats* stats, struct stress_pool* pool) {
  if (opt.free_mib > 0) {
    leave_free_memory(stats, opt.free_mib, (size_t)opt.free_chunk);
  }
  if (opt.stress_threads > 0 &&
      stress_start(pool, opt.stress_threads, opt.nice, (uint64_t)getpid()) != 0) {
    return -1;
  }
  if (opt.stats_file != NULL && own_stats_write(stats, opt.stats_file) != 0) {
    return -1;
  }
  if (!opt.quiet) {
    printf("ready: pid %ld, rss %ld MiB, kept %.0f MiB\n", (long)getpid(), rss_mib(),
           (double)kept_bytes / MIB);
    fflush(stdout);
  }
  if (opt.ready_file != NULL && write_ready_file(opt.ready_file) != 0) {
    return -1;
  }
  return 0;
}

/* Checks every kept chunk of every worker (the rounds are done). */
static uint64_t verify_kept(const struct worker* workers, uint64_t* sum) {
  uint64_t errors = 0;
  for (long t = 0; t < opt.threads; t++) {
    for (size_t k = 0; k < workers[t].kept; k++) {
      unsigned char* p = workers[t].slots[k];
      size_t size;
      memcpy(&size, p, sizeof size);
      if (size < MIN_CHUNK || size > MAX_CHUNK) {
        errors++;
        continue;
      }
      errors += kept_pattern(p, size, 0, sum);
    }
  }
  return errors;
}

static void usage(FILE* out) {
  fprintf(out,
          "usage: fragmenter [--threads N] [--rounds R] [--burst-mib M]\n"
          "                  [--keep-permille K] [--ready-file PATH] [--tag STRING]\n"
          "                  [--main-top-mib M] [--quiet] [--stats-file PATH]\n"
          "                  [--free-mib N] [--free-chunk BYTES] [--verify]\n"
          "                  [--stress-threads N] [--nice N]\n"
          "  --threads N        worker threads (default 16)\n"
          "  --rounds R         bursts per thread (default 4)\n"
          "  --burst-mib M      MiB requested per burst (default 32)\n"
          "  --keep-permille K  chunks kept per 1000 (default 20)\n"
          "  --ready-file PATH  write \"<pid>\\n\" to PATH (atomically) when done\n"
          "  --tag STRING       ignored; lets tests find this process by its command line\n"
          "  --main-top-mib M   first leave M MiB (<= 56) free in the main arena's top chunk\n"
          "                     (glibc only)\n"
          "  --quiet            no progress output\n"
          "  --stats-file PATH  write the allocator's own statistics to PATH when ready\n"
          "                     and on every SIGUSR1\n"
          "  --free-mib N       before ready, malloc, write and free N MiB\n"
          "  --free-chunk BYTES chunk size for --free-mib (default 1000)\n"
          "  --verify           check the kept chunks at exit; print checksum and errors\n"
          "  --stress-threads N from ready on, N threads malloc, verify and free\n"
          "  --nice N           nice value of the stress threads only (default 0)\n");
}

int main(int argc, char** argv) {
  enum {
    OPT_THREADS = 1000,
    OPT_ROUNDS,
    OPT_BURST,
    OPT_KEEP,
    OPT_READY,
    OPT_TAG,
    OPT_QUIET,
    OPT_MAIN_TOP,
    OPT_STATS,
    OPT_FREE_MIB,
    OPT_FREE_CHUNK,
    OPT_VERIFY,
    OPT_STRESS,
    OPT_NICE
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
      {"stats-file", required_argument, NULL, OPT_STATS},
      {"free-mib", required_argument, NULL, OPT_FREE_MIB},
      {"free-chunk", required_argument, NULL, OPT_FREE_CHUNK},
      {"verify", no_argument, NULL, OPT_VERIFY},
      {"stress-threads", required_argument, NULL, OPT_STRESS},
      {"nice", required_argument, NULL, OPT_NICE},
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
#ifdef __GLIBC__
        opt.main_top_mib = parse_long("--main-top-mib", optarg, 0, 56);
        break;
#else
        fprintf(stderr, "fragmenter: --main-top-mib shapes a glibc heap; this build uses musl\n");
        return 2;
#endif
      case OPT_STATS:
        opt.stats_file = optarg;
        break;
      case OPT_FREE_MIB:
        opt.free_mib = parse_long("--free-mib", optarg, 0, 65536);
        break;
      case OPT_FREE_CHUNK:
        opt.free_chunk = parse_long("--free-chunk", optarg, 16, 32L << 20);
        break;
      case OPT_VERIFY:
        opt.verify = 1;
        break;
      case OPT_STRESS:
        opt.stress_threads = parse_long("--stress-threads", optarg, 0, 256);
        break;
      case OPT_NICE:
        opt.nice = parse_long("--nice", optarg, 0, 19);
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

  /* Block the signals before creating threads so all threads inherit the mask
   * and only sigwait() below receives them: SIGINT and SIGTERM stop, SIGUSR1
   * asks for the statistics, SIGUSR2 is the last worker saying the rounds
   * are done. */
  sigset_t waited;
  sigemptyset(&waited);
  sigaddset(&waited, SIGINT);
  sigaddset(&waited, SIGTERM);
  sigaddset(&waited, SIGUSR2);
  if (opt.stats_file != NULL) {
    sigaddset(&waited, SIGUSR1);
  }
  int rc = pthread_sigmask(SIG_BLOCK, &waited, NULL);
  if (rc != 0) {
    fprintf(stderr, "fragmenter: pthread_sigmask: %s\n", strerror(rc));
    return 1;
  }
  main_thread = pthread_self();

  /* Before any thread: detection may itself malloc. */
  static struct own_stats stats;
  if ((opt.stats_file != NULL || opt.free_mib > 0) && own_stats_detect(&stats) != 0) {
    return 1;
  }

#ifdef __GLIBC__
  if (opt.main_top_mib > 0) {
    hold_main_top(opt.main_top_mib);
  }
#endif

  /* Bookkeeping lives in mmap'd memory, outside every malloc arena. */
  struct worker* workers = mmap(NULL, sizeof(struct worker) * (size_t)opt.threads,
                                PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (workers == MAP_FAILED) {
    perror("fragmenter: mmap");
    return 1;
  }
  const size_t per_burst = (size_t)opt.burst_mib * 1024u * 1024u / MIN_CHUNK + 1;
  for (long i = 0; i < opt.threads; i++) {
    struct worker* w = &workers[i];
    w->index = i;
    w->rng = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1); /* deterministic, never 0 */
    w->capacity = per_burst * (size_t)opt.rounds;
    w->kept = 0;
    w->slots = mmap(NULL, w->capacity * sizeof(void*), PROT_READ | PROT_WRITE,
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

  static struct stress_pool pool;
  int ready = 0;
  for (;;) {
    int sig = 0;
    if (sigwait(&waited, &sig) != 0) {
      continue;
    }
    if (sig == SIGINT || sig == SIGTERM) {
      break;
    }
    /* A SIGUSR2 from outside before the rounds are done is ignored. */
    if (sig == SIGUSR2 && !ready && rounds_done()) {
      if (get_ready(&stats, &pool) != 0) {
        return 1;
      }
      ready = 1;
    } else if (sig == SIGUSR1 && ready && own_stats_write(&stats, opt.stats_file) != 0) {
      return 1;
    }
  }
  if (!opt.quiet) {
    printf("stopping\n");
    fflush(stdout);
  }
  if (opt.verify || opt.stress_threads > 0) {
    uint64_t checksum = 0, errors = 0;
    if (pool.threads > 0) {
      const struct stress_totals t = stress_stop(&pool);
      checksum += t.checksum;
      errors += t.errors;
    }
    if (opt.verify) {
      /* The kept chunks are complete only once every burst ran. */
      wait_for_rounds();
      errors += verify_kept(workers, &checksum);
    }
    printf("checksum=%" PRIu64 " errors=%" PRIu64 "\n", checksum, errors);
    fflush(stdout);
    return errors == 0 ? 0 : 1;
  }
  /* exit() ends the process; the blocked workers need no joining. */
  return 0;
}
