// The sweep of stale agent sockets (collectors/agent/client/socket_sweep.h)
// at a bounded rate: at most one every `every`, on a thread of its own (a
// target's /tmp may sit on a FUSE or network filesystem that never answers;
// then no other sweep starts and sampling goes on), with what it removed
// counted and logged.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "collectors/common/target.h"

namespace memtrimd {

class SocketSweeper {
 public:
  // The sweep thread's name (top -H; tests tell it from lasting threads).
  static constexpr const char* kThreadName = "memtrimd-sweep";

  explicit SocketSweeper(std::chrono::milliseconds every);

  // Starts a sweep of the /tmp of `targets` when one is due and none is
  // running; never waits for it.
  void MaybeStart(const std::vector<Target>& targets);

  // Stale agent sockets removed since memtrimd started.
  uint64_t removed() const;

 private:
  struct State;
  std::chrono::milliseconds every_;
  std::optional<std::chrono::steady_clock::time_point> last_;
  std::shared_ptr<State> state_;
};

}  // namespace memtrimd
