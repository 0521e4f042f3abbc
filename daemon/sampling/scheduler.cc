#include "daemon/sampling/scheduler.h"

#include <malloc.h>

#include <algorithm>

#include "collectors/procfs/target_reader.h"
#include "daemon/base/log.h"
#include "daemon/base/shutdown.h"

namespace memtrimd {

Scheduler::Scheduler(TargetSelector selector, std::vector<CollectorSlot> slots,
                     std::chrono::milliseconds interval, SnapshotStore& store)
    : selector_(std::move(selector)), slots_(std::move(slots)), interval_(interval), store_(store) {
  for (CollectorSlot& slot : slots_) {
    std::unique_ptr<SlowSource> source;
    if (slot.own_thread) {
      // "Every sample" for a socket collector means on the sample interval,
      // on its own thread.
      auto every = slot.interval.count() > 0 ? slot.interval : interval_;
      source = std::make_unique<SlowSource>(slot.collector, every);
    }
    slow_.push_back(std::move(source));
  }
}

Scheduler::~Scheduler() { Stop(); }

void Scheduler::Start() {
  Tick();
  thread_ = std::thread([this] { Run(); });
}

void Scheduler::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  for (std::unique_ptr<SlowSource>& source : slow_) {
    if (source) source->Stop();
  }
}

void Scheduler::PointSlowSources() {
  for (std::unique_ptr<SlowSource>& source : slow_) {
    if (source) source->SetTarget(target_);
  }
}

void Scheduler::Run() {
  auto next = std::chrono::steady_clock::now() + interval_;
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    if (cv_.wait_until(lock, next, [this] { return stop_ || tick_now_; })) {
      if (stop_) break;
      // Woken by AfterTrim: one extra tick; the schedule stays.
      tick_now_ = false;
      lock.unlock();
      Tick();
      lock.lock();
      continue;
    }
    lock.unlock();
    Tick();
    // What memtrimd asks of its targets, it does itself: a burst of
    // concurrent scrapes or a large smaps read leaves freed memory in its
    // arenas, which glibc keeps. Giving it back after each sample keeps
    // memtrimd's RSS flat; with two small arenas this takes microseconds.
    malloc_trim(0);
    lock.lock();
    next += interval_;
    // After a slow tick, do not fire a burst of catch-up ticks.
    auto now = std::chrono::steady_clock::now();
    if (next < now) next = now + interval_;
  }
}

void Scheduler::CheckTargetAlive() {
  if (!target_) return;
  Result<uint64_t> ticks = procfs::ReadStartTicks(target_->proc_dir);
  if (ticks.ok() && *ticks == target_->start_ticks) return;
  log::Warn("target exited", {{"pid", std::to_string(target_->pid)}, {"comm", target_->comm}});
  if (selector_.rule().mode == TargetRule::Mode::kPid) fixed_pid_gone_ = true;
  target_.reset();
  // A new target starts with fresh collector state (e.g. smaps read at once).
  for (CollectorSlot& slot : slots_) {
    slot.last_run.reset();
    slot.last_error.clear();
  }
}

void Scheduler::SelectIfNeeded(std::string& reason) {
  if (target_) return;
  if (fixed_pid_gone_) {
    reason = "target pid " + std::to_string(selector_.rule().pid) + " exited";
    return;
  }
  Result<Target> t = selector_.Select();
  if (!t.ok()) {
    reason = t.status().message();
    if (reason != last_no_target_reason_) {
      log::Warn("no target", {{"rule", selector_.Describe()}, {"reason", reason}});
      last_no_target_reason_ = reason;
    }
    return;
  }
  target_ = std::move(t).value();
  last_no_target_reason_.clear();
  log::Info("target selected", {{"pid", std::to_string(target_->pid)},
                                {"comm", target_->comm},
                                {"runtime", RuntimeName(target_->runtime)},
                                {"rule", selector_.Describe()}});
}

void Scheduler::LogCollectorOutcomes(const TargetSnapshot& ts) {
  for (const CollectorOutcome& o : ts.collectors) {
    for (CollectorSlot& slot : slots_) {
      if (slot.collector->Name() != o.name) continue;
      // Log a failure once, when it starts or its reason changes, and the
      // recovery once; not on every sample.
      if (!o.success && o.error != slot.last_error) {
        log::Warn("collector failed", {{"collector", o.name}, {"err", o.error}});
        slot.last_error = o.error;
      } else if (o.success && !slot.last_error.empty()) {
        log::Info("collector recovered", {{"collector", o.name}});
        slot.last_error.clear();
      }
    }
  }
}

void Scheduler::RereadSmapsForJavaHeap(
    const TargetSnapshot& prev, const std::vector<std::shared_ptr<const FinishedRun>>& finished) {
  // The first smaps read of a JVM comes before the jvm collector's first run
  // (which runs on its own thread), so its breakdown has no Java heap. Once
  // the heap's range is known, read smaps again at once rather than a whole
  // --smaps.interval later; once per target, since then the range is known.
  const std::optional<GlibcHeaps>& glibc = prev.sample.glibc;
  if (!glibc || glibc->java_heap_known) return;
  bool range_known = false;
  for (const std::shared_ptr<const FinishedRun>& run : finished) {
    if (!run || !run->target.SameProcess(prev.target) || !run->sample.jvm) continue;
    const std::optional<jvm::HeapInfo>& heap = run->sample.jvm->gc_heap;
    range_known = range_known || (heap && heap->start && heap->end);
  }
  if (!range_known) return;
  for (CollectorSlot& slot : slots_) {
    if (slot.collector->Name() == "glibc") slot.last_run.reset();
  }
}

void Scheduler::AfterTrim(const Target& target, std::chrono::system_clock::time_point ended,
                          std::chrono::milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  // The socket collector that gave the malloc statistics ("agent", or
  // "jvm" on JDK 21+) reads them again at once; the others keep their
  // interval (a JVM collector run is several attach commands).
  std::string source_name;
  {
    std::lock_guard<std::mutex> lock(mu_);
    source_name = malloc_source_;
  }
  std::vector<std::pair<SlowSource*, uint64_t>> rerun;
  for (std::size_t i = 0; i < slow_.size(); ++i) {
    if (slow_[i] && slots_[i].collector->Name() == source_name) {
      rerun.emplace_back(slow_[i].get(), slow_[i]->RunSoon());
    }
  }
  auto tick_and_wait = [&] {
    uint64_t seen = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      tick_now_ = true;
      seen = published_;
    }
    cv_.notify_all();
    std::unique_lock<std::mutex> lock(mu_);
    return published_cv_.wait_until(lock, deadline, [&] { return stop_ || published_ > seen; });
  };
  {
    std::lock_guard<std::mutex> lock(mu_);
    last_trim_ = {target, ended};
    refresh_after_trim_ = true;
  }
  // First a sample with the trim's smaps (older statistics marked stale),
  // then one with the fresh statistics once the collectors have answered:
  // the estimate is shown as stale for as long as they take, not for a
  // whole sample interval.
  if (!tick_and_wait()) return;
  // A collector waiting out a stopped target's deadline must not hold up
  // shutdown: wait in slices and give up when it comes.
  auto reread_by = [&](SlowSource* source, uint64_t runs) {
    for (;;) {
      auto now = std::chrono::steady_clock::now();
      if (now >= deadline || ShutdownRequested()) return false;
      if (source->WaitForRunsPast(runs, std::min(deadline, now + std::chrono::milliseconds(50)))) {
        return true;
      }
    }
  };
  bool reread = !rerun.empty();
  for (auto& [source, runs] : rerun) reread = reread && reread_by(source, runs);
  if (reread) tick_and_wait();
}

void Scheduler::Tick() {
  auto snap = std::make_shared<Snapshot>();
  snap->sequence = ++sequence_;
  std::optional<std::pair<Target, std::chrono::system_clock::time_point>> last_trim;
  {
    std::lock_guard<std::mutex> lock(mu_);
    last_trim = last_trim_;
    if (refresh_after_trim_) {
      // The trim changed what smaps shows: read it again now, not a whole
      // --smaps.interval later.
      for (CollectorSlot& slot : slots_) {
        if (slot.collector->Name() == "glibc") slot.last_run.reset();
      }
      refresh_after_trim_ = false;
    }
  }
  CheckTargetAlive();
  std::string reason;
  SelectIfNeeded(reason);
  PointSlowSources();
  if (target_) {
    TargetSnapshot ts;
    ts.target = *target_;
    ts.start_time_seconds = ProcessStartTimeSeconds(target_->start_ticks);
    const TargetSnapshot* prev = nullptr;
    if (previous_ && !previous_->targets.empty() &&
        previous_->targets.front().target.SameProcess(*target_)) {
      prev = &previous_->targets.front();
    }
    std::vector<std::shared_ptr<const FinishedRun>> finished;
    for (const std::unique_ptr<SlowSource>& source : slow_) {
      finished.push_back(source ? source->Latest() : nullptr);
    }
    if (prev != nullptr) RereadSmapsForJavaHeap(*prev, finished);
    SampleTarget(slots_, false, prev, ts, &finished);
    // The target may have exited while we read it: then this sample is not
    // its, and the old series must go now rather than next tick.
    CheckTargetAlive();
    if (last_trim && last_trim->first.SameProcess(ts.target)) {
      ts.sample.last_trim_at = last_trim->second;
    }
    if (target_) {
      LogCollectorOutcomes(ts);
      snap->targets.push_back(std::move(ts));
    } else {
      reason = "target exited";
      PointSlowSources();
    }
  }
  snap->no_target_reason = reason;
  snap->taken_at = std::chrono::system_clock::now();
  std::string malloc_source;
  if (!snap->targets.empty() && snap->targets.front().sample.malloc) {
    malloc_source = snap->targets.front().sample.malloc->source;
  }
  previous_ = snap;
  store_.Publish(std::move(snap));
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++published_;
    malloc_source_ = malloc_source;
  }
  published_cv_.notify_all();
}

}  // namespace memtrimd
