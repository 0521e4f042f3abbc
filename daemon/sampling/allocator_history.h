// Which allocator each program ran on, remembered across its restarts, so
// that a restart onto another allocator (LD_PRELOAD=libjemalloc.so.2 added
// after a fragmentation incident, or dropped again) is a finding with the
// before and after. A program is known by its pod (UID from its cgroup) and
// its command line: a restarted container keeps both; a restart changes the
// pid and start time.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <map>
#include <optional>
#include <string>

#include "collectors/common/target.h"
#include "collectors/sample.h"

namespace memtrimd {

class AllocatorHistory {
 public:
  // At most this many programs are remembered; the least recently seen go
  // first (a node's churn of short-lived processes must not grow memtrimd).
  explicit AllocatorHistory(std::size_t capacity = 1024) : capacity_(capacity) {}

  // Records that `target` (a new process) runs on `target.allocator`, known
  // as `program`. Returns the change when the same program was last seen
  // as another process on another (known) allocator.
  std::optional<AllocatorChange> Seen(const std::string& program, const Target& target,
                                      std::chrono::system_clock::time_point now);

  std::size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    Allocator allocator = Allocator::kUnknown;
    pid_t pid = 0;
    uint64_t start_ticks = 0;
    uint64_t last_use = 0;
  };
  std::size_t capacity_;
  uint64_t clock_ = 0;
  std::map<std::string, Entry> entries_;
};

// The program key of a target: "<pod UID>|<command line>" (the pod UID is
// empty outside Kubernetes; the command name stands in for an unreadable
// command line). Reads /proc/<pid>/cgroup and /proc/<pid>/cmdline.
std::string ProgramKey(const Target& target);

}  // namespace memtrimd
