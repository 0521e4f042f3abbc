#include "collectors/cgroup/cgroup_collector.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

#include "collectors/cgroup/cgroup_files.h"
#include "collectors/cgroup/cgroup_memory.h"
#include "collectors/cgroup/pod_identity.h"
#include "collectors/common/file_reader.h"
#include "collectors/common/unique_fd.h"
#include "collectors/sample.h"

namespace memtrimd::cgroup {
namespace {

bool FileExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// Candidate directories for the target's cgroup, most specific first. On a
// host the mount root is the hierarchy root and the path from
// /proc/<pid>/cgroup leads to the target's group. In a container with its
// own cgroup namespace the mount root already is the target's group, and the
// path (relative to memtrimd's namespace) may start with "/..": then only
// the mount root is meaningful.
std::vector<std::string> CandidateDirs(const std::string& mount, const std::string& path) {
  std::vector<std::string> dirs;
  if (!path.empty() && path != "/" && path.find("/..") == std::string::npos) {
    dirs.push_back(mount + path);
  }
  dirs.push_back(mount);
  return dirs;
}

// Joins ancestors' limits: the smallest limit between the group and the mount
// root is the one the kernel enforces.
std::optional<uint64_t> MinLimit(std::optional<uint64_t> a, std::optional<uint64_t> b) {
  if (!a) return b;
  if (!b) return a;
  return std::min(*a, *b);
}

Result<CgroupMemory> ReadV2(const std::string& mount, const std::string& path) {
  for (const std::string& dir : CandidateDirs(mount, path)) {
    if (!FileExists(dir + "/memory.current")) continue;
    CgroupMemory m;
    m.version = 2;
    m.path = dir;
    Result<std::string> current = ReadSmallFile(dir + "/memory.current");
    if (!current.ok()) return current.status();
    Result<uint64_t> usage = ParseSingleValue(*current);
    if (!usage.ok()) return usage.status();
    m.usage_bytes = *usage;
    // Walk up to the mount root: a pod-level limit can be lower than the
    // container's.
    for (std::string d = dir; d.size() >= mount.size(); d = d.substr(0, d.rfind('/'))) {
      Result<std::string> max = ReadSmallFile(d + "/memory.max");
      if (max.ok()) {
        Result<std::optional<uint64_t>> limit = ParseMemoryMax(*max);
        if (!limit.ok()) return limit.status();
        m.limit_bytes = MinLimit(m.limit_bytes, *limit);
      }
      if (d == mount) break;
    }
    if (m.limit_bytes) m.limit_source = LimitSource::kCgroup;
    Result<std::string> stat = ReadSmallFile(dir + "/memory.stat");
    if (!stat.ok()) return stat.status();
    auto kv = ParseFlatKeyed(*stat);
    if (!kv.ok()) return kv.status().WithContext("memory.stat: ");
    if (auto it = kv->find("anon"); it != kv->end()) m.anon_bytes = it->second;
    if (auto it = kv->find("file"); it != kv->end()) m.file_bytes = it->second;
    Result<std::string> events = ReadSmallFile(dir + "/memory.events");
    if (events.ok()) {
      auto ev = ParseFlatKeyed(*events);
      if (!ev.ok()) return ev.status().WithContext("memory.events: ");
      if (auto it = ev->find("oom_kill"); it != ev->end()) m.oom_kills = it->second;
    }
    return m;
  }
  return Status(ErrorCode::kNotFound, "no cgroup v2 memory files under " + mount);
}

Result<CgroupMemory> ReadV1(const std::string& mount, const std::string& path) {
  for (const std::string& dir : CandidateDirs(mount, path)) {
    if (!FileExists(dir + "/memory.usage_in_bytes")) continue;
    CgroupMemory m;
    m.version = 1;
    m.path = dir;
    Result<std::string> usage_text = ReadSmallFile(dir + "/memory.usage_in_bytes");
    if (!usage_text.ok()) return usage_text.status();
    Result<uint64_t> usage = ParseSingleValue(*usage_text);
    if (!usage.ok()) return usage.status();
    m.usage_bytes = *usage;
    Result<std::string> limit_text = ReadSmallFile(dir + "/memory.limit_in_bytes");
    if (!limit_text.ok()) return limit_text.status();
    Result<std::optional<uint64_t>> limit = ParseV1Limit(*limit_text);
    if (!limit.ok()) return limit.status();
    m.limit_bytes = *limit;
    Result<std::string> stat = ReadSmallFile(dir + "/memory.stat");
    if (!stat.ok()) return stat.status();
    auto kv = ParseFlatKeyed(*stat);
    if (!kv.ok()) return kv.status().WithContext("memory.stat: ");
    // hierarchical_memory_limit already folds in the ancestors' limits.
    if (auto it = kv->find("hierarchical_memory_limit");
        it != kv->end() && it->second < (1ull << 62)) {
      m.limit_bytes = MinLimit(m.limit_bytes, it->second);
    }
    if (m.limit_bytes) m.limit_source = LimitSource::kCgroup;
    if (auto it = kv->find("total_rss"); it != kv->end()) m.anon_bytes = it->second;
    if (auto it = kv->find("total_cache"); it != kv->end()) m.file_bytes = it->second;
    Result<std::string> oom = ReadSmallFile(dir + "/memory.oom_control");
    if (oom.ok()) {
      auto ev = ParseFlatKeyed(*oom);
      if (!ev.ok()) return ev.status().WithContext("memory.oom_control: ");
      if (auto it = ev->find("oom_kill"); it != ev->end()) m.oom_kills = it->second;
    }
    return m;
  }
  return Status(ErrorCode::kNotFound, "no cgroup v1 memory files under " + mount);
}

Result<CgroupMemory> ReadCgroup(const Target& target, const std::string& text) {
  Result<ProcCgroup> pc = ParseProcCgroup(text);
  if (!pc.ok()) return pc.status();
  const std::string root = target.proc_dir + "/root/sys/fs/cgroup";
  // A memory controller bound to v1 wins: on hybrid hosts the v2 tree has no
  // memory files.
  if (pc->v1_memory) return ReadV1(root + "/memory", *pc->v1_memory);
  return ReadV2(root, pc->unified.value_or("/"));
}

// Whether two /proc entries' processes share a UTS (hostname) namespace;
// false when either cannot be looked at.
bool SameUtsNamespace(const std::string& a, const std::string& b) {
  struct stat sa, sb;
  if (::stat((a + "/ns/uts").c_str(), &sa) != 0 || ::stat((b + "/ns/uts").c_str(), &sb) != 0) {
    return false;
  }
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

// A pod's hostname file holds at most a 253-character name and a newline;
// more is read only to see that the first line is not longer.
constexpr std::size_t kMaxHostnameBytes = 512;

// The pod's name from the target's /etc/hostname, resolved inside the
// target's root (openat2 RESOLVE_IN_ROOT: a symlink there cannot point into
// memtrimd's own files); "" when it cannot be read or is not a pod name.
std::string ReadPodName(const Target& t) {
  UniqueFd root(::open((t.proc_dir + "/root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (root.get() < 0) return "";
  open_how how{};
  // O_NONBLOCK: a FIFO put there must not block the sampling thread.
  how.flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  long raw = ::syscall(SYS_openat2, root.get(), "/etc/hostname", &how, sizeof(how));
  if (raw < 0 && errno == ENOSYS) {
    // Before Linux 5.6: through the magic link, no symlink at the end.
    raw = ::open((t.proc_dir + "/root/etc/hostname").c_str(),
                 O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW);
  }
  UniqueFd fd(static_cast<int>(raw));
  if (fd.get() < 0) return "";
  struct stat st;
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return "";
  std::string text(kMaxHostnameBytes, '\0');
  std::size_t got = 0;
  while (got < text.size()) {
    ssize_t n = detail::ReadRetry(fd.get(), text.data() + got, text.size() - got);
    if (n < 0) return "";
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  text.resize(got);
  return ParseHostname(text);
}

}  // namespace

Status CgroupCollector::Collect(const Target& target, TargetSample& out) {
  Result<std::string> text = ReadSmallFile(target.proc_dir + "/cgroup");
  Result<CgroupMemory> m = text.ok() ? ReadCgroup(target, *text) : text.status();
  if (m.ok()) {
    out.cgroup = std::move(m).value();
  } else if (fallback_limit_) {
    CgroupMemory fb;
    fb.limit_bytes = fallback_limit_;
    fb.limit_source = LimitSource::kFlag;
    out.cgroup = fb;
  }
  // The pod rides with the memory figures: without them there is no
  // CgroupMemory to hold it (and an empty one would read as "no limit").
  if (out.cgroup && text.ok()) {
    out.cgroup->pod = ParsePodIdentity(*text);
    // Only for a pod: a host process's hostname is the node's, a podman
    // container's is its own (by default its short ID), not a pod's name.
    auto in_pod = [](const std::optional<PodIdentity>& id) { return id && !id->pod_uid.empty(); };
    if (in_pod(out.cgroup->pod)) {
      Result<std::string> node = ReadSmallFile(node_proc_dir_ + "/cgroup");
      const bool node_is_host = node.ok() && !in_pod(ParsePodIdentity(*node));
      if (!(node_is_host && SameUtsNamespace(target.proc_dir, node_proc_dir_))) {
        out.cgroup->pod_name = ReadPodName(target);
      }
    }
  }
  return m.ok() ? Status::Ok() : m.status();
}

}  // namespace memtrimd::cgroup
