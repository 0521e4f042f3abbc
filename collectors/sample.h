// One sample of one target: what each collector found, as plain structs.
// No metric types here; the daemon's exposition maps this to metrics.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <map>
#include <memory>

#include "collectors/agent/client/allocator_stats.h"
#include "collectors/agent/client/site_profile.h"
#include "collectors/cgroup/pod_identity.h"
#include "collectors/glibc/arena_heap.h"
#include "collectors/glibc/rss_breakdown.h"
#include "collectors/jvm/hsperfdata.h"
#include "collectors/jvm/jvm_text.h"
#include "collectors/jvm/malloc_info.h"
#include "collectors/jvm/nmt_summary.h"
#include "collectors/procfs/proc_status.h"

namespace memtrimd {

// From the smaps read: arena heaps and the main arena.
struct GlibcHeaps {
  std::vector<glibc::ArenaHeap> heaps;  // rejected candidates already removed
  uint64_t usable_bytes = 0;            // sum of the heaps' rw-p parts
  uint64_t resident_bytes = 0;          // sum of their Rss
  std::size_t confirmed = 0;            // heaps whose heap_info was read and agreed
  std::size_t rejected = 0;             // own-mapping shape matched but heap_info disagreed
  std::size_t merged = 0;               // of heaps: in a mapping the kernel merged (confirmed)
  // Candidates in merged mappings not counted: no header could confirm them
  // (no ptrace-read access, header page not resident), or beyond the cap
  // (glibc::kMaxMergedCandidates).
  std::size_t merged_unconfirmed = 0;
  std::size_t merged_skipped = 0;
  std::string headers_unread;  // why heap headers could not be read ("" when they were)
  uint64_t main_arena_resident_bytes = 0;
  uint64_t smaps_rss_bytes = 0;  // Rss summed over all mappings of that read
  std::size_t mappings = 0;
  std::chrono::system_clock::time_point read_at{};
  std::chrono::steady_clock::time_point read_steady{};  // the same moment, for its age
  double read_seconds = 0;                              // how long the smaps walk took
  glibc::RssBreakdown breakdown;                        // of the same read
  // RSS from /proc/<pid>/status read right after this smaps walk (0: not
  // read), to compare the breakdown's total with.
  uint64_t status_rss_bytes = 0;
  bool java_heap_known = false;  // whether breakdown.java_heap could be attributed
  // Why the arena heap figures are absent although smaps was read: glibc's
  // malloc does not serve this target (GlibcMallocNotApplicable); empty
  // when they apply. heaps is then empty and the breakdown has no arena part.
  std::string arenas_not_applicable;
  Allocator allocator = Allocator::kUnknown;  // what the target was taken to run on (Target)
};

enum class LimitSource { kNone, kCgroup, kFlag };

struct CgroupMemory {
  int version = 0;                      // 1 or 2; 0 when only the flag fallback is known
  std::string path;                     // the cgroup directory read, as memtrimd reached it
  std::optional<uint64_t> limit_bytes;  // absent: no limit
  LimitSource limit_source = LimitSource::kNone;
  std::optional<uint64_t> usage_bytes;
  std::optional<uint64_t> anon_bytes;
  std::optional<uint64_t> file_bytes;
  std::optional<uint64_t> oom_kills;
  // The pod the target runs in, from its /proc/<pid>/cgroup (absent: not in
  // a pod), and the pod's name from the container's /etc/hostname ("" when
  // there is no pod, the file is unreadable or not a pod name, or the target
  // shares the node's hostname: a hostNetwork pod).
  std::optional<cgroup::PodIdentity> pod;
  std::string pod_name;
};

// What the JVM says about itself through the attach socket (on --jvm.interval).
struct JvmSample {
  bool attachable = false;
  std::string attach_error;  // why not, when !attachable
  std::optional<jvm::JvmVersion> version;
  // VM.flags and VM.system_properties entries that matter for native memory,
  // by name (absent: not set / not reported).
  std::map<std::string, std::string, std::less<>> settings;
  std::optional<jvm::NmtSummary> nmt;       // nmt->enabled false: NMT off
  std::optional<jvm::HeapInfo> gc_heap;     // GC.heap_info
  std::vector<std::string> command_errors;  // commands that failed this round
  std::chrono::system_clock::time_point read_at{};
  // With --jvm.load-agent: what loading memtrimd's agent into this JVM did
  // (jvm::AgentLoadResultName: loaded, present, opted_out, refused, failed)
  // and its one-line text; empty without the flag.
  std::string agent_load;
  std::string agent_load_text;
};

// hsperfdata (every sample: a file read, no attach).
struct JvmPerf {
  jvm::PerfHeap heap;
  std::string path;
  // Where the counters were read: "file" (the hsperfdata file at `path`),
  // or "memory" (the JVM's perf memory through process_vm_readv, when it
  // has no file, for the reason in `no_file`; jvm/perf_memory.h).
  std::string source = "file";
  std::string no_file;
  std::optional<jvm::PerfGc> gc;  // collectors and causes (absent: no sun.gc counters)
  // Since this JVM's previous hsperfdata read at least a second earlier
  // (on the first read: since the JVM started, see gc_rates_since_start):
  // collections per second, all collectors together, and the share of
  // wall time spent in them.
  std::optional<double> gc_per_second;
  // Full collections per second over the same window (jvm::FullCollections):
  // what System.gc() runs, young collections left out.
  std::optional<double> full_gc_per_second;
  std::optional<double> gc_time_ratio;
  // true: the rates are averages since the JVM started (no earlier read of
  // this JVM to measure a window from, e.g. a one-shot inspect).
  bool gc_rates_since_start = false;
};

// BufferPoolMXBean's figures for one pool.
struct BufferPool {
  uint64_t count = 0;           // buffers
  uint64_t total_capacity = 0;  // bytes the buffers hold
  uint64_t memory_used = 0;     // bytes reserved for them (page-aligned buffers add a page)
};

// Read inside the JVM by the preloaded agent (JNI field reads; memtrimd
// calls no Java method). The "direct" pool is what -XX:MaxDirectMemorySize limits.
struct JvmBuffers {
  BufferPool direct;
  BufferPool mapped;
  // The per-thread temporary direct buffer cache (sun.nio.ch.Util), summed
  // over threads; absent when the agent could not walk it.
  std::optional<uint64_t> temp_cache_bytes;
  std::optional<uint64_t> temp_cache_buffers;
  // temp_cache_bytes at the agent collector's previous read of this JVM
  // (one --smaps.interval earlier); absent on the first read.
  std::optional<uint64_t> temp_cache_previous_bytes;
  std::chrono::system_clock::time_point read_at{};
};

// glibc's malloc_info, from the JVM (System.native_heap_info, JDK 21+) or
// from the preload agent: one parser, the same metrics.
struct MallocStats {
  jvm::MallocInfo info;
  std::string source;                               // "jvm" or "agent"
  std::chrono::system_clock::time_point read_at{};  // shown
  // Ordered against the last trim on this clock (TargetSample::
  // last_trim_steady): a step of the wall clock cannot misorder the two.
  std::chrono::steady_clock::time_point read_steady{};
};

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
  std::string jvm_perf_missing;  // why jvm_perf is absent, when the collector knows
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
  // The agent's sampled allocation sites, named (the sites collector, off
  // unless --collector.sites); shared because every snapshot carries it.
  // sites_missing says why there are none when the collector knows.
  std::shared_ptr<const agent::SiteProfile> sites;
  std::string sites_missing;
};

// The allocator this sample was taken under: the agent's answer when it
// gave one (certain), else what the target was taken to run on.
inline Allocator SampleAllocator(const TargetSample& s) {
  if (s.allocator) return s.allocator->allocator;
  return s.glibc ? s.glibc->allocator : Allocator::kUnknown;
}

}  // namespace memtrimd
