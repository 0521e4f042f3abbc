#include "daemon/sampling/scheduler.h"

#include <malloc.h>

#include <algorithm>
#include <utility>

#include "collectors/procfs/target_reader.h"
#include "daemon/base/log.h"
#include "daemon/base/shutdown.h"

namespace memtrimd {

Scheduler::Scheduler(SchedulerOptions options, TargetSelector selector, SnapshotStore& store)
    : options_(std::move(options)),
      selector_(std::make_shared<TargetSelector>(std::move(selector))),
      store_(store),
      sweeper_(std::max<std::chrono::milliseconds>(options_.discovery_interval,
                                                   std::chrono::seconds(1))) {
  if (options_.node) discovery_.emplace(*options_.node, options_.proc_root);
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
  std::map<ProcessKey, std::shared_ptr<WatchedTarget>> targets;
  {
    std::lock_guard<std::mutex> lock(mu_);
    targets.swap(targets_);
  }
  for (auto& [key, target] : targets) target->Stop(std::chrono::milliseconds(50));
}

void Scheduler::Run() {
  auto next = std::chrono::steady_clock::now() + options_.interval;
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    if (cv_.wait_until(lock, next, [this] { return stop_ || tick_now_; })) {
      if (stop_) break;
      // Woken by AfterTrim: one extra tick of the trimmed targets; the
      // schedule stays.
      tick_now_ = false;
      std::set<ProcessKey> only;
      only.swap(tick_now_targets_);
      lock.unlock();
      TickTargets(&only);
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
    next += options_.interval;
    // After a slow tick, do not fire a burst of catch-up ticks.
    auto now = std::chrono::steady_clock::now();
    if (next < now) next = now + options_.interval;
  }
}

void Scheduler::Drop(const ProcessKey& key, const char* why) {
  std::shared_ptr<WatchedTarget> gone;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = targets_.find(key);
    if (it == targets_.end()) return;
    gone = std::move(it->second);
    targets_.erase(it);
    trim_notes_.erase(key);
    malloc_source_.erase(key);
  }
  const Target& t = gone->target();
  log::Info(why, {{"pid", std::to_string(t.pid)}, {"comm", t.comm}});
  // Its socket collectors may be waiting out a deadline on the dead process:
  // let them end on their own rather than hold this tick.
  gone->Stop(std::chrono::milliseconds(0));
}

void Scheduler::Add(const Target& target) {
  auto watched = std::make_shared<WatchedTarget>(target, options_.collector, options_.switches,
                                                 options_.interval);
  watched->allocator_change =
      allocator_history_.Seen(ProgramKey(target), target, std::chrono::system_clock::now());
  if (const auto& c = watched->allocator_change) {
    log::Info("allocator changed since the last run",
              {{"pid", std::to_string(target.pid)},
               {"before", AllocatorName(c->before)},
               {"after", AllocatorName(c->after)},
               {"before_pid", std::to_string(c->before_pid)}});
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    targets_[target.Key()] = std::move(watched);
  }
  log::Info("target selected",
            {{"pid", std::to_string(target.pid)},
             {"comm", target.comm},
             {"runtime", RuntimeName(target.runtime)},
             {"allocator", AllocatorName(target.allocator)},
             {"rule", options_.node ? std::string("node") : selector_->Describe()}});
}

void Scheduler::DropExited() {
  std::vector<std::pair<ProcessKey, procfs::Liveness>> gone;
  for (const auto& [key, watched] : targets_) {
    procfs::Liveness l = procfs::CheckStillRunning(watched->target());
    if (l != procfs::Liveness::kRunning) gone.emplace_back(key, l);
  }
  for (const auto& [key, l] : gone) DropEnded(key, l);
}

void Scheduler::DropEnded(const ProcessKey& key, procfs::Liveness why) {
  // After an exec the process is read afresh at the next look (the sidecar's
  // selector, node discovery), as the program it runs now: a fixed --pid is
  // still there.
  const bool execd = why == procfs::Liveness::kExecd;
  Drop(key, execd ? "target ran another program (exec)" : "target exited");
  if (!execd && !options_.node && selector_->rule().mode == TargetRule::Mode::kPid) {
    fixed_pid_gone_ = true;
  }
}

TargetScan Scheduler::UpdateTargets() {
  return discovery_ ? UpdateNodeTargets() : UpdateSidecarTarget();
}

TargetScan Scheduler::UpdateNodeTargets() {
  auto now = std::chrono::steady_clock::now();
  if (!next_discovery_ || now >= *next_discovery_) {
    next_discovery_ = now + options_.discovery_interval;
    Discovery found = discovery_->Discover();
    last_discovery_.skipped_by_cap = found.skipped_by_cap;
    last_discovery_.unreadable = found.unreadable;
    last_discovery_.looks_stalled = found.looks_stalled;
    // What memtrimd cannot see is said once, when it starts or changes;
    // the count is in memtrimd_targets_skipped{reason="unreadable"}.
    if (found.unreadable > 0 && found.unreadable_reason != logged_.unreadable_reason) {
      log::Warn("processes not readable",
                {{"count", std::to_string(found.unreadable)}, {"err", found.unreadable_reason}});
    }
    logged_.unreadable_reason = found.unreadable > 0 ? found.unreadable_reason : "";
    if (found.environ_unreadable > logged_.environ_unreadable) {
      log::Warn("environment not readable: MEMTRIMD_WATCH and MEMTRIMD_TRIM unknown, not trimmed",
                {{"count", std::to_string(found.environ_unreadable)},
                 {"err", "permission denied (needs CAP_DAC_OVERRIDE or the target's uid)"}});
    }
    logged_.environ_unreadable = found.environ_unreadable;
    // Looks this scan stopped waiting for are taken at the next tick.
    if (found.looks_young > 0) next_discovery_ = now;
    if (found.looks_stalled > logged_.looks_stalled) {
      log::Warn(
          "processes whose first read has not ended (a memory map held locked): not "
          "watched until it does",
          {{"count", std::to_string(found.looks_stalled)}});
    }
    logged_.looks_stalled = found.looks_stalled;
    std::map<ProcessKey, const Target*> wanted;
    for (const Target& t : found.targets) wanted[t.Key()] = &t;
    std::vector<ProcessKey> unwanted;
    for (const auto& [key, watched] : targets_) {
      if (!wanted.count(key)) unwanted.push_back(key);
    }
    // A target pushed out by the cap (or that opted out since) is no
    // longer watched; one that exited was dropped already.
    for (const ProcessKey& key : unwanted) Drop(key, "target no longer selected");
    for (const auto& [key, t] : wanted) {
      if (!targets_.count(key)) Add(*t);
    }
  }
  TargetScan scan = last_discovery_;
  if (targets_.empty()) scan.no_target_reason = "no process matches the node selectors";
  return scan;
}

TargetScan Scheduler::UpdateSidecarTarget() {
  TargetScan scan;
  std::string& no_target_reason = scan.no_target_reason;
  if (!targets_.empty()) return scan;
  if (fixed_pid_gone_) {
    no_target_reason = "target pid " + std::to_string(selector_->rule().pid) + " exited";
    return scan;
  }
  // Off the sampling thread: a process whose memory map is held locked
  // holds its reads (TargetSearch). A new search is waited for up to 1 s (a
  // match rule's scan gives up on command lines after 500 ms in all); one
  // that outlasted that is only looked at, at later ticks, and none other
  // starts meanwhile.
  auto wait_until = std::chrono::steady_clock::now();
  if (!search_) {
    search_ = TargetSearch::Start(selector_);
    wait_until += std::chrono::seconds(1);
  }
  if (!search_->WaitUntil(wait_until)) {
    no_target_reason =
        "the search for the target has run " +
        std::to_string(
            std::chrono::duration_cast<std::chrono::milliseconds>(search_->elapsed()).count()) +
        " ms: a read of a process waits (its memory map held locked, or a path on a stuck "
        "filesystem)";
    if (!last_no_target_was_search_) {
      log::Warn("no target", {{"rule", selector_->Describe()}, {"reason", no_target_reason}});
    }
    last_no_target_reason_ = no_target_reason;
    last_no_target_was_search_ = true;
    return scan;
  }
  Result<Target> t = std::exchange(search_, nullptr)->Take();
  // The search has ended: its selector is the sampling thread's again.
  const std::size_t stalled = selector_->looks_stalled();
  if (stalled > logged_.selector_stalled) {
    log::Warn(
        "processes whose command line did not come in time (a memory map held locked): not "
        "matched until it does",
        {{"count", std::to_string(stalled)}, {"rule", selector_->Describe()}});
  }
  logged_.selector_stalled = stalled;
  if (!t.ok()) {
    no_target_reason = t.status().message();
    last_no_target_was_search_ = false;
    if (no_target_reason != last_no_target_reason_) {
      log::Warn("no target", {{"rule", selector_->Describe()}, {"reason", no_target_reason}});
      last_no_target_reason_ = no_target_reason;
    }
    return scan;
  }
  last_no_target_reason_.clear();
  last_no_target_was_search_ = false;
  Add(*t);
  return scan;
}

void Scheduler::AfterTrim(const Target& target, std::chrono::system_clock::time_point ended,
                          std::chrono::milliseconds wait) {
  // The trim has just ended (the engine calls this after it): statistics
  // read from here on are newer, on the clock that does not step.
  const auto ended_steady = std::chrono::steady_clock::now();
  const auto deadline = ended_steady + wait;
  const ProcessKey key = target.Key();
  std::shared_ptr<WatchedTarget> watched;
  std::string source_name;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = targets_.find(key);
    if (it == targets_.end()) return;  // gone meanwhile: nothing to refresh
    watched = it->second;
    trim_notes_[key] = {ended, ended_steady, true};
    if (auto m = malloc_source_.find(key); m != malloc_source_.end()) source_name = m->second;
  }
  // The socket collector that gave the malloc statistics ("agent", or
  // "jvm" on JDK 21+) reads them again at once; the others keep their
  // interval (a JVM collector run is several attach commands).
  SlowSource* source = source_name.empty() ? nullptr : watched->Source(source_name);
  uint64_t runs = source != nullptr ? source->RunSoon() : 0;
  auto tick_and_wait = [&] {
    uint64_t seen = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      tick_now_ = true;
      tick_now_targets_.insert(key);
      seen = published_;
    }
    cv_.notify_all();
    std::unique_lock<std::mutex> lock(mu_);
    return published_cv_.wait_until(lock, deadline, [&] { return stop_ || published_ > seen; });
  };
  // First a sample with the trim's smaps (older statistics marked stale),
  // then one with the fresh statistics once the collector has answered: the
  // estimate is shown as stale for as long as it takes, not for a whole
  // sample interval.
  if (!tick_and_wait() || source == nullptr) return;
  // A collector waiting out a stopped target's deadline must not hold up
  // shutdown: wait in slices and give up when it comes.
  for (;;) {
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline || ShutdownRequested()) return;
    if (source->WaitForRunsPast(runs, std::min(deadline, now + std::chrono::milliseconds(50)))) {
      break;
    }
  }
  tick_and_wait();
}

std::chrono::milliseconds Scheduler::ReadDeadline() const {
  return std::min<std::chrono::milliseconds>(options_.interval, std::chrono::seconds(1));
}

std::optional<TargetSnapshot> Scheduler::ReadTarget(const std::shared_ptr<WatchedTarget>& watched,
                                                    const TargetSnapshot* prev) {
  const Target& t = watched->target();
  std::shared_ptr<TargetRead> late = std::exchange(watched->read_in_flight, nullptr);
  if (late && !late->finished()) {
    watched->read_in_flight = std::move(late);
    return std::nullopt;
  }
  std::optional<TargetSnapshot> result;
  if (late) {
    // A read that outlasted the deadline has ended: its sample is this
    // tick's. Still slow: the next read starts now, unwaited for.
    const double secs = std::chrono::duration<double>(late->elapsed()).count();
    result = late->Take();
    watched->slow = late->elapsed() > ReadDeadline();
    if (!watched->slow) {
      log::Info("target read ended in time again",
                {{"pid", std::to_string(t.pid)}, {"seconds", std::to_string(secs)}});
      return result;
    }
  }
  watched->FollowReadDir();
  ReadInputs inputs;
  inputs.last_trim_at = watched->last_trim_at;
  inputs.last_trim_steady = watched->last_trim_steady;
  inputs.reread_smaps = std::exchange(watched->refresh_after_trim, false);
  std::shared_ptr<TargetRead> read = TargetRead::Start(watched, previous_, prev, inputs);
  if (result) {
    watched->read_in_flight = std::move(read);
    return result;
  }
  if (read->WaitUntil(std::chrono::steady_clock::now() + ReadDeadline())) return read->Take();
  // Not back in time: a path served by a stuck FUSE or network filesystem,
  // a memory map held locked. The read keeps its thread; every other
  // target's sample goes on.
  watched->read_in_flight = std::move(read);
  watched->slow = true;
  log::Warn("target read outlasted its deadline: its last sample is carried until the read ends",
            {{"pid", std::to_string(t.pid)},
             {"comm", t.comm},
             {"deadline_ms", std::to_string(ReadDeadline().count())}});
  return std::nullopt;
}

void Scheduler::TickTargets(const std::set<ProcessKey>* only) {
  auto snap = std::make_shared<Snapshot>();
  snap->sequence = ++sequence_;
  snap->node_mode = options_.node.has_value();
  DropExited();
  TargetScan scan = UpdateTargets();
  std::string reason = std::move(scan.no_target_reason);
  snap->targets_skipped = scan.skipped_by_cap;
  snap->targets_unreadable = scan.unreadable;
  snap->targets_look_stalled = scan.looks_stalled;
  if (options_.collector.sites_budget) {
    snap->sites_budget = options_.collector.sites_budget->State();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [key, note] : trim_notes_) {
      auto it = targets_.find(key);
      if (it == targets_.end()) continue;
      it->second->last_trim_at = note.ended;
      it->second->last_trim_steady = note.ended_steady;
      it->second->refresh_after_trim = note.reread_smaps;
    }
    trim_notes_.clear();
  }
  std::vector<std::pair<ProcessKey, procfs::Liveness>> exited;
  for (auto& [key, watched] : targets_) {
    const TargetSnapshot* prev = nullptr;
    if (previous_ && watched->previous_index &&
        *watched->previous_index < previous_->targets.size() &&
        previous_->targets[*watched->previous_index].target.SameProcess(watched->target())) {
      prev = &previous_->targets[*watched->previous_index];
    }
    if (only != nullptr && prev != nullptr && !only->contains(key)) {
      // A trim of one target must not make memtrimd read the whole node
      // again (in node mode that is several extra reads of every target a
      // minute), nor put points in its history that no read took.
      watched->previous_index = snap->targets.size();
      snap->targets.push_back(*prev);
      snap->targets.back().carried = true;
      continue;
    }
    std::optional<TargetSnapshot> read = ReadTarget(watched, prev);
    if (!read) {
      // Its read has not ended: its last sample stays, marked as carried.
      ++snap->targets_read_stalled;
      if (prev == nullptr) {
        ++snap->targets_unsampled;
        continue;
      }
      watched->previous_index = snap->targets.size();
      snap->targets.push_back(*prev);
      snap->targets.back().carried = true;
      snap->targets.back().read_stalled_seconds =
          std::chrono::duration<double>(watched->read_in_flight->elapsed()).count();
      continue;
    }
    TargetSnapshot ts = std::move(*read);
    ts.reads = ++watched->reads;
    ts.read_in_sequence = snap->sequence;
    ts.sample.allocator_change = watched->allocator_change;
    // The target may have exited while we read it: then this sample is not
    // its, and the old series must go now rather than next tick.
    procfs::Liveness l = procfs::CheckStillRunning(watched->target());
    if (l != procfs::Liveness::kRunning) {
      exited.emplace_back(key, l);
      continue;
    }
    watched->previous_index = snap->targets.size();
    snap->targets.push_back(std::move(ts));
  }
  for (const auto& [key, l] : exited) DropEnded(key, l);
  if (only == nullptr) {
    std::vector<Target> watched;
    for (const auto& [key, w] : targets_) watched.push_back(w->target());
    sweeper_.MaybeStart(watched);
  }
  snap->agent_sockets_removed = sweeper_.removed();
  if (snap->targets.empty() && reason.empty()) {
    reason = snap->targets_unsampled > 0
                 ? "the target's first read has not ended (a path on a stuck FUSE or network "
                   "filesystem, or its memory map held locked)"
                 : "target exited";
  }
  snap->no_target_reason = snap->targets.empty() ? reason : "";
  snap->taken_at = std::chrono::system_clock::now();
  snap->taken_steady = std::chrono::steady_clock::now();
  std::map<ProcessKey, std::string> sources;
  for (const TargetSnapshot& ts : snap->targets) {
    sources[ts.target.Key()] =
        ts.sample.malloc ? std::string(MallocSourceName(ts.sample.malloc->source)) : "";
  }
  previous_ = snap;
  store_.Publish(std::move(snap));
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++published_;
    malloc_source_ = std::move(sources);
  }
  published_cv_.notify_all();
}

}  // namespace memtrimd
