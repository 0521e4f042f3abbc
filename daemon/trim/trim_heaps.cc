#include "daemon/trim/trim_heaps.h"

#include <map>

namespace memtrimd {

std::optional<int64_t> HeapTrimDelta::Change() const {
  if (!before_resident || !after_resident) return std::nullopt;
  return static_cast<int64_t>(*after_resident) - static_cast<int64_t>(*before_resident);
}

std::vector<HeapTrimDelta> PairHeaps(const TrimMeasure& before, const TrimMeasure& after) {
  std::vector<HeapTrimDelta> out;
  // Without both smaps reads a heap missing on one side would look vanished.
  if (!before.arena_resident_bytes || !after.arena_resident_bytes) return out;
  std::map<uint64_t, HeapTrimDelta> by_start;
  for (const glibc::ArenaHeap& h : before.arena_heaps) {
    HeapTrimDelta& d = by_start[h.start];
    d.start = h.start;
    d.before_resident = h.resident_bytes;
  }
  for (const glibc::ArenaHeap& h : after.arena_heaps) {
    HeapTrimDelta& d = by_start[h.start];
    d.start = h.start;
    d.after_resident = h.resident_bytes;
  }
  out.reserve(by_start.size());
  for (auto& [start, d] : by_start) out.push_back(d);
  return out;
}

}  // namespace memtrimd
