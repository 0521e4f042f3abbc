// The sampling loop: keeps the set of watched targets (one in sidecar mode,
// every matching process in node-agent mode), runs each target's collectors
// on their intervals and publishes one Snapshot per tick. The collectors
// that talk to a target over a socket run on threads of that target's own
// (WatchedTarget, SlowSource); a tick takes their latest finished run and
// never waits for them, so a stopped or hung target stretches neither the
// sample interval nor any other target's sample. Each target's own reads
// (/proc, files in its root) run on a thread per read (TargetRead) that the
// tick waits for up to a deadline, so a read stuck in the kernel holds only
// its own target.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "collectors/common/process_key.h"
#include "collectors/procfs/target_reader.h"
#include "daemon/sampling/allocator_history.h"
#include "daemon/sampling/collector_registry.h"
#include "daemon/sampling/node_discovery.h"
#include "daemon/sampling/snapshot.h"
#include "daemon/sampling/socket_sweeper.h"
#include "daemon/sampling/target_scan.h"
#include "daemon/sampling/target_search.h"
#include "daemon/sampling/target_selector.h"
#include "daemon/sampling/watched_target.h"

namespace memtrimd {

struct SchedulerOptions {
  std::chrono::milliseconds interval{10000};
  CollectorOptions collector;
  CollectorSwitches switches;
  // Set: node-agent mode, targets found by NodeDiscovery every
  // discovery_interval. Unset: the one target of the TargetSelector.
  std::optional<NodeSelectors> node;
  std::chrono::milliseconds discovery_interval{30000};
  std::string proc_root = "/proc";
};

class Scheduler {
 public:
  // `selector` is used in sidecar mode (options.node unset).
  Scheduler(SchedulerOptions options, TargetSelector selector, SnapshotStore& store);
  ~Scheduler();

  // Takes the first sample synchronously (so /metrics has data from the
  // start; it does not wait for the own-thread collectors), then samples on
  // a thread every interval.
  void Start();
  // Joins the sampling thread; does not wait for an own-thread collector
  // blocked on its target (see SlowSource::Stop).
  void Stop();

  // One tick, every target read; public for tests.
  void Tick() { TickTargets(nullptr); }

  // Called by the trim engine after a successful trim of `target` that
  // ended at `ended`: asks the socket collector that gives that target's
  // malloc statistics for fresh ones at once, publishes a sample with smaps
  // read again (older statistics marked as read before the trim), then, once
  // the collector has answered, one with the fresh statistics; returns then
  // (or after `wait`), so that a /report read after a manual trim never
  // shows an estimate from before it as current. Those extra samples read
  // the trimmed target only; every other target's last sample is carried
  // into them unread (TargetSnapshot::carried).
  void AfterTrim(const Target& target, std::chrono::system_clock::time_point ended,
                 std::chrono::milliseconds wait = std::chrono::seconds(2));

 private:
  struct TrimNote {
    std::chrono::system_clock::time_point ended;
    std::chrono::steady_clock::time_point ended_steady;
    bool reread_smaps = true;
  };

  void Run();
  // `only` set: an after-trim tick, which reads only the targets in it (and
  // any without a previous sample) and carries the others' last samples.
  void TickTargets(const std::set<ProcessKey>* only);
  // One target's sample, read on a TargetRead's thread: waited for up to
  // ReadDeadline(), or (a target whose reads are slow) taken when a read
  // started earlier has ended. nullopt: no read ended for it this tick.
  std::optional<TargetSnapshot> ReadTarget(const std::shared_ptr<WatchedTarget>& watched,
                                           const TargetSnapshot* prev);
  std::chrono::milliseconds ReadDeadline() const;
  // Drops every target whose (pid, start time) no longer exists, or that
  // ran another program since it was read.
  void DropExited();
  void DropEnded(const ProcessKey& key, procfs::Liveness why);
  void Drop(const ProcessKey& key, const char* why);
  void Add(const Target& target);
  // Sidecar: selects a target when there is none. Node: re-discovers when due.
  TargetScan UpdateTargets();
  TargetScan UpdateNodeTargets();
  TargetScan UpdateSidecarTarget();

  SchedulerOptions options_;
  // Shared with a TargetSearch, which may outlive the scheduler.
  std::shared_ptr<TargetSelector> selector_;
  std::shared_ptr<TargetSearch> search_;  // sidecar: the search not yet taken
  std::optional<NodeDiscovery> discovery_;
  SnapshotStore& store_;

  std::map<ProcessKey, std::shared_ptr<WatchedTarget>> targets_;  // guarded by mu_ (structure)
  AllocatorHistory allocator_history_;                            // the sampling thread only
  std::optional<std::chrono::steady_clock::time_point> next_discovery_;
  TargetScan last_discovery_;  // node: its counts hold until the next one
  ScanLog logged_;
  // Set when a --target.pid target exited: a fixed pid is never re-picked,
  // since the number may now belong to another process.
  bool fixed_pid_gone_ = false;
  // Sidecar: why there was no target when it was last logged (a reason is
  // logged when it changes).
  std::string last_no_target_reason_;
  // The last reason was a search still running (logged once, whatever its
  // growing duration says).
  bool last_no_target_was_search_ = false;
  std::shared_ptr<const Snapshot> previous_;
  uint64_t sequence_ = 0;
  // Stale agent sockets in the targets' /tmp, swept every
  // --discovery.interval (1 s at least).
  SocketSweeper sweeper_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  // Guarded by mu_: trims the next tick must take into account, whether to
  // tick before the interval is up and for which targets, how many snapshots were published
  // (AfterTrim waits for the next one), and each target's malloc source.
  std::map<ProcessKey, TrimNote> trim_notes_;
  bool tick_now_ = false;
  std::set<ProcessKey> tick_now_targets_;  // what the extra tick reads
  uint64_t published_ = 0;
  std::map<ProcessKey, std::string> malloc_source_;
  std::condition_variable published_cv_;
  std::thread thread_;
};

}  // namespace memtrimd
