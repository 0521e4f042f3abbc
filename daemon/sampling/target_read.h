// One target's sample, read on a thread of its own while the sampling thread
// waits for it with a deadline.
//
// The /proc reads of a sample (status, smaps, the heap headers) and the
// files looked up in the target's root (its cgroup's memory files, its
// hostname, hsperfdata) answer at once for a healthy, a stopped or a hung
// process, but not always: a lookup under a path served by FUSE or a
// network filesystem waits for its server, for good when the server never
// answers (and once the server has taken the request the kernel lets no
// signal end the wait), and /proc/<pid>/smaps waits while the target's
// memory map is write-locked. On the one sampling thread such a read held
// every target's sample, /healthz and shutdown. Here it holds only its own
// thread: the sampling thread stops waiting at the deadline and goes on, and
// the target's last sample is carried until the read ends.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>

#include "daemon/sampling/off_thread.h"
#include "daemon/sampling/snapshot.h"

namespace memtrimd {

class WatchedTarget;

// What the scheduler hands a read (the read may outlive a tick, so it owns
// copies, never the scheduler's fields).
struct ReadInputs {
  std::optional<std::chrono::system_clock::time_point> last_trim_at;
  std::optional<std::chrono::steady_clock::time_point> last_trim_steady;
  bool reread_smaps = false;
};

class TargetRead : public OffThread<TargetSnapshot> {
 public:
  // The name of a read's thread (/proc/<pid>/task/<tid>/comm).
  static constexpr const char* kThreadName = "memtrimd-read";

  // Starts `watched->Sample()` on a new thread. `previous` keeps the last
  // snapshot alive for as long as the read needs `prev`, an entry of it (or
  // nullptr).
  static std::shared_ptr<TargetRead> Start(std::shared_ptr<WatchedTarget> watched,
                                           std::shared_ptr<const Snapshot> previous,
                                           const TargetSnapshot* prev, ReadInputs inputs);

  // Reads started here that have not ended yet, over the whole process.
  static std::size_t Running() { return running_.load(); }

 private:
  static std::atomic<std::size_t> running_;
};

}  // namespace memtrimd
