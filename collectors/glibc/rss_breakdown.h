// Where the RSS of one smaps read sits, in parts that add up exactly to that
// read's total Rss: each mapping's Rss goes to exactly one part.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "collectors/glibc/arena_heap.h"
#include "collectors/procfs/smaps.h"

namespace memtrimd::glibc {

struct AddressRange {
  uint64_t start = 0;
  uint64_t end = 0;  // exclusive
};

struct RssBreakdown {
  uint64_t file_and_shared = 0;  // file-backed or shared mappings (code, mapped files, shmem),
                                 // less the private anonymous pages inside them
  uint64_t java_heap = 0;        // anonymous mappings inside the Java heap's address range
  uint64_t arena_heaps = 0;      // glibc arena heaps (non-main arenas)
  uint64_t main_arena = 0;       // [heap]
  uint64_t other_anonymous = 0;  // the rest: stacks, JVM metaspace, code cache, GC
                                 // structures, large malloc chunks (mmapped), written
                                 // private pages of file mappings, ...
  uint64_t anon_in_file = 0;     // of other_anonymous: written private pages of file
                                 // mappings (libraries' data and relocations, a JVM's
                                 // CDS archive)
  uint64_t total = 0;            // sum of every mapping's Rss
};

// Pure. `heaps` must come from FindArenaHeaps over the same `mappings`
// (rejected ones removed); `java_heap` is the reserved heap range when known.
RssBreakdown BreakDownRss(std::span<const procfs::Mapping> mappings,
                          std::span<const ArenaHeap> heaps, std::optional<AddressRange> java_heap);

}  // namespace memtrimd::glibc
