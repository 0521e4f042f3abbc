#include "collectors/common/private_socket.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <climits>
#include <cstring>

#include "collectors/common/access.h"

namespace memtrimd {
namespace {

int MsLeft(SocketClock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SocketClock::now());
  if (left.count() <= 0) return 0;
  return left.count() > INT_MAX ? INT_MAX : static_cast<int>(left.count());
}

std::string Prefix(std::string_view who) { return std::string(who) + ": "; }

// The socket must be the target's: a socket, owned by its euid/egid (or by
// root, when the caller allows it), closed to everyone else. A file planted
// by another (non-root) user fails here.
Status CheckSocketFile(const Target& t, const std::string& path, std::string_view who,
                       SocketOwner owner) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) {
      return Status(ErrorCode::kNotFound, Prefix(who) + "no socket at " + path, Cause::kNoSocket);
    }
    // /proc/<pid>/root of another user's process: CAP_SYS_PTRACE.
    return ExplainDenied(Status::FromErrno(errno, Prefix(who) + "socket " + path),
                         Prefix(who) + "socket " + path, path);
  }
  if (!S_ISSOCK(st.st_mode)) {
    return Status(ErrorCode::kPermissionDenied, Prefix(who) + path + " is not a socket");
  }
  const bool root_made_it = owner == SocketOwner::kTargetOrRoot && st.st_uid == 0;
  if (!root_made_it && (st.st_uid != t.uid || st.st_gid != t.gid)) {
    return Status(ErrorCode::kPermissionDenied,
                  Prefix(who) + path + " is owned by uid " + std::to_string(st.st_uid) + " gid " +
                      std::to_string(st.st_gid) + ", not the target's " + std::to_string(t.uid) +
                      "/" + std::to_string(t.gid));
  }
  if ((st.st_mode & 077) != 0) {
    return Status(ErrorCode::kPermissionDenied, Prefix(who) + path + " is open to other users");
  }
  return Status::Ok();
}

}  // namespace

Result<UniqueFd> ConnectPrivateSocket(const Target& t, const std::string& path,
                                      SocketClock::time_point deadline, std::string_view who,
                                      SocketFailure* failure, SocketOwner owner) {
  SocketFailure dummy;
  SocketFailure& why = failure != nullptr ? *failure : dummy;
  why = SocketFailure::kOther;
  Status file = CheckSocketFile(t, path, who, owner);
  if (!file.ok()) {
    if (file.code() == ErrorCode::kNotFound) why = SocketFailure::kMissing;
    return file;
  }
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    return Status(ErrorCode::kInvalidArgument, Prefix(who) + "socket path too long: " + path);
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (fd.get() < 0) return Status::FromErrno(errno, Prefix(who) + "socket");
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    int err = errno;
    if (err == ECONNREFUSED || err == ENOENT) {
      // The file outlived the process that made it (killed, or no cleanup).
      why = SocketFailure::kStale;
      return Status(ErrorCode::kUnavailable,
                    Prefix(who) + "stale socket " + path + " (nobody listens)");
    }
    if (err == EAGAIN) {
      // A full backlog: the listener is busy (a long command) or stuck.
      return Status(ErrorCode::kUnavailable, Prefix(who) + path + " is busy (backlog full)");
    }
    if (err == EACCES) {
      // Another user's owner-only socket: root needs CAP_DAC_OVERRIDE to
      // connect (a node agent); a sidecar runs as the target's uid. A file
      // root made (see SocketOwner) needs root or the same capability.
      struct stat st;
      const bool roots = ::lstat(path.c_str(), &st) == 0 && st.st_uid == 0 && t.uid != 0;
      return ExplainDenied(Status::FromErrno(err, Prefix(who) + "connect " + path),
                           Prefix(who) + "connect " + path, path, /*write=*/true,
                           roots ? "root" : "the target's uid",
                           roots ? Cause::kNeedsCapabilityOrRoot : Cause::kNeedsCapability);
    }
    if (err != EINPROGRESS) return Status::FromErrno(err, Prefix(who) + "connect " + path);
    pollfd p{fd.get(), POLLOUT, 0};
    int r = ::poll(&p, 1, MsLeft(deadline));
    int soerr = 0;
    socklen_t len = sizeof(soerr);
    if (r <= 0 || ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &soerr, &len) != 0 || soerr != 0) {
      return Status(ErrorCode::kUnavailable, Prefix(who) + "connect " + path + " timed out",
                    Cause::kDeadline);
    }
  }
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (::getsockopt(fd.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    return Status::FromErrno(errno, Prefix(who) + "SO_PEERCRED");
  }
  if (cred.pid != t.pid) {
    return Status(ErrorCode::kPermissionDenied, Prefix(who) + "the socket is served by pid " +
                                                    std::to_string(cred.pid) + ", not the target " +
                                                    std::to_string(t.pid) + "; refusing");
  }
  why = SocketFailure::kNone;
  return fd;
}

Status SendAll(int fd, std::string_view data, SocketClock::time_point deadline,
               std::string_view who) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0) {
      data.remove_prefix(static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR) {
      return Status::FromErrno(errno, Prefix(who) + "write");
    }
    pollfd p{fd, POLLOUT, 0};
    int left = MsLeft(deadline);
    if (left == 0 || ::poll(&p, 1, left) <= 0) {
      return Status(ErrorCode::kUnavailable, Prefix(who) + "write timed out", Cause::kDeadline);
    }
  }
  return Status::Ok();
}

Result<std::string> ReceiveAll(int fd, std::size_t cap, SocketClock::time_point deadline,
                               std::string_view who) {
  std::string out;
  std::array<char, 16384> buf;
  for (;;) {
    ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
    if (n == 0) return out;
    if (n > 0) {
      if (out.size() + static_cast<std::size_t>(n) > cap) {
        return Status(ErrorCode::kTooLarge,
                      Prefix(who) + "answer larger than " + std::to_string(cap) + " bytes");
      }
      out.append(buf.data(), static_cast<std::size_t>(n));
      continue;
    }
    if (errno != EAGAIN && errno != EINTR) return Status::FromErrno(errno, Prefix(who) + "read");
    pollfd p{fd, POLLIN, 0};
    int left = MsLeft(deadline);
    if (left == 0 || ::poll(&p, 1, left) <= 0) {
      return Status(ErrorCode::kUnavailable, Prefix(who) + "no complete answer before the deadline",
                    Cause::kDeadline);
    }
  }
}

std::optional<std::string_view> EnvValue(std::string_view environ, std::string_view name) {
  while (!environ.empty()) {
    std::size_t end = environ.find('\0');
    std::string_view kv = environ.substr(0, end);
    if (kv.size() > name.size() && kv.substr(0, name.size()) == name && kv[name.size()] == '=') {
      return kv.substr(name.size() + 1);
    }
    if (end == std::string_view::npos) break;
    environ.remove_prefix(end + 1);
  }
  return std::nullopt;
}

}  // namespace memtrimd
