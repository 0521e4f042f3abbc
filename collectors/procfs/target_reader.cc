#include "collectors/procfs/target_reader.h"

#include "collectors/common/file_reader.h"
#include "collectors/procfs/elf_symbols.h"
#include "collectors/procfs/proc_stat.h"
#include "collectors/procfs/proc_status.h"
#include "collectors/procfs/runtime.h"

namespace memtrimd::procfs {

Result<uint64_t> ReadStartTicks(const std::string& proc_dir) {
  Result<std::string> text = ReadSmallFile(proc_dir + "/stat");
  if (!text.ok()) return text.status();
  Result<ProcStat> st = ParseProcStat(*text);
  if (!st.ok()) return st.status();
  if (st->Exited()) {
    return Status(ErrorCode::kNotFound, "pid " + std::to_string(st->pid) + " exited (zombie)");
  }
  return st->start_ticks;
}

Result<Target> ReadTarget(const std::string& proc_root, pid_t pid) {
  Target t;
  t.pid = pid;
  t.proc_dir = proc_root + "/" + std::to_string(pid);
  Result<uint64_t> ticks = ReadStartTicks(t.proc_dir);
  if (!ticks.ok()) return ticks.status();
  t.start_ticks = *ticks;
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
  t.nspid = st->nspid;
  t.uid = st->euid;
  t.gid = st->egid;
  MapsFacts facts;
  // maps needs the same access as smaps: failing here means memtrimd cannot
  // watch this process at all, so it is an error, not an unknown runtime.
  Status maps = ForEachLine(t.proc_dir + "/maps", 256u << 20,
                            [&](std::string_view line) { facts.Fold(line); });
  if (!maps.ok()) return maps;
  t.runtime = facts.runtime();
  t.allocator = facts.allocator(&t.allocator_source);
  // A glibc program whose maps show no allocator library may have one
  // linked into its executable; its symbols say so. Read once per process
  // (at most 16 MiB of symbol tables); a JVM's launcher never has one.
  if (t.runtime == Runtime::kGlibc && t.allocator == Allocator::kGlibc) {
    Result<std::optional<Allocator>> linked = StaticAllocator(t);
    if (linked.ok() && *linked) {
      t.allocator = **linked;
      t.allocator_source = std::string(AllocatorName(**linked)) + " linked into the executable";
    }
  }
  return t;
}

}  // namespace memtrimd::procfs
