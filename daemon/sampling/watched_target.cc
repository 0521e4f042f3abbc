#include "daemon/sampling/watched_target.h"

#include "collectors/procfs/target_reader.h"
#include "daemon/base/log.h"

namespace memtrimd {

WatchedTarget::WatchedTarget(const Target& target, const CollectorOptions& options,
                             const CollectorSwitches& switches,
                             std::chrono::milliseconds sample_interval)
    : target_(target),
      agent_loads_(options.jvm_load_agent ? options.agent_loads : nullptr),
      slots_(BuildCollectors(options, switches, &target)) {
  for (CollectorSlot& slot : slots_) {
    std::unique_ptr<SlowSource> source;
    if (slot.own_thread) {
      // "Every sample" for a socket collector means on the sample interval,
      // on its own thread.
      auto every = slot.interval.count() > 0 ? slot.interval : sample_interval;
      source = std::make_unique<SlowSource>(slot.collector, every);
      source->SetTarget(target_);
    }
    slow_.push_back(std::move(source));
  }
}

WatchedTarget::~WatchedTarget() { Stop(std::chrono::milliseconds(0)); }

void WatchedTarget::FollowReadDir() {
  Result<std::string> dir = procfs::ProcessReadDir(target_.proc_dir);
  if (!dir.ok() || *dir == target_.proc_dir) return;
  log::Info("reading the target through a live thread",
            {{"pid", std::to_string(target_.pid)}, {"dir", *dir}});
  target_.proc_dir = std::move(dir).value();
  for (std::unique_ptr<SlowSource>& source : slow_) {
    if (source) source->SetTarget(target_);
  }
}

void WatchedTarget::Stop(std::chrono::milliseconds grace) {
  for (std::unique_ptr<SlowSource>& source : slow_) {
    if (source) source->Stop(grace);
  }
}

SlowSource* WatchedTarget::Source(std::string_view name) {
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    if (slow_[i] && slots_[i].collector->Name() == name) return slow_[i].get();
  }
  return nullptr;
}

void WatchedTarget::RereadSmapsNextSample() {
  for (CollectorSlot& slot : slots_) {
    if (slot.collector->Name() == "glibc") slot.last_run.reset();
  }
}

void WatchedTarget::LogOutcomes(const TargetSnapshot& ts) {
  for (const CollectorOutcome& o : ts.collectors) {
    for (CollectorSlot& slot : slots_) {
      if (slot.collector->Name() != o.name) continue;
      // Log a failure once, when it starts or its reason changes, and the
      // recovery once; not on every sample.
      if (!o.success && o.error != slot.last_error) {
        log::Warn("collector failed",
                  {{"collector", o.name}, {"pid", std::to_string(target_.pid)}, {"err", o.error}});
        slot.last_error = o.error;
      } else if (o.success && !slot.last_error.empty()) {
        log::Info("collector recovered",
                  {{"collector", o.name}, {"pid", std::to_string(target_.pid)}});
        slot.last_error.clear();
      }
    }
  }
}

void WatchedTarget::RereadSmapsForJavaHeap(
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
  if (range_known) RereadSmapsNextSample();
}

void WatchedTarget::ReadSitesOnceLoaded(
    const std::vector<std::shared_ptr<const FinishedRun>>& finished) {
  // The sites collector's first run in a JVM comes before the jvm
  // collector's load of the agent (each runs on its own thread): it found
  // no agent. Once the load has ended, read the sites at once rather than a
  // whole --sites.interval later; once per target.
  if (sites_read_after_load_ || !agent_loads_) return;
  for (std::size_t i = 0; i < slots_.size() && i < finished.size(); ++i) {
    const std::shared_ptr<const FinishedRun>& run = finished[i];
    if (slots_[i].collector->Name() != "sites" || !slow_[i] || !run || !run->sample.sites_loading ||
        !agent_loads_->Recorded(target_.Key())) {
      continue;
    }
    slow_[i]->RunSoon();
    sites_read_after_load_ = true;
  }
}

bool WatchedTarget::LoadedByMemtrimd() const {
  if (!agent_loads_) return false;
  std::optional<jvm::AgentLoadOutcome> load = agent_loads_->Recorded(target_.Key());
  return load && load->Loaded();
}

void WatchedTarget::ReadAgentOnceLoaded(
    const std::vector<std::shared_ptr<const FinishedRun>>& finished) {
  // The agent collector's first run in a JVM comes before the jvm
  // collector's load of the agent (each runs on its own thread): it found
  // none, and runs again only a whole --smaps.interval later. Once the load
  // has succeeded, read the agent (buffer pools, malloc statistics, the
  // sampler) and smaps (the agent's own mappings) at once; once per target.
  if (agent_read_after_load_ || !LoadedByMemtrimd()) return;
  agent_read_after_load_ = true;
  for (std::size_t i = 0; i < slots_.size() && i < finished.size(); ++i) {
    if (slots_[i].collector->Name() != "agent" || !slow_[i]) continue;
    const std::shared_ptr<const FinishedRun>& run = finished[i];
    if (run && run->sample.agent_loaded) return;  // a run after the load found it
    slow_[i]->RunSoon();
    RereadSmapsNextSample();
  }
}

TargetSnapshot WatchedTarget::Sample(const TargetSnapshot* previous, const ReadInputs& inputs) {
  // After a trim: it changed what smaps shows, so read it again now, not a
  // whole --smaps.interval later.
  if (inputs.reread_smaps) RereadSmapsNextSample();
  TargetSnapshot ts;
  ts.target = target_;
  ts.start_time_seconds = ProcessStartTimeSeconds(target_.start_ticks);
  std::vector<std::shared_ptr<const FinishedRun>> finished;
  for (const std::unique_ptr<SlowSource>& source : slow_) {
    finished.push_back(source ? source->Latest() : nullptr);
  }
  if (previous != nullptr) RereadSmapsForJavaHeap(*previous, finished);
  ReadSitesOnceLoaded(finished);
  ReadAgentOnceLoaded(finished);
  SampleTarget(slots_, false, previous, ts, &finished);
  // The agent memtrimd loaded is there from the moment the load succeeded,
  // not from the agent collector's next run: /report, the page and the
  // profile say so at once.
  if (!ts.sample.agent_loaded && Source("agent") != nullptr && LoadedByMemtrimd()) {
    ts.sample.agent_loaded = true;
    ts.sample.jvm_buffers_missing =
        "libmemtrimd_agent.so was just loaded into the JVM by memtrimd (--jvm.load-agent); its "
        "first read follows at once";
  }
  ts.sample.last_trim_at = inputs.last_trim_at;
  ts.sample.last_trim_steady = inputs.last_trim_steady;
  LogOutcomes(ts);
  return ts;
}

}  // namespace memtrimd
