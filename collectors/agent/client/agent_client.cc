#include "collectors/agent/client/agent_client.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <climits>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "collectors/agent/agent_protocol.h"
#include "collectors/agent/client/key_values.h"
#include "collectors/common/access.h"
#include "collectors/common/file_reader.h"
#include "collectors/common/private_socket.h"
#include "collectors/common/text.h"

namespace memtrimd::agent {
namespace {

using Clock = SocketClock;

constexpr std::string_view kLibraryName = AGENT_LIBRARY_NAME;

// When someone else holds the agent's default name (files planted at the
// next pids and start times in a shared /tmp), the agent listens at that
// name plus "." and 16 random hex digits (agent_sock.c). The paths of that
// form beside `default_path`, at most kMaxFallbacks. The directory is
// opened without following a symlink in its last component (a target's
// "tmp" pointing elsewhere), and read to a bounded number of entries: a
// /tmp full of planted names costs one bounded listing, and every path
// found must still pass ConnectPrivateSocket's owner and peer checks.
constexpr std::size_t kMaxFallbacks = 8;
constexpr std::size_t kMaxEntriesRead = 200000;

bool IsRandomSuffix(std::string_view s) {
  if (s.size() != AGENT_SOCKET_RANDOM_DIGITS) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::vector<std::string> FallbackSocketPaths(const Target& t, const std::string& default_path) {
  std::vector<std::string> out;
  const std::size_t slash = default_path.rfind('/');
  if (slash == std::string::npos) return out;
  const std::string dir = default_path.substr(0, slash);
  const std::string prefix = default_path.substr(slash + 1) + ".";
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0) return out;
  std::unique_ptr<DIR, int (*)(DIR*)> d(::fdopendir(fd.get()), ::closedir);
  if (!d) return out;
  fd.release();  // closedir closes it now
  std::size_t read = 0;
  while (struct dirent* e = ::readdir(d.get())) {
    if (++read > kMaxEntriesRead || out.size() >= kMaxFallbacks) break;
    std::string_view name(e->d_name);
    if (name.size() != prefix.size() + AGENT_SOCKET_RANDOM_DIGITS ||
        name.substr(0, prefix.size()) != prefix || !IsRandomSuffix(name.substr(prefix.size()))) {
      continue;
    }
    // Only sockets the agent could have made count towards the limit:
    // decoys of the same form planted by another user are passed over here,
    // so that a handful of them cannot hide the agent's own.
    struct stat st;
    if (::fstatat(::dirfd(d.get()), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISSOCK(st.st_mode) || (st.st_uid != t.uid && st.st_uid != 0)) {
      continue;
    }
    out.push_back(dir + "/" + std::string(name));
  }
  return out;
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
  if (status == AGENT_STATUS_OK) return body;
  if (status == AGENT_STATUS_TOO_LARGE) {
    return Status(ErrorCode::kTooLarge, "agent: " + std::string(text::Trim(body)));
  }
  if (status == AGENT_STATUS_ERROR) {
    std::string why(text::Trim(body));
    return Status(ErrorCode::kUnavailable, "agent: '" + std::string(command) + "' failed: " + why);
  }
  return Status(ErrorCode::kParseError,
                "agent: unknown status line '" + std::string(status.substr(0, 32)) + "'");
}

}  // namespace

Result<std::string> AgentSocketPath(const Target& t) {
  Result<AgentSocket> s = FindAgentSocket(t);
  if (!s.ok()) return s.status();
  return std::move(s->path);
}

Target::AgentEnviron AgentEnvironOf(std::string_view environ) {
  Target::AgentEnviron out;
  out.disabled = EnvValue(environ, AGENT_ENV_DISABLE) == std::optional<std::string_view>("1");
  out.socket = std::string(EnvValue(environ, AGENT_ENV_SOCKET).value_or(""));
  return out;
}

Result<Target::AgentEnviron> ReadAgentEnviron(const std::string& proc_dir) {
  const std::string environ_path = proc_dir + "/environ";
  Result<std::string> environ = ReadSmallFile(environ_path, 1u << 20);
  // environ is mode 0400: another user's needs CAP_DAC_OVERRIDE as well as
  // CAP_SYS_PTRACE.
  if (!environ.ok()) {
    return ExplainDenied(environ.status(), "agent: open " + environ_path, environ_path);
  }
  return AgentEnvironOf(*environ);
}

Result<AgentSocket> FindAgentSocket(const Target& t) {
  Result<Target::AgentEnviron> read = Status(ErrorCode::kUnavailable, "");
  if (!t.agent_environ) {
    read = ReadAgentEnviron(t.proc_dir);
    if (!read.ok()) return read.status();
  }
  const Target::AgentEnviron& env = t.agent_environ ? *t.agent_environ : *read;
  if (env.disabled) {
    return Status(ErrorCode::kUnavailable,
                  "agent: disabled in the target (MEMTRIMD_AGENT_DISABLE=1)");
  }
  const std::string pid = std::to_string(t.nspid);
  const std::string start = std::to_string(t.start_ticks);
  std::optional<std::string_view> custom;
  if (!env.socket.empty()) custom = env.socket;
  // The agent's default: the start time makes the name unique to one process
  // instance, so a file left by a killed process with the same pid is never
  // taken for this one's.
  std::string_view pattern = AGENT_SOCKET_TEMPLATE;
  const bool default_name = !custom || custom->empty();
  if (!default_name) {
    if (custom->front() != '/') {
      return Status(ErrorCode::kInvalidArgument,
                    "agent: MEMTRIMD_AGENT_SOCKET is not absolute: " + std::string(*custom));
    }
    pattern = *custom;
  }
  // Same expansion as the agent: "%p" is the pid in its namespace, "%t" the
  // start time in clock ticks since boot.
  std::string inner;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    char next = i + 1 < pattern.size() ? pattern[i + 1] : '\0';
    if (pattern[i] == '%' && (next == 'p' || next == 't')) {
      inner += next == 'p' ? pid : start;
      ++i;
    } else {
      inner += pattern[i];
    }
  }
  return AgentSocket{t.proc_dir + "/root" + inner, default_name};
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

Result<std::string> AgentCommand(const Target& t, std::string_view command, const AgentOptions& o,
                                 AgentFailure* failure) {
  AgentFailure dummy;
  AgentFailure& where = failure != nullptr ? *failure : dummy;
  where = AgentFailure::kUnreachable;
  if (command.empty() || command.size() > AGENT_REQUEST_MAX_BYTES) {
    return Status(ErrorCode::kInvalidArgument, "agent: bad command length");
  }
  // Printable words separated by single spaces ("sampling on 524288").
  for (std::size_t i = 0; i < command.size(); ++i) {
    const char c = command[i];
    const bool space = c == ' ' && i > 0 && i + 1 < command.size() && command[i - 1] != ' ';
    if ((c < '!' || c > '~') && !space) {
      return Status(ErrorCode::kInvalidArgument, "agent: a command is printable words");
    }
  }
  const auto deadline = Clock::now() + o.timeout;
  Result<AgentSocket> where_to = FindAgentSocket(t);
  if (!where_to.ok()) return where_to.status();
  Result<UniqueFd> sock = ConnectPrivateSocket(t, where_to->path, deadline, "agent", nullptr,
                                               SocketOwner::kTargetOrRoot);
  if (!sock.ok() && where_to->default_name) {
    // The default name may be someone else's: the agent is then at a
    // random variant of it. The first error stays the one reported.
    for (const std::string& alt : FallbackSocketPaths(t, where_to->path)) {
      Result<UniqueFd> again =
          ConnectPrivateSocket(t, alt, deadline, "agent", nullptr, SocketOwner::kTargetOrRoot);
      if (again.ok()) {
        sock = std::move(again);
        break;
      }
    }
  }
  if (!sock.ok()) {
    // No socket at all means no agent listening: the same as a stale one.
    if (sock.status().code() == ErrorCode::kNotFound) {
      return Status(ErrorCode::kUnavailable, sock.status().message(), sock.status().cause());
    }
    return sock.status();
  }
  std::string request(command);
  request += '\n';
  Status w = SendAll(sock->get(), request, deadline, "agent");
  if (!w.ok()) return w;
  // Two bytes for the status line on top of the body cap.
  Result<std::string> answer = ReceiveAll(sock->get(), o.max_response_bytes + 2, deadline, "agent");
  if (!answer.ok()) return answer.status();
  // An empty answer is the agent refusing this peer: still no answer.
  if (!answer->empty()) where = AgentFailure::kAnswer;
  Result<std::string> body = ParseAnswer(std::move(answer).value(), command);
  if (body.ok()) where = AgentFailure::kNone;
  return body;
}

Result<AgentTrim> ParseAgentTrim(std::string_view body) {
  // The first four are in every answer; the free-kept figures only where
  // the allocator reports one (jemalloc, tcmalloc), the committed ones only
  // under mimalloc.
  static constexpr std::array<std::string_view, 8> kKeys = {AGENT_KEYS_TRIM};
  std::array<std::optional<uint64_t>, 8> got{};
  Status st = ParseKeyValues(body, kKeys, got, 4, "agent trim");
  if (!st.ok()) return st;
  std::array<uint64_t, 4> v{};
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = *got[i];
  if (v[0] > static_cast<uint64_t>(std::chrono::nanoseconds::max().count()) || v[3] > INT_MAX) {
    return Status(ErrorCode::kParseError, "agent trim: value out of range");
  }
  AgentTrim out;
  out.duration = std::chrono::nanoseconds(static_cast<int64_t>(v[0]));
  out.rss_before = v[1];
  out.rss_after = v[2];
  out.result = static_cast<int>(v[3]);
  out.free_kept_before = got[4];
  out.free_kept_after = got[5];
  out.committed_before = got[6];
  out.committed_after = got[7];
  // The two words (an agent from before other allocators sends neither:
  // glibc and malloc_trim, the defaults).
  bool have_allocator = false, have_call = false;
  text::ForEachLineIn(body, [&](std::string_view line) {
    if (!st.ok()) return;
    std::size_t eq = line.find('=');
    std::string_view key = line.substr(0, eq), value = line.substr(eq + 1);
    if (key == "allocator") {
      std::optional<Allocator> a = AllocatorFromName(value);
      if (have_allocator || !a) {
        st = Status(ErrorCode::kParseError, have_allocator
                                                ? "agent trim: repeated allocator"
                                                : "agent trim: unknown allocator '" +
                                                      std::string(value.substr(0, 32)) + "'");
        return;
      }
      out.allocator = *a;
      have_allocator = true;
    } else if (key == "call") {
      if (have_call || value.empty()) {
        st = Status(ErrorCode::kParseError,
                    have_call ? "agent trim: repeated call" : "agent trim: empty call");
        return;
      }
      out.call = std::string(value);
      have_call = true;
    }
  });
  if (!st.ok()) return st;
  return out;
}

Result<Mallinfo2> ParseMallinfo2(std::string_view body) {
  static constexpr std::array<std::string_view, 10> kKeys = {AGENT_KEYS_MALLINFO2};
  std::array<std::optional<uint64_t>, 10> got{};
  Status st = ParseKeyValues(body, kKeys, got, got.size(), "agent mallinfo2");
  if (!st.ok()) return st;
  std::array<uint64_t, 10> v{};
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = *got[i];
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
  Result<std::string> body = AgentCommand(t, AGENT_VERB_TRIM, o);
  if (!body.ok()) return body.status();
  return ParseAgentTrim(*body);
}

}  // namespace memtrimd::agent
