#include "collectors/jvm/agent_load.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "collectors/agent/client/agent_client.h"
#include "collectors/common/file_reader.h"
#include "collectors/common/private_socket.h"
#include "collectors/jvm/attach_trigger.h"

namespace memtrimd::jvm {
namespace {

// The agent is about 100 KB; anything far larger is not it.
constexpr off_t kMaxAgentBytes = 64 << 20;

std::string FirstLine(std::string_view text) {
  std::string_view line = text.substr(0, text.find('\n'));
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
  return std::string(line);
}

AgentLoadOutcome Outcome(AgentLoadResult r, std::string text) { return {r, std::move(text)}; }

// ---- The copy in the JVM's /tmp ----

std::string RandomHex() {
  unsigned char bytes[8] = {};
  if (::getrandom(bytes, sizeof bytes, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof bytes)) {
    // Unpredictable enough for a name that is created with O_EXCL anyway.
    uint64_t v = static_cast<uint64_t>(::getpid()) ^
                 static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    for (unsigned char& b : bytes) {
      b = static_cast<unsigned char>(v);
      v >>= 8;
    }
  }
  std::string out;
  char two[3];
  for (unsigned char b : bytes) {
    std::snprintf(two, sizeof two, "%02x", b);
    out += two;
  }
  return out;
}

// A private directory in the JVM's /tmp holding one copy of the agent;
// both are removed when this ends (the JVM's mapping keeps the pages).
class StagedCopy {
 public:
  StagedCopy() = default;
  StagedCopy(StagedCopy&& o) noexcept
      : tmp_(std::move(o.tmp_)), dir_(std::move(o.dir_)), name_(std::move(o.name_)) {
    o.name_.clear();
  }
  StagedCopy(const StagedCopy&) = delete;
  StagedCopy& operator=(const StagedCopy&) = delete;
  StagedCopy& operator=(StagedCopy&&) = delete;
  ~StagedCopy() {
    if (dir_.get() >= 0) ::unlinkat(dir_.get(), std::string(kAgentFileName).c_str(), 0);
    if (tmp_.get() >= 0 && !name_.empty()) ::unlinkat(tmp_.get(), name_.c_str(), AT_REMOVEDIR);
  }

  // The file's path as the JVM opens it.
  std::string JvmPath() const { return "/tmp/" + name_ + "/" + std::string(kAgentFileName); }

  static Result<StagedCopy> Make(const Target& t, const std::string& source);

 private:
  UniqueFd tmp_;  // the JVM's /tmp (O_PATH)
  UniqueFd dir_;  // our directory in it
  std::string name_;
};

Status CopyFailed(const std::string& what, int err) {
  return Status::FromErrno(err, "copying the agent into the JVM's /tmp: " + what);
}

Result<StagedCopy> StagedCopy::Make(const Target& t, const std::string& source) {
  // Files a third user owns in the JVM's /tmp would be neither the JVM's
  // nor root's: only memtrimd as the JVM's uid (a sidecar) or as root.
  const uid_t euid = ::geteuid();
  if (euid != 0 && euid != t.uid) {
    return Status(ErrorCode::kPermissionDenied,
                  "memtrimd's uid " + std::to_string(euid) + " is neither the JVM's uid " +
                      std::to_string(t.uid) +
                      " nor root: it does not place files in the JVM's /tmp (run it as the "
                      "JVM's uid, or give --jvm.agent-path)");
  }
  UniqueFd src(::open(source.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (src.get() < 0) return Status::FromErrno(errno, "open the agent " + source);
  struct stat sst;
  if (::fstat(src.get(), &sst) != 0 || !S_ISREG(sst.st_mode) || sst.st_size > kMaxAgentBytes) {
    return Status(ErrorCode::kInvalidArgument, source + " is not a regular file of at most 64 MiB");
  }
  StagedCopy c;
  c.tmp_ = OpenTargetTmp(t);
  if (c.tmp_.get() < 0) return CopyFailed("open " + t.proc_dir + "/root/tmp", errno);
  struct statvfs fs;
  if (::fstatvfs(c.tmp_.get(), &fs) == 0 && (fs.f_flag & ST_NOEXEC) != 0) {
    return Status(ErrorCode::kUnavailable,
                  "the JVM's /tmp is mounted noexec: the JVM could not map the library from there "
                  "(--jvm.agent-path can name a place it can)");
  }
  std::string name;
  for (int attempt = 0; attempt < 4 && name.empty(); ++attempt) {
    std::string candidate = ".memtrimd-agent." + RandomHex();
    // 0700 while the file is written: nobody else opens a half copy.
    if (::mkdirat(c.tmp_.get(), candidate.c_str(), 0700) == 0) {
      name = candidate;
    } else if (errno != EEXIST) {
      return CopyFailed("mkdir " + candidate, errno);
    }
  }
  if (name.empty()) return CopyFailed("mkdir", EEXIST);
  c.name_ = name;  // from here on removed with the object
  c.dir_ = UniqueFd(
      ::openat(c.tmp_.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (c.dir_.get() < 0) return CopyFailed("open " + name, errno);
  struct stat dst;
  if (::fstat(c.dir_.get(), &dst) != 0 || dst.st_uid != euid) {
    return Status(ErrorCode::kPermissionDenied,
                  "the directory memtrimd made in the JVM's /tmp is not memtrimd's");
  }
  UniqueFd out(::openat(c.dir_.get(), std::string(kAgentFileName).c_str(),
                        O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (out.get() < 0) return CopyFailed("create the file", errno);
  std::vector<char> buf(64 << 10);
  off_t copied = 0;
  for (;;) {
    ssize_t n = ::read(src.get(), buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::FromErrno(errno, "read " + source);
    if (n == 0) break;
    copied += n;
    if (copied > kMaxAgentBytes) {
      return Status(ErrorCode::kInvalidArgument, source + " grew past 64 MiB");
    }
    for (ssize_t done = 0; done < n;) {
      ssize_t w = ::write(out.get(), buf.data() + done, static_cast<size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return CopyFailed("write", errno);
      done += w;
    }
  }
  // Read-only for everyone; the directory only traversable by others (the
  // JVM's uid when memtrimd is root), never listable.
  if (::fchmod(out.get(), 0444) != 0) return CopyFailed("chmod the file", errno);
  if (::fchmod(c.dir_.get(), 0711) != 0) return CopyFailed("chmod the directory", errno);
  return c;
}

// The JVM's environment: MEMTRIMD_AGENT_LOAD=0 or MEMTRIMD_AGENT_DISABLE=1
// keep the agent out. Unreadable: not loaded (an opt-out memtrimd cannot
// see is still an opt-out).
std::optional<AgentLoadOutcome> OptedOut(const Target& t) {
  Result<std::string> environ = ReadSmallFile(t.proc_dir + "/environ", 1u << 20);
  if (!environ.ok()) {
    return Outcome(AgentLoadResult::kFailed, "not loaded: the JVM's environment is not readable (" +
                                                 environ.status().message() +
                                                 "), so its opt-out is unknown");
  }
  if (EnvValue(*environ, "MEMTRIMD_AGENT_LOAD") == std::optional<std::string_view>("0")) {
    return Outcome(AgentLoadResult::kOptedOut,
                   "not loaded: MEMTRIMD_AGENT_LOAD=0 in the JVM's environment");
  }
  if (EnvValue(*environ, "MEMTRIMD_AGENT_DISABLE") == std::optional<std::string_view>("1")) {
    return Outcome(AgentLoadResult::kOptedOut,
                   "not loaded: MEMTRIMD_AGENT_DISABLE=1 in the JVM's environment");
  }
  return std::nullopt;
}

AgentLoadOutcome Load(const Target& t, const AgentLoadOptions& o) {
  if (agent::HasAgent(t)) {
    return Outcome(AgentLoadResult::kPresent,
                   "not loaded: the JVM has libmemtrimd_agent.so already (preloaded, or loaded "
                   "by an earlier memtrimd)");
  }
  if (std::optional<AgentLoadOutcome> out = OptedOut(t)) return *out;
  std::optional<StagedCopy> copy;
  std::string jvm_path = o.jvm_path;
  if (jvm_path.empty()) {
    Result<std::string> source = o.source.empty() ? FindOwnAgent() : Result<std::string>(o.source);
    if (!source.ok()) {
      return Outcome(AgentLoadResult::kFailed, "not loaded: " + source.status().message());
    }
    Result<StagedCopy> made = StagedCopy::Make(t, *source);
    if (!made.ok()) {
      return Outcome(AgentLoadResult::kFailed, "not loaded: " + made.status().message());
    }
    copy.emplace(std::move(made).value());
    jvm_path = copy->JvmPath();
  } else if (jvm_path.front() != '/') {
    return Outcome(AgentLoadResult::kFailed,
                   "not loaded: --jvm.agent-path is not absolute: " + jvm_path);
  }
  Result<AttachResponse> answer =
      ExecuteAttach(t, "load", jvm_path, "true",
                    AGENT_ATTACH_VERSION_OPTION + std::to_string(AGENT_PROTOCOL_VERSION), o.attach);
  // The copy goes here, loaded or not: the JVM maps what it loaded.
  copy.reset();
  if (!answer.ok()) {
    return Outcome(AgentLoadResult::kFailed, "not loaded: " + answer.status().message());
  }
  return ParseLoadAnswer(*answer, jvm_path);
}

}  // namespace

const char* AgentLoadResultName(AgentLoadResult r) {
  switch (r) {
    case AgentLoadResult::kLoaded:
      return "loaded";
    case AgentLoadResult::kPresent:
      return "present";
    case AgentLoadResult::kOptedOut:
      return "opted_out";
    case AgentLoadResult::kRefused:
      return "refused";
    case AgentLoadResult::kFailed:
      return "failed";
  }
  return "failed";
}

AgentLoadOutcome ParseLoadAnswer(const AttachResponse& answer, std::string_view jvm_path) {
  const std::string& text = answer.output;
  const std::string path(jvm_path);
  if (text.find("Dynamic agent loading is not enabled") != std::string::npos) {
    return Outcome(AgentLoadResult::kRefused,
                   "refused: the JVM runs with -XX:-EnableDynamicAgentLoading (no agents loaded "
                   "at run time; LD_PRELOAD the agent instead)");
  }
  constexpr std::string_view kCode = "return code: ";
  if (std::size_t at = text.find(kCode); at != std::string::npos) {
    std::size_t p = at + kCode.size();
    bool negative = p < text.size() && text[p] == '-';
    if (negative) ++p;
    long code = 0;
    std::size_t digits = 0;
    while (p < text.size() && text[p] >= '0' && text[p] <= '9' && digits < 9) {
      code = code * 10 + (text[p++] - '0');
      ++digits;
    }
    if (digits > 0) {
      // "-0" is no answer HotSpot gives: not taken for success.
      if (negative) code = code == 0 ? -1 : -code;
      switch (code) {
        case AGENT_ATTACH_OK:
          return Outcome(AgentLoadResult::kLoaded, "loaded into the JVM from " + path);
        case AGENT_ATTACH_RUNNING:
          return Outcome(AgentLoadResult::kPresent,
                         "not loaded: the agent runs in the JVM already");
        case AGENT_ATTACH_VERSION:
          return Outcome(AgentLoadResult::kRefused, "refused: " + path + " is not agent version " +
                                                        std::to_string(AGENT_PROTOCOL_VERSION) +
                                                        ", the one this memtrimd reads");
        case AGENT_ATTACH_DISABLED:
          return Outcome(AgentLoadResult::kOptedOut,
                         "not loaded: MEMTRIMD_AGENT_DISABLE=1 in the JVM's environment");
        case AGENT_ATTACH_FAILED:
          return Outcome(AgentLoadResult::kFailed,
                         "the agent was loaded but did not start (its reason is on the JVM's "
                         "stderr)");
        default:
          return Outcome(AgentLoadResult::kRefused,
                         "refused: Agent_OnAttach returned " + std::to_string(code));
      }
    }
  }
  if (std::size_t at = text.find(" was not loaded."); at != std::string::npos) {
    std::string why = FirstLine(std::string_view(text).substr(text.find('\n', at) + 1));
    return Outcome(AgentLoadResult::kFailed,
                   "the JVM could not load " + path + (why.empty() ? "" : ": " + why));
  }
  if (text.find("Agent_OnAttach is not available") != std::string::npos) {
    return Outcome(AgentLoadResult::kRefused,
                   "refused: " + path +
                       " has no Agent_OnAttach (a libmemtrimd_agent.so older than version " +
                       std::to_string(AGENT_PROTOCOL_VERSION) + ")");
  }
  std::string first = FirstLine(text);
  return Outcome(AgentLoadResult::kFailed, "the JVM answered status " +
                                               std::to_string(answer.status) +
                                               (first.empty() ? "" : ": " + first));
}

Result<std::string> FindOwnAgentFrom(const std::string& dir) {
  const std::string name(kAgentFileName);
  // Beside the executable; installed (bin/ and lib/memtrimd/, a private
  // plugin directory, as the web module's; lib/, where earlier installs put
  // it); the build tree (daemon/ and collectors/agent/).
  const std::string places[] = {dir + "/" + name, dir + "/../lib/memtrimd/" + name,
                                dir + "/../lib/" + name, dir + "/../collectors/agent/" + name};
  for (const std::string& p : places) {
    struct stat st;
    if (::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return p;
  }
  return Status(ErrorCode::kNotFound, "memtrimd's own " + name + " is not beside " + dir +
                                          " nor in ../lib/memtrimd (give --jvm.agent-path)");
}

Result<std::string> FindOwnAgent() {
  char exe[4096];
  ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return Status::FromErrno(errno, "agent: readlink /proc/self/exe");
  std::string dir(exe, static_cast<std::size_t>(n));
  dir.erase(dir.rfind('/') == std::string::npos ? 0 : dir.rfind('/'));
  return FindOwnAgentFrom(dir);
}

AgentLoadOutcome LoadAgentInto(const Target& t, const AgentLoadOptions& o) { return Load(t, o); }

}  // namespace memtrimd::jvm
