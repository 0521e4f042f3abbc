#include "collectors/jvm/signal_record.h"

#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "collectors/common/file_reader.h"
#include "collectors/procfs/proc_stat.h"

namespace memtrimd::jvm {
namespace {

using Instance = std::pair<pid_t, uint64_t>;

struct Record {
  std::mutex mu;
  std::set<Instance> instances;
};

Record& TheRecord() {
  static Record* r = new Record;  // never destroyed: used from any thread until exit
  return *r;
}

// Past this size, entries whose process is gone (or whose pid now belongs
// to another process) are dropped; a live one is never forgotten.
constexpr std::size_t kPruneAbove = 64;

bool StillRunning(const Instance& i) {
  Result<std::string> stat = ReadSmallFile("/proc/" + std::to_string(i.first) + "/stat");
  if (!stat.ok()) return stat.status().code() != ErrorCode::kNotFound;
  Result<procfs::ProcStat> parsed = procfs::ParseProcStat(*stat);
  return !parsed.ok() || parsed->start_ticks == i.second;
}

}  // namespace

bool SignalledWithoutListener(pid_t pid, uint64_t start_ticks) {
  Record& r = TheRecord();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.instances.count({pid, start_ticks}) != 0;
}

void RecordSignalWithoutListener(pid_t pid, uint64_t start_ticks) {
  Record& r = TheRecord();
  std::lock_guard<std::mutex> lock(r.mu);
  if (r.instances.size() >= kPruneAbove) {
    for (auto it = r.instances.begin(); it != r.instances.end();) {
      it = StillRunning(*it) ? std::next(it) : r.instances.erase(it);
    }
  }
  r.instances.insert({pid, start_ticks});
}

}  // namespace memtrimd::jvm
