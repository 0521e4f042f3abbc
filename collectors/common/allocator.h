// Which allocator serves a target's malloc. glibc's malloc is the default;
// teams often preload another (jemalloc into a JVM is the classic fix after
// a glibc fragmentation incident), and then glibc's arena figures and
// malloc_trim no longer describe or shrink the memory that matters.
#pragma once

#include <optional>
#include <string_view>

namespace memtrimd {

enum class Allocator { kUnknown, kGlibc, kJemalloc, kTcmalloc, kMimalloc, kMusl };

// "unknown", "glibc", "jemalloc", "tcmalloc", "mimalloc", "musl": the value
// of the `allocator` label and of the agent's allocator= key.
const char* AllocatorName(Allocator a);
std::optional<Allocator> AllocatorFromName(std::string_view name);

// Whether a known allocator other than glibc's serves malloc: then glibc's
// arena figures (arena heaps, malloc_info, malloc_trim) describe nothing the
// program uses. Unknown is not "other": nothing says glibc's figures are wrong.
inline bool IsOtherAllocator(Allocator a) {
  return a != Allocator::kGlibc && a != Allocator::kUnknown;
}

}  // namespace memtrimd
