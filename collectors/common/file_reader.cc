#include "collectors/common/file_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
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

}  // namespace

namespace detail {

Result<int> OpenForRead(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return Status::FromErrno(errno, "open " + path);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return Status::FromErrno(err, "stat " + path);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status(ErrorCode::kUnavailable, "open " + path + ": not a regular file");
  }
  // A regular file: reads behave as they always do (and a filesystem that
  // honoured O_NONBLOCK would answer EAGAIN instead of data).
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    const int err = errno;
    ::close(fd);
    return Status::FromErrno(err, "fcntl " + path);
  }
  return fd;
}

ssize_t ReadRetry(int fd, char* buf, std::size_t n) {
  for (;;) {
    ssize_t got = ::read(fd, buf, n);
    if (got >= 0 || errno != EINTR) return got;
  }
}

}  // namespace detail

Result<std::string> ReadSmallFile(const std::string& path, std::size_t max_bytes) {
  Result<int> opened = detail::OpenForRead(path);
  if (!opened.ok()) return opened.status();
  Fd fd(*opened);
  std::string out;
  std::array<char, 4096> buf;
  for (;;) {
    ssize_t got = detail::ReadRetry(fd.get(), buf.data(), buf.size());
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

}  // namespace memtrimd
