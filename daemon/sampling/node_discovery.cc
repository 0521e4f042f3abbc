#include "daemon/sampling/node_discovery.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <memory>

#include "collectors/agent/client/agent_client.h"
#include "collectors/common/access.h"
#include "collectors/common/file_reader.h"
#include "collectors/common/text.h"
#include "collectors/procfs/cmdline.h"
#include "collectors/procfs/proc_stat.h"
#include "collectors/procfs/proc_status.h"
#include "collectors/procfs/target_reader.h"
#include "collectors/procfs/task_states.h"

namespace memtrimd {

bool IsMemtrimdComm(std::string_view comm) {
  // The launcher execs memtrimd-daemon, whose comm is cut to 15 characters.
  return comm == "memtrimd" || comm == "memtrimd-daemon";
}

std::optional<std::string_view> EnvironValue(std::string_view environ, std::string_view name) {
  std::optional<std::string_view> found;
  while (!environ.empty()) {
    std::size_t end = environ.find('\0');
    std::string_view entry = environ.substr(0, end);
    if (entry.size() > name.size() && entry.substr(0, name.size()) == name &&
        entry[name.size()] == '=') {
      // The last one wins, as getenv's first match would not: a program's
      // environment rarely repeats a name, and when it does a shell's later
      // assignment is the one it meant.
      found = entry.substr(name.size() + 1);
    }
    if (end == std::string_view::npos) break;
    environ.remove_prefix(end + 1);
  }
  return found;
}

std::optional<bool> TrimOptIn(std::string_view environ) {
  std::optional<std::string_view> v = EnvironValue(environ, "MEMTRIMD_TRIM");
  if (!v) return std::nullopt;
  if (*v == "1" || *v == "true" || *v == "yes") return true;
  if (*v == "0" || *v == "false" || *v == "no") return false;
  return std::nullopt;
}

void ReadEnvironSettings(Target& t) {
  Result<std::string> env = ReadSmallFile(t.proc_dir + "/environ", 1u << 20);
  if (!env.ok()) return;
  t.trim_opt_in = TrimOptIn(*env);
  t.agent_environ = agent::AgentEnvironOf(*env);
}

ProcessFilter::ProcessFilter(const NodeSelectors& selectors) {
  if (!selectors.match.empty()) {
    match_.emplace(selectors.match, std::regex::extended | std::regex::nosubs);
  }
  if (!selectors.exclude.empty()) {
    exclude_.emplace(selectors.exclude, std::regex::extended | std::regex::nosubs);
  }
}

bool ProcessFilter::Selects(std::string_view comm, std::string_view cmdline) const {
  const auto found = [&](const std::regex& re) {
    return std::regex_search(comm.begin(), comm.end(), re) ||
           (!cmdline.empty() && std::regex_search(cmdline.begin(), cmdline.end(), re));
  };
  if (match_ && !found(*match_)) return false;
  return !(exclude_ && found(*exclude_));
}

NodeChoice ChooseNodeTargets(std::span<const NodeCandidate> candidates,
                             const NodeSelectors& selectors, pid_t self) {
  const ProcessFilter filter(selectors);
  std::vector<std::size_t> wanted;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const NodeCandidate& c = candidates[i];
    const Target& t = c.target;
    if (t.pid == self || IsMemtrimdComm(t.comm) || t.comm == "pause") continue;
    if (c.watch_opt_out) continue;
    // JVMs, and C/C++ programs big enough to matter: glibc ones (on glibc
    // malloc or a preloaded jemalloc, tcmalloc, mimalloc) and musl ones,
    // whose RSS and account are worth watching even though musl has no call
    // that gives free memory back. Go and other static programs (unknown
    // runtime) have their own runtimes' tools.
    // The floor compares what the program alone holds: shared file pages
    // are neither native memory memtrimd could explain or trim nor memory
    // the node would get back without it.
    if (t.runtime == Runtime::kJvm) {
    } else if (t.runtime == Runtime::kGlibc || t.runtime == Runtime::kMusl) {
      if (c.private_bytes < selectors.min_rss_bytes) continue;
    } else {
      continue;
    }
    if (!filter.Selects(t.comm, c.cmdline)) continue;
    wanted.push_back(i);
  }
  // JVMs and programs opted in to trims first (what memtrimd is for, and
  // what their owners asked it to do), then by memory held alone, largest
  // first; ties to the lower pid, so the cap keeps the same targets from one
  // scan to the next.
  const auto first_class = [](const NodeCandidate& c) {
    return c.target.runtime == Runtime::kJvm || c.target.trim_opt_in == true;
  };
  std::sort(wanted.begin(), wanted.end(), [&](std::size_t a, std::size_t b) {
    const NodeCandidate& x = candidates[a];
    const NodeCandidate& y = candidates[b];
    if (first_class(x) != first_class(y)) return first_class(x);
    if (x.private_bytes != y.private_bytes) return x.private_bytes > y.private_bytes;
    return x.target.pid < y.target.pid;
  });
  NodeChoice out;
  if (wanted.size() > selectors.max_targets) {
    out.skipped_by_cap = wanted.size() - selectors.max_targets;
    wanted.resize(selectors.max_targets);
  }
  out.chosen = std::move(wanted);
  return out;
}

NodeDiscovery::NodeDiscovery(NodeSelectors selectors, std::string proc_root)
    : selectors_(std::move(selectors)), proc_root_(std::move(proc_root)), filter_(selectors_) {}

bool NodeDiscovery::CommandLineSelected(const std::string& comm, const std::string& cmdline,
                                        uint64_t private_bytes) const {
  if (private_bytes < selectors_.min_rss_bytes || IsMemtrimdComm(comm)) return false;
  return filter_.Selects(comm, cmdline);
}

Discovery NodeDiscovery::Discover() {
  ++scan_;
  Discovery out;
  // What this scan may still spend waiting for looks that do not end.
  std::chrono::steady_clock::duration stall_left = kScanStall;
  // Looks still running, by owner: one user's stuck processes may hold at
  // most kLooksPerUid threads, and all of them kLooksInAll. Pruned as looks
  // end, so that a healthy node's looks, each ending in milliseconds, never
  // wait for one another.
  std::map<uid_t, std::vector<std::shared_ptr<ProcessLook>>> looks_of;
  for (const auto& [key, known] : known_) {
    if (known.look && !known.look->finished()) looks_of[known.euid].push_back(known.look);
  }
  const auto running_of = [&](uid_t uid) {
    std::vector<std::shared_ptr<ProcessLook>>& looks = looks_of[uid];
    std::erase_if(looks, [](const auto& look) { return look->finished(); });
    return looks.size();
  };
  std::vector<NodeCandidate> candidates;
  std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(proc_root_.c_str()), ::closedir);
  if (!dir) return out;
  while (struct dirent* e = ::readdir(dir.get())) {
    auto pid_number = text::ParseUint(e->d_name);
    if (!pid_number || *pid_number == 0 || *pid_number > 0x7fffffff) continue;
    const pid_t pid = static_cast<pid_t>(*pid_number);
    const std::string proc_dir = proc_root_ + "/" + e->d_name;
    // Processes come and go while we scan: a failed read skips one.
    Result<procfs::ProcessInstance> instance = procfs::ReadInstance(proc_dir);
    if (!instance.ok()) continue;
    const uint64_t* ticks = &instance->start_ticks;
    // A process whose main thread ended is read through a live thread.
    Result<std::string> read_dir = procfs::ProcessReadDir(proc_dir);
    if (!read_dir.ok()) continue;
    Result<std::string> status_text = ReadSmallFile(*read_dir + "/status");
    if (!status_text.ok()) continue;
    Result<procfs::ProcStatus> st = procfs::ParseProcStatus(*status_text);
    if (!st.ok() || !st->has_memory || st->tgid != pid) continue;
    ++out.processes_seen;
    auto [it, inserted] = known_.try_emplace({pid, *ticks});
    if (!inserted && !it->second.unreadable &&
        procfs::ExecMarksDiffer(it->second.candidate.target.exec_mark, instance->exec_mark)) {
      // The same process runs another program now (a shell entrypoint that
      // exec'd java): read afresh, as what it is now.
      it->second = Known{};
      inserted = true;
    }
    Known& k = it->second;
    if (inserted) {
      if ((running_of(st->euid) >= kLooksPerUid || ProcessLook::Running() >= kLooksInAll) &&
          (ProcessLook::Running() >= kLooksMax || procfs::AnyTaskUninterruptible(*read_dir))) {
        // The threads for looks that do not end are taken, and a thread of
        // this process waits uninterruptibly (for its mmap lock, likely, as
        // its look would): looked at once an earlier look of its owner (or
        // any) ends, or once none of its threads waits so. A process without
        // such a thread is looked at anyway: one user's stuck processes,
        // or several users', do not hide the node's other processes.
        known_.erase(it);
        ++out.looks_stalled;
        continue;
      }
      k.euid = st->euid;
      k.look = ProcessLook::Start(proc_root_, pid, *read_dir);
      looks_of[st->euid].push_back(k.look);
      const auto wait_from = std::chrono::steady_clock::now();
      if (!k.look->WaitUntil(
              wait_from + std::min<std::chrono::steady_clock::duration>(kLookWait, stall_left))) {
        stall_left -= std::min<std::chrono::steady_clock::duration>(
            stall_left, std::chrono::steady_clock::now() - wait_from);
      }
    }
    if (k.look) {
      if (!k.look->finished()) {
        // Its memory map is held locked (or a path it names hangs), or the
        // machine is slow: kept and not a candidate until the look ends,
        // which may be never.
        k.seen_in_scan = scan_;
        if (k.look->elapsed() < kLookStalled) {
          ++out.looks_young;
        } else {
          ++out.looks_stalled;
        }
        continue;
      }
      ProcessFacts facts = k.look->Take();
      k.look.reset();
      Result<Target>& t = facts.target;
      k.candidate.cmdline = std::move(facts.cmdline);
      if (!t.ok() && t.status().code() == ErrorCode::kPermissionDenied) {
        // Kept (and counted every scan) rather than retried: a process's
        // owner does not change what memtrimd may read of it.
        k.unreadable = ExplainDenied(t.status(), "pid " + std::to_string(pid), proc_dir + "/maps");
      } else if (!t.ok() || t->start_ticks != *ticks ||
                 procfs::ExecMarksDiffer(t->exec_mark, instance->exec_mark) || t->still_loading) {
        // Gone, another process, or not loaded yet: looked at again next scan.
        known_.erase(it);
        continue;
      } else {
        k.candidate.target = std::move(t).value();
        const Result<std::string>& env = facts.environ;
        if (env.ok()) {
          std::optional<std::string_view> watch = EnvironValue(*env, "MEMTRIMD_WATCH");
          k.candidate.watch_opt_out = watch && (*watch == "0" || *watch == "false");
          k.candidate.target.trim_opt_in = TrimOptIn(*env);
          k.candidate.target.agent_environ = agent::AgentEnvironOf(*env);
        } else {
          // Whether it opted out of trims cannot be known: never trimmed.
          k.environ_unreadable = true;
          k.candidate.target.trim_opt_in = false;
        }
      }
    }
    k.seen_in_scan = scan_;
    if (k.unreadable) {
      // Counted when it would have been a candidate as far as memtrimd can
      // tell without its maps: the command line (world-readable) passes the
      // regexes and its RSS the floor.
      if (CommandLineSelected(st->name, k.candidate.cmdline, st->rss_anon + st->vm_swap)) {
        if (out.unreadable++ == 0) out.unreadable_reason = k.unreadable->message();
      }
      continue;
    }
    k.candidate.rss_bytes = st->vm_rss;
    k.candidate.private_bytes = st->rss_anon + st->vm_swap;
    candidates.push_back(k.candidate);
  }
  std::erase_if(known_, [this](const auto& entry) { return entry.second.seen_in_scan != scan_; });
  NodeChoice choice = ChooseNodeTargets(candidates, selectors_, ::getpid());
  out.skipped_by_cap = choice.skipped_by_cap;
  for (std::size_t i : choice.chosen) {
    const Target& t = candidates[i].target;
    out.targets.push_back(t);
    if (known_[t.Key()].environ_unreadable) ++out.environ_unreadable;
  }
  return out;
}

}  // namespace memtrimd
