#include "daemon/sampling/collector_set.h"

#include <unistd.h>

#include "collectors/agent/agent_collector.h"
#include "collectors/cgroup/cgroup_collector.h"
#include "collectors/common/file_reader.h"
#include "collectors/glibc/glibc_heap_collector.h"
#include "collectors/jvm/jvm_collector.h"
#include "collectors/procfs/proc_stat.h"
#include "collectors/procfs/process_collector.h"

namespace memtrimd {

std::vector<CollectorSlot> BuildCollectors(const CollectorSetOptions& o) {
  std::vector<CollectorSlot> slots;
  if (o.process) slots.push_back({std::make_shared<procfs::ProcessCollector>(), {}, false, {}, {}});
  if (o.cgroup) {
    slots.push_back(
        {std::make_shared<cgroup::CgroupCollector>(o.memory_limit_fallback), {}, false, {}, {}});
  }
  // hsperfdata is a file read: no socket, no waiting on the target.
  if (o.hsperfdata) slots.push_back({std::make_shared<jvm::JvmPerfCollector>(), {}, false, {}, {}});
  if (o.agent) {
    agent::AgentOptions a;
    a.timeout = o.jvm_command_timeout;
    slots.push_back(
        {std::make_shared<agent::AgentMallocCollector>(a), o.smaps_interval, true, {}, {}});
  }
  // After the agent slot: when the jvm slot runs it writes fresh malloc
  // statistics that a carried-over part must not overwrite.
  if (o.jvm) {
    jvm::AttachOptions a;
    a.command_timeout = o.jvm_command_timeout;
    slots.push_back({std::make_shared<jvm::JvmAttachCollector>(a), o.jvm_interval, true, {}, {}});
  }
  // Last: the smaps read uses the Java heap range the JVM collector found.
  if (o.glibc) {
    glibc::GlibcHeapOptions g;
    g.heap_size = o.glibc_heap_size;
    g.confirm_with_heap_info = o.glibc_confirm_heaps;
    slots.push_back(
        {std::make_shared<glibc::GlibcHeapCollector>(g), o.smaps_interval, false, {}, {}});
  }
  return slots;
}

namespace {

// Copies the part a collector owns from one sample to another.
void CarryPart(std::string_view name, const TargetSample& from, TargetSample& to) {
  if (name == "process") to.process = from.process;
  if (name == "glibc") to.glibc = from.glibc;
  if (name == "cgroup") to.cgroup = from.cgroup;
  if (name == "jvm") {
    to.jvm = from.jvm;
    if (from.malloc && from.malloc->source == "jvm") to.malloc = from.malloc;
  }
  if (name == "agent") {
    to.agent_loaded = from.agent_loaded;
    to.agent_unreachable = from.agent_unreachable;
    to.jvm_buffers = from.jvm_buffers;
    to.jvm_buffers_missing = from.jvm_buffers_missing;
    if (from.malloc && from.malloc->source == "agent") to.malloc = from.malloc;
  }
  if (name == "hsperfdata") to.jvm_perf = from.jvm_perf;
}

}  // namespace

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
        CarryPart(name, run->sample, out.sample);
        out.collectors.push_back(run->outcome);
      } else {
        out.pending.push_back(name);
      }
      continue;
    }
    bool due = force || !slot.last_run || slot.interval.count() == 0 ||
               now - *slot.last_run >= slot.interval;
    if (!due && previous != nullptr) {
      CarryPart(name, previous->sample, out.sample);
      for (const CollectorOutcome& o : previous->collectors) {
        if (o.name == name) out.collectors.push_back(o);
      }
      continue;
    }
    auto t0 = std::chrono::steady_clock::now();
    Status st = slot.collector->Collect(out.target, out.sample);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    slot.last_run = now;
    out.collectors.push_back({name, st.ok(), secs, st.ok() ? "" : st.message()});
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
