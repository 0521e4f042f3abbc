// glibc arena heaps of another process, found the way glibc itself links
// them and independent of collectors/glibc: each arena's first heap is a
// 64 MiB boundary in an anonymous rw-p mapping whose heap_info has prev 0 and
// ar_ptr = boundary + 48; the arena's newest heap is the one that holds its
// top chunk (malloc_state.top, glibc 2.26+ on 64-bit: offset 96); the arena's
// heaps are that one and its prev links down to the first. Each heap's
// resident bytes are the present pages of [start, start + mprotect_size) in
// /proc/<pid>/pagemap. Reads /proc/<pid>/mem (root, or ptrace access).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace memtrimd::testing {

struct WalkedHeap {
  uint64_t start = 0;
  uint64_t arena = 0;
  uint64_t mprotect_size = 0;
  uint64_t resident = 0;
};

struct HeapWalk {
  std::vector<WalkedHeap> heaps;  // in address order
  uint64_t resident = 0;
  std::string error;  // "" when every chain was followed to its first heap
};

HeapWalk WalkArenaHeaps(pid_t pid);

}  // namespace memtrimd::testing
