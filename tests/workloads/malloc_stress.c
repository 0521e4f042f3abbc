/*
 * malloc_stress - threads that malloc, fill, verify and free without pause,
 * to show that something done to the heap from outside (malloc_trim through
 * libmemtrimd_agent.so) never corrupts live data.
 *
 * Every worker keeps SLOTS live chunks of random size (16..64 KiB). Each step
 * picks a slot, verifies the chunk there against the pattern it was filled
 * with, frees it, and puts a new chunk with a new pattern in its place. The
 * verified words are summed into a checksum. After --seconds (or on SIGINT /
 * SIGTERM) the workers stop, verify and free what they hold, and the program
 * prints "checksum=<n> errors=<k>" and exits 0 only if no word was wrong.
 *
 * --nice N lowers only the workers' priority (per-thread nice), so that on a
 * small machine a preloaded agent thread is not starved by N busy workers
 * while they still keep every CPU busy.
 *
 * --ready-file PATH is written ("<pid>\n", atomically) once every worker
 * runs. --fork-exec first forks a child that execs this binary again with
 * "--child --ready-file PATH.child" (LD_PRELOAD and the rest of the
 * environment inherited); the parent stops it with SIGTERM at the end and
 * fails if it failed. --child only makes the process die with its parent.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WORKLOAD_NAME "malloc_stress"
#include "workload.h"

#define MIN_CHUNK (16u * 1024u)
#define MAX_CHUNK (64u * 1024u)
#define SLOTS 64

struct options {
  long threads;
  long seconds;
  long nice;
  const char *ready_file;
  int fork_exec;
  int child;
};

static struct options opt = {.threads = 4, .seconds = 10};

static atomic_int stop_flag;
static atomic_long running_workers;

struct worker {
  pthread_t thread;
  uint64_t rng;
  uint64_t checksum;
  uint64_t errors;
  uint64_t steps;
  uint64_t *chunk[SLOTS];
  size_t words[SLOTS];
  uint64_t key[SLOTS];
};

/* Word i of a chunk with key k: cheap, and different for every chunk and
 * position, so a page zeroed or swapped under us never matches. */
static uint64_t pattern(uint64_t key, size_t i) {
  return key ^ ((uint64_t)(i + 1) * 0x9e3779b97f4a7c15ull);
}

static void fill(struct worker *w, int s) {
  size_t bytes = MIN_CHUNK + (size_t)(xorshift64(&w->rng) % (MAX_CHUNK - MIN_CHUNK + 1));
  size_t words = bytes / sizeof(uint64_t);
  uint64_t *p = malloc(words * sizeof(uint64_t));
  if (p == NULL) {
    fprintf(stderr, "malloc_stress: malloc(%zu) failed\n", bytes);
    exit(1);
  }
  uint64_t key = xorshift64(&w->rng);
  for (size_t i = 0; i < words; i++) {
    p[i] = pattern(key, i);
  }
  w->chunk[s] = p;
  w->words[s] = words;
  w->key[s] = key;
}

static void verify_and_free(struct worker *w, int s) {
  uint64_t *p = w->chunk[s];
  if (p == NULL) {
    return;
  }
  uint64_t sum = 0;
  for (size_t i = 0; i < w->words[s]; i++) {
    if (p[i] != pattern(w->key[s], i)) {
      w->errors++;
    }
    sum += p[i];
  }
  w->checksum += sum;
  free(p);
  w->chunk[s] = NULL;
}

static void *worker_main(void *arg) {
  struct worker *w = arg;
  /* Per-thread nice (Linux): only the workers yield, not a preloaded agent
   * thread, which keeps the nice value the program started with. */
  if (opt.nice != 0 && setpriority(PRIO_PROCESS, (id_t)gettid(), (int)opt.nice) != 0) {
    fprintf(stderr, "malloc_stress: setpriority: %s\n", strerror(errno));
    exit(1);
  }
  for (int s = 0; s < SLOTS; s++) {
    fill(w, s);
  }
  atomic_fetch_add(&running_workers, 1);
  while (!atomic_load_explicit(&stop_flag, memory_order_relaxed)) {
    int s = (int)(xorshift64(&w->rng) % SLOTS);
    verify_and_free(w, s);
    fill(w, s);
    w->steps++;
  }
  for (int s = 0; s < SLOTS; s++) {
    verify_and_free(w, s);
  }
  return NULL;
}

/* Forks and execs this binary as "--child". Everything the child needs is
 * prepared before fork: between fork and exec it only makes syscalls. */
static pid_t start_child(const char *self, const char *ready_file) {
  char threads[32];
  char seconds[32];
  char child_ready[PATH_MAX] = "";
  snprintf(threads, sizeof threads, "%ld", opt.threads);
  snprintf(seconds, sizeof seconds, "%ld", opt.seconds);
  if (ready_file != NULL) {
    int n = snprintf(child_ready, sizeof child_ready, "%s.child", ready_file);
    if (n < 0 || (size_t)n >= sizeof child_ready) {
      fprintf(stderr, "malloc_stress: ready file path too long\n");
      return -1;
    }
  }
  char *argv[] = {(char *)self, "--child", "--threads", threads, "--seconds", seconds,
                  ready_file != NULL ? "--ready-file" : NULL, child_ready, NULL};
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) {
      _exit(126);
    }
    execv("/proc/self/exe", argv);
    _exit(127);
  }
  if (pid < 0) {
    fprintf(stderr, "malloc_stress: fork: %s\n", strerror(errno));
  }
  return pid;
}

static void usage(FILE *out) {
  fprintf(out,
          "usage: malloc_stress [--threads N] [--seconds S] [--nice N] [--ready-file PATH]\n"
          "                     [--fork-exec]\n"
          "  --threads N        worker threads (default 4)\n"
          "  --seconds S        run time before stopping (default 10); SIGTERM stops earlier\n"
          "  --nice N           nice value of the worker threads only (default 0)\n"
          "  --ready-file PATH  write \"<pid>\\n\" to PATH (atomically) once all threads run\n"
          "  --fork-exec        also run a child (this binary, --child, ready file PATH.child)\n"
          "  --child            die with the parent (used by --fork-exec)\n");
}

int main(int argc, char **argv) {
  enum { OPT_THREADS = 1000, OPT_SECONDS, OPT_NICE, OPT_READY, OPT_FORK_EXEC, OPT_CHILD };
  static const struct option long_options[] = {
      {"threads", required_argument, NULL, OPT_THREADS},
      {"seconds", required_argument, NULL, OPT_SECONDS},
      {"nice", required_argument, NULL, OPT_NICE},
      {"ready-file", required_argument, NULL, OPT_READY},
      {"fork-exec", no_argument, NULL, OPT_FORK_EXEC},
      {"child", no_argument, NULL, OPT_CHILD},
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
        opt.threads = parse_long("--threads", optarg, 1, 256);
        break;
      case OPT_SECONDS:
        opt.seconds = parse_long("--seconds", optarg, 0, 86400);
        break;
      case OPT_NICE:
        opt.nice = parse_long("--nice", optarg, 0, 19);
        break;
      case OPT_READY:
        opt.ready_file = optarg;
        break;
      case OPT_FORK_EXEC:
        opt.fork_exec = 1;
        break;
      case OPT_CHILD:
        opt.child = 1;
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
    fprintf(stderr, "malloc_stress: unexpected argument '%s'\n", argv[optind]);
    usage(stderr);
    return 2;
  }
  if (opt.child) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
  }

  /* Only the main thread takes the stop signals (sigtimedwait below). */
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  int rc = pthread_sigmask(SIG_BLOCK, &stop, NULL);
  if (rc != 0) {
    fprintf(stderr, "malloc_stress: pthread_sigmask: %s\n", strerror(rc));
    return 1;
  }

  struct worker *workers = calloc((size_t)opt.threads, sizeof *workers);
  if (workers == NULL) {
    fprintf(stderr, "malloc_stress: out of memory\n");
    return 1;
  }
  for (long i = 0; i < opt.threads; i++) {
    workers[i].rng = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1) ^ (uint64_t)getpid();
    if (workers[i].rng == 0) {
      workers[i].rng = 1;
    }
    rc = pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]);
    if (rc != 0) {
      fprintf(stderr, "malloc_stress: pthread_create: %s\n", strerror(rc));
      return 1;
    }
  }
  while (atomic_load(&running_workers) < opt.threads) {
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }

  pid_t child = -1;
  if (opt.fork_exec) {
    /* Forked while the workers (and an agent thread, if preloaded) run. */
    child = start_child(argv[0], opt.ready_file);
    if (child < 0) {
      return 1;
    }
  }
  if (opt.ready_file != NULL && write_ready_file(opt.ready_file) != 0) {
    return 1;
  }

  struct timespec end;
  clock_gettime(CLOCK_MONOTONIC, &end);
  end.tv_sec += opt.seconds;
  for (;;) {
    struct timespec now, left;
    clock_gettime(CLOCK_MONOTONIC, &now);
    left.tv_sec = end.tv_sec - now.tv_sec;
    left.tv_nsec = end.tv_nsec - now.tv_nsec;
    if (left.tv_nsec < 0) {
      left.tv_sec--;
      left.tv_nsec += 1000000000L;
    }
    if (left.tv_sec < 0) {
      break;
    }
    int sig = sigtimedwait(&stop, NULL, &left);
    if (sig == SIGINT || sig == SIGTERM || (sig < 0 && errno == EAGAIN)) {
      break;
    }
  }

  atomic_store(&stop_flag, 1);
  uint64_t checksum = 0, errors = 0, steps = 0;
  for (long i = 0; i < opt.threads; i++) {
    pthread_join(workers[i].thread, NULL);
    checksum += workers[i].checksum;
    errors += workers[i].errors;
    steps += workers[i].steps;
  }
  free(workers);

  int child_failed = 0;
  if (child > 0) {
    kill(child, SIGTERM);
    int st = 0;
    while (waitpid(child, &st, 0) < 0 && errno == EINTR) {
    }
    child_failed = !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    printf("child_exit=%d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st));
  }
  printf("steps=%" PRIu64 "\n", steps);
  printf("checksum=%" PRIu64 " errors=%" PRIu64 "\n", checksum, errors);
  fflush(stdout);
  return errors == 0 && !child_failed ? 0 : 1;
}
