// The sampling loop: keeps a target (re-selecting when it exits), runs the
// collectors on their intervals and publishes one Snapshot per tick.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "daemon/collector_set.h"
#include "daemon/snapshot.h"
#include "daemon/target_selector.h"

namespace memtrimd {

class Scheduler {
 public:
  Scheduler(TargetSelector selector, std::vector<CollectorSlot> slots,
            std::chrono::milliseconds interval, SnapshotStore& store);
  ~Scheduler();

  // Takes the first sample synchronously (so /metrics has data from the
  // start), then samples on a thread every interval.
  void Start();
  void Stop();

  // One tick; public for tests.
  void Tick();

 private:
  void Run();
  // Drops the target when its (pid, start time) no longer exists.
  void CheckTargetAlive();
  void SelectIfNeeded(std::string& reason);
  void LogCollectorOutcomes(const TargetSnapshot& ts);

  TargetSelector selector_;
  std::vector<CollectorSlot> slots_;
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
  std::thread thread_;
};

}  // namespace memtrimd
