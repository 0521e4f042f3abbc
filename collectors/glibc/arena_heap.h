// glibc arena heaps ("subheaps") found in the target's mappings.
//
// Each non-main arena lives in one or more heaps of a fixed size (64 MiB on
// 64-bit; 8 MiB with glibc.malloc.hugetlb=2), each aligned to that size: an
// anonymous rw-p part that starts on the boundary, followed by anonymous ---p
// parts that end exactly at start + heap size (or one full-size rw-p).
//
// Full heaps side by side were seen to stay separate mappings in smaps
// (presumably because the kernel merges neighbouring anonymous mappings only
// when they share an anon_vma, and each heap gets its own when glibc first
// writes to it). Tried on Linux 6.18: 4 threads filling heaps to exactly 64 MiB
// (4088-byte chunks), 10 full heaps adjacent, 400 reads of maps while they
// grew: never one rw-p mapping over 64 MiB. A merged one would not match
// the shape (larger than a heap) and would not be counted.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "collectors/procfs/smaps.h"

namespace memtrimd::glibc {

inline constexpr uint64_t kDefaultHeapSize = 64ull << 20;

// Whether the heap's own header (heap_info) agreed with the shape.
enum class HeapCheck : uint8_t {
  kShapeOnly,  // header not read (no permission, or not attempted)
  kConfirmed,  // header read and consistent
  kRejected,   // header read and inconsistent: not a glibc heap
};

struct ArenaHeap {
  uint64_t start = 0;
  uint64_t usable_bytes = 0;    // the rw-p part: what glibc has made accessible
  uint64_t resident_bytes = 0;  // Rss of the rw-p part
  HeapCheck check = HeapCheck::kShapeOnly;
};

// Pure: candidates by shape. `heap_size` must be a power of two.
std::vector<ArenaHeap> FindArenaHeaps(std::span<const procfs::Mapping> mappings,
                                      uint64_t heap_size = kDefaultHeapSize);

// Rss of [heap], the main arena's brk area.
uint64_t MainArenaResident(std::span<const procfs::Mapping> mappings);

}  // namespace memtrimd::glibc
