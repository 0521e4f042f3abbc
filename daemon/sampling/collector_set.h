// The collectors the flags switched on (collector_registry), each with how
// often it runs, and the
// one routine that samples a target with them (the daemon's ticks and
// `inspect` both use it).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collectors/common/collector.h"
#include "daemon/sampling/collector_registry.h"
#include "daemon/sampling/snapshot.h"

namespace memtrimd {

struct CollectorSlot {
  const CollectorDecl* decl = nullptr;
  std::shared_ptr<Collector> collector;
  std::chrono::milliseconds interval{0};  // 0: every sample
  // Talks to the target over a socket, so a stopped or hung target makes it
  // wait out deadlines: the daemon runs it on a thread of its own
  // (SlowSource) and never waits for it.
  bool own_thread = false;
  std::optional<std::chrono::steady_clock::time_point> last_run;
  std::string last_error;  // what was last logged, so a failure is logged once
};

// The enabled collectors, in registry order, as slots. With `target`, only
// those that apply to it (a glibc program gets no jvm slot); without, all.
std::vector<CollectorSlot> BuildCollectors(const CollectorOptions& options,
                                           const CollectorSwitches& switches,
                                           const Target* target = nullptr);

// The latest finished run of a collector that runs on its own thread.
struct FinishedRun {
  Target target;
  TargetSample sample;  // only that collector's part is filled
  CollectorOutcome outcome;
};

// Runs every slot that is due (all of them when `force`), fills `out`, and
// carries the parts of slots that were not due over from `previous` (same
// target only). With `finished` (one entry per slot), an own_thread slot is
// not run here: its entry's part is used when it is of the same target, and
// the slot is left out of this sample until there is one. In slot order, so
// the smaps read still sees the latest Java heap range. Returns nothing:
// outcomes land in out.collectors.
void SampleTarget(std::vector<CollectorSlot>& slots, bool force, const TargetSnapshot* previous,
                  TargetSnapshot& out,
                  const std::vector<std::shared_ptr<const FinishedRun>>* finished = nullptr);

// Seconds since the epoch at which a process with this start time started.
double ProcessStartTimeSeconds(uint64_t start_ticks);

}  // namespace memtrimd
