#include "daemon/exposition/metric_table.h"

namespace memtrimd {

using prometheus::MetricType;

namespace metric {

const MetricDef kBuildInfo{"memtrimd_build_info",
                           MetricType::Gauge,
                           {"version", "revision"},
                           "A metric with a constant '1' value labelled by memtrimd's version and "
                           "source revision."};
const MetricDef kSamples{"memtrimd_samples_total",
                         MetricType::Counter,
                         {},
                         "Samples taken since memtrimd started (one per --sample.interval)."};
const MetricDef kSampleAge{"memtrimd_sample_age_seconds",
                           MetricType::Gauge,
                           {},
                           "Seconds since the sample these metrics come from was taken. memtrimd "
                           "samples on its own interval, not per scrape."};
const MetricDef kTargetsWatched{"memtrimd_targets_watched",
                                MetricType::Gauge,
                                {},
                                "Processes memtrimd watches now (one at most in sidecar mode)."};
const MetricDef kTargetsSkipped{
    "memtrimd_targets_skipped",
    MetricType::Gauge,
    {"reason"},
    "Processes memtrimd does not watch, by reason: targets_max (matched, "
    "but beyond --targets.max: the smallest by anonymous RSS plus swap, JVMs and "
    "programs with MEMTRIMD_TRIM=1 last), unreadable (its "
    "/proc files are shut to memtrimd: CAP_SYS_PTRACE is missing), read_stalled (its "
    "first read, of its maps, command line and environment, has not ended: its memory map "
    "is held locked; not watched until it ends)."};
const MetricDef kTargetsReadStalled{
    "memtrimd_targets_read_stalled",
    MetricType::Gauge,
    {},
    "Watched processes whose last read has run past its deadline (a path on a stuck FUSE or "
    "network filesystem, a memory map held locked) without ending: their last sample is "
    "carried meanwhile, and no other target waits for them."};
const MetricDef kAgentSocketsRemoved{
    "memtrimd_agent_sockets_removed_total",
    MetricType::Counter,
    {},
    "Stale libmemtrimd_agent.so sockets (nobody listens; left by a process killed by a signal, "
    "or that exec'd a program without the agent) removed from the targets' /tmp."};
const MetricDef kCollectorFailingTargets{
    "memtrimd_collector_failing_targets",
    MetricType::Gauge,
    {"collector"},
    "Targets whose last run of the collector failed (the reason is in /report and logged once)."};
const MetricDef kCollectorSuccess{"memtrimd_collector_success",
                                  MetricType::Gauge,
                                  {"pid", "collector"},
                                  "1 if the collector's last run succeeded, 0 if it failed (the "
                                  "reason is logged once).",
                                  "collectors"};
const MetricDef kCollectorDuration{"memtrimd_collector_duration_seconds",
                                   MetricType::Gauge,
                                   {"pid", "collector"},
                                   "How long the collector's last run took.",
                                   "collectors"};

const MetricDef kTargetUp{"memtrimd_target_up",
                          MetricType::Gauge,
                          {"pid"},
                          "1 for each live target process memtrimd watches; one series with no pid "
                          "and value 0 when it watches none (not found yet, exited, unreadable, or "
                          "no process matches the node selectors)."};
const MetricDef kTargetInfo{
    "memtrimd_target_info",
    MetricType::Gauge,
    {"pid", "comm", "runtime", "allocator", "jvm_version", "pod_uid", "container_id", "qos_class",
     "pod_name"},
    "The watched process: pid, command name, runtime (glibc, jvm, musl, "
    "unknown), the allocator that serves its malloc (glibc, jemalloc, tcmalloc, mimalloc, musl, "
    "unknown), JVM version, and for a process in a Kubernetes pod its pod "
    "UID, container ID (64 hex, no runtime prefix), QoS class and pod name "
    "(its hostname); empty outside a pod, but for a root podman container's ID. Value is "
    "always 1."};
const MetricDef kTargetStartTime{"memtrimd_target_start_time_seconds",
                                 MetricType::Gauge,
                                 {"pid"},
                                 "Start time of the target process since the Unix epoch: with "
                                 "pid, the target's identity (a reused pid is a new target)."};
const MetricDef kTargetResident{
    "memtrimd_target_resident_memory_bytes",
    MetricType::Gauge,
    {"pid", "kind"},
    "Resident memory of the target by kind (/proc/<pid>/status RssAnon, "
    "RssFile, RssShmem); the kinds add up to its RSS."};
const MetricDef kTargetSwap{"memtrimd_target_swap_bytes",
                            MetricType::Gauge,
                            {"pid"},
                            "Target memory swapped out (/proc/<pid>/status VmSwap).",
                            "process"};
const MetricDef kTargetResidentPeak{
    "memtrimd_target_resident_memory_peak_bytes",
    MetricType::Gauge,
    {"pid"},
    "Highest RSS the target has reached (/proc/<pid>/status VmHWM).",
    "process"};
const MetricDef kTargetThreads{"memtrimd_target_threads",
                               MetricType::Gauge,
                               {"pid"},
                               "Threads in the target. Each thread that mallocs can get its own "
                               "glibc arena, up to 8 per CPU.",
                               "process"};

const MetricDef kTargetMemoryLimit{"memtrimd_target_memory_limit_bytes",
                                   MetricType::Gauge,
                                   {"pid"},
                                   "Memory limit of the target's cgroup (memory.max, or the "
                                   "smallest limit of its ancestors). Absent when unlimited. "
                                   "--target.memory-limit is used only when the cgroup cannot be "
                                   "read."};
const MetricDef kCgroupUsage{"memtrimd_target_cgroup_memory_usage_bytes",
                             MetricType::Gauge,
                             {"pid"},
                             "Memory charged to the target's cgroup (memory.current): all its "
                             "processes, page cache included. The OOM killer compares this with "
                             "the limit.",
                             "cgroup"};
const MetricDef kCgroupMemory{"memtrimd_target_cgroup_memory_bytes",
                              MetricType::Gauge,
                              {"pid", "kind"},
                              "Memory charged to the target's cgroup by kind (memory.stat anon "
                              "and file).",
                              "cgroup"};
const MetricDef kTargetOomKills{"memtrimd_target_oom_kills_total",
                                MetricType::Counter,
                                {"pid"},
                                "OOM kills in the target's cgroup (memory.events oom_kill)."};

const MetricDef kArenaHeaps{"memtrimd_glibc_arena_heaps",
                            MetricType::Gauge,
                            {"pid"},
                            "glibc arena heaps (64 MiB subheaps of non-main arenas) found in "
                            "/proc/<pid>/smaps. Read every --smaps.interval.",
                            "heaps"};
const MetricDef kArenaHeapBytes{"memtrimd_glibc_arena_heap_bytes",
                                MetricType::Gauge,
                                {"pid", "state"},
                                "Bytes of glibc arena heaps: mapped is the part glibc made "
                                "usable (the rw-p part), resident what is in RAM. Resident bytes "
                                "of freed chunks are what malloc_trim can give back."};
const MetricDef kMainArenaResident{"memtrimd_glibc_main_arena_resident_bytes",
                                   MetricType::Gauge,
                                   {"pid"},
                                   "Resident bytes of the main arena (the [heap] brk area).",
                                   "heaps"};
const MetricDef kSmapsAge{"memtrimd_smaps_age_seconds",
                          MetricType::Gauge,
                          {"pid"},
                          "Seconds since /proc/<pid>/smaps was last read. The glibc metrics are "
                          "that old: smaps is read on --smaps.interval because the read holds the "
                          "target's mmap lock.",
                          "heaps"};
const MetricDef kSmapsDuration{"memtrimd_smaps_read_duration_seconds",
                               MetricType::Gauge,
                               {"pid"},
                               "How long the last /proc/<pid>/smaps read and parse took (the "
                               "target's mmap lock is taken during the read).",
                               "heaps"};

const MetricDef kMallocArenas{"memtrimd_glibc_malloc_arenas",
                              MetricType::Gauge,
                              {"pid"},
                              "glibc malloc arenas, main arena included (malloc_info: JVMs on "
                              "JDK 21+ through System.native_heap_info, other programs through "
                              "the preload agent).",
                              "heaps"};
const MetricDef kMallocSystem{"memtrimd_glibc_malloc_system_bytes",
                              MetricType::Gauge,
                              {"pid"},
                              "Bytes glibc malloc holds from the system across arenas "
                              "(malloc_info system current), mmapped chunks excluded.",
                              "heaps"};
const MetricDef kMallocFree{"memtrimd_glibc_malloc_free_bytes",
                            MetricType::Gauge,
                            {"pid", "bins"},
                            "Free bytes glibc malloc keeps (malloc_info): fast bins, and the "
                            "rest (other bins and top chunks), resident or not: free chunks "
                            "whose pages a trim gave back are still counted.",
                            "heaps"};
const MetricDef kTrimmableEstimate{
    "memtrimd_glibc_trimmable_estimate_bytes",
    MetricType::Gauge,
    {"pid"},
    "What malloc_trim would give back now (estimate): the free memory the arenas hold resident "
    "(the glibc_free part of the RSS account) less the free bytes outside the whole pages of free "
    "chunks and the main arena's top, which no trim takes. About 0 right after a trim."};
const MetricDef kRssBreakdown{"memtrimd_rss_breakdown_bytes",
                              MetricType::Gauge,
                              {"pid", "part"},
                              "RSS of one smaps read split into parts that add up exactly to it: "
                              "file (file-backed and shared), java_heap, glibc_arena_heaps, "
                              "glibc_main_arena, other_anonymous (stacks, metaspace, code cache, "
                              "GC structures, large mmapped malloc chunks).",
                              "breakdown"};

const MetricDef kAllocatorBytes{
    "memtrimd_allocator_bytes",
    MetricType::Gauge,
    {"pid", "allocator", "measure"},
    "The allocator's own figures in measures that mean the same for every allocator: allocated "
    "(in blocks the program holds), held (taken from the system and not given back), free_kept "
    "(free, kept, and what a release gives back; for glibc the free memory its arenas keep "
    "resident, of which a trim gives back memtrimd_glibc_trimmable_estimate_bytes), released "
    "(given back, address space kept). A "
    "measure the allocator does not report is absent (docs/allocators.md).",
    "allocator"};
const MetricDef kAllocatorStatBytes{
    "memtrimd_allocator_stat_bytes",
    MetricType::Gauge,
    {"pid", "allocator", "stat"},
    "The allocator's figures by its own names, as the preload agent read them with its API "
    "(jemalloc mallctl stats, tcmalloc MallocExtension properties, mimalloc mi_process_info, "
    "glibc mallinfo2).",
    "allocator"};
const MetricDef kAllocatorRisk{
    "memtrimd_allocator_risk",
    MetricType::Gauge,
    {"pid", "check"},
    "Allocator findings, 1 when seen: free_kept_high (jemalloc or tcmalloc keeps at least 16 MiB "
    "and a tenth of RSS free that its release call gives back; 0 when its figures say not), "
    "allocator_changed (the program ran on another allocator before it restarted; the series "
    "exists only then). Explanations in /report."};
const MetricDef kAllocatorDecay{"memtrimd_allocator_decay_seconds",
                                MetricType::Gauge,
                                {"pid", "allocator", "pages"},
                                "jemalloc's decay time for dirty and muzzy pages (how long freed "
                                "pages are kept before jemalloc purges them itself); -1: never.",
                                "allocator"};

const MetricDef kJvmAttachable{"memtrimd_jvm_attachable",
                               MetricType::Gauge,
                               {"pid"},
                               "1 if memtrimd could run diagnostic commands in the JVM through "
                               "its attach socket, 0 if not (the reason is logged and in "
                               "/report, e.g. -XX:+DisableAttachMechanism)."};
const MetricDef kJvmSettingInfo{"memtrimd_jvm_setting_info",
                                MetricType::Gauge,
                                {"pid", "name", "value"},
                                "JVM flags and system properties that matter for native memory "
                                "(MaxDirectMemorySize, MaxHeapSize, NativeMemoryTracking, "
                                "TrimNativeHeapInterval, jdk.nio.maxCachedBufferSize, ...). "
                                "Value is always 1.",
                                "settings"};
const MetricDef kJvmHeapCommitted{"memtrimd_jvm_heap_committed_bytes",
                                  MetricType::Gauge,
                                  {"pid"},
                                  "Java heap committed (hsperfdata, else GC.heap_info)."};
const MetricDef kJvmHeapUsed{"memtrimd_jvm_heap_used_bytes",
                             MetricType::Gauge,
                             {"pid"},
                             "Java heap used (hsperfdata, else GC.heap_info)."};
const MetricDef kJvmHeapMax{"memtrimd_jvm_heap_max_bytes",
                            MetricType::Gauge,
                            {"pid"},
                            "Java heap maximum (hsperfdata, else MaxHeapSize).",
                            "settings"};
const MetricDef kNmtReserved{"memtrimd_jvm_nmt_reserved_bytes",
                             MetricType::Gauge,
                             {"pid", "category"},
                             "Native Memory Tracking: reserved bytes per category.",
                             "nmt"};
const MetricDef kNmtCommitted{"memtrimd_jvm_nmt_committed_bytes",
                              MetricType::Gauge,
                              {"pid", "category"},
                              "Native Memory Tracking: committed bytes per category.",
                              "nmt"};
const MetricDef kNmtMalloc{"memtrimd_jvm_nmt_malloc_bytes",
                           MetricType::Gauge,
                           {"pid", "category"},
                           "Native Memory Tracking: bytes malloc'd per category.",
                           "nmt"};
const MetricDef kRssAccount{
    "memtrimd_rss_account_bytes",
    MetricType::Gauge,
    {"pid", "part"},
    "Who holds the RSS, from one smaps read, NMT and malloc statistics; the parts add up "
    "exactly to that read's RSS: file, java_heap, nmt_buffers, nmt_metaspace, nmt_code, "
    "nmt_threads, nmt_gc, nmt_jvm_other, glibc_free (free pages malloc keeps), and outside_nmt "
    "(JVM with NMT: native memory NMT does not know) or native (no NMT)."};
const MetricDef kDirectMemory{"memtrimd_jvm_direct_memory_bytes",
                              MetricType::Gauge,
                              {"pid"},
                              "Memory used by the direct buffer pool (BufferPoolMXBean "
                              "\"direct\"): what -XX:MaxDirectMemorySize limits. Needs "
                              "libmemtrimd_agent.so preloaded into the JVM.",
                              "buffer_pools"};
const MetricDef kBufferPoolUsed{"memtrimd_jvm_buffer_pool_used_bytes",
                                MetricType::Gauge,
                                {"pid", "pool"},
                                "BufferPoolMXBean memory used per pool (direct, mapped), read "
                                "inside the JVM by the preloaded agent.",
                                "buffer_pools"};
const MetricDef kBufferPoolCapacity{"memtrimd_jvm_buffer_pool_capacity_bytes",
                                    MetricType::Gauge,
                                    {"pid", "pool"},
                                    "BufferPoolMXBean total capacity per pool (direct, mapped).",
                                    "buffer_pools"};
const MetricDef kBufferPoolBuffers{"memtrimd_jvm_buffer_pool_used_buffers",
                                   MetricType::Gauge,
                                   {"pid", "pool"},
                                   "BufferPoolMXBean buffer count per pool (direct, mapped).",
                                   "buffer_pools"};
const MetricDef kTempBufferCache{
    "memtrimd_jvm_temp_buffer_cache_bytes",
    MetricType::Gauge,
    {"pid", "source"},
    "Temporary direct buffers the JDK caches per thread (sun.nio.ch.Util): source=agent, summed "
    "over threads inside the JVM; source=estimate, JDK 24+ only, NMT Other minus the direct "
    "pool (an upper bound)."};
const MetricDef kSiteLiveBytes{
    "memtrimd_native_site_live_bytes",
    MetricType::Gauge,
    {"pid", "site"},
    "Bytes held now by allocations made at this site (its innermost functions, as "
    "\"hold < hold_200 < main\"), estimated from the agent's sampled allocations "
    "(--collector.sites): the --sites.top largest sites and site=\"other\" for the rest. "
    "Allocations from before sampling started are not seen."};
const MetricDef kSiteResidentBytes{
    "memtrimd_native_site_resident_bytes",
    MetricType::Gauge,
    {"pid", "site"},
    "The resident part of memtrimd_native_site_live_bytes: each live sampled allocation's "
    "weight times the share of its range on resident pages (/proc/<pid>/pagemap), for the same "
    "sites and site=\"other\". Absent when the agent cannot list its live samples (protocol "
    "version 5 or older) or the pagemap cannot be read."};
const MetricDef kSitesSampler{
    "memtrimd_native_sites_sampler_bytes",
    MetricType::Gauge,
    {"pid"},
    "Memory the agent's allocation sampler has mapped in the target for its tables (at most "
    "4 MiB)."};
const MetricDef kSitesUnhooked{
    "memtrimd_native_sites_unhooked_objects",
    MetricType::Gauge,
    {"pid"},
    "Loaded objects in the target whose allocation calls the agent's sampler cannot hook (bound "
    "to another malloc, as under RTLD_DEEPBIND, or an allocator linked in statically): their "
    "allocations are missing from the sites. 0 when every call is seen."};
const MetricDef kSitesMemory{
    "memtrimd_sites_memory_bytes",
    MetricType::Gauge,
    {"kind"},
    "With --collector.sites: the node's sites memory budget (kind=budget, "
    "--sites.memory-budget) and what it holds now (kind=held: every target's kept stacks, "
    "their names and site history, and the symbol cache's cap)."};
const MetricDef kSitesDropped{
    "memtrimd_sites_dropped_total",
    MetricType::Counter,
    {"reason"},
    "With --collector.sites: what the sites memory budget did not keep: reason=target (a "
    "target's read whose profile was not kept at all; its sites say why), reason=stacks "
    "(stacks among the --sites.max-stacks largest left out, summed into the profile's "
    "other stacks)."};
const MetricDef kGcCollections{"memtrimd_jvm_gc_collections_total",
                               MetricType::Counter,
                               {"pid", "collector"},
                               "Garbage collections per collector (hsperfdata "
                               "sun.gc.collector.<n>.invocations).",
                               "gc"};
const MetricDef kGcSeconds{"memtrimd_jvm_gc_collection_seconds_total",
                           MetricType::Counter,
                           {"pid", "collector"},
                           "Time spent in garbage collections per collector (hsperfdata "
                           "sun.gc.collector.<n>.time).",
                           "gc"};
const MetricDef kMallocSetting{"memtrimd_target_malloc_setting_info",
                               MetricType::Gauge,
                               {"pid", "name", "value"},
                               "The target's glibc malloc tuning from its initial environment "
                               "(MALLOC_ARENA_MAX, MALLOC_TRIM_THRESHOLD_, MALLOC_TOP_PAD_, "
                               "MALLOC_MMAP_THRESHOLD_, GLIBC_TUNABLES, ...). Value is always 1.",
                               "settings"};
const MetricDef kDirectMemoryLimit{"memtrimd_jvm_direct_memory_limit_bytes",
                                   MetricType::Gauge,
                                   {"pid"},
                                   "Direct memory limit: MaxDirectMemorySize, or the max heap "
                                   "size when it is unset or 0.",
                                   "buffer_pools"};
const MetricDef kDirectMemoryRatio{"memtrimd_jvm_direct_memory_usage_ratio",
                                   MetricType::Gauge,
                                   {"pid"},
                                   "The direct buffer pool's memory used over its limit (0..1). "
                                   "Needs the agent."};
const MetricDef kJvmRisk{"memtrimd_jvm_risk",
                         MetricType::Gauge,
                         {"pid", "check"},
                         "1 when a check finds a native memory risk, 0 when it does not, "
                         "absent when it cannot decide: nio_cache_unbounded (the unbounded "
                         "temporary buffer cache holds 25%+ of the direct limit or 10%+ of the "
                         "container's limit, or grows 16+ MiB between reads), "
                         "direct_memory_high "
                         "(direct pool above 90% of its limit), direct_buffer_gc_storm (more "
                         "than 1 full collection a second caused by System.gc()). Settings "
                         "alone (NMT off, the JVM trimming itself) are advice, not risks."};

const MetricDef kTrimRuns{"memtrimd_trim_runs_total",
                          MetricType::Counter,
                          {"pid", "result", "reason"},
                          "Trim decisions by result (success, failure, skipped) and reason "
                          "(scheduled, manual; deadline, unavailable, not_available, ...; "
                          "no_target, not_opted_in, no_agent, not_attachable, jvm_trims_itself, "
                          "below_limit_ratio, no_limit), and deferred (node_rate_limit: due, held "
                          "back by --trim.max-per-minute)."};
const MetricDef kTrimReclaimedTotal{"memtrimd_trim_reclaimed_bytes_total",
                                    MetricType::Counter,
                                    {"pid"},
                                    "RSS+swap given back by successful trims, measured by "
                                    "memtrimd from /proc/<pid>/status before and after."};
const MetricDef kTrimLastReclaimed{
    "memtrimd_trim_last_reclaimed_bytes",
    MetricType::Gauge,
    {"pid", "measure"},
    "What the last trim gave back, by measure: rss_swap (/proc status), cgroup (memory.current; "
    "huge pages can keep it from moving), arena_heaps (smaps), reported (by the JVM or the "
    "agent). Negative when memory grew meanwhile.",
    "trim"};
const MetricDef kTrimDuration{"memtrimd_trim_duration_seconds",
                              MetricType::Histogram,
                              {},
                              "How long trims took (a thread using the same arena waits that "
                              "long).",
                              "trim"};
const MetricDef kTrimLastSuccess{"memtrimd_trim_last_success_timestamp_seconds",
                                 MetricType::Gauge,
                                 {"pid"},
                                 "When the last successful trim started (Unix epoch).",
                                 "trim"};
const MetricDef kTrimInterval{"memtrimd_trim_interval_seconds",
                              MetricType::Gauge,
                              {"pid"},
                              "The trim interval in force now (the base interval, or longer "
                              "while backing off).",
                              "trim"};

const MetricDef kProcessCpu{"process_cpu_seconds_total",
                            MetricType::Counter,
                            {},
                            "Total user and system CPU time spent in seconds."};
const MetricDef kProcessResident{
    "process_resident_memory_bytes", MetricType::Gauge, {}, "Resident memory size in bytes."};
const MetricDef kProcessVirtual{
    "process_virtual_memory_bytes", MetricType::Gauge, {}, "Virtual memory size in bytes."};
const MetricDef kProcessStartTime{"process_start_time_seconds",
                                  MetricType::Gauge,
                                  {},
                                  "Start time of the process since unix epoch in seconds."};
const MetricDef kProcessOpenFds{
    "process_open_fds", MetricType::Gauge, {}, "Number of open file descriptors."};
const MetricDef kProcessMaxFds{
    "process_max_fds", MetricType::Gauge, {}, "Maximum number of open file descriptors."};

}  // namespace metric

const std::vector<const MetricDef*>& AllMetrics() {
  using namespace metric;
  static const std::vector<const MetricDef*> all = {
      &kBuildInfo,
      &kSamples,
      &kSampleAge,
      &kTargetsWatched,
      &kTargetsSkipped,
      &kTargetsReadStalled,
      &kAgentSocketsRemoved,
      &kSitesMemory,
      &kSitesDropped,
      &kCollectorFailingTargets,
      &kCollectorSuccess,
      &kCollectorDuration,
      &kTargetUp,
      &kTargetInfo,
      &kTargetStartTime,
      &kTargetResident,
      &kTargetSwap,
      &kTargetResidentPeak,
      &kTargetThreads,
      &kMallocSetting,
      &kTargetMemoryLimit,
      &kCgroupUsage,
      &kCgroupMemory,
      &kTargetOomKills,
      &kArenaHeaps,
      &kArenaHeapBytes,
      &kMainArenaResident,
      &kSmapsAge,
      &kSmapsDuration,
      &kMallocArenas,
      &kMallocSystem,
      &kMallocFree,
      &kTrimmableEstimate,
      &kRssBreakdown,
      &kAllocatorBytes,
      &kAllocatorStatBytes,
      &kAllocatorDecay,
      &kAllocatorRisk,
      &kJvmAttachable,
      &kJvmSettingInfo,
      &kJvmHeapCommitted,
      &kJvmHeapUsed,
      &kJvmHeapMax,
      &kNmtReserved,
      &kNmtCommitted,
      &kNmtMalloc,
      &kRssAccount,
      &kDirectMemory,
      &kDirectMemoryLimit,
      &kDirectMemoryRatio,
      &kBufferPoolUsed,
      &kBufferPoolCapacity,
      &kBufferPoolBuffers,
      &kTempBufferCache,
      &kSiteLiveBytes,
      &kSiteResidentBytes,
      &kSitesSampler,
      &kSitesUnhooked,
      &kGcCollections,
      &kGcSeconds,
      &kJvmRisk,
      &kTrimRuns,
      &kTrimReclaimedTotal,
      &kTrimLastReclaimed,
      &kTrimDuration,
      &kTrimLastSuccess,
      &kTrimInterval,
      &kProcessCpu,
      &kProcessResident,
      &kProcessVirtual,
      &kProcessStartTime,
      &kProcessOpenFds,
      &kProcessMaxFds,
  };
  return all;
}

const char* MetricTypeName(prometheus::MetricType t) {
  switch (t) {
    case MetricType::Counter:
      return "counter";
    case MetricType::Gauge:
      return "gauge";
    case MetricType::Summary:
      return "summary";
    case MetricType::Histogram:
      return "histogram";
    case MetricType::Untyped:
      break;
  }
  return "untyped";
}

}  // namespace memtrimd
