// One sample of one target: what each collector found, as plain structs
// (each domain's in a header beside its collector). No metric types here;
// the daemon's exposition maps this to metrics.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <map>
#include <memory>

#include "collectors/agent/client/agent_ping.h"
#include "collectors/agent/client/allocator_stats.h"
#include "collectors/agent/client/site_profile.h"
#include "collectors/cgroup/cgroup_memory.h"
#include "collectors/common/allocator.h"
#include "collectors/common/status.h"
#include "collectors/glibc/glibc_heaps.h"
#include "collectors/jvm/jvm_figures.h"
#include "collectors/jvm/malloc_stats.h"
#include "collectors/procfs/proc_status.h"

namespace memtrimd {

// The same program (same pod and command line) ran on another allocator
// before it restarted: teams switch allocators to fix fragmentation, and the
// before/after comparison is the point (set by the scheduler).
struct AllocatorChange {
  Allocator before = Allocator::kUnknown;
  Allocator after = Allocator::kUnknown;
  pid_t before_pid = 0;
  std::chrono::system_clock::time_point seen_at{};  // when the new process was first seen
};

struct TargetSample {
  std::optional<procfs::ProcStatus> process;
  std::optional<GlibcHeaps> glibc;
  std::optional<CgroupMemory> cgroup;
  std::optional<JvmSample> jvm;
  std::optional<JvmPerf> jvm_perf;
  std::string jvm_perf_missing;                 // why jvm_perf is absent, when the collector knows
  Cause jvm_perf_missing_cause = Cause::kNone;  // the same, for the advice
  std::optional<MallocStats> malloc;
  std::optional<JvmBuffers> jvm_buffers;
  std::string jvm_buffers_missing;  // why jvm_buffers is absent (JVM targets)
  // The target's malloc tuning from its initial environment
  // (MALLOC_ARENA_MAX, MALLOC_*_, GLIBC_TUNABLES), name -> value; absent when
  // /proc/<pid>/environ could not be read.
  std::optional<std::map<std::string, std::string, std::less<>>> malloc_env;
  // When memtrimd last trimmed this target successfully (scheduled or
  // manual); set by the scheduler, so that figures read before it (malloc
  // statistics) are shown as such.
  std::optional<std::chrono::system_clock::time_point> last_trim_at;
  std::optional<std::chrono::steady_clock::time_point> last_trim_steady;  // the same, to order by
  std::optional<AllocatorChange> allocator_change;
  bool agent_loaded = false;  // libmemtrimd_agent.so is mapped (agent collector)
  // The allocator's own figures, read by the agent with the allocator's API
  // (on --smaps.interval); absent without the agent, and then
  // allocator_missing may say why (an agent too old to know "allocator").
  std::optional<agent::AllocatorStats> allocator;
  std::string allocator_missing;
  // Why the loaded agent gave no answer (no socket: it did not start; a
  // socket memtrimd may not use; a deadline); empty when it answered.
  std::string agent_unreachable;
  Cause agent_unreachable_cause = Cause::kNone;  // the same, for the advice
  // The agent's sampled allocation sites, named (the sites collector, off
  // unless --collector.sites); shared because every snapshot carries it.
  // sites_missing says why there are none when the collector knows.
  std::shared_ptr<const agent::SiteProfile> sites;
  std::string sites_missing;
  // A JVM memtrimd is loading its agent into (--jvm.load-agent) and has not
  // yet: its sites come once the load ends (the profile answers 503 and
  // Retry-After meanwhile, not "not loaded").
  bool sites_loading = false;
  // Whether the agent's allocation sampler is on (the agent collector's
  // "ping"; absent from an agent before protocol version 5).
  std::optional<agent::SamplerState> sampler;
};

// The allocator this sample was taken under: the agent's answer when it
// gave one (certain), else what the target was taken to run on.
inline Allocator SampleAllocator(const TargetSample& s) {
  if (s.allocator) return s.allocator->allocator;
  return s.glibc ? s.glibc->allocator : Allocator::kUnknown;
}

}  // namespace memtrimd
