// glibc's heap_info header: the first 40 bytes of every arena heap. Reading
// it from the target (process_vm_readv) settles ambiguous shapes such as a
// full 64 MiB rw-p mapping, which could also be a JVM's -Xmx64m heap.
#pragma once

#include <sys/types.h>

#include <cstdint>

#include "collectors/common/status.h"
#include "collectors/glibc/arena_heap.h"

namespace memtrimd::glibc {

struct HeapInfo {
  uint64_t ar_ptr = 0;         // the arena this heap belongs to
  uint64_t prev = 0;           // previous heap of the same arena, or 0
  uint64_t size = 0;           // bytes in use by the heap
  uint64_t mprotect_size = 0;  // bytes made read+write
  uint64_t pagesize = 0;
};

// glibc pads heap_info to 48 bytes: an arena's malloc_state follows it in the
// arena's first heap.
inline constexpr uint64_t kHeapInfoSize = 48;

// Pure: does the header agree with what smaps showed for `heap`? Its
// numbers must fit a heap of `heap_size` and its links must point to glibc
// arenas. mprotect_size may differ from the rw-p length smaps saw: the heap
// may have grown or shrunk between the two reads.
bool HeapInfoConsistent(const HeapInfo& info, const ArenaHeap& heap, uint64_t heap_size);

// Reads the header at `address` of process `pid`. Needs ptrace-read access
// (same uid and dumpable target, or CAP_SYS_PTRACE); kPermissionDenied
// otherwise. Never blocks on the target.
Result<HeapInfo> ReadHeapInfo(pid_t pid, uint64_t address);

// Reads and checks every heap; sets each heap's `check`. A header that
// disagrees is read once more before the heap is rejected. Stops reading
// after the first permission error (the rest would fail the same way).
void ConfirmArenaHeaps(pid_t pid, std::vector<ArenaHeap>& heaps, uint64_t heap_size);

}  // namespace memtrimd::glibc
