// Bounded readers for /proc and /sys files. Readers own the I/O; parsers
// only ever see text. Nothing here reads more than the caller's cap.
#pragma once

#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "collectors/common/status.h"
#include "collectors/common/unique_fd.h"

namespace memtrimd {

// Reads a whole (small) file. Fails with kTooLarge past `max_bytes`.
Result<std::string> ReadSmallFile(const std::string& path, std::size_t max_bytes = 64 * 1024);

namespace detail {
// Opens a regular file for reading: O_NOFOLLOW (a file a target controls
// must not redirect memtrimd elsewhere) and O_NONBLOCK until the file is
// known to be regular, so a FIFO put where a /proc, cgroup or perf data file
// is expected fails at once instead of blocking until someone writes to it.
// The descriptor, or why not.
Result<UniqueFd> OpenForRead(const std::string& path);
// read(2), retried on EINTR.
ssize_t ReadRetry(int fd, char* buf, std::size_t n);
}  // namespace detail

// Streams a file line by line (without the '\n') through a fixed buffer, so
// a large file such as smaps never sits in memory whole. Stops with kTooLarge
// after `max_bytes` or when one line exceeds the buffer. A template so the
// per-line call inlines: smaps has ~25 lines per mapping.
template <typename OnLine>
Status ForEachLine(const std::string& path, std::size_t max_bytes, OnLine&& on_line) {
  Result<UniqueFd> opened = detail::OpenForRead(path);
  if (!opened.ok()) return opened.status();
  const UniqueFd owned = std::move(opened).value();
  const int fd = owned.get();
  // 64 KiB: a /proc line is far shorter. On the heap, not thread_local: a
  // static TLS block is reserved in every thread of the process (civetweb's
  // workers run on 100 KiB stacks that must hold it), once per instantiation.
  constexpr std::size_t kBufSize = 64 * 1024;
  std::unique_ptr<std::array<char, kBufSize>> storage(new std::array<char, kBufSize>);
  std::array<char, kBufSize>& buf = *storage;
  std::size_t filled = 0;
  std::size_t total = 0;
  for (;;) {
    ssize_t got = detail::ReadRetry(fd, buf.data() + filled, kBufSize - filled);
    if (got < 0) return Status::FromErrno(errno, "read " + path);
    total += static_cast<std::size_t>(got);
    if (total > max_bytes) {
      return Status(ErrorCode::kTooLarge,
                    path + " is larger than the cap of " + std::to_string(max_bytes) + " bytes");
    }
    std::size_t end = filled + static_cast<std::size_t>(got);
    std::size_t start = 0;
    for (;;) {
      const void* nl = std::memchr(buf.data() + start, '\n', end - start);
      if (nl == nullptr) break;
      std::size_t pos = static_cast<std::size_t>(static_cast<const char*>(nl) - buf.data());
      on_line(std::string_view(buf.data() + start, pos - start));
      start = pos + 1;
    }
    if (got == 0) {
      if (start < end) on_line(std::string_view(buf.data() + start, end - start));
      return Status::Ok();
    }
    if (start == 0 && end == kBufSize) {
      return Status(ErrorCode::kTooLarge,
                    path + " has a line longer than " + std::to_string(kBufSize) + " bytes");
    }
    std::memmove(buf.data(), buf.data() + start, end - start);
    filled = end - start;
  }
}

}  // namespace memtrimd
