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
    while (h < heaps.size() && heaps[h].start + heaps[h].usable_bytes <= m.start) ++h;
    bool in_arena_heap =
        h < heaps.size() && m.start == heaps[h].start && m.size() == heaps[h].usable_bytes;
    if (m.kind == procfs::MappingKind::kFile || (m.perms & procfs::kShared) != 0) {
      // Private pages written in a file mapping (relocations, a JVM's CDS
      // archive) are anonymous memory: the kernel counts them in RssAnon.
      uint64_t anon = std::min(m.anonymous, m.rss);
      b.file_and_shared += m.rss - anon;
      b.other_anonymous += anon;
      b.anon_in_file += anon;
    } else if (m.kind == procfs::MappingKind::kHeap) {
      b.main_arena += m.rss;
    } else if (in_arena_heap) {
      b.arena_heaps += m.rss;
    } else if (java_heap && m.start >= java_heap->start && m.end <= java_heap->end) {
      b.java_heap += m.rss;
    } else {
      b.other_anonymous += m.rss;
    }
  }
  return b;
}

}  // namespace memtrimd::glibc
