// A collector that talks to the target over a socket (the JVM's attach
// listener, the preload agent), run on a thread of its own on its own
// interval. A JVM whose attach listener hangs, or a stopped target, makes
// each of its runs wait out a deadline; on the scheduler's thread that
// stretched every sample. The scheduler never waits for it: each tick takes
// the latest finished run (FinishedRun) for the same target.
//
// One source serves one target at a time; the scheduler holds one per
// watched target (WatchedTarget), so that one target's stall never delays
// another's.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <thread>

#include "collectors/common/collector.h"
#include "collectors/common/target.h"
#include "daemon/sampling/collector_set.h"

namespace memtrimd {

class SlowSource {
 public:
  SlowSource(std::shared_ptr<Collector> collector, std::chrono::milliseconds interval);
  ~SlowSource();
  SlowSource(const SlowSource&) = delete;
  SlowSource& operator=(const SlowSource&) = delete;

  // Points the source at a target (nullopt: none). A different process
  // drops the previous target's result and is read at once.
  void SetTarget(const std::optional<Target>& target);

  // Runs the collector as soon as the thread is free (e.g. to re-read
  // malloc statistics right after a trim), then on its interval again.
  // Returns how many runs had finished before the call, for WaitForRunsPast.
  uint64_t RunSoon();
  // Waits until more than `runs` runs have finished, or until `deadline`;
  // true when they have.
  bool WaitForRunsPast(uint64_t runs, std::chrono::steady_clock::time_point deadline);

  // The latest finished run for the current target; nullptr until one ends.
  std::shared_ptr<const FinishedRun> Latest() const;

  // Ends the thread. A run in progress is not waited for: its thread is
  // left to end at its deadline (it holds only its own state) and counted
  // as abandoned, so that the daemon can exit.
  // `grace`: how long to wait for a run that is about to finish (the daemon
  // at shutdown); a target that exited is let go at once.
  void Stop(std::chrono::milliseconds grace = std::chrono::milliseconds(50));

 private:
  struct State;
  static void Run(const std::shared_ptr<State>& s);

  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace memtrimd
