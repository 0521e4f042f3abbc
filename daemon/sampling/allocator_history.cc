#include "daemon/sampling/allocator_history.h"

#include <algorithm>

#include "collectors/cgroup/pod_identity.h"
#include "collectors/common/file_reader.h"
#include "collectors/procfs/cmdline.h"

namespace memtrimd {

std::optional<AllocatorChange> AllocatorHistory::Seen(const std::string& program,
                                                      const Target& target,
                                                      std::chrono::system_clock::time_point now) {
  ++clock_;
  auto it = entries_.find(program);
  std::optional<AllocatorChange> change;
  if (it != entries_.end()) {
    Entry& e = it->second;
    const bool other_process = e.pid != target.pid || e.start_ticks != target.start_ticks;
    if (other_process && e.allocator != target.allocator && e.allocator != Allocator::kUnknown &&
        target.allocator != Allocator::kUnknown) {
      change = AllocatorChange{e.allocator, target.allocator, e.pid, now};
    }
    e = Entry{target.allocator, target.pid, target.start_ticks, clock_};
    return change;
  }
  if (entries_.size() >= capacity_) {
    auto oldest = std::min_element(
        entries_.begin(), entries_.end(),
        [](const auto& a, const auto& b) { return a.second.last_use < b.second.last_use; });
    entries_.erase(oldest);
  }
  entries_.emplace(program, Entry{target.allocator, target.pid, target.start_ticks, clock_});
  return change;
}

std::string ProgramKey(const Target& target) {
  std::string pod;
  if (Result<std::string> cg = ReadSmallFile(target.proc_dir + "/cgroup", 64u << 10); cg.ok()) {
    if (auto id = cgroup::ParsePodIdentity(*cg)) pod = id->pod_uid;
  }
  std::string line;
  if (Result<std::string> raw = ReadSmallFile(target.proc_dir + "/cmdline", 1u << 20); raw.ok()) {
    line = procfs::CmdlineToString(*raw);
  }
  return pod + "|" + (line.empty() ? target.comm : line);
}

}  // namespace memtrimd
