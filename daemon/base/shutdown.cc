#include "daemon/base/shutdown.h"

#include <atomic>
#include <condition_variable>
#include <mutex>

namespace memtrimd {
namespace {

struct Shutdown {
  std::mutex mu;
  std::condition_variable cv;
  bool requested = false;
  std::atomic<std::size_t> abandoned{0};
};

// Never destroyed: an abandoned call's thread may still signal it while the
// process runs its exit handlers.
Shutdown& State() {
  static Shutdown* s = new Shutdown;
  return *s;
}

}  // namespace

void RequestShutdown() {
  Shutdown& s = State();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.requested = true;
  }
  s.cv.notify_all();
}

bool ShutdownRequested() {
  Shutdown& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.requested;
}

std::size_t AbandonedCalls() { return State().abandoned.load(); }
void CountAbandoned() { State().abandoned.fetch_add(1); }

namespace detail {

bool WaitDoneUnlessShutdown(const CallState& state) {
  Shutdown& s = State();
  std::unique_lock<std::mutex> lock(s.mu);
  s.cv.wait(lock, [&] { return state.done || s.requested; });
  return state.done;
}

void MarkDone(CallState& state) {
  Shutdown& s = State();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    state.done = true;
  }
  // One condition variable for every waiter: calls are few (a trim, a manual
  // trim), so waking them all costs nothing.
  s.cv.notify_all();
}

}  // namespace detail
}  // namespace memtrimd
