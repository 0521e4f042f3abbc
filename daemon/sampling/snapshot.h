// The latest complete sample, as the scheduler publishes it and the
// exposition, /report and inspect read it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "collectors/agent/client/sites_budget.h"
#include "collectors/common/target.h"
#include "collectors/sample.h"

namespace memtrimd {

struct CollectorOutcome {
  std::string name;
  bool success = false;
  double duration_seconds = 0;
  std::string error;           // empty on success
  Cause cause = Cause::kNone;  // the error's, for the advice
};

// One watched target within a snapshot.
struct TargetSnapshot {
  Target target;
  double start_time_seconds = 0;  // since the epoch
  TargetSample sample;
  std::vector<CollectorOutcome> collectors;
  // Collectors that run on their own thread and have not finished a run for
  // this target yet: their part is not missing, only not known yet.
  std::vector<std::string> pending;
  // Not read in this snapshot's tick: an extra tick after another target's
  // trim carried this target's last sample over (its figures are as old as
  // they were in the previous snapshot).
  bool carried = false;
  // How many ticks have read this target, and the sequence of the snapshot
  // whose tick read it last (this one's unless carried); 0 outside the
  // scheduler (a one-shot inspect).
  uint64_t reads = 0;
  uint64_t read_in_sequence = 0;
  // > 0: carried because a read of this target has run this long without
  // ending (TargetRead); its figures are from before that read.
  double read_stalled_seconds = 0;
};

struct Snapshot {
  uint64_t sequence = 0;  // samples taken so far, this one included
  std::chrono::system_clock::time_point taken_at{};
  // The same moment on the monotonic clock: ages (memtrimd_sample_age_seconds,
  // /healthz) are measured on it, so a step of the wall clock (an NTP
  // correction, a resumed VM) neither fails the liveness probe nor shows an
  // old sample.
  std::chrono::steady_clock::time_point taken_steady{};
  // Empty: no target right now (memtrimd_target_up 0). Sidecar mode has at
  // most one; node-agent mode one per watched process, in (pid, start) order.
  std::vector<TargetSnapshot> targets;
  std::string no_target_reason;  // why `targets` is empty
  bool node_mode = false;
  // Processes the node selectors matched but --targets.max left out.
  std::size_t targets_skipped = 0;
  // Processes memtrimd could not read at all (see Discovery::unreadable).
  std::size_t targets_unreadable = 0;
  // Processes whose first look has not ended (see Discovery::looks_stalled).
  std::size_t targets_look_stalled = 0;
  // Watched targets whose read has outlasted its deadline and not ended.
  std::size_t targets_read_stalled = 0;
  // Of those, the ones with no sample yet: watched, but not in `targets`.
  std::size_t targets_unsampled = 0;
  // Stale agent sockets removed from the targets' /tmp since memtrimd
  // started (SocketSweeper).
  uint64_t agent_sockets_removed = 0;
  // With --collector.sites: the node's sites memory budget and what it
  // dropped so far.
  std::optional<agent::SitesBudgetState> sites_budget;
};

// Single writer (the scheduler), many readers (HTTP threads). Readers get an
// immutable snapshot they can hold as long as they like.
class SnapshotStore {
 public:
  void Publish(std::shared_ptr<const Snapshot> s) {
    // On the writer's thread, outside the lock: readers are not held up.
    if (on_publish_ && s) on_publish_(*s);
    {
      std::lock_guard<std::mutex> lock(mu_);
      latest_ = std::move(s);
    }
    if (after_publish_) after_publish_();
  }
  // Called with every snapshot before it becomes the latest (the incident
  // page's history is fed here, so it has a point for every sample). Set
  // before the writer starts.
  void SetOnPublish(std::function<void(const Snapshot&)> hook) { on_publish_ = std::move(hook); }
  // Called on the writer's thread once a snapshot is the latest (/metrics
  // renders and compresses its text there, not on a scrape). Set before the
  // writer starts.
  void SetAfterPublish(std::function<void()> hook) { after_publish_ = std::move(hook); }
  // nullptr until the first sample.
  std::shared_ptr<const Snapshot> Latest() const {
    std::lock_guard<std::mutex> lock(mu_);
    return latest_;
  }

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const Snapshot> latest_;
  std::function<void(const Snapshot&)> on_publish_;
  std::function<void()> after_publish_;
};

}  // namespace memtrimd
