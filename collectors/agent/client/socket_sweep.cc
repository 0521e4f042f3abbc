#include "collectors/agent/client/socket_sweep.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>

#include "collectors/agent/agent_protocol.h"
#include "collectors/common/unique_fd.h"

namespace memtrimd::agent {
namespace {

// The default template's file name part: "/tmp/" is the directory.
constexpr std::string_view kTmpPrefix = "/tmp/";
constexpr std::string_view kPrefix = AGENT_SOCKET_PREFIX;
static_assert(kPrefix.substr(0, 5) == kTmpPrefix);
constexpr std::string_view kNamePrefix = kPrefix.substr(kTmpPrefix.size());

// Decimal digits, no sign, no leading '+', at most 19 (fits uint64_t).
std::optional<uint64_t> Decimal(std::string_view s) {
  if (s.empty() || s.size() > 19) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

bool LowerHex(std::string_view s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// The target's /tmp, inside its root, no symlink followed on the way (a
// /tmp that is a symlink, to the node's /etc or anywhere, is refused), not
// blocking on a FIFO or a device. -1 when it cannot be opened so.
UniqueFd OpenTmpNoSymlinks(const Target& t) {
  UniqueFd root(::open((t.proc_dir + "/root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (root.get() < 0) return root;
  open_how how{};
  how.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  long fd = ::syscall(SYS_openat2, root.get(), "tmp", &how, sizeof(how));
  if (fd >= 0 || errno != ENOSYS) return UniqueFd(static_cast<int>(fd));
  // Before Linux 5.6: "tmp" itself is not followed when it is a symlink.
  return UniqueFd(::openat(root.get(), "tmp", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
}

// The agent binds its socket and listens a few system calls later; in
// between, connect is refused as on a stale socket. A file this young may
// be such a socket: left to a later sweep.
constexpr std::chrono::seconds kMinAge{2};

bool YoungerThanMinAge(const struct stat& st) {
  const auto made = std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec)));
  // A time ahead of the clock counts as young too.
  return std::chrono::system_clock::now() - made < kMinAge;
}

enum class Listener { kNobody, kSomeone, kUnknown };

// Whether anyone listens on the socket `name` in the directory `dir`,
// reached through this process's own descriptor of that directory (the
// name is resolved there, not through the target's /tmp again).
// Nonblocking: a full backlog (EAGAIN) is someone.
Listener WhoListens(int dir, const char* name) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string path = "/proc/self/fd/" + std::to_string(dir) + "/" + name;
  if (path.size() >= sizeof(addr.sun_path)) return Listener::kUnknown;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  UniqueFd s(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (s.get() < 0) return Listener::kUnknown;
  if (::connect(s.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0) {
    return Listener::kSomeone;
  }
  if (errno == ECONNREFUSED) return Listener::kNobody;
  return errno == EAGAIN || errno == EINPROGRESS ? Listener::kSomeone : Listener::kUnknown;
}

// One directory's sweep, within what is left of the limits.
void SweepDir(int dir, const std::set<std::pair<uint64_t, uint64_t>>& live,
              const SweepLimits& limits, SweepResult& out) {
  // fdopendir takes the descriptor: give it its own.
  UniqueFd own(::fcntl(dir, F_DUPFD_CLOEXEC, 0));
  if (own.get() < 0) return;
  std::unique_ptr<DIR, int (*)(DIR*)> d(::fdopendir(own.get()), ::closedir);
  if (!d) return;
  own.release();
  std::size_t read = 0;
  while (struct dirent* e = ::readdir(d.get())) {
    if (++read > limits.max_entries || out.removed >= limits.max_removals) return;
    std::optional<AgentSocketName> n = ParseAgentSocketName(e->d_name);
    if (!n || live.contains({n->pid, n->start})) continue;
    struct stat before {};
    if (::fstatat(dir, e->d_name, &before, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISSOCK(before.st_mode) ||
        YoungerThanMinAge(before)) {
      continue;
    }
    if (WhoListens(dir, e->d_name) != Listener::kNobody) continue;
    // Still the same socket file (not replaced while we knocked).
    struct stat now {};
    if (::fstatat(dir, e->d_name, &now, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISSOCK(now.st_mode) ||
        now.st_ino != before.st_ino || now.st_dev != before.st_dev) {
      continue;
    }
    if (::unlinkat(dir, e->d_name, 0) == 0) {
      ++out.removed;
    } else if (errno != ENOENT) {
      if (out.refused == 0) {
        out.refused_why = std::strerror(errno);
        if (errno == EPERM) {
          out.refused_why +=
              " (another user's file in a sticky /tmp that is not root's: needs "
              "CAP_FOWNER)";
        }
      }
      ++out.refused;
    }
  }
}

}  // namespace

std::optional<AgentSocketName> ParseAgentSocketName(std::string_view name) {
  if (!name.starts_with(kNamePrefix)) return std::nullopt;
  name.remove_prefix(kNamePrefix.size());
  const std::size_t dot = name.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  std::optional<uint64_t> pid = Decimal(name.substr(0, dot));
  name.remove_prefix(dot + 1);
  const std::size_t suffix = name.find('.');
  std::optional<uint64_t> start = Decimal(name.substr(0, suffix));
  if (!pid || !start) return std::nullopt;
  if (suffix != std::string_view::npos) {
    std::string_view random = name.substr(suffix + 1);
    if (random.size() != AGENT_SOCKET_RANDOM_DIGITS || !LowerHex(random)) return std::nullopt;
  }
  return AgentSocketName{*pid, *start};
}

SweepResult SweepAgentSockets(const std::vector<Target>& targets,
                              const std::set<std::pair<uint64_t, uint64_t>>& live,
                              const SweepLimits& limits) {
  SweepResult out;
  std::set<std::pair<dev_t, ino_t>> seen;
  for (const Target& t : targets) {
    if (out.dirs >= limits.max_dirs || out.removed >= limits.max_removals) break;
    UniqueFd dir = OpenTmpNoSymlinks(t);
    struct stat st {};
    if (dir.get() < 0 || ::fstat(dir.get(), &st) != 0) continue;
    if (!seen.insert({st.st_dev, st.st_ino}).second) continue;
    ++out.dirs;
    SweepDir(dir.get(), live, limits, out);
  }
  return out;
}

}  // namespace memtrimd::agent
