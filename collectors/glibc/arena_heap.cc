#include "collectors/glibc/arena_heap.h"

#include <algorithm>

namespace memtrimd::glibc {
namespace {

bool IsPrivateAnon(const procfs::Mapping& m) {
  return m.IsAnonymous() && (m.perms & procfs::kShared) == 0;
}

bool IsPrivateAnonRw(const procfs::Mapping& m) {
  return IsPrivateAnon(m) && (m.perms & ~procfs::kShared) == (procfs::kRead | procfs::kWrite);
}

bool IsPrivateAnonNone(const procfs::Mapping& m) {
  return IsPrivateAnon(m) && (m.perms & ~procfs::kShared) == 0;
}

bool Overlaps(uint64_t start, uint64_t end, const AddressRange& r) {
  return start < r.end && r.start < end;
}

// Where contiguous private anonymous ---p mappings from mappings[j] on,
// starting exactly at `from`, reach before `until` is passed; `pieces`
// counts them and `last_end` is where the last one ends (it may lie past
// `until` when it merged with a neighbour).
struct Tail {
  uint64_t last_end = 0;
  std::size_t pieces = 0;
};
Tail FollowNoAccessTail(std::span<const procfs::Mapping> mappings, std::size_t j, uint64_t from,
                        uint64_t until) {
  Tail t{from, 0};
  // Several pieces appear when glibc shrinks by re-mapping PROT_NONE.
  while (t.last_end < until && j < mappings.size()) {
    const procfs::Mapping& m = mappings[j];
    if (m.start != t.last_end || !IsPrivateAnonNone(m)) break;
    t.last_end = m.end;
    ++t.pieces;
    ++j;
  }
  return t;
}

}  // namespace

HeapCandidates FindHeapCandidates(std::span<const procfs::Mapping> mappings, uint64_t heap_size,
                                  std::optional<AddressRange> exclude, std::size_t max_merged) {
  HeapCandidates out;
  if (heap_size == 0 || (heap_size & (heap_size - 1)) != 0) return out;
  std::size_t merged = 0;
  for (std::size_t i = 0; i < mappings.size(); ++i) {
    const procfs::Mapping& m = mappings[i];
    if (!IsPrivateAnonRw(m) || m.end <= m.start) continue;
    // Every boundary inside the mapping (its start included).
    uint64_t first = (m.start + heap_size - 1) & ~(heap_size - 1);
    if (first < m.start) continue;  // wrapped past the top of the address space
    for (uint64_t a = first; a < m.end && a >= first; a += heap_size) {
      const uint64_t heap_end = a + heap_size;
      if (heap_end < a) break;
      if (exclude && Overlaps(a, heap_end, *exclude)) {
        // On to the first boundary at or past the range's end.
        const uint64_t next = (exclude->end + heap_size - 1) & ~(heap_size - 1);
        if (next < exclude->end || next >= m.end || next <= a) break;
        a = next - heap_size;
        continue;
      }
      const uint64_t rw_end = std::min(m.end, heap_end);
      // The rest of the heap past its rw-p part must be ---p.
      Tail tail;
      if (rw_end < heap_end) {
        tail = FollowNoAccessTail(mappings, i + 1, rw_end, heap_end);
        if (tail.last_end < heap_end) continue;
      }
      const bool own =
          a == m.start && m.end <= heap_end && (rw_end == heap_end || tail.last_end == heap_end);
      if (!own) {
        // A mapping with no resident page holds no heap: glibc writes a
        // heap's header when it makes the heap. Only its start could have
        // been a heap of its own, so nothing further in it is looked at.
        if (m.rss == 0) {
          if (a == m.start) continue;
          break;
        }
        if (merged == max_merged) {
          // The boundaries left in this mapping, counted without a walk.
          out.merged_skipped += static_cast<std::size_t>((m.end - a - 1) / heap_size + 1);
          break;
        }
        ++merged;
      }
      ArenaHeap h;
      h.start = a;
      h.usable_bytes = rw_end - a;
      h.resident_bytes = own ? m.rss : 0;
      h.shape = own ? HeapShape::kOwnMapping : HeapShape::kMerged;
      out.heaps.push_back(h);
    }
  }
  return out;
}

std::vector<ArenaHeap> FindArenaHeaps(std::span<const procfs::Mapping> mappings,
                                      uint64_t heap_size) {
  std::vector<ArenaHeap> heaps = FindHeapCandidates(mappings, heap_size, std::nullopt, 0).heaps;
  std::erase_if(heaps, [](const ArenaHeap& h) { return h.shape != HeapShape::kOwnMapping; });
  return heaps;
}

std::size_t KeepCountedHeaps(std::vector<ArenaHeap>& heaps) {
  std::size_t unconfirmed = 0;
  std::erase_if(heaps, [&](const ArenaHeap& h) {
    if (h.check == HeapCheck::kRejected) return true;
    if (h.shape == HeapShape::kMerged && h.check != HeapCheck::kConfirmed) {
      ++unconfirmed;
      return true;
    }
    return false;
  });
  return unconfirmed;
}

void FitResidentToMappings(std::span<const procfs::Mapping> mappings, std::span<ArenaHeap> heaps) {
  std::size_t h = 0;
  for (const procfs::Mapping& m : mappings) {
    while (h < heaps.size() && heaps[h].start < m.start) ++h;
    uint64_t left = m.rss;
    for (std::size_t k = h; k < heaps.size() && heaps[k].start < m.end; ++k) {
      heaps[k].resident_bytes = std::min(heaps[k].resident_bytes, left);
      left -= heaps[k].resident_bytes;
    }
  }
}

uint64_t MainArenaResident(std::span<const procfs::Mapping> mappings) {
  uint64_t rss = 0;
  for (const procfs::Mapping& m : mappings) {
    if (m.kind == procfs::MappingKind::kHeap) rss += m.rss;
  }
  return rss;
}

}  // namespace memtrimd::glibc
