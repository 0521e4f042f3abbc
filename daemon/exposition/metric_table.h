// The one table of metric names, types, labels and help texts. Only the
// exposition layer uses it; the metric reference (docs/metrics.md) is
// checked against it by a test.
#pragma once

#include <prometheus/metric_type.h>

#include <string_view>
#include <vector>

namespace memtrimd {

struct MetricDef {
  std::string_view name;
  prometheus::MetricType type;
  std::vector<std::string_view> labels;  // in exposition order
  std::string_view help;
  // The --metrics.detail family this metric belongs to (metric_detail.h), or
  // "" for a metric always served.
  std::string_view detail = "";
};

namespace metric {
// memtrimd itself.
extern const MetricDef kBuildInfo;
extern const MetricDef kSamples;
extern const MetricDef kSampleAge;
extern const MetricDef kTargetsWatched;
extern const MetricDef kTargetsReadStalled;
extern const MetricDef kAgentSocketsRemoved;
extern const MetricDef kSitesMemory;
extern const MetricDef kSitesDropped;
extern const MetricDef kTargetsSkipped;
extern const MetricDef kCollectorFailingTargets;
extern const MetricDef kCollectorSuccess;
extern const MetricDef kCollectorDuration;
// The target process.
extern const MetricDef kTargetUp;
extern const MetricDef kTargetInfo;
extern const MetricDef kTargetStartTime;
extern const MetricDef kTargetResident;
extern const MetricDef kTargetSwap;
extern const MetricDef kTargetResidentPeak;
extern const MetricDef kTargetThreads;
// Its cgroup.
extern const MetricDef kTargetMemoryLimit;
extern const MetricDef kCgroupUsage;
extern const MetricDef kCgroupMemory;
extern const MetricDef kTargetOomKills;
// glibc malloc, from smaps.
extern const MetricDef kArenaHeaps;
extern const MetricDef kArenaHeapBytes;
extern const MetricDef kMainArenaResident;
extern const MetricDef kSmapsAge;
extern const MetricDef kSmapsDuration;
// glibc malloc statistics (malloc_info) and the RSS breakdown.
extern const MetricDef kMallocArenas;
extern const MetricDef kMallocSystem;
extern const MetricDef kMallocFree;
extern const MetricDef kTrimmableEstimate;
extern const MetricDef kRssBreakdown;
// The allocator's own figures (through the agent).
extern const MetricDef kAllocatorBytes;
extern const MetricDef kAllocatorStatBytes;
extern const MetricDef kAllocatorDecay;
extern const MetricDef kAllocatorRisk;
// JVM.
extern const MetricDef kJvmAttachable;
extern const MetricDef kJvmSettingInfo;
extern const MetricDef kJvmHeapCommitted;
extern const MetricDef kJvmHeapUsed;
extern const MetricDef kJvmHeapMax;
extern const MetricDef kNmtReserved;
extern const MetricDef kNmtCommitted;
extern const MetricDef kNmtMalloc;
extern const MetricDef kRssAccount;
extern const MetricDef kBufferPoolUsed;
extern const MetricDef kBufferPoolCapacity;
extern const MetricDef kBufferPoolBuffers;
extern const MetricDef kTempBufferCache;
// Sampled allocation sites (the agent's sampler).
extern const MetricDef kSiteLiveBytes;
extern const MetricDef kSiteResidentBytes;
extern const MetricDef kSitesSampler;
extern const MetricDef kSitesUnhooked;
extern const MetricDef kGcCollections;
extern const MetricDef kGcSeconds;
extern const MetricDef kMallocSetting;
extern const MetricDef kDirectMemory;
extern const MetricDef kDirectMemoryLimit;
extern const MetricDef kDirectMemoryRatio;
extern const MetricDef kJvmRisk;
// Trimming.
extern const MetricDef kTrimRuns;
extern const MetricDef kTrimReclaimedTotal;
extern const MetricDef kTrimLastReclaimed;
extern const MetricDef kTrimDuration;
extern const MetricDef kTrimLastSuccess;
extern const MetricDef kTrimInterval;
// Standard process metrics of memtrimd itself.
extern const MetricDef kProcessCpu;
extern const MetricDef kProcessResident;
extern const MetricDef kProcessVirtual;
extern const MetricDef kProcessStartTime;
extern const MetricDef kProcessOpenFds;
extern const MetricDef kProcessMaxFds;
}  // namespace metric

// Every metric memtrimd can export, in exposition order.
const std::vector<const MetricDef*>& AllMetrics();

const char* MetricTypeName(prometheus::MetricType t);

}  // namespace memtrimd
