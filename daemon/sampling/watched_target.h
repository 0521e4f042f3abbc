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
#include "collectors/jvm/agent_load_record.h"
#include "daemon/sampling/collector_set.h"
#include "daemon/sampling/slow_source.h"
#include "daemon/sampling/snapshot.h"
#include "daemon/sampling/target_read.h"

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
  // Runs on a TargetRead's thread; the scheduler starts no other read of this
  // target until it ends, and touches none of the state it uses meanwhile.
  TargetSnapshot Sample(const TargetSnapshot* previous, const ReadInputs& inputs);

  // Reads smaps again in the next sample (after a trim, or once the Java
  // heap's range is known).
  void RereadSmapsNextSample();
  // The socket collector named `name`, when this target has one.
  SlowSource* Source(std::string_view name);

  // The scheduler's fields below are its own: a read gets copies (ReadInputs).

  // Ends the socket collectors' threads. `grace` as SlowSource::Stop.
  void Stop(std::chrono::milliseconds grace);

  // Where this target's entry sits in the last published snapshot.
  std::optional<std::size_t> previous_index;
  // How many ticks have read it (TargetSnapshot::reads).
  uint64_t reads = 0;
  // When the trim engine last trimmed it (Scheduler::AfterTrim).
  std::optional<std::chrono::system_clock::time_point> last_trim_at;
  std::optional<std::chrono::steady_clock::time_point> last_trim_steady;
  bool refresh_after_trim = false;
  // The same program ran on another allocator before this process (set
  // once, when the scheduler adds it).
  std::optional<AllocatorChange> allocator_change;
  // A read that outlasted the sampling thread's deadline and has not been
  // taken yet; while it runs the target's last sample is carried.
  std::shared_ptr<TargetRead> read_in_flight;
  // The last read outlasted the deadline: the next ones run without the
  // sampling thread waiting, until one ends in time again.
  bool slow = false;

 private:
  void LogOutcomes(const TargetSnapshot& ts);
  void RereadSmapsForJavaHeap(const TargetSnapshot& prev,
                              const std::vector<std::shared_ptr<const FinishedRun>>& finished);
  void ReadSitesOnceLoaded(const std::vector<std::shared_ptr<const FinishedRun>>& finished);
  void ReadAgentOnceLoaded(const std::vector<std::shared_ptr<const FinishedRun>>& finished);
  // memtrimd's load of its agent into this JVM succeeded (--jvm.load-agent).
  bool LoadedByMemtrimd() const;

  Target target_;
  // --jvm.load-agent's outcomes (unset without it), and whether the sites
  // collector was asked to read again once the load into this JVM ended.
  std::shared_ptr<const jvm::AgentLoadRecord> agent_loads_;
  bool sites_read_after_load_ = false;
  // Whether the agent collector and smaps were asked to read again once the
  // load into this JVM succeeded.
  bool agent_read_after_load_ = false;
  std::vector<CollectorSlot> slots_;
  std::vector<std::unique_ptr<SlowSource>> slow_;  // one per slot; set for own_thread slots
};

}  // namespace memtrimd
