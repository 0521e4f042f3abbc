#include "collectors/jvm/agent_load_record.h"

#include <iterator>
#include <utility>

#include "collectors/procfs/target_reader.h"

namespace memtrimd::jvm {
namespace {

// Past this size, outcomes of processes that are gone are dropped.
constexpr std::size_t kPruneAbove = 256;

}  // namespace

AgentLoadOutcome AgentLoadRecord::LoadOnce(const Target& t, const AgentLoadOptions& o) {
  const ProcessKey me = t.Key();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = outcomes_.find(me); it != outcomes_.end()) return it->second;
    // Another thread is at it (two collectors on one JVM): not twice.
    if (busy_.count(me)) {
      return {AgentLoadResult::kPresent, "not loaded: a load is under way"};
    }
    busy_.insert(me);
  }
  AgentLoadOutcome out = LoadAgentInto(t, o);
  AgentLoadListener listener;
  {
    std::lock_guard<std::mutex> lock(mu_);
    busy_.erase(me);
    if (outcomes_.size() >= kPruneAbove) {
      for (auto it = outcomes_.begin(); it != outcomes_.end();) {
        it = procfs::StillRunning(it->first, proc_root_) ? std::next(it) : outcomes_.erase(it);
      }
    }
    outcomes_[me] = out;
    listener = listener_;
  }
  if (listener) listener(t, out);
  return out;
}

std::optional<AgentLoadOutcome> AgentLoadRecord::Recorded(const ProcessKey& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = outcomes_.find(key);
  if (it == outcomes_.end()) return std::nullopt;
  return it->second;
}

void AgentLoadRecord::SetListener(AgentLoadListener listener) {
  std::lock_guard<std::mutex> lock(mu_);
  listener_ = std::move(listener);
}

}  // namespace memtrimd::jvm
