#include "daemon/sampling/target_read.h"

#include <pthread.h>

#include <thread>

#include "daemon/sampling/watched_target.h"

namespace memtrimd {

std::atomic<std::size_t> TargetRead::running_{0};

std::shared_ptr<TargetRead> TargetRead::Start(std::shared_ptr<WatchedTarget> watched,
                                              std::shared_ptr<const Snapshot> previous,
                                              const TargetSnapshot* prev, ReadInputs inputs) {
  auto read = std::make_shared<TargetRead>();
  read->started_ = std::chrono::steady_clock::now();
  ++running_;
  // The thread owns what it touches (the target, the snapshot `prev` lies
  // in, this read), so a read that never ends costs its thread and nothing
  // else, and the daemon may exit without it.
  std::thread([read, watched = std::move(watched), previous = std::move(previous), prev, inputs] {
    // Named, so that top -H and tests tell these short-lived threads apart.
    pthread_setname_np(pthread_self(), kThreadName);
    TargetSnapshot ts = watched->Sample(prev, inputs);
    {
      std::lock_guard<std::mutex> lock(read->mu_);
      read->result_ = std::move(ts);
      read->ended_ = std::chrono::steady_clock::now();
      read->done_ = true;
    }
    read->cv_.notify_all();
    --running_;
  }).detach();
  return read;
}

bool TargetRead::WaitUntil(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_until(lock, deadline, [this] { return done_; });
}

bool TargetRead::finished() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

std::chrono::steady_clock::duration TargetRead::elapsed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return (done_ ? ended_ : std::chrono::steady_clock::now()) - started_;
}

TargetSnapshot TargetRead::Take() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::move(result_);
}

}  // namespace memtrimd
