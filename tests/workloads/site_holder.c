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
#define _GNU_SOURCE
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

static void* held[3];
static void* sites[3];
static void* callers[3];

SITE static void* hold(size_t bytes, void** site) {
  *site = __builtin_return_address(0);
  char* p = malloc(bytes);
  if (p != NULL) memset(p, 1, bytes);  // resident, as live memory is
  return p;
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

// Polls for a file the test makes: a workload has nothing better to wait on.
static void wait_for_file(const char* path) {
  const struct timespec tick = {0, 10 * 1000 * 1000};
  while (access(path, F_OK) != 0) nanosleep(&tick, NULL);
}

int main(int argc, char** argv) {
  size_t unit = argc > 1 ? strtoull(argv[1], NULL, 10) : 1u << 20;
  const char* trigger = argc > 2 ? argv[2] : NULL;
  char free_trigger[4096];
  if (trigger != NULL) {
    snprintf(free_trigger, sizeof free_trigger, "%s.free", trigger);
    printf("armed\n");
    fflush(stdout);
    wait_for_file(trigger);
  }
  hold_200(unit);
  hold_50(unit);
  hold_10(unit);
  if (held[0] == NULL || held[1] == NULL || held[2] == NULL) return 1;
  static const char* const kNames[] = {"hold_200", "hold_50", "hold_10"};
  void (*const functions[])(size_t) = {hold_200, hold_50, hold_10};
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
    free(held[1]);
    held[1] = NULL;
    printf("freed\n");
    fflush(stdout);
  }
  for (;;) pause();
}
