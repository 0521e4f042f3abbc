#include "collectors/jvm/signal_record.h"

#include <iterator>

#include "collectors/procfs/target_reader.h"

namespace memtrimd::jvm {
namespace {

// Past this size, entries whose process is gone (or whose pid now belongs
// to another process) are dropped; a live one is never forgotten.
constexpr std::size_t kPruneAbove = 64;

}  // namespace

bool SignalRecord::SignalledWithoutListener(const ProcessKey& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  return instances_.count(key) != 0;
}

void SignalRecord::RecordSignalWithoutListener(const ProcessKey& key) {
  std::lock_guard<std::mutex> lock(mu_);
  if (instances_.size() >= kPruneAbove) {
    for (auto it = instances_.begin(); it != instances_.end();) {
      it = procfs::StillRunning(*it, proc_root_) ? std::next(it) : instances_.erase(it);
    }
  }
  instances_.insert(key);
}

}  // namespace memtrimd::jvm
