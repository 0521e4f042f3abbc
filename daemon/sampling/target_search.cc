#include "daemon/sampling/target_search.h"

namespace memtrimd {

std::atomic<std::size_t> TargetSearch::running_{0};

std::shared_ptr<TargetSearch> TargetSearch::Start(std::shared_ptr<TargetSelector> selector) {
  auto search = std::make_shared<TargetSearch>();
  Launch(search, kThreadName, running_,
         [selector = std::move(selector)] { return selector->Select(); });
  return search;
}

}  // namespace memtrimd
