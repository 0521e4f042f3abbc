// One trim of one target, measured from outside: RSS+swap from
// /proc/<pid>/status, the cgroup's memory.current, and arena heap resident
// bytes from smaps, before and after; plus what the backend itself reported.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/common/status.h"
#include "collectors/common/target.h"
#include "collectors/glibc/arena_heap.h"
#include "collectors/jvm/jvm_text.h"
#include "collectors/jvm/signal_record.h"
#include "collectors/sample.h"

namespace memtrimd {

enum class TrimBackendKind { kAuto, kJvm, kAgent };
const char* TrimBackendName(TrimBackendKind k);

struct TrimOptions {
  TrimBackendKind backend = TrimBackendKind::kAuto;
  std::chrono::milliseconds timeout{60000};  // the backend's deadline
  uint64_t glibc_heap_size = 64ull << 20;
  bool measure_arena_heaps = true;  // two smaps reads per trim
  // The JVMs signalled in vain (the jvm backend attaches): the daemon's, the
  // one its collectors share, so that a trim never signals a JVM they gave
  // up on.
  std::shared_ptr<jvm::SignalRecord> signal_record = std::make_shared<jvm::SignalRecord>();
};

struct TrimMeasure {
  uint64_t rss_swap_bytes = 0;
  std::optional<uint64_t> cgroup_usage_bytes;
  std::optional<uint64_t> arena_resident_bytes;
  std::vector<glibc::ArenaHeap> arena_heaps;  // each heap's start and resident bytes
};

// The success and failure series of memtrimd_trim_runs_total exist from the
// start at 0, so the first failure shows in increase() and alerts see it
// (Prometheus cannot tell a new series' first value from a jump).
inline constexpr std::array<std::pair<std::string_view, std::string_view>, 8> kTrimRunSeries = {{
    {"success", "scheduled"},
    {"success", "manual"},
    {"failure", "deadline"},
    {"failure", "unavailable"},
    {"failure", "not_available"},
    {"failure", "target_gone"},
    {"failure", "permission"},
    {"failure", "error"},
}};

struct TrimResult {
  std::chrono::system_clock::time_point at{};
  pid_t pid = 0;
  std::string backend;  // "jvm" or "agent"
  std::string trigger;  // "scheduled" or "manual"
  bool success = false;
  std::string reason;  // failure reason label (deadline, attach, not_available, ...)
  std::string error;   // human text on failure
  double duration_seconds = 0;
  TrimMeasure before;
  TrimMeasure after;
  std::optional<jvm::TrimReport> jvm_report;  // the JVM's own (rounded) figures
  std::optional<int64_t> agent_rss_delta;     // the agent's in-process RSS after - before
  // Which allocator released, with which call ("malloc_trim",
  // "System.trim_native_heap", "arena.4096.purge", "ReleaseFreeMemory",
  // "mi_collect"), and the allocator's own free-but-kept figure around the
  // call when it has one (jemalloc, tcmalloc; through the agent), or its
  // committed bytes (mimalloc, which has no free figure).
  std::string allocator = "glibc";
  std::string call;
  std::optional<uint64_t> free_kept_before;
  std::optional<uint64_t> free_kept_after;
  std::optional<uint64_t> committed_before;
  std::optional<uint64_t> committed_after;

  // Given back (before - after); negative when memory grew meanwhile.
  int64_t ReclaimedRssSwap() const {
    return static_cast<int64_t>(before.rss_swap_bytes) - static_cast<int64_t>(after.rss_swap_bytes);
  }
  std::optional<int64_t> ReclaimedCgroup() const;
  std::optional<int64_t> ReclaimedArenaHeaps() const;
  std::optional<int64_t> Reported() const;  // what the backend said it gave back
};

// The backend a target would be trimmed through, or why none: decided here
// once, for the trim itself, its skip label and what inspect tells.
struct BackendChoice {
  std::optional<TrimBackendKind> backend;  // kJvm or kAgent; nullopt: none
  // Without a backend: the skip label (memtrimd_trim_runs_total
  // {result="skipped"}): "not_a_jvm", "no_agent", "allocator_not_glibc" (a
  // JVM on another allocator without the agent) or "no_release_call"
  // (musl); and the reason for people.
  std::string reason;
  std::string why;
};

// A JVM on glibc's malloc is trimmed through its attach socket
// (System.trim_native_heap); a JVM on another allocator only through the
// agent (the JVM's command would trim glibc's unused heap); any other
// program through the agent, which releases with its allocator's own call.
// musl has no release call. `agent_loaded`: libmemtrimd_agent.so is in the
// target (agent::HasAgent, or the sample's agent_loaded). Pure.
BackendChoice ChooseBackend(const Target& target, TrimBackendKind wanted, bool agent_loaded);

// ChooseBackend with the agent looked up in the target's maps; kUnavailable
// with the reason when there is no backend.
Result<TrimBackendKind> ResolveBackend(const Target& target, TrimBackendKind wanted);

// The skip reason label for a ResolveBackend error.
std::string BackendUnavailableReason(const Target& target, TrimBackendKind wanted);

// `target` with the allocator the agent named in `sample`, when it answered
// (its answer is certain; maps only shows library names).
Target WithAgentsAllocator(Target target, const TargetSample& sample);

// Performs one trim now. Errors (no backend, target gone) are a Status; a
// backend that fails or overruns is a TrimResult with success = false.
Result<TrimResult> TrimNow(const Target& target, const TrimOptions& options);

// The reason label of memtrimd_trim_runs_total{result="failure"} for a
// backend call that failed with `st` (target_gone, permission, deadline,
// unavailable, error): from its code and cause.
std::string TrimFailureReason(const Status& st);

// Reads the measurements TrimNow takes before and after.
TrimMeasure MeasureForTrim(const Target& target, const TrimOptions& options);

}  // namespace memtrimd
