/*
 * malloc_stress - threads that malloc, fill, verify and free without pause,
 * to show that something done to the heap from outside (malloc_trim through
 * libmemtrimd_agent.so) never corrupts live data.
 *
 * The workers run the loop of stress.h (verified patterns, a checksum). After
 * --seconds (or on SIGINT / SIGTERM) they stop, verify and free what they
 * hold, and the program prints "checksum=<n> errors=<k>" and exits 0 only if
 * no word was wrong. --nice N lowers only the workers' priority.
 *
 * --ready-file PATH is written ("<pid>\n", atomically) once every worker
 * runs. --fork-exec first forks a child that execs this binary again with
 * "--child --ready-file PATH.child" (LD_PRELOAD and the rest of the
 * environment inherited); the parent stops it with SIGTERM at the end and
 * fails if it failed. --child only makes the process die with its parent.
 *
 * For the allocation sampler's stress test, beside the workers: --fork-storm
 * forks children without pause (each mallocs, checks and frees a little and
 * _exits), --thread-churn starts and joins short threads that malloc and
 * free, --churn-lib PATH dlopens PATH, runs its plugin_churn and dlcloses it
 * in a loop. Their counts and failures are printed before the checksum; any
 * failure makes the exit code 1.
 */
#define _GNU_SOURCE

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WORKLOAD_NAME "malloc_stress"
#include "stress.h"
#include "workload.h"

struct options {
  long threads;
  long seconds;
  long nice;
  const char* ready_file;
  int fork_exec;
  int child;
  int fork_storm;
  int thread_churn;
  const char* churn_lib;
};

/* The extra loops (--fork-storm, --thread-churn, --churn-lib). */
static atomic_int g_extra_stop;
static atomic_ulong g_forks, g_threads, g_dlopens, g_extra_failures;

static int fill_and_check(size_t n, unsigned char v) {
  unsigned char* p = malloc(n);
  if (p == NULL) return 1;
  memset(p, v, n);
  int bad = 0;
  for (size_t k = 0; k < n; k += 97) bad |= p[k] != v;
  free(p);
  return bad;
}

static void* fork_storm(void* arg) {
  (void)arg;
  while (!atomic_load(&g_extra_stop)) {
    pid_t pid = fork();
    if (pid == 0) {
      /* Dies with the thread that forked it: a child left hanging (as in a
       * malloc whose lock another thread held at the fork) must not outlive
       * the test that stops this program. */
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      /* The child allocates through the same (possibly hooked) malloc. */
      int bad = 0;
      for (unsigned i = 0; i < 32; ++i) bad |= fill_and_check(1024 + i * 4096, (unsigned char)i);
      _exit(bad);
    }
    if (pid < 0) {
      atomic_fetch_add(&g_extra_failures, 1);
      continue;
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0)) atomic_fetch_add(&g_extra_failures, 1);
    atomic_fetch_add(&g_forks, 1);
  }
  return NULL;
}

static void* short_thread(void* arg) {
  (void)arg;
  int bad = 0;
  for (unsigned i = 0; i < 16; ++i) bad |= fill_and_check(512 + i * 8192, (unsigned char)(i + 1));
  return bad ? (void*)1 : NULL;
}

static void* thread_churn(void* arg) {
  (void)arg;
  while (!atomic_load(&g_extra_stop)) {
    pthread_t t[4];
    int made = 0;
    for (; made < 4; ++made) {
      if (pthread_create(&t[made], NULL, short_thread, NULL) != 0) break;
    }
    for (int i = 0; i < made; ++i) {
      void* bad = NULL;
      pthread_join(t[i], &bad);
      if (bad != NULL) atomic_fetch_add(&g_extra_failures, 1);
    }
    atomic_fetch_add(&g_threads, (unsigned long)made);
  }
  return NULL;
}

static void* churn_lib(void* arg) {
  const char* path = arg;
  while (!atomic_load(&g_extra_stop)) {
    void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
      fprintf(stderr, "malloc_stress: dlopen: %s\n", dlerror());
      atomic_fetch_add(&g_extra_failures, 1);
      return NULL;
    }
    uint64_t (*churn)(unsigned) = (uint64_t(*)(unsigned))dlsym(lib, "plugin_churn");
    if (churn == NULL || churn(64) != 0) atomic_fetch_add(&g_extra_failures, 1);
    dlclose(lib);
    atomic_fetch_add(&g_dlopens, 1);
  }
  return NULL;
}

static struct options opt = {.threads = 4, .seconds = 10};

/* Forks and execs this binary as "--child". Everything the child needs is
 * prepared before fork: between fork and exec it only makes syscalls. */
static pid_t start_child(const char* self, const char* ready_file) {
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
  char* argv[] = {(char*)self,
                  "--child",
                  "--threads",
                  threads,
                  "--seconds",
                  seconds,
                  ready_file != NULL ? "--ready-file" : NULL,
                  child_ready,
                  NULL};
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

static void usage(FILE* out) {
  fprintf(out,
          "usage: malloc_stress [--threads N] [--seconds S] [--nice N] [--ready-file PATH]\n"
          "                     [--fork-exec]\n"
          "  --threads N        worker threads (default 4)\n"
          "  --seconds S        run time before stopping (default 10); SIGTERM stops earlier\n"
          "  --nice N           nice value of the worker threads only (default 0)\n"
          "  --ready-file PATH  write \"<pid>\\n\" to PATH (atomically) once all threads run\n"
          "  --fork-exec        also run a child (this binary, --child, ready file PATH.child)\n"
          "  --child            die with the parent (used by --fork-exec)\n"
          "  --fork-storm       also fork children without pause (each mallocs and exits)\n"
          "  --thread-churn     also start and join short threads that malloc\n"
          "  --churn-lib PATH   also dlopen PATH, run its plugin_churn, dlclose, in a loop\n");
}

int main(int argc, char** argv) {
  enum {
    OPT_THREADS = 1000,
    OPT_SECONDS,
    OPT_NICE,
    OPT_READY,
    OPT_FORK_EXEC,
    OPT_CHILD,
    OPT_FORK_STORM,
    OPT_THREAD_CHURN,
    OPT_CHURN_LIB
  };
  static const struct option long_options[] = {
      {"threads", required_argument, NULL, OPT_THREADS},
      {"seconds", required_argument, NULL, OPT_SECONDS},
      {"nice", required_argument, NULL, OPT_NICE},
      {"ready-file", required_argument, NULL, OPT_READY},
      {"fork-exec", no_argument, NULL, OPT_FORK_EXEC},
      {"child", no_argument, NULL, OPT_CHILD},
      {"fork-storm", no_argument, NULL, OPT_FORK_STORM},
      {"thread-churn", no_argument, NULL, OPT_THREAD_CHURN},
      {"churn-lib", required_argument, NULL, OPT_CHURN_LIB},
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
      case OPT_FORK_STORM:
        opt.fork_storm = 1;
        break;
      case OPT_THREAD_CHURN:
        opt.thread_churn = 1;
        break;
      case OPT_CHURN_LIB:
        opt.churn_lib = optarg;
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
  block_stop_signals(&stop);

  static struct stress_pool pool;
  if (stress_start(&pool, opt.threads, opt.nice, (uint64_t)getpid()) != 0) {
    return 1;
  }

  pid_t child = -1;
  if (opt.fork_exec) {
    /* Forked while the workers (and an agent thread, if preloaded) run. */
    child = start_child(argv[0], opt.ready_file);
    if (child < 0) {
      return 1;
    }
  }
  pthread_t extra[3];
  int extras = 0;
  if (opt.fork_storm && pthread_create(&extra[extras], NULL, fork_storm, NULL) == 0) ++extras;
  if (opt.thread_churn && pthread_create(&extra[extras], NULL, thread_churn, NULL) == 0) ++extras;
  if (opt.churn_lib != NULL &&
      pthread_create(&extra[extras], NULL, churn_lib, (void*)opt.churn_lib) == 0) {
    ++extras;
  }
  if (extras != opt.fork_storm + opt.thread_churn + (opt.churn_lib != NULL)) {
    fprintf(stderr, "malloc_stress: pthread_create failed\n");
    return 1;
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

  const struct stress_totals totals = stress_stop(&pool);
  atomic_store(&g_extra_stop, 1);
  for (int i = 0; i < extras; ++i) pthread_join(extra[i], NULL);
  const unsigned long extra_failures = atomic_load(&g_extra_failures);
  if (extras > 0) {
    printf("forks=%lu threads=%lu dlopens=%lu extra_failures=%lu\n", atomic_load(&g_forks),
           atomic_load(&g_threads), atomic_load(&g_dlopens), extra_failures);
  }

  int child_failed = 0;
  if (child > 0) {
    kill(child, SIGTERM);
    int st = 0;
    while (waitpid(child, &st, 0) < 0 && errno == EINTR) {
    }
    child_failed = !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    printf("child_exit=%d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st));
  }
  printf("steps=%" PRIu64 "\n", totals.steps);
  printf("checksum=%" PRIu64 " errors=%" PRIu64 "\n", totals.checksum, totals.errors);
  fflush(stdout);
  return totals.errors == 0 && !child_failed && extra_failures == 0 ? 0 : 1;
}
