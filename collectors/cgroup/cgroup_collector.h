// Collector "cgroup": the target's container memory limit, usage, anon/file
// split and OOM kills, read through /proc/<pid>/root/sys/fs/cgroup so that
// the target's own view (its cgroup namespace and mounts) is what counts.
#pragma once

#include <cstdint>
#include <optional>

#include "collectors/common/collector.h"

namespace memtrimd::cgroup {

class CgroupCollector : public Collector {
 public:
  // `fallback_limit` (--target.memory-limit, e.g. from the Downward API) is
  // used only when the cgroup cannot be read.
  explicit CgroupCollector(std::optional<uint64_t> fallback_limit)
      : fallback_limit_(fallback_limit) {}
  std::string_view Name() const override { return "cgroup"; }
  Status Collect(const Target& target, TargetSample& out) override;

 private:
  std::optional<uint64_t> fallback_limit_;
};

}  // namespace memtrimd::cgroup
