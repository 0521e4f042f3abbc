#include "collectors/glibc/rss_breakdown.h"

#include <algorithm>

namespace memtrimd::glibc {

RssBreakdown BreakDownRss(std::span<const procfs::Mapping> mappings,
                          std::span<const ArenaHeap> heaps, std::optional<AddressRange> java_heap) {
  RssBreakdown b;
  // Heaps come sorted by address (smaps order): walk both lists together.
  std::size_t h = 0;
  for (const procfs::Mapping& m : mappings) {
    b.total += m.rss;
    while (h < heaps.size() && heaps[h].start < m.start) ++h;
    // The heaps whose rw-p part lies in this mapping: one of its own, or
    // several (and other memory) in a merged one.
    uint64_t in_heaps = 0;
    for (std::size_t k = h; k < heaps.size() && heaps[k].start < m.end; ++k) {
      in_heaps += heaps[k].resident_bytes;
    }
    in_heaps = std::min(in_heaps, m.rss);
    if (m.kind == procfs::MappingKind::kFile || (m.perms & procfs::kShared) != 0) {
      // Private pages written in a file mapping (relocations, a JVM's CDS
      // archive) are anonymous memory: the kernel counts them in RssAnon.
      uint64_t anon = std::min(m.anonymous, m.rss);
      b.file_and_shared += m.rss - anon;
      b.other_anonymous += anon;
      b.anon_in_file += anon;
    } else if (m.kind == procfs::MappingKind::kHeap) {
      b.main_arena += m.rss;
    } else {
      b.arena_heaps += in_heaps;
      const uint64_t rest = m.rss - in_heaps;
      if (java_heap && m.start >= java_heap->start && m.end <= java_heap->end) {
        b.java_heap += rest;
      } else {
        b.other_anonymous += rest;
      }
    }
  }
  return b;
}

}  // namespace memtrimd::glibc
