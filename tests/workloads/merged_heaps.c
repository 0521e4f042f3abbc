/*
 * merged_heaps - glibc arena heaps that the kernel merges into one mapping,
 * made on purpose, with the program's own list of its heaps as ground truth.
 *
 * Usage: merged_heaps --ready-file PATH --truth-file PATH [--threads N]
 *                     [--mib-per-thread M] [--block-bytes B] [--churn-rounds R]
 *                     [--decoy]
 *
 * Each of N threads (default 1) mallocs B-byte blocks (default 1000), writing
 * each, until it holds M MiB (default 250). An arena that grows past one
 * 64 MiB heap gets the next heap right below or above the last, and the
 * kernel merges a full heap with its rw-p neighbour: one thread holding
 * 250 MB has 4 heaps, two of them in one 128 MiB mapping (Linux 6.18, glibc
 * 2.36). With R churn rounds each thread then frees a third of its blocks and
 * mallocs them again at other sizes, R times (more threads than
 * MALLOC_ARENA_MAX arenas share arenas and their heaps). Then every thread
 * stops allocating; the main thread writes the truth file, then the ready
 * file (its pid), and idles until SIGTERM without allocating.
 *
 * --decoy: also maps a 128 MiB anonymous rw-p region on a 64 MiB boundary
 * that is no heap: every page written with 0x5a bytes, and at its second
 * boundary a header that would make it a later heap of an arena whose first
 * heap is the region's start (prev = start), which holds no heap header. A
 * reader that trusts one header alone counts it; the chain does not hold.
 *
 * Truth, found from inside and without reading /proc/self/maps: every
 * block's chunk whose size field has NON_MAIN_ARENA (4) set lies in a heap
 * at (pointer & ~(64 MiB - 1)); that heap's heap_info names its arena
 * (ar_ptr). For each arena, its newest heap holds the arena's top chunk
 * (malloc_state.top: glibc 2.26+ on 64-bit, after the mutex, flags,
 * have_fastchunks and 10 fastbins, at offset 96); the arena's heaps are that
 * heap and its prev links down to the first (prev 0). Every block's heap
 * must be among them (checked; the program fails otherwise). A heap's
 * resident bytes are the resident pages of its rw part, [start, start +
 * mprotect_size), by mincore(). The truth file holds one line per heap,
 *   heap <start> arena <ar_ptr> prev <prev> mprotect <bytes> resident <bytes>
 * (addresses in hex with 0x, sizes in decimal), then
 *   heaps <count>
 *   resident_bytes <sum>
 *   decoy <start> (with --decoy)
 */
#define _GNU_SOURCE
#define WORKLOAD_NAME "merged_heaps"

#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>

#include "workload.h"

#define HEAP_BYTES (64ull << 20)
#define TOP_OFFSET 96 /* offsetof(struct malloc_state, top), glibc 2.26+, LP64 */
#define MAX_THREADS 64
#define MAX_ARENAS 256
#define MAX_HEAPS 4096

struct heap_info_words {
  uintptr_t ar_ptr, prev, size, mprotect_size, pagesize;
};

struct thread_blocks {
  char** blocks;
  size_t count;
};

static unsigned long long bytes_per_thread = 250ull << 20;
static size_t block_bytes = 1000;
static unsigned churn_rounds;
static struct thread_blocks held[MAX_THREADS];

static void die(const char* what) {
  fprintf(stderr, WORKLOAD_NAME ": %s: %s\n", what, strerror(errno));
  exit(1);
}

static void fail(const char* what) {
  fprintf(stderr, WORKLOAD_NAME ": %s\n", what);
  exit(1);
}

static void* hold(void* arg) {
  struct thread_blocks* t = arg;
  size_t n = (size_t)(bytes_per_thread / block_bytes);
  t->blocks = calloc(n, sizeof *t->blocks);
  if (t->blocks == NULL) die("calloc");
  for (size_t i = 0; i < n; ++i) {
    t->blocks[i] = malloc(block_bytes);
    if (t->blocks[i] == NULL) die("malloc");
    memset(t->blocks[i], 1, block_bytes);
  }
  uint64_t rng = (uint64_t)(uintptr_t)t | 1;
  for (unsigned r = 0; r < churn_rounds; ++r) {
    for (size_t i = r % 3; i < n; i += 3) free(t->blocks[i]);
    for (size_t i = r % 3; i < n; i += 3) {
      size_t size = block_bytes / 2 + (size_t)(xorshift64(&rng) % (block_bytes * 2));
      t->blocks[i] = malloc(size);
      if (t->blocks[i] == NULL) die("malloc");
      memset(t->blocks[i], 2, size);
    }
  }
  t->count = n;
  return NULL;
}

static int non_main_arena_chunk(const void* p) { return (((const size_t*)p)[-1] & 4) != 0; }

static const struct heap_info_words* heap_of(const void* p) {
  return (const struct heap_info_words*)((uintptr_t)p & ~(uintptr_t)(HEAP_BYTES - 1));
}

static uintptr_t arenas[MAX_ARENAS];
static size_t arena_count;
static uintptr_t heaps[MAX_HEAPS];
static uintptr_t heap_arena[MAX_HEAPS];
static size_t heap_count;

static void add_arena(uintptr_t a) {
  for (size_t i = 0; i < arena_count; ++i) {
    if (arenas[i] == a) return;
  }
  if (arena_count == MAX_ARENAS) fail("too many arenas");
  arenas[arena_count++] = a;
}

static int known_heap(uintptr_t h, uintptr_t arena) {
  for (size_t i = 0; i < heap_count; ++i) {
    if (heaps[i] == h) return heap_arena[i] == arena;
  }
  return 0;
}

static uint64_t resident_bytes(uintptr_t start, size_t length) {
  long page = sysconf(_SC_PAGESIZE);
  size_t pages = (length + (size_t)page - 1) / (size_t)page;
  unsigned char* vec = malloc(pages);
  if (vec == NULL) die("malloc");
  if (mincore((void*)start, length, vec) != 0) die("mincore");
  uint64_t n = 0;
  for (size_t i = 0; i < pages; ++i) n += vec[i] & 1;
  free(vec);
  return n * (uint64_t)page;
}

static uintptr_t make_decoy(void) {
  size_t len = 3 * HEAP_BYTES;
  char* raw = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) die("mmap decoy");
  uintptr_t start = ((uintptr_t)raw + HEAP_BYTES - 1) & ~(uintptr_t)(HEAP_BYTES - 1);
  if (start > (uintptr_t)raw && munmap(raw, start - (uintptr_t)raw) != 0) die("munmap");
  uintptr_t end = start + 2 * HEAP_BYTES;
  if ((uintptr_t)raw + len > end && munmap((void*)end, (uintptr_t)raw + len - end) != 0) {
    die("munmap");
  }
  memset((void*)start, 0x5a, 2 * HEAP_BYTES);
  struct heap_info_words* later = (struct heap_info_words*)(start + HEAP_BYTES);
  later->ar_ptr = start + 48;
  later->prev = start;
  later->size = 1 << 20;
  later->mprotect_size = HEAP_BYTES;
  later->pagesize = 4096;
  return start;
}

static void write_truth(const char* path, uintptr_t decoy) {
  size_t cap = 128 + heap_count * 160;
  char* text = malloc(cap);
  if (text == NULL) die("malloc");
  size_t len = 0;
  uint64_t total = 0;
  for (size_t i = 0; i < heap_count; ++i) {
    const struct heap_info_words* h = (const struct heap_info_words*)heaps[i];
    uint64_t resident = resident_bytes(heaps[i], h->mprotect_size);
    total += resident;
    len += (size_t)snprintf(
        text + len, cap - len, "heap 0x%lx arena 0x%lx prev 0x%lx mprotect %lu resident %llu\n",
        (unsigned long)heaps[i], (unsigned long)h->ar_ptr, (unsigned long)h->prev,
        (unsigned long)h->mprotect_size, (unsigned long long)resident);
  }
  len += (size_t)snprintf(text + len, cap - len, "heaps %zu\nresident_bytes %llu\n", heap_count,
                          (unsigned long long)total);
  if (decoy != 0)
    len += (size_t)snprintf(text + len, cap - len, "decoy 0x%lx\n", (unsigned long)decoy);
  if (write_file_atomically(path, text, len) != 0) die("write truth file");
  free(text);
}

static void usage(void) {
  fprintf(stderr,
          "usage: merged_heaps --ready-file PATH --truth-file PATH [--threads N] "
          "[--mib-per-thread M] [--block-bytes B] [--churn-rounds R] [--decoy]\n");
  exit(2);
}

int main(int argc, char** argv) {
  const char* ready_file = NULL;
  const char* truth_file = NULL;
  unsigned threads = 1;
  int decoy = 0;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    if (strcmp(a, "--decoy") == 0) {
      decoy = 1;
      continue;
    }
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (v == NULL) usage();
    if (strcmp(a, "--ready-file") == 0) {
      ready_file = v;
    } else if (strcmp(a, "--truth-file") == 0) {
      truth_file = v;
    } else if (strcmp(a, "--threads") == 0) {
      threads = (unsigned)parse_long(a, v, 1, MAX_THREADS);
    } else if (strcmp(a, "--mib-per-thread") == 0) {
      bytes_per_thread = (unsigned long long)parse_long(a, v, 1, 4096) << 20;
    } else if (strcmp(a, "--block-bytes") == 0) {
      block_bytes = (size_t)parse_long(a, v, 16, 65536);
    } else if (strcmp(a, "--churn-rounds") == 0) {
      churn_rounds = (unsigned)parse_long(a, v, 0, 100);
    } else {
      usage();
    }
    ++i;
  }
  if (ready_file == NULL || truth_file == NULL) usage();
  sigset_t stop;
  block_stop_signals(&stop);

  pthread_t tid[MAX_THREADS];
  for (unsigned t = 0; t < threads; ++t) {
    if (pthread_create(&tid[t], NULL, hold, &held[t]) != 0) die("pthread_create");
  }
  for (unsigned t = 0; t < threads; ++t) pthread_join(tid[t], NULL);

  /* The arenas, from the blocks' heaps. */
  for (unsigned t = 0; t < threads; ++t) {
    for (size_t i = 0; i < held[t].count; ++i) {
      if (non_main_arena_chunk(held[t].blocks[i])) add_arena(heap_of(held[t].blocks[i])->ar_ptr);
    }
  }
  /* Each arena's heaps: from the one holding its top chunk, down the prev links. */
  for (size_t a = 0; a < arena_count; ++a) {
    uintptr_t top = *(const uintptr_t*)(arenas[a] + TOP_OFFSET);
    const struct heap_info_words* h = heap_of((const void*)top);
    if (h->ar_ptr != arenas[a]) fail("the arena's top chunk is not in one of its heaps");
    for (;;) {
      if (heap_count == MAX_HEAPS) fail("too many heaps");
      heaps[heap_count] = (uintptr_t)h;
      heap_arena[heap_count++] = arenas[a];
      if (h->prev == 0) break;
      h = (const struct heap_info_words*)h->prev;
      if (h->ar_ptr != arenas[a]) fail("a prev link leaves the arena");
    }
    if (heaps[heap_count - 1] + 48 != arenas[a]) fail("the first heap does not hold its arena");
  }
  for (unsigned t = 0; t < threads; ++t) {
    for (size_t i = 0; i < held[t].count; ++i) {
      const void* p = held[t].blocks[i];
      if (!non_main_arena_chunk(p)) continue;
      if (!known_heap((uintptr_t)heap_of(p), heap_of(p)->ar_ptr))
        fail("a block outside every heap");
    }
  }
  uintptr_t decoy_start = decoy ? make_decoy() : 0;
  write_truth(truth_file, decoy_start);
  if (write_ready_file(ready_file) != 0) die("write ready file");
  int sig = 0;
  sigwait(&stop, &sig);
  return 0;
}
