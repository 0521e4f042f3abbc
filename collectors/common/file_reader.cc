#include "collectors/common/file_reader.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cstring>

namespace memtrimd {
namespace {

// Closes the descriptor on every return path.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

int OpenForRead(const std::string& path) {
  // O_NOFOLLOW: a file the target controls must not redirect us elsewhere.
  return ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
}

ssize_t ReadRetry(int fd, char* buf, std::size_t n) {
  for (;;) {
    ssize_t got = ::read(fd, buf, n);
    if (got >= 0 || errno != EINTR) return got;
  }
}

}  // namespace

Result<std::string> ReadSmallFile(const std::string& path, std::size_t max_bytes) {
  Fd fd(OpenForRead(path));
  if (fd.get() < 0) return Status::FromErrno(errno, "open " + path);
  std::string out;
  std::array<char, 4096> buf;
  for (;;) {
    ssize_t got = ReadRetry(fd.get(), buf.data(), buf.size());
    if (got < 0) return Status::FromErrno(errno, "read " + path);
    if (got == 0) break;
    if (out.size() + static_cast<std::size_t>(got) > max_bytes) {
      return Status(ErrorCode::kTooLarge,
                    path + " is larger than " + std::to_string(max_bytes) + " bytes");
    }
    out.append(buf.data(), static_cast<std::size_t>(got));
  }
  return out;
}

Status ForEachLine(const std::string& path, std::size_t max_bytes,
                   const std::function<void(std::string_view line)>& on_line) {
  Fd fd(OpenForRead(path));
  if (fd.get() < 0) return Status::FromErrno(errno, "open " + path);
  // 64 KiB: a /proc line is far shorter; large reads keep syscalls few.
  constexpr std::size_t kBufSize = 64 * 1024;
  static thread_local std::array<char, kBufSize> buf;
  std::size_t filled = 0;
  std::size_t total = 0;
  for (;;) {
    ssize_t got = ReadRetry(fd.get(), buf.data() + filled, kBufSize - filled);
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
      return Status(ErrorCode::kTooLarge, path + " has a line longer than " +
                                              std::to_string(kBufSize) + " bytes");
    }
    std::memmove(buf.data(), buf.data() + start, end - start);
    filled = end - start;
  }
}

}  // namespace memtrimd
