// Collector "process": /proc/<pid>/status every sample; the malloc settings
// of the target's initial environment (/proc/<pid>/environ) once per target.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>

#include "collectors/common/collector.h"
#include "collectors/procfs/malloc_env.h"

namespace memtrimd::procfs {

class ProcessCollector : public Collector {
 public:
  std::string_view Name() const override { return "process"; }
  Status Collect(const Target& target, TargetSample& out) override;

 private:
  // The environment cannot change for a process (it is the one it was
  // started with), so it is read once per target identity.
  pid_t env_pid_ = 0;
  uint64_t env_start_ticks_ = 0;
  bool env_read_ = false;
  std::optional<MallocEnv> env_;  // absent: environ unreadable
};

}  // namespace memtrimd::procfs
