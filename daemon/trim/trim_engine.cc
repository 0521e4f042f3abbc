#include "daemon/trim/trim_engine.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <random>
#include <thread>

#include "collectors/agent/client/agent_client.h"
#include "daemon/analysis/findings.h"
#include "daemon/base/log.h"
#include "daemon/base/shutdown.h"
#include "daemon/base/units.h"

namespace memtrimd {
namespace {

constexpr std::size_t kRecent = 10;
using namespace std::chrono_literals;

std::string Signed(int64_t v) { return std::to_string(v); }

// Past --trim.timeout, the time a trim may take to measure before and after
// (smaps reads of a large target) before the engine gives up on it.
constexpr auto kTrimGrace = 10s;

// How a trim call ended for the engine.
struct TrimCallOutcome {
  std::optional<Result<TrimResult>> result;  // set when the call returned in time
  std::shared_ptr<std::atomic<bool>> ended;  // set when it was given up on
};

// A trim waits up to --trim.timeout on the target, all of it when the
// target is stopped, and a read it does before its deadlines start (an
// option file on a FUSE mount) could wait longer. It runs on a thread of its
// own, and the engine waits for it until its deadline or shutdown, then
// leaves it to end on its own (it owns a copy of everything it touches): a
// stuck target costs its own trims, never another target's.
TrimCallOutcome TrimWithDeadline(const Target& target, const TrimOptions& options) {
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    std::optional<Result<TrimResult>> result;
    std::shared_ptr<std::atomic<bool>> ended = std::make_shared<std::atomic<bool>>(false);
  };
  TrimCallOutcome out;
  if (ShutdownRequested()) return out;
  auto shared = std::make_shared<Shared>();
  std::thread worker([shared, target, options] {
    Result<TrimResult> r = TrimNow(target, options);
    std::lock_guard<std::mutex> lock(shared->mu);
    shared->result.emplace(std::move(r));
    shared->ended->store(true);
    shared->cv.notify_all();
  });
  const auto deadline = std::chrono::steady_clock::now() + options.timeout + kTrimGrace;
  std::unique_lock<std::mutex> lock(shared->mu);
  // Woken by the call; shutdown is polled (its own wait has no hook here).
  while (!shared->result && !ShutdownRequested() && std::chrono::steady_clock::now() < deadline) {
    shared->cv.wait_for(lock, 100ms);
  }
  if (shared->result) {
    out.result = std::move(shared->result);
    lock.unlock();
    worker.join();
    return out;
  }
  lock.unlock();
  worker.detach();
  CountAbandoned();
  out.ended = shared->ended;
  return out;
}

}  // namespace

TrimEngine::TrimEngine(TrimEngineOptions options, const SnapshotStore& store)
    : options_(std::move(options)),
      store_(store),
      // Seeded per process, so replicas draw different jitter. Used under mu_.
      rng_(std::random_device{}()) {}

TrimEngine::~TrimEngine() { Stop(); }

void TrimEngine::Start() {
  if (options_.policy.interval.count() == 0) return;  // scheduled trims off
  thread_ = std::thread([this] { Run(); });
}

void TrimEngine::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void TrimEngine::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    // The policy works in whole seconds at the finest; a 250 ms tick is
    // precise enough and costs nothing.
    if (cv_.wait_for(lock, 250ms, [this] { return stop_; })) break;
    lock.unlock();
    Tick();
    lock.lock();
  }
}

TrimStats TrimEngine::NewStats(const Target& target) const {
  TrimStats st;
  st.pid = target.pid;
  st.start_ticks = target.start_ticks;
  st.opted_in = OptedIn(target);
  st.duration_bucket_counts.assign(std::size(kTrimDurationBuckets), 0);
  for (const auto& [result, reason] : kTrimRunSeries) {
    st.runs[{std::string(result), std::string(reason)}] = 0;
  }
  st.effective_interval = options_.policy.interval;
  st.backend_setting = TrimBackendName(options_.trim.backend);
  return st;
}

bool TrimEngine::OptedIn(const Target& target) const {
  if (target.trim_opt_in) return *target.trim_opt_in;
  return !options_.only_opted_in;
}

TrimEngine::PerTarget* TrimEngine::Find(const ProcessKey& key) {
  auto it = targets_.find(key);
  return it == targets_.end() ? nullptr : &it->second;
}

void TrimEngine::Follow(const Snapshot* snap, TrimPolicy::Clock::time_point now) {
  std::map<ProcessKey, const TargetSnapshot*> seen;
  if (snap != nullptr) {
    for (const TargetSnapshot& ts : snap->targets) {
      seen[ts.target.Key()] = &ts;
    }
  }
  bool changed = false;
  for (auto it = targets_.begin(); it != targets_.end();) {
    if (seen.count(it->first) || it->second.stats.in_progress) {
      ++it;
    } else {
      it = targets_.erase(it);
      changed = true;
    }
  }
  for (const auto& [key, ts] : seen) {
    if (targets_.count(key)) continue;
    auto [it, inserted] = targets_.try_emplace(key, options_.policy, [this] {
      return std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
    });
    it->second.target = ts->target;
    it->second.stats = NewStats(ts->target);
    it->second.policy.Reset(now);  // a new target starts one interval from now
    changed = true;
  }
  if (changed) metrics_version_.fetch_add(1, std::memory_order_release);
}

TrimInputs TrimEngine::InputsFrom(const TargetSnapshot& ts) const {
  TrimInputs in;
  in.target_up = true;
  in.opted_in = OptedIn(ts.target);
  const TargetSample& s = ts.sample;
  if (s.process) {
    in.rss_bytes = s.process->Rss();
  }
  if (s.cgroup) in.limit_bytes = s.cgroup->limit_bytes;
  if (s.glibc) in.arena_resident_bytes = s.glibc->resident_bytes;
  if (auto trim_ms = SettingBytes(s, "TrimNativeHeapInterval")) in.jvm_trims_itself = *trim_ms > 0;
  return in;
}

void TrimEngine::ApplyBackend(PerTarget& pt, const TargetSample& s, TrimInputs& in) {
  // REQUIRES: mu_ held. Resolved once per target: ResolveBackend reads
  // /proc/<pid>/maps to find the agent, and a preloaded library is there from
  // exec on, so re-reading it on every tick would only cost the target. Once
  // more when the agent's answer names another allocator than maps did (a
  // renamed or statically linked allocator): that answer is certain, and a
  // JVM on jemalloc must not be sent System.trim_native_heap.
  if (Target t = WithAgentsAllocator(pt.target, s); t.allocator != pt.target.allocator) {
    pt.target = std::move(t);
    pt.backend.reset();
  }
  if (!pt.backend) pt.backend = ResolveBackend(pt.target, options_.trim.backend);
  // A JVM with the agent loaded is not trimmed before the agent has said
  // which allocator serves malloc: maps only shows library names, and a
  // JVM on an allocator maps cannot name must not get
  // System.trim_native_heap. The agent answers within a sample or two.
  if (!pt.has_agent) pt.has_agent = agent::HasAgent(pt.target);
  const bool answered = s.allocator || !s.allocator_missing.empty() || !s.agent_unreachable.empty();
  if (pt.target.runtime == Runtime::kJvm && *pt.has_agent && !answered) {
    in.backend_available = false;
    in.backend_unavailable_reason = "waiting_for_agent";
    return;
  }
  if (!pt.backend->ok()) {
    in.backend_available = false;
    in.backend_unavailable_reason = BackendUnavailableReason(pt.target, options_.trim.backend);
  } else if (**pt.backend == TrimBackendKind::kJvm && s.jvm && !s.jvm->attachable) {
    in.backend_available = false;
    in.backend_unavailable_reason = "not_attachable";
  }
}

void TrimEngine::Count(PerTarget& pt, const std::string& result, const std::string& reason) {
  // REQUIRES: mu_ held. Every finished run, trim or skip, is counted here,
  // after the policy has taken its outcome.
  ++pt.stats.runs[{result, reason}];
  metrics_version_.fetch_add(1, std::memory_order_release);
}

bool TrimEngine::RateCapReached(TrimPolicy::Clock::time_point now) {
  // REQUIRES: mu_ held.
  while (!started_.empty() && now - started_.front() >= std::chrono::minutes(1)) {
    started_.pop_front();
  }
  return options_.max_per_minute > 0 &&
         started_.size() >= static_cast<std::size_t>(options_.max_per_minute);
}

void TrimEngine::Tick() {
  std::shared_ptr<const Snapshot> snap = store_.Latest();
  std::optional<std::pair<ProcessKey, Target>> chosen;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto now = TrimPolicy::Clock::now();
    // A new snapshot comes once per sample interval, the engine ticks four
    // times a second: follow the target set only when it may have changed.
    if (snap != followed_) {
      Follow(snap.get(), now);
      followed_ = snap;
    }
    if (!snap) return;
    // The most overdue first, so that under the rate cap every target gets
    // its turn.
    std::vector<std::pair<PerTarget*, const TargetSnapshot*>> order;
    order.reserve(snap->targets.size());
    for (const TargetSnapshot& ts : snap->targets) {
      order.emplace_back(Find(ts.target.Key()), &ts);
    }
    std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
      return a.first->policy.next_due() < b.first->policy.next_due();
    });
    const bool capped = RateCapReached(now);
    for (const auto& [target_state, ts] : order) {
      ProcessKey key = ts->target.Key();
      PerTarget& pt = *target_state;
      // Whether a JVM trims itself, or can be attached to, comes from the
      // jvm collector, which runs on its own thread: no decision before its
      // first run for this target (the trim is not due yet, not skipped).
      if (std::find(ts->pending.begin(), ts->pending.end(), "jvm") != ts->pending.end()) continue;
      if (pt.StillStuck()) continue;  // its last trim, given up on, has not ended yet
      TrimInputs in = InputsFrom(*ts);
      ApplyBackend(pt, ts->sample, in);
      TrimDecision d = pt.policy.Decide(now, in);
      if (d.action == TrimDecision::Action::kSkip) {
        Count(pt, "skipped", d.reason);
        if (d.reason != pt.stats.last_skip_reason) {
          log::Info("trim skipped", {{"pid", std::to_string(key.pid)}, {"reason", d.reason}});
        }
        pt.stats.last_skip_reason = d.reason;
      }
      if (pt.stats.effective_interval != pt.policy.effective_interval()) {
        pt.stats.effective_interval = pt.policy.effective_interval();
        metrics_version_.fetch_add(1, std::memory_order_release);
      }
      if (d.action != TrimDecision::Action::kTrim) continue;
      if (chosen) continue;  // one trim at a time: the next tick takes the next one
      if (capped) {
        // Due, but the node has started its quota of trims this minute: it
        // waits (still due) rather than being skipped; counted once a wait.
        if (!pt.deferred) Count(pt, "deferred", "node_rate_limit");
        pt.deferred = true;
        continue;
      }
      pt.deferred = false;
      chosen.emplace(key, pt.target);  // with the agent's word on the allocator
    }
  }
  if (!chosen) return;
  std::unique_lock<std::mutex> busy(trim_mu_, std::try_to_lock);
  if (!busy.owns_lock()) return;  // a manual trim is running; try next tick
  (void)RunTrim(chosen->first, chosen->second, "scheduled");
}

Result<TrimResult> TrimEngine::RunTrim(const ProcessKey& key, const Target& target,
                                       const char* trigger) {
  // REQUIRES: trim_mu_ held, mu_ not held.
  const bool scheduled = std::string_view(trigger) == "scheduled";
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto now = TrimPolicy::Clock::now();
    if (PerTarget* pt = Find(key); pt != nullptr && pt->StillStuck()) {
      return Status(ErrorCode::kBusy, "the last trim of pid " + std::to_string(key.pid) +
                                          " was given up at its deadline and has not ended yet");
    }
    if (PerTarget* pt = Find(key)) {
      if (scheduled) pt->policy.Begin(now);
      pt->stats.in_progress = true;
    }
    if (scheduled) started_.push_back(now);
  }
  TrimCallOutcome call = TrimWithDeadline(target, options_.trim);
  std::unique_lock<std::mutex> lock(mu_);
  PerTarget* pt = Find(key);
  if (pt != nullptr) pt->stats.in_progress = false;
  if (!call.result && ShutdownRequested()) {
    log::Warn("trim abandoned at shutdown", {{"pid", std::to_string(target.pid)}});
    return Status(ErrorCode::kUnavailable, "memtrimd is shutting down");
  }
  if (!call.result) {
    // Given up at its deadline; the call ends on its own thread, and until
    // it does this target is not trimmed again.
    const std::string why = "trim of pid " + std::to_string(target.pid) + " did not end within " +
                            std::to_string((options_.trim.timeout + kTrimGrace).count()) +
                            " ms; given up on";
    if (pt != nullptr) {
      if (scheduled) pt->policy.Finish(TrimPolicy::Clock::now(), std::nullopt, std::nullopt);
      pt->abandoned_call_ended = call.ended;
      Count(*pt, "failure", "deadline");
    }
    log::Warn("trim failed", {{"pid", std::to_string(target.pid)}, {"err", why}});
    return Status(ErrorCode::kUnavailable, why);
  }
  Result<TrimResult>& r = *call.result;
  if (!r.ok()) {
    // The target went away or lost its backend between the snapshot and now.
    if (pt != nullptr) {
      if (scheduled) pt->policy.Finish(TrimPolicy::Clock::now(), std::nullopt, std::nullopt);
      Count(*pt, "failure",
            scheduled && r.status().code() == ErrorCode::kNotFound ? "target_gone" : "unavailable");
    }
    log::Warn("trim failed", {{"pid", std::to_string(target.pid)}, {"err", r.status().message()}});
    return r.status();
  }
  r->trigger = trigger;
  bool overran = r->duration_seconds * 1000 > static_cast<double>(options_.trim.timeout.count());
  if (scheduled && overran && r->success) {
    // Finished, but later than its deadline: report it as such.
    r->success = false;
    r->reason = "deadline";
    r->error = "trim took " + std::to_string(r->duration_seconds) + " s, past its deadline";
  }
  if (pt != nullptr) {
    if (scheduled) {
      pt->policy.Finish(TrimPolicy::Clock::now(),
                        r->success ? std::optional<int64_t>(r->ReclaimedRssSwap()) : std::nullopt,
                        r->after.arena_resident_bytes);
    }
    Record(*pt, *r);
  }
  lock.unlock();
  NotifyTrimmed(target, *r);
  return r;
}

void TrimEngine::NotifyTrimmed(const Target& target, const TrimResult& r) const {
  // REQUIRES: mu_ not held (the hook waits for a sample).
  if (!r.success || !after_trim_) return;
  auto ended = r.at + std::chrono::duration_cast<std::chrono::system_clock::duration>(
                          std::chrono::duration<double>(r.duration_seconds));
  after_trim_(target, r, ended);
}

void TrimEngine::Record(PerTarget& pt, const TrimResult& r) {
  // REQUIRES: mu_ held.
  TrimStats& st = pt.stats;
  Count(pt, r.success ? "success" : "failure", r.success ? r.trigger : r.reason);
  st.duration_count++;
  st.duration_sum += r.duration_seconds;
  for (std::size_t i = 0; i < std::size(kTrimDurationBuckets); ++i) {
    if (r.duration_seconds <= kTrimDurationBuckets[i]) st.duration_bucket_counts[i]++;
  }
  if (r.success) {
    int64_t rec = r.ReclaimedRssSwap();
    if (rec > 0) st.reclaimed_total_bytes += static_cast<uint64_t>(rec);
    st.last_success_unix_seconds = std::chrono::duration<double>(r.at.time_since_epoch()).count();
  }
  st.last = r;
  if (st.recent.capacity() < kRecent + 1) st.recent.reserve(kRecent + 1);
  st.recent.insert(st.recent.begin(), r);
  if (st.recent.size() > kRecent) st.recent.pop_back();
  st.last_skip_reason.clear();
  auto opt = [](std::optional<int64_t> v) { return v ? Signed(*v) : std::string("unknown"); };
  auto optu = [](std::optional<uint64_t> v) {
    return v ? std::to_string(*v) : std::string("unknown");
  };
  log::Info(r.success ? "trim done" : "trim failed",
            {{"pid", std::to_string(r.pid)},
             {"backend", r.backend},
             {"allocator", r.allocator},
             {"call", r.call},
             {"trigger", r.trigger},
             {"duration_seconds", std::to_string(r.duration_seconds)},
             {"rss_swap_before", std::to_string(r.before.rss_swap_bytes)},
             {"rss_swap_after", std::to_string(r.after.rss_swap_bytes)},
             {"reclaimed", Signed(r.ReclaimedRssSwap())},
             {"cgroup_before", optu(r.before.cgroup_usage_bytes)},
             {"cgroup_after", optu(r.after.cgroup_usage_bytes)},
             {"arena_heaps_before", optu(r.before.arena_resident_bytes)},
             {"arena_heaps_after", optu(r.after.arena_resident_bytes)},
             {"reported", opt(r.Reported())},
             {"err", r.error}});
}

Result<TrimResult> TrimEngine::TrimManually(std::optional<pid_t> pid) {
  std::unique_lock<std::mutex> busy(trim_mu_, std::try_to_lock);
  if (!busy.owns_lock()) return Status(ErrorCode::kBusy, "a trim is already running");
  std::shared_ptr<const Snapshot> snap = store_.Latest();
  if (!snap || snap->targets.empty()) return Status(ErrorCode::kNotFound, "no target");
  const TargetSnapshot* ts = nullptr;
  if (!pid) {
    if (snap->targets.size() > 1) {
      return Status(ErrorCode::kInvalidArgument, std::to_string(snap->targets.size()) +
                                                     " targets are watched: say which (pid=N)");
    }
    ts = &snap->targets.front();
  } else {
    for (const TargetSnapshot& t : snap->targets) {
      if (t.target.pid == *pid) ts = &t;
    }
    if (ts == nullptr)
      return Status(ErrorCode::kNotFound, "pid " + std::to_string(*pid) + " is not watched");
  }
  Target target = WithAgentsAllocator(ts->target, ts->sample);
  {
    // A manual trim of a target the engine has not seen yet (the first
    // snapshot of it is this one) is still recorded.
    std::lock_guard<std::mutex> lock(mu_);
    Follow(snap.get(), TrimPolicy::Clock::now());
  }
  return RunTrim(target.Key(), target, "manual");
}

std::vector<TrimStats> TrimEngine::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<TrimStats> out;
  for (const auto& [key, pt] : targets_) {
    TrimStats s = pt.stats;
    s.effective_interval = pt.policy.effective_interval();
    if (options_.policy.interval.count() > 0 && !pt.policy.in_progress()) {
      s.next_due_in_seconds =
          std::chrono::duration<double>(pt.policy.next_due() - TrimPolicy::Clock::now()).count();
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace memtrimd
