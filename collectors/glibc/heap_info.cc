#include "collectors/glibc/heap_info.h"

#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "collectors/common/access.h"
#include "collectors/procfs/pagemap.h"

namespace memtrimd::glibc {

bool HeapInfoPlausible(const HeapInfo& info, uint64_t heap_size) {
  if (info.size == 0 || info.size > info.mprotect_size || info.mprotect_size > heap_size) {
    return false;
  }
  return info.pagesize != 0 && (info.pagesize & (info.pagesize - 1)) == 0;
}

bool HeapInfoConsistent(const HeapInfo& info, const ArenaHeap& heap, uint64_t heap_size) {
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
  if (!HeapInfoPlausible(info, heap_size)) return false;
  if (info.prev == 0) {
    // An arena's first heap holds the arena itself right after heap_info.
    return info.ar_ptr == heap.start + kHeapInfoSize;
  }
  // A later heap points back to an earlier, aligned heap and to an arena
  // that lives inside some heap.
  return (info.prev & (heap_size - 1)) == 0 &&
         ((info.ar_ptr - kHeapInfoSize) & (heap_size - 1)) == 0;
}

std::vector<HeapCheck> ConfirmHeapChain(std::span<const ArenaHeap> heaps,
                                        std::span<const std::optional<HeapInfo>> headers,
                                        uint64_t heap_size) {
  enum State : uint8_t { kTodo, kYes, kNo, kUnread };
  const std::size_t n = std::min(heaps.size(), headers.size());
  std::vector<State> st(n, kTodo);
  for (std::size_t i = 0; i < n; ++i) {
    const std::optional<HeapInfo>& h = headers[i];
    if (!h) {
      st[i] = kUnread;
    } else if (!HeapInfoPlausible(*h, heap_size)) {
      st[i] = kNo;
    } else if (h->prev == 0) {
      // An arena's first heap holds the arena itself right after heap_info.
      st[i] = h->ar_ptr == heaps[i].start + kHeapInfoSize ? kYes : kNo;
    }
  }
  // The candidate starting at `address`, or n. Candidates come in address order.
  auto find = [&](uint64_t address) -> std::size_t {
    auto it = std::lower_bound(heaps.begin(), heaps.begin() + static_cast<std::ptrdiff_t>(n),
                               address, [](const ArenaHeap& a, uint64_t v) { return a.start < v; });
    if (it == heaps.begin() + static_cast<std::ptrdiff_t>(n) || it->start != address) return n;
    return static_cast<std::size_t>(it - heaps.begin());
  };
  // The fixed point, reached by walking each undecided heap's prev links to
  // a decided heap (or a link to no candidate, or a loop: not a glibc
  // chain) and deciding the walked heaps from there back.
  std::vector<char> on_path(n, 0);
  std::vector<std::size_t> path;
  for (std::size_t i = 0; i < n; ++i) {
    if (st[i] != kTodo) continue;
    path.clear();
    std::size_t j = i;
    State end = kNo;
    std::size_t end_at = n;
    for (;;) {
      path.push_back(j);
      on_path[j] = 1;
      const std::size_t k = find(headers[j]->prev);
      if (k == n || on_path[k]) break;  // end stays kNo
      if (st[k] != kTodo) {
        end = st[k];
        end_at = k;
        break;
      }
      j = k;
    }
    // Back along the path: each heap takes its prev's verdict, if it
    // belongs to the same arena.
    for (std::size_t p = path.size(); p-- > 0;) {
      const std::size_t node = path[p];
      const std::size_t linked = p + 1 < path.size() ? path[p + 1] : end_at;
      const State verdict = p + 1 < path.size() ? st[linked] : end;
      if (verdict == kYes) {
        st[node] = headers[linked]->ar_ptr == headers[node]->ar_ptr ? kYes : kNo;
      } else {
        st[node] = verdict == kUnread ? kUnread : kNo;
      }
      on_path[node] = 0;
    }
  }
  std::vector<HeapCheck> out(heaps.size(), HeapCheck::kShapeOnly);
  for (std::size_t i = 0; i < n; ++i) {
    out[i] = st[i] == kYes  ? HeapCheck::kConfirmed
             : st[i] == kNo ? HeapCheck::kRejected
                            : HeapCheck::kShapeOnly;
  }
  return out;
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
                    "process_vm_readv: " + NeedsCapability(Capability::kSysPtrace),
                    Cause::kNeedsCapability);
    }
    return Status::FromErrno(err, "process_vm_readv");
  }
  if (static_cast<std::size_t>(got) != sizeof(words)) {
    return Status(ErrorCode::kUnavailable, "process_vm_readv: short read");
  }
  return HeapInfo{words[0], words[1], words[2], words[3], words[4]};
}

Status ConfirmArenaHeaps(pid_t pid, std::vector<ArenaHeap>& heaps, uint64_t heap_size,
                         const procfs::PageResidency* pagemap, const HeapInfoReader& read) {
  std::vector<std::optional<HeapInfo>> headers(heaps.size());
  Status stopped;
  for (std::size_t i = 0; i < heaps.size(); ++i) {
    const ArenaHeap& h = heaps[i];
    if (h.shape == HeapShape::kMerged) {
      // Only where glibc would have written: a heap's header page is
      // resident (a swapped-out one is not read either: the read would
      // bring it back in for the target).
      if (pagemap == nullptr) continue;
      Result<bool> present = pagemap->Present(h.start);
      if (!present.ok() || !*present) continue;
    }
    Result<HeapInfo> info = read(pid, h.start);
    if (!info.ok()) {
      if (info.status().code() == ErrorCode::kPermissionDenied) {
        stopped = info.status();
        break;
      }
      continue;  // e.g. unmapped since smaps was read
    }
    headers[i] = *info;
  }
  std::vector<HeapCheck> checks = ConfirmHeapChain(heaps, headers, heap_size);
  // A heap caught while glibc creates it has a header not yet (fully)
  // written: a second read usually finds it done.
  bool again = false;
  for (std::size_t i = 0; i < heaps.size() && stopped.ok(); ++i) {
    if (checks[i] != HeapCheck::kRejected) continue;
    Result<HeapInfo> info = read(pid, heaps[i].start);
    if (info.ok()) {
      headers[i] = *info;
      again = true;
    }
  }
  if (again) checks = ConfirmHeapChain(heaps, headers, heap_size);
  for (std::size_t i = 0; i < heaps.size(); ++i) heaps[i].check = checks[i];
  return stopped;
}

}  // namespace memtrimd::glibc
