#include "daemon/exposition/exposition.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <prometheus/text_serializer.h>

#include <limits>
#include <map>
#include <span>

#include "collectors/cgroup/pod_identity.h"
#include "collectors/common/file_reader.h"
#include "collectors/common/text.h"
#include "collectors/procfs/proc_stat.h"
#include "daemon/analysis/allocator_findings.h"
#include "daemon/analysis/allocator_view.h"
#include "daemon/analysis/findings.h"
#include "daemon/analysis/rss_account.h"
#include "daemon/analysis/top_sites.h"
#include "daemon/build_info.h"
#include "daemon/exposition/metric_table.h"
#include "daemon/sampling/collector_set.h"
#include "daemon/trim/trim_engine.h"

namespace memtrimd {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

// Collects samples per metric, then emits families in table order with
// every family's lines together.
class FamilyBuilder {
 public:
  explicit FamilyBuilder(const MetricDetail& detail = MetricDetail{}) : detail_(detail) {}

  // Whether the detail family `name` is served ("" always is).
  bool Has(std::string_view name) const { return name.empty() || detail_.Has(name); }
  const MetricDetail& detail() const { return detail_; }

  // REQUIRES: label_values matches def.labels in length, or is shorter to
  // leave the last labels out. A metric of a detail family --metrics.detail
  // left out is not added.
  void Add(const MetricDef& def, std::vector<std::string> label_values, double value) {
    if (!Has(def.detail)) return;
    MetricFamily& f = Family(def);
    ClientMetric m;
    for (std::size_t i = 0; i < def.labels.size() && i < label_values.size(); ++i) {
      // Prometheus refuses a whole scrape over one label value that is not
      // UTF-8 (a comm cut inside a character): invalid bytes become U+FFFD,
      // as in every writer.
      m.label.push_back({std::string(def.labels[i]), text::ToValidUtf8(label_values[i])});
    }
    switch (def.type) {
      case MetricType::Counter:
        m.counter.value = value;
        break;
      case MetricType::Gauge:
        m.gauge.value = value;
        break;
      default:
        m.untyped.value = value;
        break;
    }
    f.metric.push_back(std::move(m));
  }

  // REQUIRES: def is a histogram; `cumulative` matches `bounds`.
  void AddHistogram(const MetricDef& def, std::span<const double> bounds,
                    const std::vector<uint64_t>& cumulative, uint64_t count, double sum) {
    if (!Has(def.detail)) return;
    MetricFamily& f = Family(def);
    ClientMetric m;
    m.histogram.sample_count = count;
    m.histogram.sample_sum = sum;
    for (std::size_t i = 0; i < bounds.size() && i < cumulative.size(); ++i) {
      m.histogram.bucket.push_back({cumulative[i], bounds[i]});
    }
    m.histogram.bucket.push_back({count, std::numeric_limits<double>::infinity()});
    f.metric.push_back(std::move(m));
  }

  std::vector<MetricFamily> Take() {
    std::vector<MetricFamily> out;
    for (const MetricDef* def : AllMetrics()) {
      auto it = families_.find(def->name);
      if (it != families_.end()) out.push_back(std::move(it->second));
    }
    return out;
  }

 private:
  MetricFamily& Family(const MetricDef& def) {
    auto [it, inserted] = families_.try_emplace(def.name);
    if (inserted) {
      it->second.name = std::string(def.name);
      it->second.help = std::string(def.help);
      it->second.type = def.type;
    }
    return it->second;
  }
  MetricDetail detail_;
  std::map<std::string_view, MetricFamily> families_;
};

double Seconds(std::chrono::nanoseconds d) { return std::chrono::duration<double>(d).count(); }

double D(uint64_t v) { return static_cast<double>(v); }

void AddJvm(FamilyBuilder& b, const std::string& pid, const TargetSample& s) {
  using namespace metric;
  if (s.malloc) {
    const jvm::MallocInfo& mi = s.malloc->info;
    b.Add(kMallocArenas, {pid}, D(mi.arenas.size()));
    b.Add(kMallocSystem, {pid}, D(mi.system_current));
    b.Add(kMallocFree, {pid, "fast"}, D(mi.total_fast_bytes));
    b.Add(kMallocFree, {pid, "rest"}, D(mi.total_rest_bytes));
  }
  // Read before the last trim, the estimate says what that trim could take;
  // it is left out until the statistics are read again.
  if (auto t = TrimmableEstimate(s); t && !MallocStatsStale(s)) {
    b.Add(kTrimmableEstimate, {pid}, D(*t));
  }
  if (s.jvm) {
    b.Add(kJvmAttachable, {pid}, s.jvm->attachable ? 1 : 0);
    for (const auto& [name, value] : s.jvm->settings) b.Add(kJvmSettingInfo, {pid, name, value}, 1);
  }
  JavaHeap heap = JavaHeapOf(s);
  if (heap.committed) b.Add(kJvmHeapCommitted, {pid}, D(*heap.committed));
  if (heap.used) b.Add(kJvmHeapUsed, {pid}, D(*heap.used));
  if (heap.max) b.Add(kJvmHeapMax, {pid}, D(*heap.max));
  if (s.jvm && s.jvm->nmt && s.jvm->nmt->enabled) {
    for (const jvm::NmtCategory& c : s.jvm->nmt->categories) {
      b.Add(kNmtReserved, {pid, c.name}, D(c.reserved));
      b.Add(kNmtCommitted, {pid, c.name}, D(c.committed));
      if (c.malloc_bytes) b.Add(kNmtMalloc, {pid, c.name}, D(*c.malloc_bytes));
    }
  }
  DirectMemory d = DirectMemoryOf(s);
  if (d.used_bytes) b.Add(kDirectMemory, {pid}, D(*d.used_bytes));
  if (d.limit_bytes) b.Add(kDirectMemoryLimit, {pid}, D(*d.limit_bytes));
  if (d.ratio) b.Add(kDirectMemoryRatio, {pid}, *d.ratio);
  if (s.jvm_buffers) {
    for (const auto& [pool, p] :
         {std::pair<const char*, const BufferPool&>{"direct", s.jvm_buffers->direct},
          {"mapped", s.jvm_buffers->mapped}}) {
      b.Add(kBufferPoolUsed, {pid, pool}, D(p.memory_used));
      b.Add(kBufferPoolCapacity, {pid, pool}, D(p.total_capacity));
      b.Add(kBufferPoolBuffers, {pid, pool}, D(p.count));
    }
  }
  if (auto cache = TempBufferCacheOf(s))
    b.Add(kTempBufferCache, {pid, cache->source}, D(cache->bytes));
  if (s.jvm_perf && s.jvm_perf->gc) {
    for (const jvm::PerfGcCollector& c : s.jvm_perf->gc->collectors) {
      b.Add(kGcCollections, {pid, c.name}, D(c.invocations));
      b.Add(kGcSeconds, {pid, c.name}, c.seconds);
    }
  }
  for (const RiskFinding& f : AssessJvmRisks(s)) b.Add(kJvmRisk, {pid, f.check}, f.at_risk ? 1 : 0);
}

// The largest sites by live bytes and one "other" row for the rest (stacks
// beyond --sites.max-stacks included), so a target has at most top + 1
// rows however its sites churn.
void AddSites(FamilyBuilder& b, const std::string& pid, const TargetSample& s, std::size_t top) {
  using namespace metric;
  if (!s.sites) return;
  const agent::SiteProfile& p = *s.sites;
  uint64_t resident_shown = 0;
  const uint64_t rest =
      ForTopSites(p, top, EmptySites::kKeep, [&](std::size_t, const agent::NamedSite& site) {
        b.Add(kSiteLiveBytes, {pid, site.name}, D(site.values.live_bytes));
        // The same rows: the series budget of the live bytes holds for both.
        if (p.resident.known) {
          b.Add(kSiteResidentBytes, {pid, site.name}, D(site.values.resident_bytes));
          resident_shown += site.values.resident_bytes;
        }
      });
  b.Add(kSiteLiveBytes, {pid, "other"}, D(rest));
  if (p.resident.known) {
    const uint64_t all = p.total.resident_bytes;
    b.Add(kSiteResidentBytes, {pid, "other"}, D(all > resident_shown ? all - resident_shown : 0));
  }
  b.Add(kSitesSampler, {pid}, D(p.sampler_bytes));
  if (p.hooks_counted) b.Add(kSitesUnhooked, {pid}, D(p.unhooked_objects));
}

void AddAllocator(FamilyBuilder& b, const std::string& pid, const std::string& allocator,
                  const Target& target, const AllocatorView& v, const TargetSample& s) {
  using namespace metric;
  const agent::AllocatorMeasures& m = v.measures;
  for (const auto& [measure, value] :
       {std::pair<const char*, const std::optional<uint64_t>&>{"allocated", m.allocated},
        {"held", m.held},
        {"free_kept", m.free_kept},
        {"released", m.released}}) {
    if (value) b.Add(kAllocatorBytes, {pid, allocator, measure}, D(*value));
  }
  for (const RiskFinding& f : AssessAllocator(target, s)) {
    b.Add(kAllocatorRisk, {pid, f.check}, f.at_risk ? 1 : 0);
  }
  if (!s.allocator) return;
  for (const auto& [stat, value] : s.allocator->bytes) {
    b.Add(kAllocatorStatBytes, {pid, allocator, stat}, D(value));
  }
  for (const auto& [pages, ms] :
       {std::pair<const char*, const std::optional<int64_t>&>{"dirty", s.allocator->dirty_decay_ms},
        {"muzzy", s.allocator->muzzy_decay_ms}}) {
    if (ms)
      b.Add(kAllocatorDecay, {pid, allocator, pages},
            *ms < 0 ? -1.0 : static_cast<double>(*ms) / 1000.0);
  }
}

void AddTarget(FamilyBuilder& b, const TargetSnapshot& ts) {
  using namespace metric;
  const std::string pid = std::to_string(ts.target.pid);
  const TargetSample& smp = ts.sample;
  std::string jvm_version = smp.jvm && smp.jvm->version ? smp.jvm->version->full : "";
  std::string pod_uid, container_id, qos, pod_name;
  if (smp.cgroup && smp.cgroup->pod) {
    pod_uid = smp.cgroup->pod->pod_uid;
    container_id = smp.cgroup->pod->container_id;
    if (smp.cgroup->pod->qos) qos = cgroup::QosClassName(*smp.cgroup->pod->qos);
    pod_name = smp.cgroup->pod_name;
  }
  b.Add(kTargetUp, {pid}, 1);
  const AllocatorView alloc = ViewAllocator(ts.target, smp);
  const std::string allocator = AllocatorName(alloc.allocator);
  b.Add(kTargetInfo,
        {pid, ts.target.comm, RuntimeName(ts.target.runtime), allocator, jvm_version, pod_uid,
         container_id, qos, pod_name},
        1);
  b.Add(kTargetStartTime, {pid}, ts.start_time_seconds);
  for (const CollectorOutcome& o : ts.collectors) {
    b.Add(kCollectorSuccess, {pid, o.name}, o.success ? 1 : 0);
    b.Add(kCollectorDuration, {pid, o.name}, o.duration_seconds);
  }
  if (const auto& p = ts.sample.process) {
    b.Add(kTargetResident, {pid, "anon"}, static_cast<double>(p->rss_anon));
    b.Add(kTargetResident, {pid, "file"}, static_cast<double>(p->rss_file));
    b.Add(kTargetResident, {pid, "shmem"}, static_cast<double>(p->rss_shmem));
    b.Add(kTargetSwap, {pid}, static_cast<double>(p->vm_swap));
    b.Add(kTargetResidentPeak, {pid}, static_cast<double>(p->vm_hwm));
    b.Add(kTargetThreads, {pid}, p->threads);
  }
  if (const auto& c = ts.sample.cgroup) {
    if (c->limit_bytes) b.Add(kTargetMemoryLimit, {pid}, static_cast<double>(*c->limit_bytes));
    if (c->usage_bytes) b.Add(kCgroupUsage, {pid}, static_cast<double>(*c->usage_bytes));
    if (c->anon_bytes) b.Add(kCgroupMemory, {pid, "anon"}, static_cast<double>(*c->anon_bytes));
    if (c->file_bytes) b.Add(kCgroupMemory, {pid, "file"}, static_cast<double>(*c->file_bytes));
    if (c->oom_kills) b.Add(kTargetOomKills, {pid}, static_cast<double>(*c->oom_kills));
  }
  if (const auto& g = ts.sample.glibc) {
    // glibc's arena figures only where glibc's malloc serves the program;
    // otherwise they are absent (inspect and /report say why), not zero.
    const bool arenas = g->arenas_not_applicable.empty();
    if (arenas) {
      b.Add(kArenaHeaps, {pid}, static_cast<double>(g->heaps.size()));
      // Mapped is the heaps' size, resident what they hold: only the latter
      // is served without --metrics.detail=heaps.
      if (b.Has("heaps"))
        b.Add(kArenaHeapBytes, {pid, "mapped"}, static_cast<double>(g->usable_bytes));
      b.Add(kArenaHeapBytes, {pid, "resident"}, static_cast<double>(g->resident_bytes));
      b.Add(kMainArenaResident, {pid}, static_cast<double>(g->main_arena_resident_bytes));
    }
    b.Add(kSmapsDuration, {pid}, g->read_seconds);
    const glibc::RssBreakdown& r = g->breakdown;
    b.Add(kRssBreakdown, {pid, "file"}, static_cast<double>(r.file_and_shared));
    if (g->java_heap_known)
      b.Add(kRssBreakdown, {pid, "java_heap"}, static_cast<double>(r.java_heap));
    if (arenas) {
      b.Add(kRssBreakdown, {pid, "glibc_arena_heaps"}, static_cast<double>(r.arena_heaps));
      b.Add(kRssBreakdown, {pid, "glibc_main_arena"}, static_cast<double>(r.main_arena));
    }
    // Without glibc's arenas the [heap] area is another allocator's (musl's
    // brk heap): anonymous like the rest.
    const uint64_t other = r.other_anonymous + (arenas ? 0 : r.main_arena + r.arena_heaps);
    b.Add(kRssBreakdown, {pid, "other_anonymous"}, static_cast<double>(other));
  }
  AddAllocator(b, pid, allocator, ts.target, alloc, smp);
  if (std::optional<RssAccount> a = AccountRss(smp)) {
    for (const auto& [part, bytes] : AccountParts(*a)) b.Add(kRssAccount, {pid, part}, D(bytes));
  }
  if (smp.malloc_env) {
    for (const auto& [name, value] : *smp.malloc_env) b.Add(kMallocSetting, {pid, name, value}, 1);
  }
  AddJvm(b, pid, smp);
  AddSites(b, pid, smp, b.detail().sites_top);
}

}  // namespace

std::vector<MetricFamily> SnapshotFamilies(const Snapshot* snap, const MetricDetail& detail) {
  using namespace metric;
  FamilyBuilder b(detail);
  b.Add(kBuildInfo, {kVersion, kRevision}, 1);
  // No target: one series without the pid label, so that
  // "memtrimd_target_up == 0" still finds it.
  if (snap == nullptr || snap->targets.empty()) b.Add(kTargetUp, {}, 0);
  if (snap == nullptr) return b.Take();
  b.Add(kSamples, {}, static_cast<double>(snap->sequence));
  b.Add(kTargetsWatched, {}, static_cast<double>(snap->targets.size() + snap->targets_unsampled));
  b.Add(kTargetsReadStalled, {}, static_cast<double>(snap->targets_read_stalled));
  b.Add(kAgentSocketsRemoved, {}, static_cast<double>(snap->agent_sockets_removed));
  if (snap->node_mode) {
    b.Add(kTargetsSkipped, {"targets_max"}, static_cast<double>(snap->targets_skipped));
    b.Add(kTargetsSkipped, {"unreadable"}, static_cast<double>(snap->targets_unreadable));
    b.Add(kTargetsSkipped, {"read_stalled"}, static_cast<double>(snap->targets_look_stalled));
  }
  if (snap->sites_budget) {
    const agent::SitesBudgetState& sb = *snap->sites_budget;
    b.Add(kSitesMemory, {"budget"}, static_cast<double>(sb.limit_bytes));
    b.Add(kSitesMemory, {"held"}, static_cast<double>(sb.held_bytes));
    b.Add(kSitesDropped, {"target"}, static_cast<double>(sb.dropped_targets));
    b.Add(kSitesDropped, {"stacks"}, static_cast<double>(sb.dropped_stacks));
  }
  std::map<std::string, int> failing;
  for (const TargetSnapshot& ts : snap->targets) {
    for (const CollectorOutcome& o : ts.collectors) failing[o.name] += o.success ? 0 : 1;
  }
  for (const auto& [name, n] : failing) b.Add(kCollectorFailingTargets, {name}, n);
  for (const TargetSnapshot& ts : snap->targets) AddTarget(b, ts);
  return b.Take();
}

std::vector<MetricFamily> AgeFamilies(const Snapshot* snap,
                                      std::chrono::steady_clock::time_point now,
                                      const MetricDetail& detail) {
  using namespace metric;
  FamilyBuilder b(detail);
  if (snap == nullptr) return b.Take();
  b.Add(kSampleAge, {}, Seconds(now - snap->taken_steady));
  for (const TargetSnapshot& ts : snap->targets) {
    if (const auto& g = ts.sample.glibc) {
      b.Add(kSmapsAge, {std::to_string(ts.target.pid)}, Seconds(now - g->read_steady));
    }
  }
  return b.Take();
}

std::vector<MetricFamily> SelfProcessFamilies() {
  using namespace metric;
  FamilyBuilder b;
  Result<std::string> text = ReadSmallFile("/proc/self/stat");
  if (text.ok()) {
    Result<procfs::ProcStat> st = procfs::ParseProcStat(*text);
    if (st.ok()) {
      const double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
      b.Add(kProcessCpu, {}, static_cast<double>(st->utime_ticks + st->stime_ticks) / tick);
      b.Add(kProcessResident, {},
            static_cast<double>(st->rss_pages) * static_cast<double>(::sysconf(_SC_PAGESIZE)));
      b.Add(kProcessVirtual, {}, static_cast<double>(st->vsize_bytes));
      b.Add(kProcessStartTime, {}, ProcessStartTimeSeconds(st->start_ticks));
    }
  }
  if (DIR* d = ::opendir("/proc/self/fd")) {
    int n = 0;
    while (struct dirent* e = ::readdir(d)) {
      if (e->d_name[0] != '.') ++n;
    }
    ::closedir(d);
    b.Add(kProcessOpenFds, {}, n - 1);  // minus the descriptor of this listing
  }
  struct rlimit rl;
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    b.Add(kProcessMaxFds, {}, static_cast<double>(rl.rlim_cur));
  }
  return b.Take();
}

std::vector<MetricFamily> TrimFamilies(const std::vector<TrimStats>& all,
                                       const MetricDetail& detail) {
  using namespace metric;
  FamilyBuilder b(detail);
  // Without --metrics.detail=trim, a run counter is served once it moved,
  // and the total once a trim gave something back: in node-agent mode most
  // targets never trim, and a zero series per reason and target would be
  // most of the budget.
  const bool zeros = b.Has("trim");
  for (const TrimStats& st : all) {
    const std::string pid = std::to_string(st.pid);
    for (const auto& [key, count] : st.runs) {
      if (count > 0 || zeros) {
        b.Add(kTrimRuns, {pid, key.first, key.second}, static_cast<double>(count));
      }
    }
    if (st.reclaimed_total_bytes > 0 || st.last_success_unix_seconds || zeros) {
      b.Add(kTrimReclaimedTotal, {pid}, static_cast<double>(st.reclaimed_total_bytes));
    }
    if (st.last && st.last->success) {
      const TrimResult& r = *st.last;
      b.Add(kTrimLastReclaimed, {pid, "rss_swap"}, static_cast<double>(r.ReclaimedRssSwap()));
      if (auto c = r.ReclaimedCgroup())
        b.Add(kTrimLastReclaimed, {pid, "cgroup"}, static_cast<double>(*c));
      if (auto a = r.ReclaimedArenaHeaps()) {
        b.Add(kTrimLastReclaimed, {pid, "arena_heaps"}, static_cast<double>(*a));
      }
      if (auto rep = r.Reported()) {
        b.Add(kTrimLastReclaimed, {pid, "reported"}, static_cast<double>(*rep));
      }
    }
    if (st.last_success_unix_seconds) b.Add(kTrimLastSuccess, {pid}, *st.last_success_unix_seconds);
    b.Add(kTrimInterval, {pid}, std::chrono::duration<double>(st.effective_interval).count());
  }
  // One histogram for the node: trim durations do not need a series per
  // target.
  std::vector<uint64_t> buckets(std::size(kTrimDurationBuckets), 0);
  uint64_t count = 0;
  double sum = 0;
  for (const TrimStats& st : all) {
    for (std::size_t i = 0; i < buckets.size() && i < st.duration_bucket_counts.size(); ++i) {
      buckets[i] += st.duration_bucket_counts[i];
    }
    count += st.duration_count;
    sum += st.duration_sum;
  }
  b.AddHistogram(kTrimDuration, kTrimDurationBuckets, buckets, count, sum);
  return b.Take();
}

std::string RenderText(const std::vector<MetricFamily>& families) {
  return prometheus::TextSerializer().Serialize(families);
}

}  // namespace memtrimd
