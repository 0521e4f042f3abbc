// Only in sanitizer builds (the asan and fuzz presets). A process started
// with another real than effective uid (what a sidecar with the target's
// effective uid but no ptrace access is, and what tests run memtrimd as) is
// exec'd securely: not dumpable, so LeakSanitizer cannot stop its threads at
// exit and fails the run with a "fatal error", and its own /proc/self/environ
// is not readable to it, so ASAN_OPTIONS=detect_leaks=0 is never seen. Such
// a process turns leak detection off itself; every other run keeps it.
#if defined(__SANITIZE_ADDRESS__)
#define MEMTRIMD_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MEMTRIMD_ASAN 1
#endif
#endif

#ifdef MEMTRIMD_ASAN
#include <sys/auxv.h>

extern "C" const char* __asan_default_options() {
  return getauxval(AT_SECURE) != 0 ? "detect_leaks=0" : "";
}
#endif
