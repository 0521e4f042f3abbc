// What the glibc heap collector fills in a sample (collectors/sample.h):
// the arena heaps and RSS breakdown of one smaps read.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "collectors/common/allocator.h"
#include "collectors/glibc/arena_heap.h"
#include "collectors/glibc/rss_breakdown.h"

namespace memtrimd {

// From the smaps read: arena heaps and the main arena.
struct GlibcHeaps {
  std::vector<glibc::ArenaHeap> heaps;  // rejected candidates already removed
  uint64_t usable_bytes = 0;            // sum of the heaps' rw-p parts
  uint64_t resident_bytes = 0;          // sum of their Rss
  std::size_t confirmed = 0;            // heaps whose heap_info was read and agreed
  std::size_t rejected = 0;             // own-mapping shape matched but heap_info disagreed
  std::size_t merged = 0;               // of heaps: in a mapping the kernel merged (confirmed)
  // Candidates in merged mappings not counted: no header could confirm them
  // (no ptrace-read access, header page not resident), or beyond the cap
  // (glibc::kMaxMergedCandidates).
  std::size_t merged_unconfirmed = 0;
  std::size_t merged_skipped = 0;
  std::string headers_unread;  // why heap headers could not be read ("" when they were)
  uint64_t main_arena_resident_bytes = 0;
  uint64_t smaps_rss_bytes = 0;  // Rss summed over all mappings of that read
  std::size_t mappings = 0;
  std::chrono::system_clock::time_point read_at{};
  std::chrono::steady_clock::time_point read_steady{};  // the same moment, for its age
  double read_seconds = 0;                              // how long the smaps walk took
  glibc::RssBreakdown breakdown;                        // of the same read
  // RSS from /proc/<pid>/status read right after this smaps walk (0: not
  // read), to compare the breakdown's total with.
  uint64_t status_rss_bytes = 0;
  bool java_heap_known = false;  // whether breakdown.java_heap could be attributed
  // Why the arena heap figures are absent although smaps was read: glibc's
  // malloc does not serve this target (GlibcMallocNotApplicable); empty
  // when they apply. heaps is then empty and the breakdown has no arena part.
  std::string arenas_not_applicable;
  Allocator allocator = Allocator::kUnknown;  // what the target was taken to run on (Target)
};

}  // namespace memtrimd
