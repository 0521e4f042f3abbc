// Three known functions hold known amounts of malloc'd memory (200, 50 and
// 10 units; a unit is 1 MiB unless argv[1] gives another byte count) until
// the process is killed: the allocation sites a heap profile must find.
// It prints the addresses symbolisation is checked against, one per line:
//   function <name> <hex>   the function's entry point
//   site <name> <hex>       the return address inside it of its call to hold()
//   caller <name> <hex>     the return address in main() of its call
//   libc malloc <hex>       malloc as this program links it (in libc.so.6)
//   anon - <hex>            an address in an anonymous mapping of its own
// then "ready", flushed, and waits.
// With a second argument TRIGGER (the allocation sampler's test) it first
// prints "armed", flushed, and holds nothing until the file TRIGGER exists
// (sampling is turned on before the memory is taken); after "ready" it frees
// hold_50's block once TRIGGER.free exists and prints "freed".
// A third argument BLOCK holds each site in blocks of BLOCK bytes (the last
// one smaller when BLOCK does not divide it) instead of one block, as real
// programs do; a fourth, CHURN, starts that many threads that malloc and
// free short-lived blocks (16 B to 64 KiB, 32 live at a time) in function
// churn without end, so that a sampler must tell held from freed.
// A fifth argument "resident" holds sites whose resident bytes are known
// instead (each in blocks of one unit): quarter_200 callocs 200 units and
// writes the first quarter of each (allocated 200, resident 50), full_60
// mallocs 60 units and writes all of them (60 and 60), and freed_40 takes
// 40 units and frees them before "ready" (0); then prints "ready" as above
// (function, site and caller lines for these three).
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

// noinline and (gcc's) noclone: each must stay a function of its own
// name, as the symbol table has it, for the sites to be in it.
#if defined(__clang__)
#define SITE __attribute__((noinline))
#else
#define SITE __attribute__((noinline, noclone))
#endif

// A site's blocks. The array itself is mmap'd, so that the site holds
// exactly what it says in malloc'd memory.
struct blocks {
  char** p;
  size_t n;
};

static struct blocks held[3];
static void* sites[3];
static void* callers[3];
static size_t block_bytes;  // 0: one block per site

SITE static struct blocks hold(size_t bytes, void** site) {
  *site = __builtin_return_address(0);
  const size_t block = block_bytes == 0 ? bytes : block_bytes;
  const size_t n = (bytes + block - 1) / block;
  struct blocks b = {NULL, 0};
  void* array =
      mmap(NULL, n * sizeof(char*), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (array == MAP_FAILED) return b;
  b.p = array;
  for (size_t i = 0; i < n; ++i) {
    const size_t size = i + 1 < n ? block : bytes - i * block;
    b.p[i] = malloc(size);
    if (b.p[i] == NULL) return (struct blocks){NULL, 0};
    memset(b.p[i], 1, size);  // resident, as live memory is
  }
  b.n = n;
  return b;
}

static void release(struct blocks* b) {
  for (size_t i = 0; i < b->n; ++i) free(b->p[i]);
  munmap(b->p, b->n * sizeof(char*));
  b->p = NULL;
  b->n = 0;
}

// Short-lived allocations beside the held ones: 256 a batch, a 1 ms pause
// between batches.
SITE static void* churn(void* arg) {
  uint64_t x = (uintptr_t)arg * 0x9E3779B97F4A7C15ull + 1;
  char* ring[32] = {0};
  const struct timespec pause_ns = {0, 1000 * 1000};
  for (unsigned k = 0;; ++k) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    const size_t size = 16 + (size_t)(x % (64 * 1024 - 16));
    free(ring[k % 32]);
    ring[k % 32] = malloc(size);
    if (ring[k % 32] != NULL) ring[k % 32][size - 1] = 1;
    if (k % 256 == 255) nanosleep(&pause_ns, NULL);
  }
  return NULL;
}

SITE void hold_200(size_t unit) {
  held[0] = hold(200 * unit, &sites[0]);
  callers[0] = __builtin_return_address(0);
}

SITE void hold_50(size_t unit) {
  held[1] = hold(50 * unit, &sites[1]);
  callers[1] = __builtin_return_address(0);
}

SITE void hold_10(size_t unit) {
  held[2] = hold(10 * unit, &sites[2]);
  callers[2] = __builtin_return_address(0);
}

// `n` blocks of `size` bytes, of which the first size * touched / 4 bytes
// are written (calloc'd when `zeroed`: its untouched pages stay unmapped,
// as zlib's barely used windows and hash tables are).
SITE static struct blocks hold_part(size_t n, size_t size, size_t touched, int zeroed,
                                    void** site) {
  *site = __builtin_return_address(0);
  struct blocks b = {NULL, 0};
  void* array =
      mmap(NULL, n * sizeof(char*), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (array == MAP_FAILED) return b;
  b.p = array;
  for (size_t i = 0; i < n; ++i) {
    b.p[i] = zeroed ? calloc(1, size) : malloc(size);
    if (b.p[i] == NULL) return (struct blocks){NULL, 0};
    memset(b.p[i], 1, size * touched / 4);
  }
  b.n = n;
  return b;
}

SITE void quarter_200(size_t unit) {
  held[0] = hold_part(200, unit, 1, 1, &sites[0]);
  callers[0] = __builtin_return_address(0);
}

SITE void full_60(size_t unit) {
  held[1] = hold_part(60, unit, 4, 0, &sites[1]);
  callers[1] = __builtin_return_address(0);
}

SITE void freed_40(size_t unit) {
  held[2] = hold_part(40, unit, 4, 0, &sites[2]);
  callers[2] = __builtin_return_address(0);
}

// Polls for a file the test makes: a workload has nothing better to wait on.
static void wait_for_file(const char* path) {
  const struct timespec tick = {0, 10 * 1000 * 1000};
  while (access(path, F_OK) != 0) nanosleep(&tick, NULL);
}

int main(int argc, char** argv) {
  size_t unit = argc > 1 ? strtoull(argv[1], NULL, 10) : 1u << 20;
  const char* trigger = argc > 2 ? argv[2] : NULL;
  block_bytes = argc > 3 ? strtoull(argv[3], NULL, 10) : 0;
  const long churners = argc > 4 ? strtol(argv[4], NULL, 10) : 0;
  const int resident = argc > 5 && strcmp(argv[5], "resident") == 0;
  for (long i = 0; i < churners; ++i) {
    pthread_t t;
    if (pthread_create(&t, NULL, churn, (void*)(uintptr_t)(i + 1)) != 0) return 1;
  }
  char free_trigger[4096];
  if (trigger != NULL) {
    snprintf(free_trigger, sizeof free_trigger, "%s.free", trigger);
    printf("armed\n");
    fflush(stdout);
    wait_for_file(trigger);
  }
  if (resident) {
    quarter_200(unit);
    full_60(unit);
    freed_40(unit);
  } else {
    hold_200(unit);
    hold_50(unit);
    hold_10(unit);
  }
  if (held[0].n == 0 || held[1].n == 0 || held[2].n == 0) return 1;
  if (resident) release(&held[2]);
  static const char* const kHeld[] = {"hold_200", "hold_50", "hold_10"};
  static const char* const kResident[] = {"quarter_200", "full_60", "freed_40"};
  const char* const* kNames = resident ? kResident : kHeld;
  void (*const held_functions[])(size_t) = {hold_200, hold_50, hold_10};
  void (*const resident_functions[])(size_t) = {quarter_200, full_60, freed_40};
  void (*const* functions)(size_t) = resident ? resident_functions : held_functions;
  for (int i = 0; i < 3; ++i) {
    printf("function %s %#lx\n", kNames[i], (unsigned long)(uintptr_t)functions[i]);
    printf("site %s %#lx\n", kNames[i], (unsigned long)(uintptr_t)sites[i]);
    printf("caller %s %#lx\n", kNames[i], (unsigned long)(uintptr_t)callers[i]);
  }
  void* (*const libc_malloc)(size_t) = malloc;
  printf("libc malloc %#lx\n", (unsigned long)(uintptr_t)libc_malloc);
  void* anon = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (anon == MAP_FAILED) return 1;
  memset(anon, 1, 4096);
  printf("anon - %#lx\n", (unsigned long)(uintptr_t)anon + 100);
  printf("ready\n");
  fflush(stdout);
  if (trigger != NULL) {
    wait_for_file(free_trigger);
    release(&held[1]);
    printf("freed\n");
    fflush(stdout);
  }
  for (;;) pause();
}
