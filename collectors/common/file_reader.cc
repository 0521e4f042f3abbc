#include "collectors/common/file_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstring>

namespace memtrimd {
namespace detail {

Result<UniqueFd> OpenForRead(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK));
  if (fd.get() < 0) return Status::FromErrno(errno, "open " + path);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return Status::FromErrno(errno, "stat " + path);
  if (!S_ISREG(st.st_mode)) {
    return Status(ErrorCode::kUnavailable, "open " + path + ": not a regular file");
  }
  // A regular file: reads behave as they always do (and a filesystem that
  // honoured O_NONBLOCK would answer EAGAIN instead of data).
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK) != 0) {
    return Status::FromErrno(errno, "fcntl " + path);
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
  Result<UniqueFd> opened = detail::OpenForRead(path);
  if (!opened.ok()) return opened.status();
  const UniqueFd fd = std::move(opened).value();
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
