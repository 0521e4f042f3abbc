#include "collectors/jvm/attach_client.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "collectors/common/file_reader.h"
#include "collectors/procfs/cmdline.h"
#include "collectors/procfs/proc_status.h"

namespace memtrimd::jvm {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

int MsLeft(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(left.count());
}

std::string SocketPath(const Target& t) {
  return t.proc_dir + "/root/tmp/.java_pid" + std::to_string(t.nspid);
}

// The socket must be the JVM's: a socket, owned by its euid/egid, closed to
// everyone else. A file planted by another user fails here.
Status CheckSocketFile(const Target& t, const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return Status::FromErrno(errno, "attach socket " + path);
  if (!S_ISSOCK(st.st_mode)) {
    return Status(ErrorCode::kPermissionDenied, "attach: " + path + " is not a socket");
  }
  if (st.st_uid != t.uid || st.st_gid != t.gid) {
    return Status(ErrorCode::kPermissionDenied,
                  "attach: " + path + " is owned by uid " + std::to_string(st.st_uid) + " gid " +
                      std::to_string(st.st_gid) + ", not the JVM's " + std::to_string(t.uid) +
                      "/" + std::to_string(t.gid));
  }
  if ((st.st_mode & 077) != 0) {
    return Status(ErrorCode::kPermissionDenied, "attach: " + path + " is open to other users");
  }
  return Status::Ok();
}

// Connects with a deadline and checks that the peer is the target process.
// `*refused` tells a stale socket (the JVM that made it is gone, or its
// listener stopped) from other failures.
Result<int> Connect(const Target& t, const std::string& path, Clock::time_point deadline,
                    bool* refused = nullptr) {
  Status owner = CheckSocketFile(t, path);
  if (!owner.ok()) return owner;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    return Status(ErrorCode::kInvalidArgument, "attach: socket path too long: " + path);
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return Status::FromErrno(errno, "attach: socket");
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    if (errno != EINPROGRESS && errno != EAGAIN) {
      if (refused != nullptr) *refused = errno == ECONNREFUSED;
      Status st = Status::FromErrno(errno, "attach: connect " + path);
      ::close(fd);
      return st;
    }
    pollfd p{fd, POLLOUT, 0};
    int r = ::poll(&p, 1, MsLeft(deadline));
    int err = 0;
    socklen_t len = sizeof(err);
    if (r <= 0 || ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
      ::close(fd);
      return Status(ErrorCode::kUnavailable, "attach: connect " + path + " timed out");
    }
  }
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    Status st = Status::FromErrno(errno, "attach: SO_PEERCRED");
    ::close(fd);
    return st;
  }
  if (cred.pid != t.pid) {
    ::close(fd);
    return Status(ErrorCode::kPermissionDenied,
                  "attach: the socket is served by pid " + std::to_string(cred.pid) +
                      ", not the JVM " + std::to_string(t.pid) + "; refusing");
  }
  return fd;
}

// Creates the trigger file the JVM looks for on SIGQUIT: in its working
// directory, else in its /tmp. Returns the path created ("" if it existed
// already, e.g. another client is attaching: then it is not ours to remove).
Result<std::string> CreateTrigger(const Target& t) {
  const std::string name = "/.attach_pid" + std::to_string(t.nspid);
  Status last;
  for (const std::string& dir : {t.proc_dir + "/cwd", t.proc_dir + "/root/tmp"}) {
    std::string path = dir + name;
    // O_NOFOLLOW|O_EXCL: a pre-planted symlink is never followed.
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
      ::close(fd);
      return path;
    }
    if (errno == EEXIST) {
      struct stat st;
      if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return std::string();
    }
    last = Status::FromErrno(errno, "attach: create " + path);
  }
  return last;
}

// Finds the socket, starting the listener with SIGQUIT when needed and safe.
Result<int> Open(const Target& t, const AttachOptions& o) {
  const auto deadline = Clock::now() + o.connect_timeout;
  const std::string path = SocketPath(t);
  bool stale = false;
  Result<int> fd = Connect(t, path, deadline, &stale);
  if (fd.ok()) return fd;
  // Only "no socket" and "stale socket" are worth a signal.
  if (fd.status().code() != ErrorCode::kNotFound && !stale) return fd.status();
  if (!o.allow_signal) {
    return Status(ErrorCode::kUnavailable, "attach: no listener (" + fd.status().message() +
                                               ") and signalling is off");
  }
  SignalVerdict verdict = DecideSignal(ReadSignalFacts(t));
  if (verdict != SignalVerdict::kMaySignal) {
    return Status(ErrorCode::kUnavailable,
                  std::string("attach: not signalling: ") + SignalVerdictText(verdict));
  }
  Result<std::string> trigger = CreateTrigger(t);
  if (!trigger.ok()) return trigger.status();
  auto cleanup = [&] {
    if (!trigger->empty()) ::unlink(trigger->c_str());
  };
  if (::kill(t.pid, SIGQUIT) != 0) {
    Status st = Status::FromErrno(errno, "attach: kill SIGQUIT");
    cleanup();
    return st;
  }
  // The socket appears ~20 ms later; signal once more at half time in case
  // the first signal raced with the JVM's start-up.
  const auto half = Clock::now() + (deadline - Clock::now()) / 2;
  bool resent = false;
  for (;;) {
    struct stat st;
    if (::lstat(path.c_str(), &st) == 0) {
      bool refused = false;
      Result<int> c = Connect(t, path, deadline, &refused);
      if (c.ok() || !refused) {
        cleanup();
        return c;
      }
    }
    if (Clock::now() >= deadline) break;
    if (!resent && Clock::now() >= half) {
      ::kill(t.pid, SIGQUIT);
      resent = true;
    }
    std::this_thread::sleep_for(10ms);
  }
  cleanup();
  return Status(ErrorCode::kUnavailable, "attach: the JVM's attach socket did not appear within " +
                                             std::to_string(o.connect_timeout.count()) + " ms");
}

Status WriteAll(int fd, std::string_view data, Clock::time_point deadline) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0) {
      data.remove_prefix(static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR) {
      return Status::FromErrno(errno, "attach: write");
    }
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, MsLeft(deadline)) <= 0) {
      return Status(ErrorCode::kUnavailable, "attach: write timed out");
    }
  }
  return Status::Ok();
}

Result<std::string> ReadAll(int fd, std::size_t cap, Clock::time_point deadline) {
  std::string out;
  char buf[16384];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n == 0) return out;
    if (n > 0) {
      if (out.size() + static_cast<std::size_t>(n) > cap) {
        return Status(ErrorCode::kTooLarge,
                      "attach: answer larger than " + std::to_string(cap) + " bytes");
      }
      out.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (errno != EAGAIN && errno != EINTR) return Status::FromErrno(errno, "attach: read");
    pollfd p{fd, POLLIN, 0};
    int left = MsLeft(deadline);
    if (left == 0 || ::poll(&p, 1, left) <= 0) {
      return Status(ErrorCode::kUnavailable, "attach: no complete answer before the deadline");
    }
  }
}

std::string EnvValue(std::string_view environ, std::string_view name) {
  while (!environ.empty()) {
    std::size_t end = environ.find('\0');
    std::string_view kv = environ.substr(0, end);
    if (kv.size() > name.size() && kv.substr(0, name.size()) == name && kv[name.size()] == '=') {
      return std::string(kv.substr(name.size() + 1));
    }
    if (end == std::string_view::npos) break;
    environ.remove_prefix(end + 1);
  }
  return "";
}

}  // namespace

SignalFacts ReadSignalFacts(const Target& t) {
  SignalFacts f;
  f.is_hotspot = t.runtime == Runtime::kJvm;
  Result<std::string> status = ReadSmallFile(t.proc_dir + "/status");
  if (status.ok()) {
    Result<procfs::ProcStatus> st = procfs::ParseProcStatus(*status);
    if (st.ok()) {
      f.sig_caught = st->sig_caught;
      f.sig_ignored = st->sig_ignored;
    }
  }
  Result<std::string> cmdline = ReadSmallFile(t.proc_dir + "/cmdline", 1u << 20);
  Result<std::string> environ = ReadSmallFile(t.proc_dir + "/environ", 1u << 20);
  f.options_known = cmdline.ok() && environ.ok();
  if (f.options_known) {
    f.cmdline = procfs::CmdlineToString(*cmdline);
    f.java_tool_options = EnvValue(*environ, "JAVA_TOOL_OPTIONS");
    f.jdk_java_options = EnvValue(*environ, "JDK_JAVA_OPTIONS");
    f.underscore_java_options = EnvValue(*environ, "_JAVA_OPTIONS");
  }
  return f;
}

Result<AttachResponse> ExecuteJcmd(const Target& target, std::string_view command,
                                   const AttachOptions& options) {
  Result<std::string> request = EncodeRequestV1("jcmd", command);
  if (!request.ok()) return request.status();
  Result<int> fd = Open(target, options);
  if (!fd.ok()) return fd.status();
  Fd sock(*fd);
  const auto deadline = Clock::now() + options.command_timeout;
  Status w = WriteAll(sock.get(), *request, deadline);
  if (!w.ok()) return w;
  Result<std::string> answer = ReadAll(sock.get(), options.max_response_bytes, deadline);
  if (!answer.ok()) return answer.status();
  return ParseAttachResponse(*answer);
}

}  // namespace memtrimd::jvm
