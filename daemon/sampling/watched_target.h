// One target of the set the scheduler watches: its identity, its own
// collectors (only those that apply to it), a thread per socket collector
// (SlowSource), and what the trim engine told the scheduler about it. A
// target's stall (a stopped process, a hung attach listener) is confined to
// its own threads: the scheduler's tick samples every target without waiting
// on any socket.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collectors/common/target.h"
#include "daemon/sampling/collector_set.h"
#include "daemon/sampling/slow_source.h"
#include "daemon/sampling/snapshot.h"

namespace memtrimd {

class WatchedTarget {
 public:
  // `sample_interval`: what "every sample" means for a socket collector.
  WatchedTarget(const Target& target, const CollectorOptions& options,
                const CollectorSwitches& switches, std::chrono::milliseconds sample_interval);
  ~WatchedTarget();
  WatchedTarget(const WatchedTarget&) = delete;
  WatchedTarget& operator=(const WatchedTarget&) = delete;

  const Target& target() const { return target_; }
  // Follows the process to a live thread's /proc directory once its main
  // thread has ended (procfs::ProcessReadDir), and to another when that
  // thread ends: the process lives while any thread does.
  void FollowReadDir();

  // One sample of this target. `previous`: its entry in the last snapshot.
  TargetSnapshot Sample(const TargetSnapshot* previous);

  // Reads smaps again in the next sample (after a trim, or once the Java
  // heap's range is known).
  void RereadSmapsNextSample();
  // The socket collector named `name`, when this target has one.
  SlowSource* Source(std::string_view name);

  // Ends the socket collectors' threads. `grace` as SlowSource::Stop.
  void Stop(std::chrono::milliseconds grace);

  // Where this target's entry sits in the last published snapshot.
  std::optional<std::size_t> previous_index;
  // How many ticks have read it (TargetSnapshot::reads).
  uint64_t reads = 0;
  // When the trim engine last trimmed it (Scheduler::AfterTrim).
  std::optional<std::chrono::system_clock::time_point> last_trim_at;
  bool refresh_after_trim = false;
  // The same program ran on another allocator before this process (set
  // once, when the scheduler adds it).
  std::optional<AllocatorChange> allocator_change;

 private:
  void LogOutcomes(const TargetSnapshot& ts);
  void RereadSmapsForJavaHeap(const TargetSnapshot& prev,
                              const std::vector<std::shared_ptr<const FinishedRun>>& finished);

  Target target_;
  std::vector<CollectorSlot> slots_;
  std::vector<std::unique_ptr<SlowSource>> slow_;  // one per slot; set for own_thread slots
};

}  // namespace memtrimd
