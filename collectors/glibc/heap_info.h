// glibc's heap_info header: the first 40 bytes of every arena heap. Reading
// it from the target (process_vm_readv) settles ambiguous shapes such as a
// full 64 MiB rw-p mapping, which could also be a JVM's -Xmx64m heap, and
// finds the heaps the kernel merged into a larger mapping (arena_heap.h).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "collectors/common/status.h"
#include "collectors/glibc/arena_heap.h"

namespace memtrimd::procfs {
class PageResidency;
}  // namespace memtrimd::procfs

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

// Pure: do the header's own numbers fit a heap of `heap_size`? size != 0,
// size <= mprotect_size <= heap_size, a power-of-two page size.
bool HeapInfoPlausible(const HeapInfo& info, uint64_t heap_size);

// Pure: does the header agree with what smaps showed for `heap`, read on its
// own? Its numbers must fit a heap of `heap_size` and its links must point
// to glibc arenas. mprotect_size may differ from the rw-p length smaps saw:
// the heap may have grown or shrunk between the two reads.
bool HeapInfoConsistent(const HeapInfo& info, const ArenaHeap& heap, uint64_t heap_size);

// Pure: each candidate's check from the headers read at their starts
// (headers[i] absent: not read). A fixed point over the arenas' chains:
// confirmed are an arena's first heap (plausible, prev == 0, ar_ptr ==
// start + 48) and then any plausible heap whose prev is a confirmed
// candidate with the same ar_ptr. A header read but not confirmed that way
// is rejected; one whose chain runs into a candidate whose header was not
// read stays kShapeOnly, like one not read at all.
std::vector<HeapCheck> ConfirmHeapChain(std::span<const ArenaHeap> heaps,
                                        std::span<const std::optional<HeapInfo>> headers,
                                        uint64_t heap_size);

// Reads the header at `address` of process `pid`. Needs ptrace-read access
// (same uid and dumpable target, or CAP_SYS_PTRACE); kPermissionDenied
// otherwise. Never blocks on the target.
Result<HeapInfo> ReadHeapInfo(pid_t pid, uint64_t address);

// Something that reads a heap header: ReadHeapInfo, or a recording of the
// headers a process had (tests/readme replays one).
using HeapInfoReader = std::function<Result<HeapInfo>(pid_t pid, uint64_t address)>;

// Reads every candidate's header and sets each heap's `check`
// (ConfirmHeapChain). A merged candidate's header is read only when
// `pagemap` shows its page resident (never reading where glibc wrote
// nothing: a reservation's untouched pages stay untouched); without
// `pagemap` merged candidates are not read. Headers that disagree are read
// once more before their heaps are rejected. Stops reading after the first
// permission error (the rest would fail the same way) and returns it.
Status ConfirmArenaHeaps(pid_t pid, std::vector<ArenaHeap>& heaps, uint64_t heap_size,
                         const procfs::PageResidency* pagemap = nullptr,
                         const HeapInfoReader& read = ReadHeapInfo);

}  // namespace memtrimd::glibc
