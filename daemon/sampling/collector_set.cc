#include "daemon/sampling/collector_set.h"

#include <unistd.h>

#include "collectors/common/file_reader.h"
#include "collectors/procfs/proc_stat.h"

namespace memtrimd {

std::vector<CollectorSlot> BuildCollectors(const CollectorOptions& o,
                                           const CollectorSwitches& switches,
                                           const Target* target) {
  std::vector<CollectorSlot> slots;
  for (const CollectorDecl& d : CollectorRegistry()) {
    if (!CollectorEnabled(switches, d)) continue;
    if (target != nullptr && d.applies != nullptr && !d.applies(*target)) continue;
    CollectorSlot slot;
    slot.decl = &d;
    slot.collector = d.make(o);
    slot.interval = d.Interval(o);
    slot.own_thread = d.own_thread;
    slots.push_back(std::move(slot));
  }
  return slots;
}

void SampleTarget(std::vector<CollectorSlot>& slots, bool force, const TargetSnapshot* previous,
                  TargetSnapshot& out,
                  const std::vector<std::shared_ptr<const FinishedRun>>* finished) {
  auto now = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < slots.size(); ++i) {
    CollectorSlot& slot = slots[i];
    std::string name(slot.collector->Name());
    if (finished != nullptr && slot.own_thread) {
      const FinishedRun* run = i < finished->size() ? (*finished)[i].get() : nullptr;
      if (run != nullptr && run->target.SameProcess(out.target)) {
        slot.decl->carry(run->sample, out.sample);
        out.collectors.push_back(run->outcome);
      } else {
        out.pending.push_back(name);
      }
      continue;
    }
    bool due = force || !slot.last_run || slot.interval.count() == 0 ||
               now - *slot.last_run >= slot.interval;
    if (!due && previous != nullptr) {
      slot.decl->carry(previous->sample, out.sample);
      for (const CollectorOutcome& o : previous->collectors) {
        if (o.name == name) out.collectors.push_back(o);
      }
      continue;
    }
    auto t0 = std::chrono::steady_clock::now();
    Status st = slot.collector->Collect(out.target, out.sample);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    slot.last_run = now;
    out.collectors.push_back({name, st.ok(), secs, st.ok() ? "" : st.message(), st.cause()});
  }
}

double ProcessStartTimeSeconds(uint64_t start_ticks) {
  static const uint64_t boot_time = [] {
    Result<std::string> text = ReadSmallFile("/proc/stat", 1u << 20);
    if (!text.ok()) return uint64_t{0};
    Result<uint64_t> bt = procfs::ParseBootTime(*text);
    return bt.ok() ? *bt : uint64_t{0};
  }();
  return procfs::StartTimeSeconds(start_ticks, boot_time, ::sysconf(_SC_CLK_TCK));
}

}  // namespace memtrimd
