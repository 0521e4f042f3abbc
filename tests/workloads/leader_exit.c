/*
 * leader_exit - a live process whose main thread has ended: a second thread
 * mallocs and touches --mib MiB (default 40), then the main thread calls
 * pthread_exit. The kernel keeps the thread-group leader as a zombie
 * (State: Z) while the other thread runs; the process is alive.
 *
 *   leader_exit [--mib N] --ready-file PATH --stop-file PATH
 *
 * The worker writes "<pid>\n" to the ready file once its memory is touched
 * and the main thread is gone (its /proc/self/task/<pid>/stat says Z). Once
 * the stop file exists, the worker ends through pthread_exit too: the last
 * thread of the group ends, and the process exits 0. SIGINT and SIGTERM
 * (blocked in both threads, taken by sigtimedwait in the worker) end it at
 * once with exit 0.
 */
#define _GNU_SOURCE

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define WORKLOAD_NAME "leader_exit"
#include "workload.h"

static long g_mib = 40;
static const char* g_ready_file = NULL;
static const char* g_stop_file = NULL;
static volatile char* g_block = NULL;

/* Whether the main thread (the thread-group leader) has ended: its task
 * stays listed, as a zombie, while the process lives. */
static int leader_ended(void) {
  char path[64];
  snprintf(path, sizeof path, "/proc/self/task/%ld/stat", (long)getpid());
  FILE* f = fopen(path, "r");
  if (f == NULL) {
    return 0;
  }
  char buf[512];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char* close = strrchr(buf, ')');
  return close != NULL && close[1] == ' ' && (close[2] == 'Z' || close[2] == 'X');
}

static void* worker(void* arg) {
  (void)arg;
  size_t bytes = (size_t)g_mib << 20;
  char* p = malloc(bytes);
  if (p == NULL) {
    fprintf(stderr, WORKLOAD_NAME ": malloc %zu bytes failed\n", bytes);
    exit(1);
  }
  for (size_t i = 0; i < bytes; i += 4096) {
    p[i] = (char)((i >> 12) | 1);
  }
  g_block = p;
  while (!leader_ended()) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  if (write_ready_file(g_ready_file) != 0) {
    exit(1);
  }
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  for (;;) {
    struct timespec ts = {0, 20000000};
    siginfo_t info;
    int sig = sigtimedwait(&stop, &info, &ts);
    if (sig == SIGINT || sig == SIGTERM) {
      exit(0);
    }
    struct stat st;
    if (stat(g_stop_file, &st) == 0) {
      pthread_exit(NULL); /* the group's last thread: the process exits 0 */
    }
  }
}

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--mib") == 0 && i + 1 < argc) {
      g_mib = parse_long("--mib", argv[++i], 1, 4096);
    } else if (strcmp(argv[i], "--ready-file") == 0 && i + 1 < argc) {
      g_ready_file = argv[++i];
    } else if (strcmp(argv[i], "--stop-file") == 0 && i + 1 < argc) {
      g_stop_file = argv[++i];
    } else {
      g_ready_file = NULL;
      break;
    }
  }
  if (g_ready_file == NULL || g_stop_file == NULL) {
    fprintf(stderr, "usage: " WORKLOAD_NAME " [--mib N] --ready-file PATH --stop-file PATH\n");
    return 2;
  }
  sigset_t stop;
  block_stop_signals(&stop); /* inherited by the worker */
  pthread_t t;
  if (pthread_create(&t, NULL, worker, NULL) != 0) {
    fprintf(stderr, WORKLOAD_NAME ": pthread_create failed\n");
    return 1;
  }
  pthread_exit(NULL);
}
