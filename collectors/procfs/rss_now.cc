#include "collectors/procfs/rss_now.h"

#include "collectors/common/file_reader.h"
#include "collectors/procfs/proc_status.h"

namespace memtrimd::procfs {

uint64_t RssNow(const std::string& proc_dir) {
  Result<std::string> text = ReadSmallFile(proc_dir + "/status");
  if (!text.ok()) return 0;
  Result<ProcStatus> status = ParseProcStatus(*text);
  return status.ok() && status->has_memory ? status->Rss() : 0;
}

}  // namespace memtrimd::procfs
