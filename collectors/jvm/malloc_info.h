// glibc malloc_info(3) XML: what `System.native_heap_info` (JDK 21+) returns
// and what the preload agent will return. One parser for both.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "collectors/common/status.h"

namespace memtrimd::jvm {

struct MallocArena {
  int nr = 0;                        // <heap nr="N">, 0 = main arena
  uint64_t fast_bytes = 0;           // <total type="fast" size> (absent in glibc 2.43+: 0)
  uint64_t rest_bytes = 0;           // <total type="rest" size>: free chunks in bins + top
  uint64_t system_current = 0;       // <system type="current">
  uint64_t system_max = 0;           // <system type="max">
  uint64_t aspace_total = 0;         // <aspace type="total">
  uint64_t aspace_mprotect = 0;      // <aspace type="mprotect">
  std::optional<uint64_t> subheaps;  // <aspace type="subheaps"> (non-main arenas)
  // The whole pages inside the free chunks of the bins: what malloc_trim
  // would give back from them if every one were resident (it madvises them
  // whether or not they are). Estimated from each <size>/<unsorted> entry's
  // total and count, since malloc_info gives no chunk addresses; see
  // ReleasableInEntry in malloc_info.cc. The chunks stay in the bins after a
  // trim with their pages gone: what is resident of this comes from the
  // smaps read (TrimmableEstimate). The top chunk is in top_bytes.
  uint64_t bin_pages_bytes = 0;
  // The arena's top chunk: <total type="rest"> is the top chunk plus every
  // chunk listed in the regular and unsorted bins, so top = rest - (all
  // <size>/<unsorted> totals - fast). Only the main arena's top is given back
  // by malloc_trim (by lowering brk); mallinfo2's keepcost is the same figure.
  uint64_t top_bytes = 0;
};

struct MallocInfo {
  std::vector<MallocArena> arenas;
  // The final summary block (after the last </heap>).
  uint64_t total_fast_bytes = 0;
  uint64_t total_rest_bytes = 0;
  uint64_t total_mmap_bytes = 0;  // <total type="mmap" size>
  uint64_t total_mmap_count = 0;
  uint64_t system_current = 0;
  uint64_t system_max = 0;
  uint64_t aspace_total = 0;
  uint64_t aspace_mprotect = 0;
};

// Tolerant of attribute order, quotes and whitespace; kParseError when there
// is no <malloc ...> element, no closing </malloc> (a cut-off answer), or a
// known element lacks a numeric attribute it needs.
Result<MallocInfo> ParseMallocInfo(std::string_view xml);

}  // namespace memtrimd::jvm
