// The allocator's own figures, as the preload agent read them inside the
// target with the allocator's public API (found with dlsym): jemalloc's
// mallctl after an "epoch" refresh, tcmalloc's MallocExtension numeric
// properties, mimalloc's mi_process_info, glibc's mallinfo2. The agent
// answers "allocator" with "key=value\n" lines (collectors/agent/
// memtrimd_agent.c documents the keys); this file parses them and maps them
// onto the measures that mean the same across allocators.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "collectors/common/allocator.h"
#include "collectors/common/status.h"

namespace memtrimd::agent {

struct AllocatorStats {
  Allocator allocator = Allocator::kUnknown;
  // The object that serves malloc: a shared object's path, or the
  // executable's when the allocator is linked into it.
  std::string object;
  // The allocator's own figures by the agent's key names (bytes), e.g.
  // jemalloc "allocated", "active", "resident", "mapped", "retained",
  // "metadata", "dirty", "muzzy"; tcmalloc "allocated", "heap_size",
  // "pageheap_free", "pageheap_unmapped", "central_cache_free",
  // "transfer_cache_free", "thread_cache_free"; mimalloc "committed",
  // "committed_peak"; glibc the mallinfo2 fields.
  std::map<std::string, uint64_t, std::less<>> bytes;
  // jemalloc's decay settings in milliseconds (-1: never purged by decay).
  std::optional<int64_t> dirty_decay_ms;
  std::optional<int64_t> muzzy_decay_ms;
  std::chrono::system_clock::time_point read_at{};

  std::optional<uint64_t> Get(std::string_view key) const {
    auto it = bytes.find(key);
    return it == bytes.end() ? std::nullopt : std::optional<uint64_t>(it->second);
  }
};

// The measures that mean the same across allocators (absent: this allocator
// does not report it). docs/allocators.md has the table of what each is
// for each allocator.
struct AllocatorMeasures {
  std::optional<uint64_t> allocated;  // in blocks the program holds
  std::optional<uint64_t> held;       // taken from the system and not given back
  std::optional<uint64_t> free_kept;  // free, kept, and what a release gives back
  std::optional<uint64_t> released;   // given back, address space still reserved
};

// Parses the agent's "allocator" answer. Pure. kParseError for a body cut
// short (no final '\n'), a line without '=', a repeated key, a non-number
// where a number belongs, an unknown allocator name, or a missing
// allocator= / object= line. Unknown keys are ignored (newer agents).
Result<AllocatorStats> ParseAllocatorStats(std::string_view body);

// The common measures of one answer. Pure.
AllocatorMeasures CommonMeasures(const AllocatorStats& s);

}  // namespace memtrimd::agent
