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
  return Status::Ok();
}

}  // namespace memtrimd::procfs
