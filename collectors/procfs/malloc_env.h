// The target's glibc malloc settings from its environment block.
//
// /proc/<pid>/environ is the environment the program was started with
// (execve's envp): a later setenv/putenv is invisible there. That is also
// what glibc reads, once, when malloc initialises, so for these variables
// the initial environment is the one in force.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>

namespace memtrimd::procfs {

// The variables glibc's malloc reads at start-up (mallopt's environment
// aliases, plus the tunables string that can set all of them).
inline constexpr std::string_view kMallocEnvNames[] = {
    "MALLOC_ARENA_MAX", "MALLOC_ARENA_TEST",      "MALLOC_TRIM_THRESHOLD_",
    "MALLOC_TOP_PAD_",  "MALLOC_MMAP_THRESHOLD_", "MALLOC_MMAP_MAX_",
    "MALLOC_CHECK_",    "MALLOC_PERTURB_",        "GLIBC_TUNABLES"};

// Longer values are cut to this many bytes (GLIBC_TUNABLES can be long;
// the value ends up in a metric label).
inline constexpr std::size_t kMallocEnvValueMax = 256;

using MallocEnv = std::map<std::string, std::string, std::less<>>;

// Pure: name -> value for each of kMallocEnvNames set in the NUL-separated
// block. The first entry of a name wins, as getenv has it. An empty value
// is kept (set but empty).
//
// GLIBC_TUNABLES is not shown as the program got it: while parsing it at
// start-up, glibc (seen with 2.36) writes a NUL over the ':' after each
// tunable it accepted, in the environment block itself, so
// "GLIBC_TUNABLES=a.b.c=1:a.b.d=2" reads back from /proc as the entries
// "GLIBC_TUNABLES=a.b.c=1" and "a.b.d=2". Entries right after it that name
// a tunable (a dot in the name, which variables do not have) are joined
// back with ':'. A piece that starts with a name without a dot (a tunable
// glibc rejected) stays cut off.
MallocEnv MallocEnvFrom(std::string_view environ);

}  // namespace memtrimd::procfs
