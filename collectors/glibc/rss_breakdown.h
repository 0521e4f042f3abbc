// Where the RSS of one smaps read sits, in parts that add up exactly to that
// read's total Rss: each mapping's Rss goes to exactly one part.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "collectors/glibc/arena_heap.h"
#include "collectors/procfs/smaps.h"

namespace memtrimd::glibc {

struct RssBreakdown {
  uint64_t file_and_shared = 0;  // file-backed or shared mappings (code, mapped files, shmem),
                                 // less the private anonymous pages inside them
  uint64_t java_heap = 0;        // anonymous mappings inside the Java heap's address range
  uint64_t arena_heaps = 0;      // glibc arena heaps (non-main arenas), merged ones too
  uint64_t main_arena = 0;       // [heap]
  uint64_t other_anonymous = 0;  // the rest: stacks, JVM metaspace, code cache, GC
                                 // structures, large malloc chunks (mmapped), written
                                 // private pages of file mappings, ...
  uint64_t anon_in_file = 0;     // of other_anonymous: written private pages of file
                                 // mappings (libraries' data and relocations, a JVM's
                                 // CDS archive)
  uint64_t total = 0;            // sum of every mapping's Rss
};

// Pure. `heaps` must come from FindHeapCandidates over the same `mappings`
// (what KeepCountedHeaps keeps, in address order); `java_heap` is the
// reserved heap range when known. A mapping that holds heaps gives them
// their resident bytes (a merged mapping: the heaps' own page counts, never
// more than the mapping's Rss) and the rest of its Rss to the other parts.
RssBreakdown BreakDownRss(std::span<const procfs::Mapping> mappings,
                          std::span<const ArenaHeap> heaps, std::optional<AddressRange> java_heap);

}  // namespace memtrimd::glibc
