// Parsers for the cgroup files memtrimd reads (v2, with a v1 fallback).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "collectors/common/status.h"

namespace memtrimd::cgroup {

// /proc/<pid>/cgroup.
struct ProcCgroup {
  std::optional<std::string> unified;    // "0::<path>" (v2)
  std::optional<std::string> v1_memory;  // "<n>:...memory...:<path>" (v1 memory controller)
};

Result<ProcCgroup> ParseProcCgroup(std::string_view text);

// memory.max (v2): "max" means no limit (nullopt).
Result<std::optional<uint64_t>> ParseMemoryMax(std::string_view text);

// memory.limit_in_bytes (v1): no limit is a huge page-rounded number; values
// at or above 2^62 mean unlimited (nullopt).
Result<std::optional<uint64_t>> ParseV1Limit(std::string_view text);

// A single number file (memory.current, memory.usage_in_bytes).
Result<uint64_t> ParseSingleValue(std::string_view text);

// Flat keyed files: memory.stat, memory.events, memory.oom_control.
// "key value" per line; keys are data (kernels add new ones).
Result<std::map<std::string, uint64_t, std::less<>>> ParseFlatKeyed(std::string_view text);

}  // namespace memtrimd::cgroup
