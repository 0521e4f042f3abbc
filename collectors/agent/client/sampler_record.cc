#include "collectors/agent/client/sampler_record.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <thread>
#include <vector>

#include "collectors/agent/agent_protocol.h"
#include "collectors/agent/client/agent_sites.h"

namespace memtrimd::agent {

namespace {

// The process behind `t` still exists (its /proc directory; a reused pid
// with another start time is still dropped at the stop, by the agent's
// socket name).
bool StillThere(const Target& t) {
  struct stat st {};
  return ::stat(t.proc_dir.c_str(), &st) == 0;
}

}  // namespace

void SamplerRecord::TurnedOn(const Target& target) {
  std::lock_guard lock(mu_);
  if (targets_.size() >= kPruneAbove) {
    std::erase_if(targets_, [](const auto& kv) { return !StillThere(kv.second); });
  }
  targets_.insert_or_assign(target.Key(), target);
}

void SamplerRecord::TurnedOff(const Target& target) {
  std::lock_guard lock(mu_);
  targets_.erase(target.Key());
}

std::size_t SamplerRecord::Size() const {
  std::lock_guard lock(mu_);
  return targets_.size();
}

SamplerRecord::Stopped SamplerRecord::TurnAllOff(std::chrono::milliseconds total,
                                                 std::size_t workers,
                                                 const AgentCommander& command) {
  std::vector<Target> targets;
  {
    std::lock_guard lock(mu_);
    for (const auto& kv : targets_) targets.push_back(kv.second);
  }
  Stopped out;
  out.asked = targets.size();
  if (targets.empty()) return out;
  using Clock = std::chrono::steady_clock;
  // Shared with the workers, which may outlive this call: a call blocked
  // where no deadline reaches (a path lookup under a hung FUSE mount) is
  // left behind, never waited for past `total`.
  struct Shared {
    std::vector<Target> targets;
    AgentCommander command;
    Clock::time_point deadline;
    std::atomic<std::size_t> next{0};
    std::mutex mu;
    std::condition_variable done_cv;
    std::size_t off = 0;
    std::size_t finished = 0;
  };
  auto shared = std::make_shared<Shared>();
  shared->targets = std::move(targets);
  shared->command = command;
  shared->deadline = Clock::now() + total;
  const std::size_t n = std::clamp<std::size_t>(workers, 1, shared->targets.size());
  for (std::size_t w = 0; w < n; ++w) {
    std::thread([shared] {
      for (;;) {
        const std::size_t i = shared->next.fetch_add(1);
        if (i >= shared->targets.size()) break;
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(shared->deadline - Clock::now());
        if (left <= std::chrono::milliseconds(0)) break;
        AgentOptions o;
        o.timeout = left;
        Result<std::string> body =
            shared->command(shared->targets[i], AGENT_VERB_SAMPLING_OFF, o, nullptr);
        if (body.ok() && ParseSamplingStopped(*body).ok()) {
          std::lock_guard lock(shared->mu);
          ++shared->off;
        }
      }
      std::lock_guard lock(shared->mu);
      ++shared->finished;
      shared->done_cv.notify_all();
    }).detach();
  }
  {
    std::unique_lock lock(shared->mu);
    // A little past the deadline: a call that ends at it still counts.
    shared->done_cv.wait_until(lock, shared->deadline + std::chrono::milliseconds(200),
                               [&] { return shared->finished == n; });
    out.off = shared->off;
  }
  out.missed = out.asked - out.off;
  std::lock_guard lock(mu_);
  targets_.clear();
  return out;
}

}  // namespace memtrimd::agent
