#include "collectors/procfs/target_reader.h"

#include <dirent.h>

#include <memory>
#include <optional>
#include <string_view>

#include "collectors/common/text.h"

#include "collectors/common/file_reader.h"
#include "collectors/elf/elf_symbols.h"
#include "collectors/procfs/proc_stat.h"
#include "collectors/procfs/proc_status.h"
#include "collectors/procfs/runtime.h"

namespace memtrimd::procfs {

namespace {

// "<group>/task/<tid>" -> tid; 0 for any other form.
pid_t TaskOfDir(std::string_view dir) {
  std::size_t slash = dir.rfind('/');
  if (slash == std::string_view::npos || slash < 5) return 0;
  if (dir.substr(slash - 5, 6) != "/task/") return 0;
  std::optional<uint64_t> tid = text::ParseUint(dir.substr(slash + 1));
  if (!tid || *tid == 0 || *tid > 0x7fffffff) return 0;
  return static_cast<pid_t>(*tid);
}

// The leader's stat, and where a live process's files are read (with the
// exec mark read there: a zombie leader has no memory to show it).
struct GroupState {
  ProcStat leader;
  std::string read_dir;
  uint64_t exec_mark = 0;
};

// A thread of the group at `g.leader`'s directory other than the leader
// that has not exited, set as g's read_dir; false when there is none.
bool UseLiveThread(const std::string& group_dir, GroupState& g) {
  const std::string tasks = group_dir + "/task";
  std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(tasks.c_str()), ::closedir);
  if (!dir) return false;
  while (struct dirent* e = ::readdir(dir.get())) {
    std::optional<uint64_t> tid = text::ParseUint(e->d_name);
    if (!tid || static_cast<pid_t>(*tid) == g.leader.pid) continue;
    const std::string task_dir = tasks + "/" + e->d_name;
    Result<std::string> text = ReadSmallFile(task_dir + "/stat");
    if (!text.ok()) continue;  // ended while we looked
    Result<ProcStat> st = ParseProcStat(*text);
    if (st.ok() && !st->Exited()) {
      g.read_dir = task_dir;
      g.exec_mark = st->ExecMark();
      return true;
    }
  }
  return false;
}

Result<GroupState> ReadGroup(const std::string& proc_dir) {
  const std::string group = GroupDir(proc_dir);
  Result<std::string> text = ReadSmallFile(group + "/stat");
  if (!text.ok()) return text.status();
  Result<ProcStat> st = ParseProcStat(*text);
  if (!st.ok()) return st.status();
  GroupState g{std::move(st).value(), group};
  g.exec_mark = g.leader.ExecMark();
  if (!g.leader.Exited()) return g;
  if (g.leader.LeaderOfLiveGroup()) {
    // Keep reading through the same thread while it lives.
    const pid_t tid = TaskOfDir(proc_dir);
    if (tid != 0) {
      Result<std::string> own = ReadSmallFile(proc_dir + "/stat");
      if (own.ok()) {
        Result<ProcStat> own_st = ParseProcStat(*own);
        if (own_st.ok() && !own_st->Exited()) {
          g.read_dir = proc_dir;
          g.exec_mark = own_st->ExecMark();
          return g;
        }
      }
    }
    if (UseLiveThread(group, g)) return g;
  }
  return Status(ErrorCode::kNotFound, "pid " + std::to_string(g.leader.pid) + " exited (zombie)",
                Cause::kGone);
}

}  // namespace

std::string GroupDir(const std::string& proc_dir) {
  if (TaskOfDir(proc_dir) == 0) return proc_dir;
  return proc_dir.substr(0, proc_dir.rfind("/task/"));
}

pid_t ReadingTask(const Target& t) {
  const pid_t tid = TaskOfDir(t.proc_dir);
  return tid != 0 ? tid : t.pid;
}

Result<uint64_t> ReadStartTicks(const std::string& proc_dir) {
  Result<GroupState> g = ReadGroup(proc_dir);
  if (!g.ok()) return g.status();
  return g->leader.start_ticks;
}

Result<ProcessInstance> ReadInstance(const std::string& proc_dir) {
  Result<GroupState> g = ReadGroup(proc_dir);
  if (!g.ok()) return g.status();
  return ProcessInstance{g->leader.start_ticks, g->exec_mark};
}

Liveness CheckStillRunning(const Target& t) {
  Result<ProcessInstance> now = ReadInstance(t.proc_dir);
  if (!now.ok() || now->start_ticks != t.start_ticks) return Liveness::kExited;
  if (ExecMarksDiffer(now->exec_mark, t.exec_mark)) return Liveness::kExecd;
  return Liveness::kRunning;
}

bool StillRunning(const ProcessKey& key, const std::string& proc_root) {
  Result<uint64_t> now = ReadStartTicks(proc_root + "/" + std::to_string(key.pid));
  if (!now.ok()) return now.status().code() != ErrorCode::kNotFound;
  return *now == key.start_ticks;
}

Result<std::string> ProcessReadDir(const std::string& proc_dir) {
  Result<GroupState> g = ReadGroup(proc_dir);
  if (!g.ok()) return g.status();
  return std::move(g->read_dir);
}

Result<Target> ReadTarget(const std::string& proc_root, pid_t pid) {
  Target t;
  t.pid = pid;
  Result<GroupState> g = ReadGroup(proc_root + "/" + std::to_string(pid));
  if (!g.ok()) return g.status();
  t.proc_dir = std::move(g->read_dir);
  t.start_ticks = g->leader.start_ticks;
  t.exec_mark = g->exec_mark;
  Result<std::string> status_text = ReadSmallFile(t.proc_dir + "/status");
  if (!status_text.ok()) return status_text.status();
  Result<ProcStatus> st = ParseProcStatus(*status_text);
  if (!st.ok()) return st.status();
  if (!st->has_memory)
    return Status(ErrorCode::kNotFound,
                  "pid " + std::to_string(pid) + " is a kernel thread or a zombie");
  // /proc/<tid> exists for every thread too; a thread id is not a process.
  if (st->tgid != pid) {
    return Status(ErrorCode::kNotFound, "pid " + std::to_string(pid) + " is a thread of process " +
                                            std::to_string(st->tgid));
  }
  t.comm = st->name;
  if (t.proc_dir != GroupDir(t.proc_dir)) {
    // Read through a thread: the process's name is its leader's (a thread
    // may have named itself).
    Result<std::string> leader = ReadSmallFile(GroupDir(t.proc_dir) + "/status");
    if (leader.ok()) {
      Result<ProcStatus> lst = ParseProcStatus(*leader);
      if (lst.ok()) t.comm = lst->name;
    }
  }
  t.nspid = st->nspid;
  t.uid = st->euid;
  t.gid = st->egid;
  MapsFacts facts;
  // maps needs the same access as smaps: failing here means memtrimd cannot
  // watch this process at all, so it is an error, not an unknown runtime.
  Status maps = ForEachLine(t.proc_dir + "/maps", 256u << 20,
                            [&](std::string_view line) { facts.Fold(line); });
  if (!maps.ok()) return maps;
  t.still_loading = facts.StillLoading();
  t.runtime = facts.runtime();
  t.allocator = facts.allocator(&t.allocator_source);
  // A glibc program whose maps show no allocator library may have one
  // linked into its executable; its symbols say so. Read once per process
  // (at most 16 MiB of symbol tables); a JVM's launcher never has one.
  if (t.runtime == Runtime::kGlibc && t.allocator == Allocator::kGlibc) {
    Result<std::optional<Allocator>> linked = elf::StaticAllocator(t);
    if (linked.ok() && *linked) {
      t.allocator = **linked;
      t.allocator_source = std::string(AllocatorName(**linked)) + " linked into the executable";
    }
  }
  return t;
}

}  // namespace memtrimd::procfs
