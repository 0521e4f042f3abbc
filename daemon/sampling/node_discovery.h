// Node-agent mode's target rule: every process in memtrimd's PID namespace
// (the host's, with hostPID) that is worth watching: every JVM, glibc and
// musl programs above a floor of memory they hold alone, narrowed by regexes
// on the command line and comm and by the target's own MEMTRIMD_WATCH=0; at
// most --targets.max of them, the rest counted as skipped (never dropped
// silently). Ranked by what each costs the node: JVMs and programs opted in
// to trims first, then by anonymous RSS plus swap. VmRSS also counts file
// pages every process mapping a file shares (the node holds them once), so
// a flood of small processes mapping one large file would outrank the
// programs memtrimd is for.
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
#include <string_view>
#include <utility>
#include <vector>

#include "collectors/common/process_key.h"
#include "collectors/common/status.h"
#include "collectors/common/target.h"
#include "daemon/sampling/process_look.h"

namespace memtrimd {

struct NodeSelectors {
  std::size_t max_targets = 300;
  // --targets.min-rss: anonymous RSS plus swap a program that is not a JVM
  // must hold to be watched.
  uint64_t min_rss_bytes = 32ull << 20;
  std::string match;    // POSIX ERE on the command line; "" = all
  std::string exclude;  // POSIX ERE on the command line; "" = none
};

// What discovery knows of one process.
struct NodeCandidate {
  Target target;
  uint64_t rss_bytes = 0;  // VmRSS
  // RssAnon + VmSwap: what the process alone holds, which the node pays
  // for it (file and shmem pages are shared, and stay when it exits).
  uint64_t private_bytes = 0;
  std::string cmdline;         // arguments joined by spaces; comm when empty
  bool watch_opt_out = false;  // MEMTRIMD_WATCH=0 in its environment
};

struct NodeChoice {
  // Indexes into the candidates: JVMs and opted-in programs first, then the
  // others, each group by private_bytes, largest first.
  std::vector<std::size_t> chosen;
  std::size_t skipped_by_cap = 0;  // matched, but beyond --targets.max
};

// --targets.match and --targets.exclude: POSIX EREs on a process's command
// line and on its comm (the name the kernel shows, which a program may set
// apart from its arguments: a renamed worker, a process.title). A process
// is selected when match (if set) finds either, and exclude finds neither.
// REQUIRES: the regexes compile (the flag parser checked them).
class ProcessFilter {
 public:
  explicit ProcessFilter(const NodeSelectors& selectors);
  // `cmdline` "" (a kernel thread, a process that cleared its arguments):
  // the comm alone decides.
  bool Selects(std::string_view comm, std::string_view cmdline) const;

 private:
  std::optional<std::regex> match_, exclude_;
};

// Pure: which candidates to watch. `self` is memtrimd's own pid.
// REQUIRES: the regexes compile (the flag parser checked them).
NodeChoice ChooseNodeTargets(std::span<const NodeCandidate> candidates,
                             const NodeSelectors& selectors, pid_t self);

// The value of `name` in a /proc/<pid>/environ text (NUL-separated), if set.
std::optional<std::string_view> EnvironValue(std::string_view environ, std::string_view name);

// MEMTRIMD_TRIM in an environment: true for 1/true/yes, false for
// 0/false/no, nullopt when unset or anything else.
std::optional<bool> TrimOptIn(std::string_view environ);

// The settings the process at t.proc_dir started with, from its environ
// read once: t.trim_opt_in (MEMTRIMD_TRIM) and t.agent_environ; both left
// unset when environ cannot be read.
void ReadEnvironSettings(Target& t);

// memtrimd's own processes (the launcher's and the daemon's comm).
bool IsMemtrimdComm(std::string_view comm);

struct Discovery {
  std::vector<Target> targets;  // in ChooseNodeTargets' order
  std::size_t skipped_by_cap = 0;
  std::size_t processes_seen = 0;
  // Processes memtrimd cannot read at all (another uid's maps without
  // CAP_SYS_PTRACE): not watched, counted, and the reason kept.
  std::size_t unreadable = 0;
  std::string unreadable_reason;  // the first such process's error
  // Watched processes whose environment cannot be read (owner-only
  // environ without CAP_DAC_OVERRIDE): their MEMTRIMD_WATCH and
  // MEMTRIMD_TRIM are unknown, so they are watched but never trimmed.
  std::size_t environ_unreadable = 0;
  // Processes whose first look (ProcessLook) has run kLookStalled without
  // ending, or waits for a thread: not candidates until it ends.
  std::size_t looks_stalled = 0;
  // Looks not ended yet, younger than that (a scan stops waiting for looks
  // after kScanStall): the scheduler scans again at its next tick.
  std::size_t looks_young = 0;
};

// Scans `proc_root`. Facts that do not change in a process's life (its
// runtime from maps, command line, environment) are read once per process,
// on a thread of its own (ProcessLook), and kept, so a rescan of a busy node
// reads each process's status and stat only.
class NodeDiscovery {
 public:
  NodeDiscovery(NodeSelectors selectors, std::string proc_root = "/proc");
  Discovery Discover();

 private:
  // How long a scan waits for one new process's look, and in all for looks
  // that do not end in that time: a look answers in a few milliseconds
  // unless the process's memory map is held locked. A look not waited for
  // is taken at a later scan.
  static constexpr std::chrono::milliseconds kLookWait{200};
  static constexpr std::chrono::milliseconds kScanStall{1000};
  // A look running this long counts as stalled.
  static constexpr std::chrono::milliseconds kLookStalled{2000};
  // Threads that looks left running may hold: per owner, and in all. Past
  // those, a new process is looked at only when none of its threads waits
  // uninterruptibly, and while fewer than kLooksMax looks run.
  static constexpr std::size_t kLooksPerUid = 4;
  static constexpr std::size_t kLooksInAll = 32;
  static constexpr std::size_t kLooksMax = 128;

  struct Known {
    NodeCandidate candidate;
    std::shared_ptr<ProcessLook> look;  // until it ends and is taken
    uid_t euid = 0;
    uint64_t seen_in_scan = 0;
    std::optional<Status> unreadable;  // ReadTarget's error: not a candidate
    bool environ_unreadable = false;
  };
  // Whether a process memtrimd cannot read would pass the selectors it can
  // check: the regexes on its comm and command line, and the floor.
  bool CommandLineSelected(const std::string& comm, const std::string& cmdline,
                           uint64_t private_bytes) const;

  NodeSelectors selectors_;
  std::string proc_root_;
  ProcessFilter filter_;
  uint64_t scan_ = 0;
  // (pid, start ticks) -> facts; entries of processes not seen in the last
  // scan are dropped.
  std::map<ProcessKey, Known> known_;
};

}  // namespace memtrimd
