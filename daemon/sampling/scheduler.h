// The sampling loop: keeps a target (re-selecting when it exits), runs the
// collectors on their intervals and publishes one Snapshot per tick. The
// collectors that talk to the target over a socket run on threads of their
// own (SlowSource); a tick takes their latest finished run and never waits
// for them, so a stopped or hung target cannot stretch the sample interval.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "daemon/sampling/collector_set.h"
#include "daemon/sampling/slow_source.h"
#include "daemon/sampling/snapshot.h"
#include "daemon/sampling/target_selector.h"

namespace memtrimd {

class Scheduler {
 public:
  Scheduler(TargetSelector selector, std::vector<CollectorSlot> slots,
            std::chrono::milliseconds interval, SnapshotStore& store);
  ~Scheduler();

  // Takes the first sample synchronously (so /metrics has data from the
  // start; it does not wait for the own-thread collectors), then samples on
  // a thread every interval.
  void Start();
  // Joins the sampling thread; does not wait for an own-thread collector
  // blocked on its target (see SlowSource::Stop).
  void Stop();

  // One tick; public for tests.
  void Tick();

  // Called by the trim engine after a successful trim of `target` that
  // ended at `ended`: asks the socket collector that gives the malloc
  // statistics for fresh ones at once, publishes a sample with smaps read again (older statistics
  // marked as read before the trim), then, once the collectors have
  // answered, one with the fresh statistics; returns then (or after `wait`),
  // so that a /report read after a manual trim never shows an estimate from
  // before it as current.
  void AfterTrim(const Target& target, std::chrono::system_clock::time_point ended,
                 std::chrono::milliseconds wait = std::chrono::seconds(2));

 private:
  void Run();
  // Drops the target when its (pid, start time) no longer exists.
  void CheckTargetAlive();
  void SelectIfNeeded(std::string& reason);
  void LogCollectorOutcomes(const TargetSnapshot& ts);
  void PointSlowSources();
  void RereadSmapsForJavaHeap(const TargetSnapshot& prev,
                              const std::vector<std::shared_ptr<const FinishedRun>>& finished);

  TargetSelector selector_;
  std::vector<CollectorSlot> slots_;
  // One per slot; set for own_thread slots only.
  std::vector<std::unique_ptr<SlowSource>> slow_;
  std::chrono::milliseconds interval_;
  SnapshotStore& store_;

  std::optional<Target> target_;
  // Set when a --target.pid target exited: a fixed pid is never re-picked,
  // since the number may now belong to another process.
  bool fixed_pid_gone_ = false;
  std::string last_no_target_reason_;
  std::shared_ptr<const Snapshot> previous_;
  uint64_t sequence_ = 0;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  // Guarded by mu_: the last trim (AfterTrim), whether the next tick must
  // re-read smaps, whether to tick before the interval is up, and how many
  // snapshots were published (AfterTrim waits for the next one).
  std::optional<std::pair<Target, std::chrono::system_clock::time_point>> last_trim_;
  bool refresh_after_trim_ = false;
  bool tick_now_ = false;
  uint64_t published_ = 0;
  std::string malloc_source_;  // MallocStats::source of the latest sample
  std::condition_variable published_cv_;
  std::thread thread_;
};

}  // namespace memtrimd
