// Which process to watch: a fixed pid, a pidfile, a command-line regex, or
// the automatic rule for a pod with a shared pid namespace.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <regex>
#include <span>
#include <string>

#include "collectors/common/status.h"
#include "collectors/common/target.h"

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
  // REQUIRES: a kMatch rule's regex is valid (flags checked it).
  explicit TargetSelector(TargetRule rule, std::string proc_root = "/proc");

  // The target to watch now, or why there is none (kNotFound: nothing
  // matches yet; other codes: cannot read).
  Result<Target> Select() const;

  // For logs: "pid 42", "pidfile /run/app.pid", "match \"java\"", "automatic".
  std::string Describe() const;
  const TargetRule& rule() const { return rule_; }

 private:
  Result<pid_t> PidFromFile() const;
  Result<pid_t> Scan() const;

  TargetRule rule_;
  std::string proc_root_;
  std::optional<std::regex> regex_;
};

}  // namespace memtrimd
