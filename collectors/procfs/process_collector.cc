#include "collectors/procfs/process_collector.h"

#include "collectors/common/file_reader.h"
#include "collectors/procfs/proc_status.h"
#include "collectors/sample.h"

namespace memtrimd::procfs {

Status ProcessCollector::Collect(const Target& target, TargetSample& out) {
  Result<std::string> text = ReadSmallFile(target.proc_dir + "/status");
  if (!text.ok()) return text.status();
  Result<ProcStatus> st = ParseProcStatus(*text);
  if (!st.ok()) return st.status();
  if (!st->has_memory) {
    return Status(ErrorCode::kNotFound, "process has no memory (exited, now a zombie)");
  }
  out.process = std::move(st).value();
  if (!env_read_ || env_pid_ != target.pid || env_start_ticks_ != target.start_ticks) {
    env_read_ = true;
    env_pid_ = target.pid;
    env_start_ticks_ = target.start_ticks;
    env_.reset();
    // Another user's environ needs ptrace-read access; without it the
    // settings are unknown (absent), not "none set".
    Result<std::string> environ = ReadSmallFile(target.proc_dir + "/environ", 1u << 20);
    if (environ.ok()) env_ = MallocEnvFrom(*environ);
  }
  out.malloc_env = env_;
  return Status::Ok();
}

}  // namespace memtrimd::procfs
