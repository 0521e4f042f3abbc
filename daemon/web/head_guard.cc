#include "daemon/web/head_guard.h"

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace memtrimd {
namespace {

using Clock = std::chrono::steady_clock;

// A real-time signal nothing else in memtrimd uses. Sent only to civetweb's
// workers with pthread_kill; its handler does nothing, and without
// SA_RESTART the poll() the worker waits in returns EINTR.
int WakeSignal() { return SIGRTMIN + 1; }

void Nothing(int) {}

Status InstallHandlerOnce() {
  static const int error = [] {
    struct sigaction sa {};
    sa.sa_handler = &Nothing;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART: the point is the EINTR
    return ::sigaction(WakeSignal(), &sa, nullptr) == 0 ? 0 : errno;
  }();
  if (error != 0) {
    return Status(
        ErrorCode::kInternal,
        std::string("cannot install the HTTP workers' signal handler: ") + std::strerror(error));
  }
  return Status::Ok();
}

}  // namespace

ReleaseDecision DueForRelease(const std::vector<WorkerView>& workers, Clock::time_point now,
                              const HeadGuardOptions& options) {
  ReleaseDecision d;
  const auto not_waiting =
      std::count_if(workers.begin(), workers.end(), [](const WorkerView& w) { return !w.waiting; });
  if (not_waiting >= options.reserve) return d;
  for (std::size_t i = 0; i < workers.size(); ++i) {
    const WorkerView& w = workers[i];
    if (!w.waiting) continue;
    Clock::time_point due = w.since + options.min_age;
    if (w.signalled_at != Clock::time_point{}) {
      due = std::max(due, w.signalled_at + options.resignal);
    }
    if (due <= now) {
      d.release.push_back(i);
      d.next_check = std::min(d.next_check, now + options.resignal);
    } else {
      d.next_check = std::min(d.next_check, due);
    }
  }
  return d;
}

Status HeadGuard::Start() {
  Status installed = InstallHandlerOnce();
  if (!installed.ok()) return installed;
  std::lock_guard<std::mutex> lock(mu_);
  stop_ = false;
  watchdog_ = std::thread([this] { Run(); });
  return Status::Ok();
}

void HeadGuard::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
}

HeadGuard::Worker* HeadGuard::Self() {
  const pthread_t self = pthread_self();
  for (Worker& w : workers_) {
    if (pthread_equal(w.thread, self)) return &w;
  }
  return nullptr;
}

void HeadGuard::WorkerStarted() {
  // memtrimd's main thread blocks the signals it waits for before it starts
  // threads; this one must reach the worker whatever the mask it inherited.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, WakeSignal());
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  std::lock_guard<std::mutex> lock(mu_);
  if (Self() == nullptr) workers_.push_back(Worker{pthread_self(), {}});
}

void HeadGuard::WorkerExiting() {
  std::lock_guard<std::mutex> lock(mu_);
  const pthread_t self = pthread_self();
  workers_.erase(std::remove_if(workers_.begin(), workers_.end(),
                                [&](const Worker& w) { return pthread_equal(w.thread, self); }),
                 workers_.end());
}

void HeadGuard::Set(bool waiting, bool keep_since) {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Worker* w = Self();
    if (w == nullptr) return;
    if (waiting && keep_since && w->view.waiting) return;
    w->view.waiting = waiting;
    w->view.since = waiting ? Clock::now() : Clock::time_point{};
    w->view.signalled_at = Clock::time_point{};
    if (waiting && !watchdog_busy_) {
      // Only when workers run short is there anything to do; the watchdog
      // sleeps otherwise, however many requests come and go.
      const auto not_waiting = std::count_if(workers_.begin(), workers_.end(),
                                             [](const Worker& x) { return !x.view.waiting; });
      wake = not_waiting < options_.reserve;
    }
  }
  if (wake) wake_.notify_one();
}

void HeadGuard::Waiting() { Set(true, true); }
void HeadGuard::Serving() { Set(false, false); }
void HeadGuard::Closed() { Set(false, false); }

uint64_t HeadGuard::interrupts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return interrupts_;
}

void HeadGuard::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  std::vector<WorkerView> views;
  while (!stop_) {
    views.clear();
    for (const Worker& w : workers_) views.push_back(w.view);
    const Clock::time_point now = Clock::now();
    ReleaseDecision d = DueForRelease(views, now, options_);
    for (std::size_t i : d.release) {
      // Under mu_: the worker cannot have moved on to serving (Serving
      // takes mu_ too), so the signal finds it still waiting, or between
      // two system calls, where it interrupts nothing and is sent again.
      if (pthread_kill(workers_[i].thread, WakeSignal()) == 0) ++interrupts_;
      workers_[i].view.signalled_at = now;
    }
    if (d.next_check == Clock::time_point::max()) {
      watchdog_busy_ = false;
      wake_.wait(lock);
    } else {
      watchdog_busy_ = true;
      wake_.wait_until(lock, d.next_check);
    }
  }
}

}  // namespace memtrimd
