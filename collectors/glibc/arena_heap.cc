#include "collectors/glibc/arena_heap.h"

namespace memtrimd::glibc {
namespace {

constexpr uint8_t kRw = procfs::kRead | procfs::kWrite;

bool IsPrivateAnon(const procfs::Mapping& m) {
  return m.IsAnonymous() && (m.perms & procfs::kShared) == 0;
}

}  // namespace

std::vector<ArenaHeap> FindArenaHeaps(std::span<const procfs::Mapping> mappings,
                                      uint64_t heap_size) {
  std::vector<ArenaHeap> heaps;
  if (heap_size == 0 || (heap_size & (heap_size - 1)) != 0) return heaps;
  for (std::size_t i = 0; i < mappings.size(); ++i) {
    const procfs::Mapping& m = mappings[i];
    // The rw-p part: anonymous, private, exactly read+write, aligned.
    if (!IsPrivateAnon(m) || (m.perms & ~procfs::kShared) != kRw) continue;
    if ((m.start & (heap_size - 1)) != 0 || m.size() > heap_size) continue;
    uint64_t heap_end = m.start + heap_size;
    uint64_t reached = m.end;
    std::size_t j = i + 1;
    // Zero or more contiguous ---p pieces up to exactly heap_end. Several
    // pieces appear when glibc shrinks by re-mapping PROT_NONE.
    while (reached < heap_end && j < mappings.size()) {
      const procfs::Mapping& tail = mappings[j];
      if (tail.start != reached || !IsPrivateAnon(tail) || (tail.perms & ~procfs::kShared) != 0) {
        break;
      }
      reached = tail.end;
      ++j;
    }
    if (reached != heap_end) continue;
    heaps.push_back(ArenaHeap{m.start, m.size(), m.rss, HeapCheck::kShapeOnly});
    i = j - 1;
  }
  return heaps;
}

uint64_t MainArenaResident(std::span<const procfs::Mapping> mappings) {
  uint64_t rss = 0;
  for (const procfs::Mapping& m : mappings) {
    if (m.kind == procfs::MappingKind::kHeap) rss += m.rss;
  }
  return rss;
}

}  // namespace memtrimd::glibc
