// The trim engine: on its own thread, asks each watched target's policy
// whether a trim is due, performs one at a time (never two at once on the
// node, and at most --trim.max-per-minute started in any minute), and keeps
// each target's results for /metrics, /report and the log. Manual trims (the
// HTTP API) go through the same engine so they too are never concurrent.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "collectors/common/process_key.h"
#include "daemon/sampling/snapshot.h"
#include "daemon/trim/trim.h"
#include "daemon/trim/trim_policy.h"

namespace memtrimd {

inline constexpr double kTrimDurationBuckets[] = {0.01, 0.05, 0.1, 0.25, 0.5, 1,
                                                  2.5,  5,    10,  30,   60};

// Everything /metrics and /report need of one target, copied out under the
// lock.
struct TrimStats {
  pid_t pid = 0;
  uint64_t start_ticks = 0;
  bool opted_in = true;  // whether the engine trims it on a schedule
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
  // Newest first, a few: one block per target, kept (SampleHistory says why
  // long-lived small blocks should not come one at a time).
  std::vector<TrimResult> recent;
  std::string backend_setting;
};

struct TrimEngineOptions {
  TrimPolicyConfig policy;
  TrimOptions trim;
  // Trim only targets that opted in (MEMTRIMD_TRIM=1); otherwise every
  // target but those that opted out (MEMTRIMD_TRIM=0).
  bool only_opted_in = false;
  int max_per_minute = 0;  // trims started on the node in any 60 s; 0: no cap
};

class TrimEngine {
 public:
  TrimEngine(TrimEngineOptions options, const SnapshotStore& store);
  ~TrimEngine();
  TrimEngine(const TrimEngine&) = delete;
  TrimEngine& operator=(const TrimEngine&) = delete;

  void Start();
  // Called after every successful trim (before TrimManually returns), with
  // the target, the result and when the trim ended: the scheduler re-reads
  // what the trim changed, the incident page's history keeps its before and
  // after. Set before Start.
  using AfterTrimHook = std::function<void(const Target&, const TrimResult&,
                                           std::chrono::system_clock::time_point ended)>;
  void SetAfterTrim(AfterTrimHook hook) { after_trim_ = std::move(hook); }
  // Joins the engine's thread. After RequestShutdown (shutdown.h) this does
  // not wait for a trim blocked on its target: the trim is abandoned.
  void Stop();

  // A trim of `pid` now (nullopt: the one target; an error when there are
  // several), outside the schedule. kBusy when one is running; kNotFound
  // when there is no such target; kUnavailable at shutdown (the caller, an
  // HTTP worker, is not kept waiting for a trim blocked on a stopped target).
  Result<TrimResult> TrimManually(std::optional<pid_t> pid = std::nullopt);

  // One entry per target of the latest snapshot the engine has seen, in pid
  // order.
  std::vector<TrimStats> Stats() const;

  // Changes whenever a figure the trim metrics show (TrimFamilies: run
  // counts, the last result, durations, the effective interval) may have
  // changed, so that /metrics renders them again only then.
  uint64_t MetricsVersion() const { return metrics_version_.load(std::memory_order_acquire); }

 private:
  struct PerTarget {
    PerTarget(const TrimPolicyConfig& config, std::function<double()> uniform01)
        : policy(config, std::move(uniform01)) {}
    Target target;
    TrimPolicy policy;
    TrimStats stats;
    std::optional<Result<TrimBackendKind>> backend;  // resolved once
    std::optional<bool> has_agent;                   // libmemtrimd_agent.so mapped (read once)
    bool deferred = false;                           // due, held back by the node-wide rate cap
    // Set while a trim given up at its deadline still runs on its own
    // thread (true once it ended): no other trim of this target meanwhile.
    std::shared_ptr<std::atomic<bool>> abandoned_call_ended;
    bool StillStuck() const { return abandoned_call_ended && !abandoned_call_ended->load(); }
  };

  void NotifyTrimmed(const Target& target, const TrimResult& r) const;
  AfterTrimHook after_trim_;
  void Run();
  void Tick();
  // REQUIRES: mu_ held. Follows the snapshot's targets: new ones start one
  // interval from now, gone ones (and their series) are dropped.
  void Follow(const Snapshot* snap, TrimPolicy::Clock::time_point now);
  bool OptedIn(const Target& target) const;
  TrimInputs InputsFrom(const TargetSnapshot& ts) const;
  void ApplyBackend(PerTarget& pt, const TargetSample& sample, TrimInputs& in);
  void Record(PerTarget& pt, const TrimResult& r);
  void Count(PerTarget& pt, const std::string& result, const std::string& reason);
  bool RateCapReached(TrimPolicy::Clock::time_point now);
  PerTarget* Find(const ProcessKey& key);
  // Runs one trim of `target` (trim_mu_ held) and records it.
  Result<TrimResult> RunTrim(const ProcessKey& key, const Target& target, const char* trigger);
  TrimStats NewStats(const Target& target) const;

  TrimEngineOptions options_;
  const SnapshotStore& store_;

  mutable std::mutex mu_;  // guards rng_, targets_, started_
  std::mt19937_64 rng_;
  std::map<ProcessKey, PerTarget> targets_;
  std::shared_ptr<const Snapshot> followed_;           // the snapshot Follow last saw
  std::deque<TrimPolicy::Clock::time_point> started_;  // for --trim.max-per-minute
  std::mutex trim_mu_;  // held for the whole of a trim: never two at once

  std::atomic<uint64_t> metrics_version_{0};

  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace memtrimd
