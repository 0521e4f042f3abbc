#include "collectors/agent/agent_client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <climits>
#include <cstring>
#include <optional>

#include "collectors/common/file_reader.h"
#include "collectors/common/text.h"

namespace memtrimd::agent {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::string_view kLibraryName = "libmemtrimd_agent.so";

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  // Gives the descriptor to the caller.
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

int MsLeft(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() <= 0) return 0;
  return left.count() > INT_MAX ? INT_MAX : static_cast<int>(left.count());
}

// The value of `name` in a NUL-separated environ block; nullopt if unset.
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

// The socket must be the target's: a socket, owned by its euid/egid, closed
// to everyone else. A file planted by another user fails here.
Status CheckSocketFile(const Target& t, const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    int err = errno;
    if (err == ENOENT) {
      return Status(ErrorCode::kUnavailable, "agent: no socket at " + path);
    }
    return Status::FromErrno(err, "agent: socket " + path);
  }
  if (!S_ISSOCK(st.st_mode)) {
    return Status(ErrorCode::kPermissionDenied, "agent: " + path + " is not a socket");
  }
  if (st.st_uid != t.uid || st.st_gid != t.gid) {
    return Status(ErrorCode::kPermissionDenied,
                  "agent: " + path + " is owned by uid " + std::to_string(st.st_uid) + " gid " +
                      std::to_string(st.st_gid) + ", not the target's " + std::to_string(t.uid) +
                      "/" + std::to_string(t.gid));
  }
  if ((st.st_mode & 077) != 0) {
    return Status(ErrorCode::kPermissionDenied, "agent: " + path + " is open to other users");
  }
  return Status::Ok();
}

// Connects with a deadline and checks that the listener is the target.
Result<int> Connect(const Target& t, const std::string& path, Clock::time_point deadline) {
  Status owner = CheckSocketFile(t, path);
  if (!owner.ok()) return owner;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    return Status(ErrorCode::kInvalidArgument, "agent: socket path too long: " + path);
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (fd.get() < 0) return Status::FromErrno(errno, "agent: socket");
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    int err = errno;
    if (err == ECONNREFUSED || err == ENOENT) {
      // The file outlived its process (killed, or _exit without cleanup).
      return Status(ErrorCode::kUnavailable, "agent: stale socket " + path + " (nobody listens)");
    }
    if (err == EAGAIN) {
      // A full backlog: the agent is busy (a long trim) or stuck.
      return Status(ErrorCode::kUnavailable, "agent: " + path + " is busy (backlog full)");
    }
    if (err != EINPROGRESS) return Status::FromErrno(err, "agent: connect " + path);
    pollfd p{fd.get(), POLLOUT, 0};
    int r = ::poll(&p, 1, MsLeft(deadline));
    int soerr = 0;
    socklen_t len = sizeof(soerr);
    if (r <= 0 || ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &soerr, &len) != 0 || soerr != 0) {
      return Status(ErrorCode::kUnavailable, "agent: connect " + path + " timed out");
    }
  }
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (::getsockopt(fd.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    return Status::FromErrno(errno, "agent: SO_PEERCRED");
  }
  if (cred.pid != t.pid) {
    return Status(ErrorCode::kPermissionDenied,
                  "agent: the socket is served by pid " + std::to_string(cred.pid) +
                      ", not the target " + std::to_string(t.pid) + "; refusing");
  }
  return fd.release();
}

Status WriteAll(int fd, std::string_view data, Clock::time_point deadline) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0) {
      data.remove_prefix(static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR) {
      return Status::FromErrno(errno, "agent: write");
    }
    pollfd p{fd, POLLOUT, 0};
    int left = MsLeft(deadline);
    if (left == 0 || ::poll(&p, 1, left) <= 0) {
      return Status(ErrorCode::kUnavailable, "agent: write timed out");
    }
  }
  return Status::Ok();
}

Result<std::string> ReadAll(int fd, std::size_t cap, Clock::time_point deadline) {
  std::string out;
  std::array<char, 16384> buf;
  for (;;) {
    ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
    if (n == 0) return out;
    if (n > 0) {
      if (out.size() + static_cast<std::size_t>(n) > cap) {
        return Status(ErrorCode::kTooLarge,
                      "agent: answer larger than " + std::to_string(cap) + " bytes");
      }
      out.append(buf.data(), static_cast<std::size_t>(n));
      continue;
    }
    if (errno != EAGAIN && errno != EINTR) return Status::FromErrno(errno, "agent: read");
    pollfd p{fd, POLLIN, 0};
    int left = MsLeft(deadline);
    if (left == 0 || ::poll(&p, 1, left) <= 0) {
      return Status(ErrorCode::kUnavailable, "agent: no complete answer before the deadline");
    }
  }
}

// "<status>\n<body>" -> body.
Result<std::string> ParseAnswer(std::string answer, std::string_view command) {
  if (answer.empty()) {
    return Status(ErrorCode::kPermissionDenied,
                  "agent: closed the connection without an answer to '" + std::string(command) +
                      "' (it refuses peers that are not root or the target's uid)");
  }
  std::size_t nl = answer.find('\n');
  if (nl == std::string::npos) {
    return Status(ErrorCode::kParseError, "agent: answer without a status line");
  }
  std::string_view status(answer.data(), nl);
  std::string body = answer.substr(nl + 1);
  if (status == "0") return body;
  if (status == "1") {
    std::string why(text::Trim(body));
    if (why.find("larger than buffer") != std::string::npos) {
      return Status(ErrorCode::kTooLarge, "agent: " + why);
    }
    return Status(ErrorCode::kUnavailable, "agent: '" + std::string(command) + "' failed: " + why);
  }
  return Status(ErrorCode::kParseError, "agent: unknown status line '" +
                                            std::string(status.substr(0, 32)) + "'");
}

// Fills `values[i]` for `keys[i]` from "key=value\n" lines.
template <std::size_t N>
Status ParseKeyValues(std::string_view body, const std::array<std::string_view, N>& keys,
                      std::array<uint64_t, N>& values, std::string_view what) {
  // The agent ends every line with '\n': without it the answer was cut short
  // and the last number may be missing digits.
  if (body.empty() || body.back() != '\n') {
    return Status(ErrorCode::kParseError, std::string(what) + ": answer cut short");
  }
  std::array<bool, N> seen{};
  Status error;
  text::ForEachLineIn(body, [&](std::string_view line) {
    if (!error.ok() || line.empty()) return;
    std::size_t eq = line.find('=');
    if (eq == std::string_view::npos) {
      error = Status(ErrorCode::kParseError,
                     std::string(what) + ": line without '=': " + std::string(line.substr(0, 64)));
      return;
    }
    std::string_view key = line.substr(0, eq);
    for (std::size_t i = 0; i < N; ++i) {
      if (key != keys[i]) continue;
      std::optional<uint64_t> v = text::ParseUint(line.substr(eq + 1));
      if (!v || seen[i]) {
        error = Status(ErrorCode::kParseError,
                       std::string(what) + ": " + (seen[i] ? "repeated " : "bad value for ") +
                           std::string(key));
        return;
      }
      seen[i] = true;
      values[i] = *v;
    }
  });
  if (!error.ok()) return error;
  for (std::size_t i = 0; i < N; ++i) {
    if (!seen[i]) {
      return Status(ErrorCode::kParseError, std::string(what) + ": missing " + std::string(keys[i]));
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::string> AgentSocketPath(const Target& t) {
  Result<std::string> environ = ReadSmallFile(t.proc_dir + "/environ", 1u << 20);
  if (!environ.ok()) return environ.status();
  if (EnvValue(*environ, "MEMTRIMD_AGENT_DISABLE") == std::optional<std::string_view>("1")) {
    return Status(ErrorCode::kUnavailable, "agent: disabled in the target (MEMTRIMD_AGENT_DISABLE=1)");
  }
  const std::string pid = std::to_string(t.nspid);
  std::optional<std::string_view> custom = EnvValue(*environ, "MEMTRIMD_AGENT_SOCKET");
  std::string inner;
  if (!custom || custom->empty()) {
    inner = "/tmp/.memtrimd_agent." + pid;
  } else {
    if (custom->front() != '/') {
      return Status(ErrorCode::kInvalidArgument,
                    "agent: MEMTRIMD_AGENT_SOCKET is not absolute: " + std::string(*custom));
    }
    // Same expansion as the agent: every "%p" is the pid in its namespace.
    for (std::size_t i = 0; i < custom->size(); ++i) {
      if ((*custom)[i] == '%' && i + 1 < custom->size() && (*custom)[i + 1] == 'p') {
        inner += pid;
        ++i;
      } else {
        inner += (*custom)[i];
      }
    }
  }
  return t.proc_dir + "/root" + inner;
}

bool HasAgent(const Target& t) {
  bool found = false;
  Status st = ForEachLine(t.proc_dir + "/maps", 256u << 20, [&](std::string_view line) {
    if (found) return;
    constexpr std::string_view kDeleted = " (deleted)";
    if (line.size() > kDeleted.size() && line.substr(line.size() - kDeleted.size()) == kDeleted) {
      line.remove_suffix(kDeleted.size());
    }
    std::size_t slash = line.rfind('/');
    found = slash != std::string_view::npos && line.substr(slash + 1) == kLibraryName;
  });
  return st.ok() && found;
}

Result<std::string> AgentCommand(const Target& t, std::string_view command,
                                 const AgentOptions& o) {
  if (command.empty() || command.size() > 32) {
    return Status(ErrorCode::kInvalidArgument, "agent: bad command length");
  }
  for (char c : command) {
    if (c < '!' || c > '~') {
      return Status(ErrorCode::kInvalidArgument, "agent: a command is one word");
    }
  }
  const auto deadline = Clock::now() + o.timeout;
  Result<std::string> path = AgentSocketPath(t);
  if (!path.ok()) return path.status();
  Result<int> fd = Connect(t, *path, deadline);
  if (!fd.ok()) return fd.status();
  Fd sock(*fd);
  std::string request(command);
  request += '\n';
  Status w = WriteAll(sock.get(), request, deadline);
  if (!w.ok()) return w;
  // Two bytes for the status line on top of the body cap.
  Result<std::string> answer = ReadAll(sock.get(), o.max_response_bytes + 2, deadline);
  if (!answer.ok()) return answer.status();
  return ParseAnswer(std::move(answer).value(), command);
}

Result<AgentTrim> ParseAgentTrim(std::string_view body) {
  static constexpr std::array<std::string_view, 4> kKeys = {"duration_ns", "rss_before",
                                                            "rss_after", "result"};
  std::array<uint64_t, 4> v{};
  Status st = ParseKeyValues(body, kKeys, v, "agent trim");
  if (!st.ok()) return st;
  if (v[0] > static_cast<uint64_t>(std::chrono::nanoseconds::max().count()) || v[3] > INT_MAX) {
    return Status(ErrorCode::kParseError, "agent trim: value out of range");
  }
  AgentTrim out;
  out.duration = std::chrono::nanoseconds(static_cast<int64_t>(v[0]));
  out.rss_before = v[1];
  out.rss_after = v[2];
  out.result = static_cast<int>(v[3]);
  return out;
}

Result<Mallinfo2> ParseMallinfo2(std::string_view body) {
  static constexpr std::array<std::string_view, 10> kKeys = {
      "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
      "fordblks", "keepcost"};
  std::array<uint64_t, 10> v{};
  Status st = ParseKeyValues(body, kKeys, v, "agent mallinfo2");
  if (!st.ok()) return st;
  Mallinfo2 m;
  m.arena = v[0];
  m.ordblks = v[1];
  m.smblks = v[2];
  m.hblks = v[3];
  m.hblkhd = v[4];
  m.usmblks = v[5];
  m.fsmblks = v[6];
  m.uordblks = v[7];
  m.fordblks = v[8];
  m.keepcost = v[9];
  return m;
}

Result<AgentTrim> AgentTrimNow(const Target& t, const AgentOptions& o) {
  Result<std::string> body = AgentCommand(t, "trim", o);
  if (!body.ok()) return body.status();
  return ParseAgentTrim(*body);
}

}  // namespace memtrimd::agent
