#include "daemon/trim/trim_engine.h"

#include <algorithm>
#include <random>

#include "daemon/analysis/findings.h"
#include "daemon/base/log.h"
#include "daemon/base/shutdown.h"
#include "daemon/base/units.h"

namespace memtrimd {
namespace {

constexpr std::size_t kRecent = 10;
using namespace std::chrono_literals;

std::string Signed(int64_t v) { return std::to_string(v); }

// A trim waits up to --trim.timeout on the target, all of it when the
// target is stopped. It runs on a thread of its own, and at shutdown the
// engine stops waiting for it (see shutdown.h): nullopt then.
std::optional<Result<TrimResult>> TrimUnlessShutdown(const Target& target,
                                                     const TrimOptions& options) {
  return CallUnlessShutdown<Result<TrimResult>>(
      [target, options] { return TrimNow(target, options); });
}

}  // namespace

TrimEngine::TrimEngine(TrimEngineOptions options, const SnapshotStore& store)
    : options_(std::move(options)),
      store_(store),
      // Seeded per process, so replicas draw different jitter. Used under mu_.
      rng_(std::random_device{}()),
      policy_(options_.policy,
              [this] { return std::uniform_real_distribution<double>(0.0, 1.0)(rng_); }) {
  stats_.duration_bucket_counts.assign(std::size(kTrimDurationBuckets), 0);
  for (const auto& [result, reason] : kTrimRunSeries) {
    stats_.runs[{std::string(result), std::string(reason)}] = 0;
  }
  stats_.effective_interval = options_.policy.interval;
  stats_.backend_setting = TrimBackendName(options_.trim.backend);
  policy_.Reset(TrimPolicy::Clock::now());
}

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

TrimInputs TrimEngine::InputsFrom(const Snapshot* snap, std::optional<Target>& target) const {
  TrimInputs in;
  if (snap == nullptr || snap->targets.empty()) return in;
  const TargetSnapshot& ts = snap->targets.front();
  target = ts.target;
  in.target_up = true;
  const TargetSample& s = ts.sample;
  if (s.process) {
    in.rss_bytes = s.process->rss_anon + s.process->rss_file + s.process->rss_shmem;
  }
  if (s.cgroup) in.limit_bytes = s.cgroup->limit_bytes;
  if (s.glibc) in.arena_resident_bytes = s.glibc->resident_bytes;
  if (auto trim_ms = SettingBytes(s, "TrimNativeHeapInterval")) in.jvm_trims_itself = *trim_ms > 0;
  return in;
}

void TrimEngine::ApplyBackend(const Target& target, const TargetSample& s, TrimInputs& in) {
  // REQUIRES: mu_ held. Resolved once per target: ResolveBackend reads
  // /proc/<pid>/maps to find the agent, and a preloaded library is there from
  // exec on, so re-reading it on every tick would only cost the target.
  if (!backend_) backend_ = ResolveBackend(target, options_.trim.backend);
  if (!backend_->ok()) {
    in.backend_available = false;
    in.backend_unavailable_reason =
        options_.trim.backend == TrimBackendKind::kJvm ? "not_a_jvm" : "no_agent";
  } else if (**backend_ == TrimBackendKind::kJvm && s.jvm && !s.jvm->attachable) {
    in.backend_available = false;
    in.backend_unavailable_reason = "not_attachable";
  }
}

void TrimEngine::Count(const std::string& result, const std::string& reason) {
  // REQUIRES: mu_ held. Every finished run, trim or skip, is counted here,
  // after the policy has taken its outcome.
  ++stats_.runs[{result, reason}];
  metrics_version_.fetch_add(1, std::memory_order_release);
}

void TrimEngine::Tick() {
  std::shared_ptr<const Snapshot> snap = store_.Latest();
  std::optional<Target> target;
  TrimInputs in = InputsFrom(snap.get(), target);
  TrimDecision d;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto now = TrimPolicy::Clock::now();
    if (target) {
      std::pair<pid_t, uint64_t> id{target->pid, target->start_ticks};
      if (current_ != id) {
        current_ = id;
        backend_.reset();
        policy_.Reset(now);  // a new target starts one interval from now
      }
      // Whether a JVM trims itself, or can be attached to, comes from the
      // jvm collector, which runs on its own thread: no decision before its
      // first run for this target (the trim is not due yet, not skipped).
      const std::vector<std::string>& pending = snap->targets.front().pending;
      if (std::find(pending.begin(), pending.end(), "jvm") != pending.end()) return;
      ApplyBackend(*target, snap->targets.front().sample, in);
    }
    d = policy_.Decide(now, in);
    if (d.action == TrimDecision::Action::kSkip) {
      Count("skipped", d.reason);
      if (d.reason != stats_.last_skip_reason) {
        log::Info("trim skipped", {{"reason", d.reason}});
      }
      stats_.last_skip_reason = d.reason;
    }
    if (stats_.effective_interval != policy_.effective_interval()) {
      stats_.effective_interval = policy_.effective_interval();
      metrics_version_.fetch_add(1, std::memory_order_release);
    }
    if (d.action != TrimDecision::Action::kTrim) return;
  }
  std::unique_lock<std::mutex> busy(trim_mu_, std::try_to_lock);
  if (!busy.owns_lock()) return;  // a manual trim is running; try next tick
  {
    std::lock_guard<std::mutex> lock(mu_);
    policy_.Begin(TrimPolicy::Clock::now());
    stats_.in_progress = true;
  }
  std::optional<Result<TrimResult>> done = TrimUnlessShutdown(*target, options_.trim);
  std::unique_lock<std::mutex> lock(mu_);
  stats_.in_progress = false;
  if (!done) {
    log::Warn("trim abandoned at shutdown", {{"pid", std::to_string(target->pid)}});
    return;
  }
  Result<TrimResult>& r = *done;
  if (!r.ok()) {
    // The target went away or lost its backend between the snapshot and now.
    policy_.Finish(TrimPolicy::Clock::now(), std::nullopt, std::nullopt);
    Count("failure", r.status().code() == ErrorCode::kNotFound ? "target_gone" : "unavailable");
    log::Warn("trim failed", {{"pid", std::to_string(target->pid)}, {"err", r.status().message()}});
    return;
  }
  r->trigger = "scheduled";
  bool overran = r->duration_seconds * 1000 > static_cast<double>(options_.trim.timeout.count());
  if (overran && r->success) {
    // Finished, but later than its deadline: report it as such.
    r->success = false;
    r->reason = "deadline";
    r->error = "trim took " + std::to_string(r->duration_seconds) + " s, past its deadline";
  }
  policy_.Finish(TrimPolicy::Clock::now(),
                 r->success ? std::optional<int64_t>(r->ReclaimedRssSwap()) : std::nullopt,
                 r->after.arena_resident_bytes);
  Record(*r);
  lock.unlock();
  NotifyTrimmed(*target, *r);
}

void TrimEngine::NotifyTrimmed(const Target& target, const TrimResult& r) const {
  // REQUIRES: mu_ not held (the hook waits for a sample).
  if (!r.success || !after_trim_) return;
  auto ended = r.at + std::chrono::duration_cast<std::chrono::system_clock::duration>(
                          std::chrono::duration<double>(r.duration_seconds));
  after_trim_(target, ended);
}

void TrimEngine::Record(const TrimResult& r) {
  // REQUIRES: mu_ held.
  Count(r.success ? "success" : "failure", r.success ? r.trigger : r.reason);
  stats_.duration_count++;
  stats_.duration_sum += r.duration_seconds;
  for (std::size_t i = 0; i < std::size(kTrimDurationBuckets); ++i) {
    if (r.duration_seconds <= kTrimDurationBuckets[i]) stats_.duration_bucket_counts[i]++;
  }
  if (r.success) {
    int64_t rec = r.ReclaimedRssSwap();
    if (rec > 0) stats_.reclaimed_total_bytes += static_cast<uint64_t>(rec);
    stats_.last_success_unix_seconds =
        std::chrono::duration<double>(r.at.time_since_epoch()).count();
  }
  stats_.last = r;
  stats_.recent.push_front(r);
  if (stats_.recent.size() > kRecent) stats_.recent.pop_back();
  stats_.last_skip_reason.clear();
  auto opt = [](std::optional<int64_t> v) { return v ? Signed(*v) : std::string("unknown"); };
  auto optu = [](std::optional<uint64_t> v) {
    return v ? std::to_string(*v) : std::string("unknown");
  };
  log::Info(r.success ? "trim done" : "trim failed",
            {{"pid", std::to_string(r.pid)},
             {"backend", r.backend},
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

Result<TrimResult> TrimEngine::TrimManually() {
  std::unique_lock<std::mutex> busy(trim_mu_, std::try_to_lock);
  if (!busy.owns_lock()) return Status(ErrorCode::kBusy, "a trim is already running");
  std::shared_ptr<const Snapshot> snap = store_.Latest();
  if (!snap || snap->targets.empty()) return Status(ErrorCode::kNotFound, "no target");
  Target target = snap->targets.front().target;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.in_progress = true;
  }
  std::optional<Result<TrimResult>> done = TrimUnlessShutdown(target, options_.trim);
  std::unique_lock<std::mutex> lock(mu_);
  stats_.in_progress = false;
  if (!done) {
    log::Warn("trim abandoned at shutdown", {{"pid", std::to_string(target.pid)}});
    return Status(ErrorCode::kUnavailable, "memtrimd is shutting down");
  }
  Result<TrimResult>& r = *done;
  if (!r.ok()) {
    Count("failure", "unavailable");
    return r.status();
  }
  r->trigger = "manual";
  Record(*r);
  lock.unlock();
  NotifyTrimmed(target, *r);
  return r;
}

TrimStats TrimEngine::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  TrimStats s = stats_;
  s.effective_interval = policy_.effective_interval();
  if (options_.policy.interval.count() > 0 && !policy_.in_progress()) {
    s.next_due_in_seconds =
        std::chrono::duration<double>(policy_.next_due() - TrimPolicy::Clock::now()).count();
  }
  return s;
}

}  // namespace memtrimd
