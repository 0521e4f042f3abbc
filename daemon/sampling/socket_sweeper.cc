#include "daemon/sampling/socket_sweeper.h"

#include <pthread.h>

#include <set>
#include <string>
#include <thread>
#include <utility>

#include "collectors/agent/client/socket_sweep.h"
#include "daemon/base/log.h"

namespace memtrimd {

struct SocketSweeper::State {
  std::atomic<bool> running{false};
  std::atomic<uint64_t> removed{0};
  // The refusal is logged once, not at every sweep.
  std::atomic<bool> refusal_logged{false};
};

SocketSweeper::SocketSweeper(std::chrono::milliseconds every)
    : every_(every), state_(std::make_shared<State>()) {}

uint64_t SocketSweeper::removed() const { return state_->removed.load(); }

void SocketSweeper::MaybeStart(const std::vector<Target>& targets) {
  const auto now = std::chrono::steady_clock::now();
  if (targets.empty() || (last_ && now - *last_ < every_)) return;
  if (state_->running.exchange(true)) return;  // the last one has not ended
  last_ = now;
  // A name whose process memtrimd watches is never removed (an exec may be
  // starting its agent again at that very name).
  std::set<std::pair<uint64_t, uint64_t>> live;
  for (const Target& t : targets) live.insert({static_cast<uint64_t>(t.nspid), t.start_ticks});
  std::thread([state = state_, targets, live = std::move(live)] {
    pthread_setname_np(pthread_self(), kThreadName);
    agent::SweepResult r = agent::SweepAgentSockets(targets, live);
    if (r.removed > 0) {
      state->removed.fetch_add(r.removed);
      log::Info("removed stale agent sockets",
                {{"count", std::to_string(r.removed)}, {"directories", std::to_string(r.dirs)}});
    }
    if (r.refused > 0 && !state->refusal_logged.exchange(true)) {
      log::Warn("stale agent sockets left in place",
                {{"count", std::to_string(r.refused)}, {"err", r.refused_why}});
    }
    state->running.store(false);
  }).detach();
}

}  // namespace memtrimd
