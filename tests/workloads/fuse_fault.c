/*
 * fuse_fault - a glibc program one of whose threads waits on a FUSE server,
 * inside the kernel, for a page of a file it mapped, while another thread
 * keeps mapping and unmapping anonymous memory: a target whose mmap lock has
 * a writer queued whenever a reader holds it.
 *
 *   fuse_fault --file PATH --ready-file PATH [--through-proc-mem] [--go-file PATH]
 *
 * Holds 16 MiB of malloc'd, touched memory in the main arena and a little in
 * the mapping thread's own arena (a real glibc target, arena heaps and all).
 * The touching thread maps PATH (read-only, shared) and reads its first byte:
 * a page fault, which the kernel answers with a READ to the file's FUSE
 * server. With --through-proc-mem it reads that byte through /proc/self/mem
 * instead: the kernel then faults the page in on its behalf, with the mmap
 * lock held for read for as long as the READ takes (a remote access cannot
 * drop the lock and retry, as a page fault can). With --go-file it reads
 * only once that file exists (after a reader outside has seen the program
 * as it was before).
 *
 * Writes "<pid>\n" to the ready file once the mapping thread has mapped and
 * unmapped at least once and then the touching thread is about to read (or
 * to wait for the go file), then
 * waits for SIGINT or SIGTERM and exits 0 (a thread whose READ is never
 * answered leaves only once the server goes).
 */
#define _GNU_SOURCE

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>

#define WORKLOAD_NAME "fuse_fault"
#include "workload.h"

static const char* file;
static const char* go_file;
static int through_proc_mem;
static atomic_long mapped_times;
static atomic_int touching;

/* Maps and unmaps 64 KiB of anonymous memory every millisecond: each call
 * takes the mmap lock for write. */
static void* map_unmap(void* arg) {
  (void)arg;
  /* A few blocks of this thread's own arena (a heap beside the main arena). */
  static char* blocks[64];
  for (int i = 0; i < 64; ++i) {
    blocks[i] = malloc(4096);
    if (blocks[i] != NULL) memset(blocks[i], 1, 4096);
  }
  const size_t len = 64 * 1024;
  for (;;) {
    char* p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) {
      p[0] = 1;
      munmap(p, len);
    }
    atomic_fetch_add(&mapped_times, 1);
    struct timespec ms = {0, 1000000L};
    nanosleep(&ms, NULL);
  }
  return NULL;
}

static void* touch(void* arg) {
  (void)arg;
  int fd = open(file, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0) {
    fprintf(stderr, WORKLOAD_NAME ": open %s: %s\n", file, strerror(errno));
    exit(1);
  }
  const volatile char* p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    fprintf(stderr, WORKLOAD_NAME ": mmap: %s\n", strerror(errno));
    exit(1);
  }
  int mem = -1;
  if (through_proc_mem && (mem = open("/proc/self/mem", O_RDONLY | O_CLOEXEC)) < 0) {
    fprintf(stderr, WORKLOAD_NAME ": open /proc/self/mem: %s\n", strerror(errno));
    exit(1);
  }
  /* Only once the other thread has mapped: a READ that holds the mmap lock
   * would stop it before its first map, and the program would never be
   * ready. */
  while (atomic_load(&mapped_times) == 0) {
    struct timespec ms = {0, 1000000L};
    nanosleep(&ms, NULL);
  }
  atomic_store(&touching, 1);
  while (go_file != NULL && access(go_file, F_OK) != 0) {
    struct timespec ms = {0, 10000000L};
    nanosleep(&ms, NULL);
  }
  char c = 0;
  if (mem >= 0) {
    if (pread(mem, &c, 1, (off_t)(uintptr_t)p) != 1) {
      fprintf(stderr, WORKLOAD_NAME ": read /proc/self/mem: %s\n", strerror(errno));
    }
  } else {
    c = p[0];
  }
  fprintf(stderr, WORKLOAD_NAME ": read the file's first byte (%d)\n", c);
  return NULL;
}

int main(int argc, char** argv) {
  const char* ready = NULL;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--file") == 0 && i + 1 < argc) {
      file = argv[++i];
    } else if (strcmp(argv[i], "--ready-file") == 0 && i + 1 < argc) {
      ready = argv[++i];
    } else if (strcmp(argv[i], "--go-file") == 0 && i + 1 < argc) {
      go_file = argv[++i];
    } else if (strcmp(argv[i], "--through-proc-mem") == 0) {
      through_proc_mem = 1;
    } else {
      file = NULL;
      break;
    }
  }
  if (file == NULL || ready == NULL) {
    fprintf(stderr, "usage: " WORKLOAD_NAME
                    " --file PATH --ready-file PATH [--through-proc-mem] [--go-file PATH]\n");
    return 2;
  }
  sigset_t stop;
  block_stop_signals(&stop);
  /* 64 KiB blocks: below the mmap threshold, so in the main arena. */
  for (int i = 0; i < 256; ++i) {
    char* b = malloc(64 * 1024);
    if (b == NULL) return 1;
    memset(b, 2, 64 * 1024);
  }
  pthread_t mapper;
  pthread_t toucher;
  if (pthread_create(&mapper, NULL, map_unmap, NULL) != 0 ||
      pthread_create(&toucher, NULL, touch, NULL) != 0) {
    fprintf(stderr, WORKLOAD_NAME ": pthread_create failed\n");
    return 1;
  }
  while (atomic_load(&mapped_times) == 0 || atomic_load(&touching) == 0) {
    struct timespec ms = {0, 1000000L};
    nanosleep(&ms, NULL);
  }
  if (write_ready_file(ready) != 0) {
    return 1;
  }
  int sig = 0;
  while (sigwait(&stop, &sig) != 0 || (sig != SIGINT && sig != SIGTERM)) {
  }
  return 0;
}
