#include "collectors/glibc/heap_info.h"

#include <sys/uio.h>

#include <cerrno>
#include <cstring>

#include "collectors/common/access.h"

namespace memtrimd::glibc {

bool HeapInfoConsistent(const HeapInfo& info, const ArenaHeap& heap, uint64_t heap_size) {
  if (info.size == 0 || info.size > info.mprotect_size || info.mprotect_size > heap_size) {
    return false;
  }
  // mprotect_size is not compared with the rw-p length smaps showed: the
  // header is read after the smaps walk, and the two differ in both
  // directions while the heap changes. grow_heap runs mprotect and only
  // then stores the new mprotect_size (seen: the header 16 KiB behind the
  // mapping, still behind on an immediate re-read while the growing thread
  // was off the CPU), and a heap that grew after the walk shows a larger
  // one; shrink_heap keeps it (MADV_DONTNEED), or lowers it after re-mapping
  // PROT_NONE (strict overcommit). What tells a glibc heap from another
  // aligned rw-p mapping (a JVM's -Xmx64m heap) is the rest: sizes that fit
  // the heap and links to arenas.
  if (info.pagesize == 0 || (info.pagesize & (info.pagesize - 1)) != 0) return false;
  if (info.prev == 0) {
    // An arena's first heap holds the arena itself right after heap_info.
    return info.ar_ptr == heap.start + kHeapInfoSize;
  }
  // A later heap points back to an earlier, aligned heap and to an arena
  // that lives inside some heap.
  return (info.prev & (heap_size - 1)) == 0 &&
         ((info.ar_ptr - kHeapInfoSize) & (heap_size - 1)) == 0;
}

Result<HeapInfo> ReadHeapInfo(pid_t pid, uint64_t address) {
  uint64_t words[5] = {};
  struct iovec local = {words, sizeof(words)};
  struct iovec remote = {reinterpret_cast<void*>(address), sizeof(words)};
  ssize_t got = ::process_vm_readv(pid, &local, 1, &remote, 1, 0);
  if (got < 0) {
    const int err = errno;
    // The ptrace attach check: another user's process needs CAP_SYS_PTRACE.
    if (err == EPERM && !HaveCapability(Capability::kSysPtrace)) {
      return Status(ErrorCode::kPermissionDenied,
                    "process_vm_readv: " + NeedsCapability(Capability::kSysPtrace));
    }
    return Status::FromErrno(err, "process_vm_readv");
  }
  if (static_cast<std::size_t>(got) != sizeof(words)) {
    return Status(ErrorCode::kUnavailable, "process_vm_readv: short read");
  }
  return HeapInfo{words[0], words[1], words[2], words[3], words[4]};
}

void ConfirmArenaHeaps(pid_t pid, std::vector<ArenaHeap>& heaps, uint64_t heap_size) {
  for (ArenaHeap& h : heaps) {
    Result<HeapInfo> info = ReadHeapInfo(pid, h.start);
    if (!info.ok()) {
      if (info.status().code() == ErrorCode::kPermissionDenied) return;
      h.check = HeapCheck::kShapeOnly;  // e.g. unmapped since smaps was read
      continue;
    }
    bool consistent = HeapInfoConsistent(*info, h, heap_size);
    if (!consistent) {
      // A heap caught while glibc creates it has a header not yet (fully)
      // written: a second read usually finds it done.
      Result<HeapInfo> again = ReadHeapInfo(pid, h.start);
      consistent = again.ok() && HeapInfoConsistent(*again, h, heap_size);
    }
    h.check = consistent ? HeapCheck::kConfirmed : HeapCheck::kRejected;
  }
}

}  // namespace memtrimd::glibc
