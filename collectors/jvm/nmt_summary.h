// `VM.native_memory summary scale=B`: the JVM's own account of its native
// memory, per category. Categories are data (new ones appear across JDKs).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/common/status.h"

namespace memtrimd::jvm {

struct NmtCategory {
  std::string name;  // as printed: "Java Heap", "Class", "Thread", "Other", ...
  uint64_t reserved = 0;
  uint64_t committed = 0;
  std::optional<uint64_t> malloc_bytes;  // "(malloc=N #count)"
  std::optional<uint64_t> malloc_count;
  std::optional<uint64_t> mmap_reserved;  // "(mmap: reserved=N, committed=M)"
  std::optional<uint64_t> mmap_committed;
  std::optional<uint64_t> arena_bytes;  // "(arena=N #count)"
};

struct NmtSummary {
  // false when the JVM answered "Native memory tracking is not enabled":
  // a normal state (NMT must be switched on at JVM start), not an error.
  bool enabled = false;
  uint64_t total_reserved = 0;
  uint64_t total_committed = 0;
  std::optional<uint64_t> total_malloc_bytes;  // "malloc: N #count" under Total (JDK 17+)
  std::optional<uint64_t> total_mmap_committed;
  std::vector<NmtCategory> categories;

  const NmtCategory* Find(std::string_view name) const;
};

// Parses the output of `VM.native_memory summary scale=B` (JDK 17, 21, 25
// layouts; also tolerates KB/MB/GB scaled values). kParseError when the text
// is neither a summary nor the "not enabled" message.
Result<NmtSummary> ParseNmtSummary(std::string_view text);

}  // namespace memtrimd::jvm
