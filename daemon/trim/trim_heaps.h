// Each arena heap's resident bytes before and after one trim: the per-heap
// comparison an engineer otherwise makes by hand from two pmap runs.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "daemon/trim/trim.h"

namespace memtrimd {

struct HeapTrimDelta {
  uint64_t start = 0;
  // Absent: the heap was not there in that read (glibc made it during the
  // trim, or the trim or the program unmapped it).
  std::optional<uint64_t> before_resident;
  std::optional<uint64_t> after_resident;

  // after - before; absent unless the heap is in both reads.
  std::optional<int64_t> Change() const;
};

// Pure: the heaps of both reads paired by start address, in address order.
// A heap in one read only has the other side absent. Empty when either read
// has no arena heap figures (arena_resident_bytes absent).
std::vector<HeapTrimDelta> PairHeaps(const TrimMeasure& before, const TrimMeasure& after);

}  // namespace memtrimd
