// What the numbers mean: JVM risk checks and the direct-memory figures,
// derived from one target's sample. Pure; shared by /metrics, inspect and
// /report so all three say the same.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collectors/sample.h"

namespace memtrimd {

struct RiskFinding {
  std::string check;  // metric label: nio_cache_unbounded, nmt_off, ...
  bool at_risk = false;
  std::string explanation;  // one line for a person
};

// Only checks that the sample can decide are returned.
std::vector<RiskFinding> AssessJvmRisks(const TargetSample& s);

struct DirectMemory {
  std::optional<uint64_t> used_bytes;   // NMT "Other" committed (needs NMT)
  std::optional<uint64_t> limit_bytes;  // MaxDirectMemorySize, or the max heap when 0/unset
  bool limit_is_max_heap = false;
  std::optional<double> ratio;
};
DirectMemory DirectMemoryOf(const TargetSample& s);

// RSS minus NMT's total committed: memory the JVM does not account for.
// Negative when NMT counts committed memory that was never touched.
std::optional<int64_t> NmtGapBytes(const TargetSample& s);

// Java heap committed/used/max: hsperfdata when present, else GC.heap_info
// (max from MaxHeapSize).
struct JavaHeap {
  std::optional<uint64_t> committed;
  std::optional<uint64_t> used;
  std::optional<uint64_t> max;
  const char* source = "";
};
JavaHeap JavaHeapOf(const TargetSample& s);

// Upper bound of what malloc_trim could give back, from malloc_info.
std::optional<uint64_t> TrimmableEstimate(const TargetSample& s);

std::optional<uint64_t> SettingBytes(const TargetSample& s, const char* name);

}  // namespace memtrimd
