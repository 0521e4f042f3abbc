// A read of a process's files run on a thread of its own, which the sampling
// thread waits for with a deadline and may leave behind.
//
// Reads of /proc and of paths in a target's root answer at once for a
// healthy, a stopped or a hung process, but not always: a lookup under a
// FUSE or network filesystem waits for its server (for good when it never
// answers, and no signal ends a request the server has taken), and
// /proc/<pid>/smaps, cmdline and environ wait while the process's memory map
// is write-locked. The thread owns everything its work touches, so a read
// that never ends costs that thread and nothing else, and the daemon may exit
// without it. TargetRead (a watched target's sample) and ProcessLook (node
// discovery's first look at a process) are the two kinds.
#pragma once

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

namespace memtrimd {

template <typename T>
class OffThread {
 public:
  OffThread() = default;
  OffThread(const OffThread&) = delete;
  OffThread& operator=(const OffThread&) = delete;

  // Waits until the work has ended or `deadline` passed; true when it ended.
  bool WaitUntil(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_until(lock, deadline, [this] { return done_; });
  }
  bool finished() const {
    std::lock_guard<std::mutex> lock(mu_);
    return done_;
  }
  // How long the work took (finished) or has taken so far.
  std::chrono::steady_clock::duration elapsed() const {
    std::lock_guard<std::mutex> lock(mu_);
    return (done_ ? ended_ : std::chrono::steady_clock::now()) - started_;
  }
  // The result. REQUIRES: finished(); call once (it is moved out).
  T Take() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::move(*result_);
  }

 protected:
  // Runs `work` on a detached thread named `name` (top -H and tests tell
  // these short-lived threads apart by it) that keeps `self` alive;
  // `running` counts such threads that have not ended.
  template <typename Self, typename Work>
  static void Launch(std::shared_ptr<Self> self, const char* name,
                     std::atomic<std::size_t>& running, Work work) {
    self->started_ = std::chrono::steady_clock::now();
    ++running;
    std::thread([self, name, &running, work = std::move(work)]() mutable {
      pthread_setname_np(pthread_self(), name);
      T result = work();
      {
        std::lock_guard<std::mutex> lock(self->mu_);
        self->result_.emplace(std::move(result));
        self->ended_ = std::chrono::steady_clock::now();
        self->done_ = true;
      }
      self->cv_.notify_all();
      --running;
    }).detach();
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::chrono::steady_clock::time_point started_{};
  std::chrono::steady_clock::time_point ended_{};
  std::optional<T> result_;  // set when done_
};

}  // namespace memtrimd
