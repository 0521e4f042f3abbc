#include "collectors/agent/client/sites_budget.h"

#include <algorithm>

namespace memtrimd::agent {

std::size_t SitesBudget::TargetShare() const { return limit_ > fixed_ ? (limit_ - fixed_) / 8 : 0; }

std::size_t SitesBudget::AvailableFor(const ProcessKey& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::size_t others = held_bytes_;
  if (auto it = held_.find(key); it != held_.end()) others -= it->second.bytes;
  const std::size_t used = fixed_ + others;
  const std::size_t left = limit_ > used ? limit_ - used : 0;
  return std::min(left, TargetShare());
}

std::shared_ptr<const void> SitesBudget::Charge(const ProcessKey& key, std::size_t bytes) {
  uint64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::size_t others = held_bytes_;
    auto it = held_.find(key);
    if (it != held_.end()) others -= it->second.bytes;
    if (bytes > TargetShare() || fixed_ + others + bytes > limit_) return nullptr;
    id = next_id_++;
    held_bytes_ = others + bytes;
    held_[key] = Held{bytes, id};
  }
  std::weak_ptr<SitesBudget> self = weak_from_this();
  // A handle whose deleter gives the bytes back; the pointer is never read.
  return std::shared_ptr<const void>(static_cast<const void*>(this), [self, key, id](const void*) {
    if (auto b = self.lock()) b->Release(key, id);
  });
}

void SitesBudget::Release(const ProcessKey& key, uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = held_.find(key);
  // A newer profile of the target holds its own charge now.
  if (it == held_.end() || it->second.id != id) return;
  held_bytes_ -= it->second.bytes;
  held_.erase(it);
}

void SitesBudget::CountDroppedTarget() {
  std::lock_guard<std::mutex> lock(mu_);
  ++dropped_targets_;
}

void SitesBudget::CountDroppedStacks(uint64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  dropped_stacks_ += n;
}

SitesBudgetState SitesBudget::State() const {
  std::lock_guard<std::mutex> lock(mu_);
  return SitesBudgetState{limit_, fixed_ + held_bytes_, held_.size(), dropped_targets_,
                          dropped_stacks_};
}

}  // namespace memtrimd::agent
