#include "daemon/sampling/target_selector.h"

#include <dirent.h>
#include <unistd.h>

#include <memory>

#include "collectors/common/file_reader.h"
#include "collectors/common/text.h"
#include "collectors/procfs/proc_status.h"
#include "collectors/procfs/target_reader.h"
#include "collectors/procfs/task_states.h"
#include "daemon/sampling/node_discovery.h"

namespace memtrimd {
namespace {

bool IsMemtrimd(std::string_view comm) { return IsMemtrimdComm(comm); }

// Ties go to the lower pid (usually the older process), so the choice is
// stable from one scan to the next.
template <typename Skip>
std::optional<pid_t> PickLargest(std::span<const Candidate> candidates, Skip skip) {
  std::optional<pid_t> best;
  uint64_t best_rss = 0;
  for (const Candidate& c : candidates) {
    if (skip(c)) continue;
    if (!best || c.rss_bytes > best_rss || (c.rss_bytes == best_rss && c.pid < *best)) {
      best = c.pid;
      best_rss = c.rss_bytes;
    }
  }
  return best;
}

}  // namespace

std::optional<pid_t> PickAutomatic(std::span<const Candidate> candidates, pid_t self) {
  return PickLargest(candidates, [self](const Candidate& c) {
    return c.pid == 1 || c.pid == self || IsMemtrimd(c.comm) || c.comm == "pause";
  });
}

TargetSelector::TargetSelector(TargetRule rule, std::string proc_root)
    : rule_(std::move(rule)), proc_root_(std::move(proc_root)) {
  if (rule_.mode == TargetRule::Mode::kMatch) {
    // Validated by the flag parser, so this does not throw.
    regex_.emplace(rule_.match, std::regex::extended | std::regex::nosubs);
  }
}

std::string TargetSelector::Describe() const {
  switch (rule_.mode) {
    case TargetRule::Mode::kPid:
      return "pid " + std::to_string(rule_.pid);
    case TargetRule::Mode::kPidfile:
      return "pidfile " + rule_.pidfile;
    case TargetRule::Mode::kMatch:
      return "match \"" + rule_.match + "\"";
    case TargetRule::Mode::kAuto:
      break;
  }
  return "automatic";
}

Result<pid_t> TargetSelector::PidFromFile() const {
  Result<std::string> text = ReadSmallFile(rule_.pidfile, 4096);
  if (!text.ok()) return text.status();
  auto pid = text::ParseUint(text::Trim(*text));
  if (!pid || *pid == 0 || *pid > 0x7fffffff) {
    return Status(ErrorCode::kParseError, rule_.pidfile + " does not hold a pid");
  }
  return static_cast<pid_t>(*pid);
}

std::optional<std::string> TargetSelector::CommandLine(
    pid_t pid, const std::string& read_dir, std::chrono::steady_clock::duration& budget) {
  if (looks_left_.contains(pid) ||
      (looks_left_.size() >= kLooksLeftMax &&
       (looks_left_.size() >= kLooksLeftHardMax || procfs::AnyTaskUninterruptible(read_dir)))) {
    ++looks_stalled_;
    return std::nullopt;
  }
  // The scan's budget is spent: not read now. The search then ends without
  // a pick (Scan) and goes again, when the reads that did not come are
  // known and passed over at once: a larger match later in the scan is
  // never lost to a smaller one read before the budget ran out.
  if (budget <= std::chrono::steady_clock::duration::zero()) {
    ++looks_cut_;
    return std::nullopt;
  }
  std::shared_ptr<ProcessLook> look = ProcessLook::StartCommandLine(read_dir);
  const auto from = std::chrono::steady_clock::now();
  const std::chrono::steady_clock::duration wait =
      std::min<std::chrono::steady_clock::duration>(kLookWait, budget);
  if (!look->WaitUntil(from + wait)) {
    budget -= std::min<std::chrono::steady_clock::duration>(
        budget, std::chrono::steady_clock::now() - from);
    looks_left_[pid] = std::move(look);
    // Given less than its full wait, it may be a healthy process on a busy
    // machine: read afresh in the next search.
    if (wait < kLookWait) {
      ++looks_cut_;
    } else {
      ++looks_stalled_;
    }
    return std::nullopt;
  }
  ProcessFacts facts = look->Take();
  if (!facts.cmdline_read) return std::nullopt;
  return std::move(facts.cmdline);
}

Result<pid_t> TargetSelector::Scan() {
  std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(proc_root_.c_str()), ::closedir);
  if (!dir) return Status::FromErrno(errno, "opendir " + proc_root_);
  const pid_t self = ::getpid();
  std::vector<Candidate> candidates;
  looks_stalled_ = 0;
  looks_cut_ = 0;
  // A read left running that has ended since is done afresh (the pid may
  // name another process by now).
  std::erase_if(looks_left_, [](const auto& entry) { return entry.second->finished(); });
  std::chrono::steady_clock::duration budget = kLookStallBudget;
  while (struct dirent* e = ::readdir(dir.get())) {
    auto pid = text::ParseUint(e->d_name);
    if (!pid || *pid > 0x7fffffff) continue;
    // Processes come and go while we scan: any read failure just skips one.
    // A process whose main thread ended is read through a live thread.
    Result<std::string> read_dir = procfs::ProcessReadDir(proc_root_ + "/" + e->d_name);
    if (!read_dir.ok()) continue;
    const std::string& dir_path = *read_dir;
    Result<std::string> status = ReadSmallFile(dir_path + "/status");
    if (!status.ok()) continue;
    Result<procfs::ProcStatus> st = procfs::ParseProcStatus(*status);
    if (!st.ok() || !st->has_memory) continue;
    if (regex_) {
      std::optional<std::string> cmdline = CommandLine(static_cast<pid_t>(*pid), dir_path, budget);
      if (!cmdline || !std::regex_search(*cmdline, *regex_)) continue;
      // The match rule still never picks memtrimd: its own command line
      // contains the pattern.
      if (static_cast<pid_t>(*pid) == self || IsMemtrimd(st->name)) continue;
    }
    candidates.push_back({static_cast<pid_t>(*pid), st->name, st->vm_rss});
  }
  if (looks_cut_ > 0) {
    return Status(ErrorCode::kUnavailable,
                  std::to_string(looks_cut_) +
                      " command lines were not read in this search: its time for reads that do "
                      "not come was spent; searching again");
  }
  std::optional<pid_t> best = regex_
                                  ? PickLargest(candidates, [](const Candidate&) { return false; })
                                  : PickAutomatic(candidates, self);
  if (!best) {
    return Status(ErrorCode::kNotFound,
                  regex_ ? "no process matches " + Describe() : "no candidate process");
  }
  return *best;
}

Result<Target> TargetSelector::Select() {
  Result<pid_t> pid = Status(ErrorCode::kInternal, "unset");
  switch (rule_.mode) {
    case TargetRule::Mode::kPid:
      pid = rule_.pid;
      break;
    case TargetRule::Mode::kPidfile:
      pid = PidFromFile();
      break;
    case TargetRule::Mode::kMatch:
    case TargetRule::Mode::kAuto:
      pid = Scan();
      break;
  }
  if (!pid.ok()) return pid.status();
  Result<Target> t = procfs::ReadTarget(proc_root_, *pid);
  // Taken now, a glibc program or a JVM would stay "unknown" for its whole
  // life: looked at again at the next tick.
  if (t.ok() && t->still_loading) {
    return Status(ErrorCode::kUnavailable,
                  "pid " + std::to_string(*pid) +
                      " is starting: the dynamic loader has not mapped its C library yet");
  }
  // The sidecar's target too may opt out of trims (MEMTRIMD_TRIM=0).
  if (t.ok()) ReadEnvironSettings(*t);
  return t;
}

}  // namespace memtrimd
