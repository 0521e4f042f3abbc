#include "collectors/procfs/task_states.h"

#include <dirent.h>

#include <memory>

#include "collectors/common/file_reader.h"
#include "collectors/common/text.h"
#include "collectors/procfs/proc_stat.h"
#include "collectors/procfs/target_reader.h"

namespace memtrimd::procfs {

bool AnyTaskUninterruptible(const std::string& proc_dir, std::size_t max_tasks) {
  const std::string tasks = GroupDir(proc_dir) + "/task";
  std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(tasks.c_str()), ::closedir);
  if (!dir) return true;
  std::size_t seen = 0;
  while (struct dirent* e = ::readdir(dir.get())) {
    if (!text::ParseUint(e->d_name)) continue;
    if (++seen > max_tasks) return true;
    Result<std::string> stat = ReadSmallFile(tasks + "/" + e->d_name + "/stat");
    // A thread that ended meanwhile waits for nothing.
    if (!stat.ok()) continue;
    Result<ProcStat> st = ParseProcStat(*stat);
    if (st.ok() && st->state == 'D') return true;
  }
  return false;
}

}  // namespace memtrimd::procfs
