// The one interface every source implements. Collectors never throw; a
// failure is a Status, and the scheduler exports the rest of the sample.
#pragma once

#include <string_view>

#include "collectors/common/status.h"
#include "collectors/common/target.h"

namespace memtrimd {

struct TargetSample;

class Collector {
 public:
  virtual ~Collector() = default;
  // Stable name: the `collector` label and the --collector.<name> flag.
  virtual std::string_view Name() const = 0;
  // Reads the source for `target` and fills its part of `out`. On error the
  // part may be left empty (or partly filled, as the collector documents).
  virtual Status Collect(const Target& target, TargetSample& out) = 0;
};

}  // namespace memtrimd
