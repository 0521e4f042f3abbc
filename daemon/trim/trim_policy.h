// When to trim: a pure state machine with an injected clock and random
// source, so every rule is unit-tested without waiting.
//
// Rules, each decision a counted outcome:
// - a base interval (0 disables trimming), with jitter so the replicas of a
//   Deployment do not trim in lockstep;
// - an optional gate: trim only while RSS / memory limit >= a ratio;
// - skip a target that did not opt in (node-agent mode) or opted out;
// - skip when the JVM trims itself (TrimNativeHeapInterval > 0), unless forced;
// - backoff when trims stop paying: after K trims in a row that give back
//   less than a floor, double the interval up to a maximum; go back to the
//   base interval when arena heap RSS grows by a threshold;
// - failure backoff: each failure in a row doubles the wait, up to the maximum;
// - never two trims at once (the engine calls Begin/Finish around a trim).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace memtrimd {

struct TrimPolicyConfig {
  std::chrono::milliseconds interval{0};  // 0: never trim on a schedule
  std::chrono::milliseconds max_interval{std::chrono::hours(1)};
  double jitter = 0.1;                      // +-10% of the interval
  std::optional<double> min_limit_ratio;    // gate on RSS / limit
  uint64_t floor_bytes = 1u << 20;          // a trim giving back less "did not pay"
  int unproductive_runs = 3;                // K in a row before backing off
  uint64_t reset_growth_bytes = 64u << 20;  // arena heap RSS growth that resets the backoff
  bool force_when_jvm_trims = false;
};

// What the engine knows right now.
struct TrimInputs {
  bool target_up = false;
  uint64_t rss_bytes = 0;
  std::optional<uint64_t> limit_bytes;
  std::optional<uint64_t> arena_resident_bytes;  // from the last smaps read
  bool jvm_trims_itself = false;
  bool backend_available = true;
  std::string backend_unavailable_reason;  // counted as the skip reason
  // False for a target that opted out (MEMTRIMD_TRIM=0), or, with
  // --trim.targets=opted-in, did not opt in.
  bool opted_in = true;
};

struct TrimDecision {
  enum class Action { kWait, kTrim, kSkip };
  Action action = Action::kWait;
  std::string reason;  // for kSkip: the label of memtrimd_trim_runs_total
};

class TrimPolicy {
 public:
  using Clock = std::chrono::steady_clock;
  // `uniform01` returns a number in [0, 1); tests pass a fixed one.
  TrimPolicy(TrimPolicyConfig config, std::function<double()> uniform01);

  // Called on every engine tick. kTrim means "start one now" (then Begin()).
  // A skip also moves the next due time one interval on.
  TrimDecision Decide(Clock::time_point now, const TrimInputs& in);

  void Begin(Clock::time_point now);
  // `reclaimed` is what the trim gave back (RSS+swap before - after), or
  // nullopt when it failed or overran its deadline.
  void Finish(Clock::time_point now, std::optional<int64_t> reclaimed,
              std::optional<uint64_t> arena_resident_after);

  // A new target starts from the base interval, due after one interval.
  void Reset(Clock::time_point now);

  bool in_progress() const { return in_progress_; }
  std::chrono::milliseconds effective_interval() const { return effective_; }
  Clock::time_point next_due() const { return next_due_; }
  int unproductive_streak() const { return unproductive_; }
  int failure_streak() const { return failures_; }
  const TrimPolicyConfig& config() const { return config_; }

 private:
  std::chrono::milliseconds Jittered(std::chrono::milliseconds d);
  void Schedule(Clock::time_point from, std::chrono::milliseconds d);

  TrimPolicyConfig config_;
  std::function<double()> uniform01_;
  std::chrono::milliseconds effective_;
  Clock::time_point next_due_{};
  bool in_progress_ = false;
  int unproductive_ = 0;
  int failures_ = 0;
  // Arena heap RSS right after the last trim: growth from here resets the
  // backoff.
  std::optional<uint64_t> arena_after_last_trim_;
};

}  // namespace memtrimd
