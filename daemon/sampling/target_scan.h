// What the scheduler's look at its target set gave, once per tick: the
// snapshot's counts of processes it could not watch and, when it watches
// none, why. And what it logged about those, so that a problem is logged
// when it starts or changes, not at every tick.
#pragma once

#include <cstddef>
#include <string>

namespace memtrimd {

struct TargetScan {
  // Set when no target is watched after the look: the snapshot says why.
  std::string no_target_reason;
  // Node mode, from the last discovery (they hold until the next one):
  // processes left out by --targets.max, processes memtrimd cannot
  // read, and processes whose first look has not ended. 0 in sidecar mode.
  std::size_t skipped_by_cap = 0;
  std::size_t unreadable = 0;
  std::size_t looks_stalled = 0;
};

// What the last look logged. A count is logged again only when it grows, a
// reason only when it changes.
struct ScanLog {
  // Node mode: the discoveries.
  std::string unreadable_reason;  // empty when every process was readable
  std::size_t environ_unreadable = 0;
  std::size_t looks_stalled = 0;
  // Sidecar mode: processes the selector's search gave up on.
  std::size_t selector_stalled = 0;
};

}  // namespace memtrimd
