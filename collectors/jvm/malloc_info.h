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
  // Free bytes in size classes of at least a page (4096): what malloc_trim
  // could at most give back from the bins (an upper bound; see FACTS-glibc),
  // if their pages are resident. A trim leaves the chunks in the bins and
  // drops their pages, so after one this stays high while nothing is left
  // to give back; TrimmableEstimate caps it at the resident free memory.
  // Entries with from >= 4096 count fully, an entry spanning the page size
  // (the unsorted bin) counts total - from; the top chunk is in top_bytes.
  // Rationale in malloc_info.cc.
  uint64_t free_bytes_at_least_page = 0;
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
