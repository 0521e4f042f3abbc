// glibc arena heaps ("subheaps") found in the target's mappings.
//
// Each non-main arena lives in one or more heaps of a fixed size (64 MiB on
// 64-bit; 8 MiB with glibc.malloc.hugetlb=2), each aligned to that size: an
// anonymous rw-p part that starts on the boundary, followed by anonymous ---p
// parts up to start + heap size (or one full-size rw-p).
//
// The kernel merges neighbouring anonymous mappings with the same protection
// into one VMA, and glibc places an arena's later heaps next to earlier ones:
// a full heap followed by the next heap of the arena is seen as one 128 MiB
// rw-p mapping, or as a rw-p of 64 MiB plus the next heap's used part followed
// by its ---p (Linux 6.18, glibc 2.36: one thread holding 250 MB of live
// 1000-byte blocks has 4 heaps, two of them in one mapping). A heap's rw-p
// part may also merge with an unrelated rw-p mapping below it (a large
// malloc chunk glibc mmapped), and its ---p tail with a ---p mapping above
// it (a thread stack's guard page). So every heap-size boundary inside a
// private anonymous rw-p mapping is a candidate:
//   - kOwnMapping: the old exact shape (the rw-p mapping starts on the
//     boundary, is at most a heap long, and ---p pieces end exactly at the
//     next boundary). Counted by shape alone when the header cannot be read.
//   - kMerged: anything else. Counted only when its heap_info header (and
//     its arena's chain of headers) confirms it (heap_info.h), with its
//     resident bytes counted page by page (pagemap.h): the mapping's Rss
//     covers more than the heap. Without ptrace-read access to the target
//     such heaps are not counted and their memory stays "other anonymous".
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "collectors/procfs/smaps.h"

namespace memtrimd::glibc {

inline constexpr uint64_t kDefaultHeapSize = 64ull << 20;

// Candidates in merged mappings looked at per read, at most. Each costs one
// 8-byte pagemap read and, when its first page is resident, one 48-byte
// process_vm_readv: 4096 of them take a few milliseconds. 4096 heaps are
// 256 GiB of arena address space; a larger merged region is far more likely
// a reservation (a 1 TiB MAP_NORESERVE range, a Java heap whose range is not
// known), and capping it costs only candidates that would not be counted
// anyway. What the cap leaves out is never counted (an undercount, not a
// wrong heap), and GlibcHeaps says it happened.
inline constexpr std::size_t kMaxMergedCandidates = 4096;

struct AddressRange {
  uint64_t start = 0;
  uint64_t end = 0;  // exclusive
};

// Whether the heap's own header (heap_info) agreed with the shape.
enum class HeapCheck : uint8_t {
  kShapeOnly,  // header not read (no permission, or not attempted)
  kConfirmed,  // header read and consistent
  kRejected,   // header read and inconsistent: not a glibc heap
};

enum class HeapShape : uint8_t {
  kOwnMapping,  // its rw-p part is a mapping of its own
  kMerged,      // its rw-p part is a piece of a larger rw-p mapping
};

struct ArenaHeap {
  uint64_t start = 0;
  uint64_t usable_bytes = 0;  // the rw-p part: what glibc has made accessible
  // Resident bytes of the rw-p part: the mapping's Rss (kOwnMapping), or its
  // resident pages counted in pagemap (kMerged; 0 until counted).
  uint64_t resident_bytes = 0;
  HeapCheck check = HeapCheck::kShapeOnly;
  HeapShape shape = HeapShape::kOwnMapping;
};

struct HeapCandidates {
  std::vector<ArenaHeap> heaps;    // in address order
  std::size_t merged_skipped = 0;  // merged candidates beyond kMaxMergedCandidates
};

// Pure: candidates by shape, in address order. `heap_size` must be a power
// of two. Candidates whose heap would overlap `exclude` (the Java heap's
// reserved range, when known) are left out: nothing is read there. Merged
// candidates only in mappings with some Rss (a heap's header page is always
// written), at most `max_merged` of them.
HeapCandidates FindHeapCandidates(std::span<const procfs::Mapping> mappings,
                                  uint64_t heap_size = kDefaultHeapSize,
                                  std::optional<AddressRange> exclude = std::nullopt,
                                  std::size_t max_merged = kMaxMergedCandidates);

// Pure: the heaps of the old exact shape only (kOwnMapping candidates), as
// counted without header access.
std::vector<ArenaHeap> FindArenaHeaps(std::span<const procfs::Mapping> mappings,
                                      uint64_t heap_size = kDefaultHeapSize);

// Pure: what is counted. Drops rejected candidates and merged ones that no
// header confirmed. Returns how many merged candidates were dropped unconfirmed.
std::size_t KeepCountedHeaps(std::vector<ArenaHeap>& heaps);

// Pure: the merged heaps of one rw-p mapping never hold more than its Rss
// (page counts read after smaps may be larger: the heap grew in between, or
// pages of the shared zero page, which pagemap shows and Rss does not). Lowers
// the last heaps' resident bytes until each mapping's heaps fit its Rss.
void FitResidentToMappings(std::span<const procfs::Mapping> mappings, std::span<ArenaHeap> heaps);

// Rss of [heap], the main arena's brk area.
uint64_t MainArenaResident(std::span<const procfs::Mapping> mappings);

}  // namespace memtrimd::glibc
