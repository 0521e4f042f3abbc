#include "daemon/sampling/target_read.h"

#include "daemon/sampling/watched_target.h"

namespace memtrimd {

std::atomic<std::size_t> TargetRead::running_{0};

std::shared_ptr<TargetRead> TargetRead::Start(std::shared_ptr<WatchedTarget> watched,
                                              std::shared_ptr<const Snapshot> previous,
                                              const TargetSnapshot* prev, ReadInputs inputs) {
  auto read = std::make_shared<TargetRead>();
  // The work owns the target and the snapshot `prev` lies in.
  Launch(read, kThreadName, running_,
         [watched = std::move(watched), previous = std::move(previous), prev, inputs] {
           (void)previous;  // held only to keep `prev` alive
           return watched->Sample(prev, inputs);
         });
  return read;
}

}  // namespace memtrimd
