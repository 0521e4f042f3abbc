// The sidecar's search for its target (TargetSelector::Select) run on a
// thread of its own (OffThread), which the sampling thread waits for with a
// deadline.
//
// The search reads the chosen process's maps and environment, and for a
// --target.match rule every process's command line: each waits while that
// process's memory map is held locked (its own read of a page of a FUSE file
// whose server never answers holds it for good). On the sampling thread such
// a read held /healthz and shutdown; here it holds one thread, and memtrimd
// reports that no target is watched until the search ends.
#pragma once

#include <atomic>
#include <memory>

#include "collectors/common/status.h"
#include "collectors/common/target.h"
#include "daemon/sampling/off_thread.h"
#include "daemon/sampling/target_selector.h"

namespace memtrimd {

class TargetSearch : public OffThread<Result<Target>> {
 public:
  static constexpr const char* kThreadName = "memtrimd-select";

  // Runs `selector`->Select(); the selector must not be used for another
  // Select until this one has finished.
  static std::shared_ptr<TargetSearch> Start(std::shared_ptr<TargetSelector> selector);

  // Searches started here that have not ended yet, over the whole process.
  static std::size_t Running() { return running_.load(); }

 private:
  static std::atomic<std::size_t> running_;
};

}  // namespace memtrimd
