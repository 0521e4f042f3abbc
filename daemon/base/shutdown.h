// Process-wide shutdown, and calls the daemon stops waiting for when it comes.
//
// A call that talks to the target (an attach command, an agent request, a
// trim) waits up to its deadline, and a stopped target makes it wait all of
// it: up to --trim.timeout, 60 s by default, past Kubernetes' 30 s grace
// period. Such calls run on a thread of their own; the caller waits for the
// result or for shutdown, whichever comes first. At shutdown the thread is
// left to finish on its own (it owns everything it touches), and the daemon
// exits without waiting for it. Those calls only read from the target or ask
// it to trim; the daemon writes nothing of its own that they could leave
// half-written.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <utility>

namespace memtrimd {

// Wakes every WaitUnlessShutdown. Idempotent.
void RequestShutdown();
bool ShutdownRequested();

// Calls left running at shutdown so far.
std::size_t AbandonedCalls();
void CountAbandoned();

namespace detail {
struct CallState {
  bool done = false;
};
// Waits until `state->done` or shutdown; true when done. `state` is read under
// the shutdown lock, and set with MarkDone.
bool WaitDoneUnlessShutdown(const CallState& state);
void MarkDone(CallState& state);
}  // namespace detail

// Runs `fn` on its own thread and returns its result, or nullopt when
// shutdown came first (the call is then abandoned, and counted).
template <typename T>
std::optional<T> CallUnlessShutdown(std::function<T()> fn) {
  if (ShutdownRequested()) return std::nullopt;
  struct Shared {
    detail::CallState state;
    std::optional<T> result;
  };
  auto shared = std::make_shared<Shared>();
  std::thread worker([shared, fn = std::move(fn)] {
    std::optional<T> r(fn());
    shared->result = std::move(r);
    detail::MarkDone(shared->state);
  });
  if (!detail::WaitDoneUnlessShutdown(shared->state)) {
    worker.detach();
    CountAbandoned();
    return std::nullopt;
  }
  worker.join();
  return std::move(shared->result);
}

}  // namespace memtrimd
