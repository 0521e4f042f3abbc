// Parsers for the cgroup files memtrimd reads (v2, with a v1 fallback).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "collectors/common/status.h"

namespace memtrimd::cgroup {

// One line of /proc/<pid>/cgroup: "<hierarchy>:<controllers>:<path>"
// ("0::<path>" is the v2 line; a v1 line lists its controllers, comma
// separated). The views point into the text.
struct CgroupLine {
  std::string_view hierarchy;
  std::string_view controllers;
  std::string_view path;

  bool unified() const { return hierarchy == "0" && controllers.empty(); }
  bool HasController(std::string_view name) const;
};

// Calls on_line for each line of /proc/<pid>/cgroup that has both colons;
// returns how many non-empty lines did not.
std::size_t ForEachCgroupLine(std::string_view text,
                              const std::function<void(const CgroupLine&)>& on_line);

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
