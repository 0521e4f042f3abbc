// Collector "process": /proc/<pid>/status every sample.
#pragma once

#include "collectors/common/collector.h"

namespace memtrimd::procfs {

class ProcessCollector : public Collector {
 public:
  std::string_view Name() const override { return "process"; }
  Status Collect(const Target& target, TargetSample& out) override;
};

}  // namespace memtrimd::procfs
