#include "daemon/sampling/slow_source.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <string>

#include "daemon/base/shutdown.h"

namespace memtrimd {

namespace {

// How soon a failed run for a young process is tried again.
constexpr std::chrono::seconds kYoungRetry{2};

// Whether `t` started less than `age` ago.
bool YoungerThan(const Target& t, std::chrono::milliseconds age) {
  const double started = ProcessStartTimeSeconds(t.start_ticks);
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  return started > 0 && now - started < std::chrono::duration<double>(age).count();
}

}  // namespace

struct SlowSource::State {
  std::shared_ptr<Collector> collector;
  std::chrono::milliseconds interval{0};

  std::mutex mu;
  std::condition_variable cv;
  std::optional<Target> target;
  // Bumped on every target change, so that a run that ends after the target
  // changed is not published as the new target's.
  uint64_t generation = 0;
  std::chrono::steady_clock::time_point next_run{};
  std::shared_ptr<const FinishedRun> latest;
  uint64_t runs_finished = 0;  // for WaitForRunsPast
  bool stop = false;
  bool exited = false;
};

SlowSource::SlowSource(std::shared_ptr<Collector> collector, std::chrono::milliseconds interval)
    : state_(std::make_shared<State>()) {
  state_->collector = std::move(collector);
  state_->interval = interval;
  thread_ = std::thread([s = state_] { Run(s); });
}

SlowSource::~SlowSource() { Stop(); }

void SlowSource::SetTarget(const std::optional<Target>& target) {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    std::optional<Target>& cur = state_->target;
    if (target.has_value() == cur.has_value() && (!target || target->SameProcess(*cur))) return;
    cur = target;
    ++state_->generation;
    state_->latest.reset();
    state_->next_run = std::chrono::steady_clock::now();
  }
  state_->cv.notify_all();
}

std::shared_ptr<const FinishedRun> SlowSource::Latest() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->latest;
}

void SlowSource::Stop(std::chrono::milliseconds grace) {
  if (!thread_.joinable()) return;
  bool exited = false;
  {
    std::unique_lock<std::mutex> lock(state_->mu);
    state_->stop = true;
    state_->cv.notify_all();
    // An idle thread ends at once; a short grace lets a run that is about to
    // finish end cleanly rather than be abandoned.
    exited = state_->cv.wait_for(lock, grace, [this] { return state_->exited; });
  }
  if (exited) {
    thread_.join();
  } else {
    thread_.detach();
    CountAbandoned();
  }
}

uint64_t SlowSource::RunSoon() {
  uint64_t runs = 0;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->next_run = std::chrono::steady_clock::now();
    runs = state_->runs_finished;
  }
  state_->cv.notify_all();
  return runs;
}

bool SlowSource::WaitForRunsPast(uint64_t runs, std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(state_->mu);
  return state_->cv.wait_until(lock, deadline, [&] {
    return state_->runs_finished > runs || state_->stop || !state_->target;
  }) && state_->runs_finished > runs;
}

void SlowSource::Run(const std::shared_ptr<State>& s) {
  std::unique_lock<std::mutex> lock(s->mu);
  while (!s->stop) {
    if (!s->target) {
      s->cv.wait(lock);
      continue;
    }
    auto now = std::chrono::steady_clock::now();
    if (now < s->next_run) {
      s->cv.wait_until(lock, s->next_run);
      continue;
    }
    Target target = *s->target;
    uint64_t generation = s->generation;
    lock.unlock();

    auto run = std::make_shared<FinishedRun>();
    run->target = target;
    auto t0 = std::chrono::steady_clock::now();
    Status st = s->collector->Collect(target, run->sample);
    auto t1 = std::chrono::steady_clock::now();
    run->outcome = {std::string(s->collector->Name()), st.ok(),
                    std::chrono::duration<double>(t1 - t0).count(), st.ok() ? "" : st.message(),
                    st.cause()};

    lock.lock();
    if (generation != s->generation) continue;  // the target changed meanwhile
    s->latest = std::move(run);
    ++s->runs_finished;
    s->cv.notify_all();  // WaitForRunsPast
    // The interval counts from the start of a run; after a run longer than
    // that (deadlines on a stopped target), wait a whole interval again
    // rather than run back to back.
    s->next_run = t0 + s->interval;
    if (s->next_run < t1) s->next_run = t1 + s->interval;
    if (!st.ok() && YoungerThan(target, s->interval)) {
      // A process that started moments ago (a JVM that cannot start its
      // attach listener yet, a preload agent not yet listening) is asked
      // again soon, not a whole interval later: a shell entrypoint that
      // execs java is found while the JVM is starting.
      s->next_run = std::min(s->next_run, t1 + kYoungRetry);
    }
  }
  s->exited = true;
  s->cv.notify_all();
}

}  // namespace memtrimd
