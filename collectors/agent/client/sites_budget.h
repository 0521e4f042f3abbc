// One memory budget for every target's allocation sites on the node: the
// kept profiles (parsed stacks, their symbolisation, named sites), each
// target's site history and the symbol cache's cap, added up. A target's
// answer is its own to shape (its stacks, the names in the files it maps),
// so what one target or many together may make memtrimd hold is decided
// here, not by what they send. Past the budget a profile keeps fewer
// stacks, or none; what was dropped is counted (memtrimd_sites_dropped_total).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "collectors/common/process_key.h"

namespace memtrimd::agent {

// The default --sites.memory-budget: the symbol cache gets 16 MiB (libjvm.so's
// functions take about 3 MiB), profiles 2 MiB a target at most. With
// memtrimd's own 12 MiB over 50 targets, two profile requests at once (2
// MiB each) and one answer being parsed (at most 4 MiB and about as much
// parsed), it stays within the DaemonSet's 64 MiB.
inline constexpr std::size_t kDefaultSitesBudgetBytes = 32u << 20;
// What one target's site history holds (daemon/report/site_history: 10,152
// bytes), charged with its profile.
inline constexpr std::size_t kSiteHistoryBytes = 10152;

// The budget's figures at one moment, for /metrics, /report and the page.
struct SitesBudgetState {
  std::size_t limit_bytes = 0;
  std::size_t held_bytes = 0;    // symbol cache's cap + profiles + histories
  std::size_t targets = 0;       // targets with a profile charged
  uint64_t dropped_targets = 0;  // reads whose profile was not kept at all
  uint64_t dropped_stacks = 0;   // stacks left out to fit
};

class SitesBudget : public std::enable_shared_from_this<SitesBudget> {
 public:
  // `fixed_bytes`: what is charged whatever the targets do (the symbol
  // cache's cap).
  SitesBudget(std::size_t limit_bytes, std::size_t fixed_bytes)
      : limit_(limit_bytes), fixed_(fixed_bytes) {}

  // The most one target's profile may hold: an eighth of what the cache
  // leaves, so that one target cannot take the budget from the others and
  // a profile request (about a profile's size) stays small.
  std::size_t TargetShare() const;
  // Bytes `key`'s next profile may hold: its share, and no more than what
  // the other targets leave (its own current profile is replaced).
  std::size_t AvailableFor(const ProcessKey& key) const;
  // Charges `bytes` to `key` as its current profile; null when they do not
  // fit. Dropping the returned handle (with the profile that holds it)
  // gives them back, unless a newer profile of `key` replaced it.
  std::shared_ptr<const void> Charge(const ProcessKey& key, std::size_t bytes);

  void CountDroppedTarget();
  void CountDroppedStacks(uint64_t n);
  SitesBudgetState State() const;
  std::size_t limit_bytes() const { return limit_; }

  // One target's sites read and built at a time on the node: what is
  // parsed of an answer (up to the agent client's response cap) is held
  // only while its profile is built, so at most one such answer is, beside
  // those of targets whose own memory map cannot be read (the lock is let
  // go for the pagemap and maps reads, which wait while the target holds
  // its mmap lock): one each, on that target's own thread.
  std::timed_mutex& builder() { return builder_; }

 private:
  struct Held {
    std::size_t bytes = 0;
    uint64_t id = 0;
  };
  void Release(const ProcessKey& key, uint64_t id);

  mutable std::mutex mu_;
  std::size_t limit_;
  std::size_t fixed_;
  std::map<ProcessKey, Held> held_;
  std::size_t held_bytes_ = 0;  // sum of held_
  uint64_t next_id_ = 1;
  uint64_t dropped_targets_ = 0;
  uint64_t dropped_stacks_ = 0;
  std::timed_mutex builder_;
};

}  // namespace memtrimd::agent
