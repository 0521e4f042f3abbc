// The trim engine: on its own thread, asks the policy whether a trim is due
// for the current target, performs it (never two at once), and keeps the
// results for /metrics, /report and the log. Manual trims (the HTTP API) go
// through the same engine so they too are never concurrent.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "daemon/sampling/snapshot.h"
#include "daemon/trim/trim.h"
#include "daemon/trim/trim_policy.h"

namespace memtrimd {

inline constexpr double kTrimDurationBuckets[] = {0.01, 0.05, 0.1, 0.25, 0.5, 1,
                                                  2.5,  5,    10,  30,   60};

// Everything /metrics and /report need, copied out under the lock.
struct TrimStats {
  std::map<std::pair<std::string, std::string>, uint64_t> runs;  // (result, reason) -> count
  uint64_t reclaimed_total_bytes = 0;  // sum of positive RSS+swap reclaimed
  std::optional<TrimResult> last;
  std::optional<double> last_success_unix_seconds;
  std::vector<uint64_t> duration_bucket_counts;  // cumulative per kTrimDurationBuckets
  uint64_t duration_count = 0;
  double duration_sum = 0;
  std::chrono::milliseconds effective_interval{0};
  std::optional<double> next_due_in_seconds;  // nullopt: disabled or in progress
  bool in_progress = false;
  std::string last_skip_reason;
  std::deque<TrimResult> recent;  // newest first, a few
  std::string backend_setting;
};

struct TrimEngineOptions {
  TrimPolicyConfig policy;
  TrimOptions trim;
};

class TrimEngine {
 public:
  TrimEngine(TrimEngineOptions options, const SnapshotStore& store);
  ~TrimEngine();
  TrimEngine(const TrimEngine&) = delete;
  TrimEngine& operator=(const TrimEngine&) = delete;

  void Start();
  // Called after every successful trim (before TrimManually returns), with
  // the target and when the trim ended: the scheduler re-reads what the
  // trim changed. Set before Start.
  using AfterTrimHook =
      std::function<void(const Target&, std::chrono::system_clock::time_point ended)>;
  void SetAfterTrim(AfterTrimHook hook) { after_trim_ = std::move(hook); }
  // Joins the engine's thread. After RequestShutdown (shutdown.h) this does
  // not wait for a trim blocked on its target: the trim is abandoned.
  void Stop();

  // A trim now, outside the schedule. kUnavailable when one is running, or
  // there is no target or backend, or at shutdown (the caller, an HTTP
  // worker, is not kept waiting for a trim blocked on a stopped target).
  Result<TrimResult> TrimManually();

  TrimStats Stats() const;

  // Changes whenever a figure the trim metrics show (TrimFamilies: run
  // counts, the last result, durations, the effective interval) may have
  // changed, so that /metrics renders them again only then.
  uint64_t MetricsVersion() const { return metrics_version_.load(std::memory_order_acquire); }

 private:
  void NotifyTrimmed(const Target& target, const TrimResult& r) const;
  AfterTrimHook after_trim_;
  void Run();
  void Tick();
  TrimInputs InputsFrom(const Snapshot* snap, std::optional<Target>& target) const;
  void ApplyBackend(const Target& target, const TargetSample& sample, TrimInputs& in);
  void Record(const TrimResult& r);
  void Count(const std::string& result, const std::string& reason);

  TrimEngineOptions options_;
  const SnapshotStore& store_;

  mutable std::mutex mu_;  // guards rng_, policy_, stats_, current_
  std::mt19937_64 rng_;
  TrimPolicy policy_;
  TrimStats stats_;
  std::optional<std::pair<pid_t, uint64_t>> current_;  // target identity the policy tracks
  std::optional<Result<TrimBackendKind>> backend_;     // for current_, resolved once
  std::mutex trim_mu_;  // held for the whole of a trim: never two at once

  std::atomic<uint64_t> metrics_version_{0};

  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace memtrimd
