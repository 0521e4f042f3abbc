// What the numbers mean: JVM risk checks, direct memory, the temporary
// buffer cache, and the figures a sample cannot give (with why, and what
// gives them). Pure functions of one target's sample; /metrics, inspect and
// /report all call these, so all three say the same.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/sample.h"

namespace memtrimd {

struct RiskFinding {
  std::string check;  // metric label: nio_cache_unbounded, direct_memory_high, ...
  bool at_risk = false;
  std::string explanation;  // one line for a person: what is seen and what to do
};

// Every check AssessJvmRisks can return (memtrimd_jvm_risk{check});
// docs/jvm.md, the metric's help and the alert rules are tested against it.
// A risk is what threatens the process now, from its figures; a setting
// alone (NMT off, the JVM trimming itself, the unset cache bound) is advice
// (advice.h).
inline constexpr std::array<std::string_view, 3> kRiskChecks = {
    "nio_cache_unbounded", "direct_memory_high", "direct_buffer_gc_storm"};

// Only checks that the sample can decide are returned; a check that cannot
// be decided (e.g. direct_memory_high without the direct pool while NMT
// Other is near the limit) is absent here and listed by MissingFigures.
std::vector<RiskFinding> AssessJvmRisks(const TargetSample& s);

struct DirectMemory {
  // The "direct" buffer pool's memory used (BufferPoolMXBean, through the
  // agent): what -XX:MaxDirectMemorySize limits.
  std::optional<uint64_t> used_bytes;
  // NMT Other committed: direct buffers, the temporary buffer cache, FFM and
  // Unsafe allocations. An upper bound of used_bytes, never compared with
  // the limit as if it were the pool.
  std::optional<uint64_t> nmt_other_bytes;
  std::optional<uint64_t> limit_bytes;  // MaxDirectMemorySize, or the max heap when 0/unset
  bool limit_is_max_heap = false;
  std::optional<double> ratio;  // used_bytes / limit_bytes
};
DirectMemory DirectMemoryOf(const TargetSample& s);

// The per-thread temporary direct buffer cache (sun.nio.ch.Util).
struct TempBufferCache {
  uint64_t bytes = 0;
  std::optional<uint64_t> buffers;
  // "agent": summed over threads inside the JVM. "estimate": JDK 24+ only,
  // NMT Other minus the direct pool (the cache is outside the pool there),
  // an upper bound that also holds FFM and Unsafe memory.
  const char* source = "";
};
std::optional<TempBufferCache> TempBufferCacheOf(const TargetSample& s);

// Whether the JDK counts temporary buffers against MaxDirectMemorySize
// (17-23 do; 24+ allocate them outside the limit). nullopt: version unknown.
std::optional<bool> TempBuffersCountAgainstLimit(const TargetSample& s);

// Java heap committed/used/max: hsperfdata when present, else GC.heap_info
// (max from MaxHeapSize).
struct JavaHeap {
  std::optional<uint64_t> committed;
  std::optional<uint64_t> used;
  std::optional<uint64_t> max;
  const char* source = "";
};
JavaHeap JavaHeapOf(const TargetSample& s);

// What malloc_trim would give back now: the free memory the arenas hold
// resident (GlibcFreeResident, the account's glibc_free) less the free bytes
// no trim can take (outside the whole pages of free chunks and the main
// arena's top). About 0 right after a trim. An estimate (malloc_info gives
// chunk sizes, not addresses), not a bound. nullopt without malloc
// statistics or without the smaps read.
std::optional<uint64_t> TrimmableEstimate(const TargetSample& s);

// Whether the malloc statistics were read before the target's last trim
// (then they say nothing about what a trim can give now).
bool MallocStatsStale(const TargetSample& s);

std::optional<uint64_t> SettingBytes(const TargetSample& s, const char* name);

// A figure this sample lacks, why, and what would give it.
struct MissingFigure {
  std::string figure;  // short name: "buffer pools", "malloc statistics", ...
  // Why, then what to do: a flag, a capability, the agent; or, where there
  // is nothing to do ("not read yet"), when it will be read.
  std::string why;
};
std::vector<MissingFigure> MissingFigures(const TargetSample& s);

// What to do about a collector's failure (CollectorOutcome's name and
// cause), in a few plain words: never empty.
std::string CollectorErrorAction(std::string_view collector, Cause cause);

// Advice on the target's malloc environment (MALLOC_ARENA_MAX, ...): empty
// when there is nothing to say.
std::string MallocEnvAdvice(const TargetSample& s);

}  // namespace memtrimd
