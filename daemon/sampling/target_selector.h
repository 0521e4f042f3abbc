// Which process to watch: a fixed pid, a pidfile, a command-line regex, or
// the automatic rule for a pod with a shared pid namespace.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <span>
#include <string>

#include "collectors/common/status.h"
#include "collectors/common/target.h"
#include "daemon/sampling/process_look.h"

namespace memtrimd {

struct TargetRule {
  enum class Mode { kPid, kPidfile, kMatch, kAuto };
  Mode mode = Mode::kAuto;
  pid_t pid = 0;
  std::string pidfile;
  std::string match;  // POSIX extended regex on the joined command line
};

// A process seen while scanning /proc.
struct Candidate {
  pid_t pid = 0;
  std::string comm;
  uint64_t rss_bytes = 0;
};

// The automatic rule, pure: the largest-RSS process that is not pid 1 (the
// pause container or init), not memtrimd (`self` or another memtrimd), and
// not a pause container.
std::optional<pid_t> PickAutomatic(std::span<const Candidate> candidates, pid_t self);

class TargetSelector {
 public:
  // A match rule waits this long for one process's command line, and this
  // long in all per scan for command lines that do not come: a read answers
  // in microseconds unless the process's memory map is held locked.
  static constexpr std::chrono::milliseconds kLookWait{200};
  static constexpr std::chrono::milliseconds kLookStallBudget{500};
  // Command-line reads left running (one thread each). Past kLooksLeftMax a
  // process new to the search is read only when none of its threads waits
  // uninterruptibly (procfs::AnyTaskUninterruptible), and never past
  // kLooksLeftHardMax.
  static constexpr std::size_t kLooksLeftMax = 8;
  static constexpr std::size_t kLooksLeftHardMax = 64;

  // REQUIRES: a kMatch rule's regex is valid (flags checked it).
  explicit TargetSelector(TargetRule rule, std::string proc_root = "/proc");

  // The target to watch now, or why there is none (kNotFound: nothing
  // matches yet; other codes: cannot read). Reads the target's maps and
  // environment, and for a match rule every process's command line: it
  // waits while a process's memory map is held locked, so the scheduler
  // runs it on a thread of its own (TargetSearch). One call at a time.
  Result<Target> Select();

  // Processes the last match scan passed over because their command line
  // did not come in time; each is read again once that read ends.
  std::size_t looks_stalled() const { return looks_stalled_; }

  // For logs: "pid 42", "pidfile /run/app.pid", "match \"java\"", "automatic".
  std::string Describe() const;
  const TargetRule& rule() const { return rule_; }

 private:
  Result<pid_t> PidFromFile() const;
  Result<pid_t> Scan();
  // `pid`'s command line read through `read_dir`, or nullopt (unreadable,
  // or not back within `budget`, which shrinks by the time waited).
  std::optional<std::string> CommandLine(pid_t pid, const std::string& read_dir,
                                         std::chrono::steady_clock::duration& budget);

  TargetRule rule_;
  std::string proc_root_;
  std::optional<std::regex> regex_;
  // Command-line reads that did not end in time, by pid (Select's caller
  // only).
  std::map<pid_t, std::shared_ptr<ProcessLook>> looks_left_;
  std::size_t looks_stalled_ = 0;
  // Processes the last scan did not give their full wait, its budget spent
  // on others: it picked nothing, and the next scan reads them.
  std::size_t looks_cut_ = 0;
};

}  // namespace memtrimd
