// Collectors for HotSpot JVM targets.
//
// "jvm": diagnostic commands through the attach socket, on --jvm.interval
// (each has its own deadline): NMT summary, GC.heap_info and, on JDK 21+,
// System.native_heap_info every run; VM.version, VM.flags and
// VM.system_properties once per target (they do not change while it runs).
//
// "hsperfdata": the JVM's perf-data file every sample (heap committed/used);
// no attach, no safepoint.
//
// Both do nothing (and succeed) for targets that are not JVMs.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <map>
#include "collectors/common/collector.h"

#include "collectors/jvm/agent_load.h"
#include "collectors/jvm/agent_load_record.h"
#include "collectors/jvm/attach_client.h"
#include "collectors/jvm/hsperfdata.h"
#include "collectors/jvm/jvm_text.h"
#include "collectors/jvm/perf_memory.h"

namespace memtrimd {
struct JvmSample;
struct JvmPerf;
}  // namespace memtrimd

namespace memtrimd::jvm {

// VM.flags and system properties memtrimd reports as settings.
inline constexpr const char* kSettingFlags[] = {"MaxHeapSize",
                                                "MaxDirectMemorySize",
                                                "NativeMemoryTracking",
                                                "TrimNativeHeapInterval",
                                                "UseG1GC",
                                                "UseZGC",
                                                "UseParallelGC",
                                                "UseSerialGC",
                                                "UseShenandoahGC"};
inline constexpr const char* kSettingProperties[] = {"jdk.nio.maxCachedBufferSize", "java.version"};

class JvmAttachCollector : public Collector {
 public:
  // `execute` runs one diagnostic command; the attach socket's, unless a
  // recording is replayed (tests/readme).
  explicit JvmAttachCollector(AttachOptions options, JcmdExecutor execute = ExecuteJcmd)
      : options_(options), execute_(std::move(execute)) {}
  // With --jvm.load-agent: loads memtrimd's agent into each JVM it reads,
  // on this collector's own thread; once per JVM as `record` keeps it (the
  // daemon's, shared by every target's collectors; none: one of its own).
  void LoadAgent(AgentLoadOptions options, std::shared_ptr<AgentLoadRecord> record) {
    load_ = std::move(options);
    loads_ = record ? std::move(record) : std::make_shared<AgentLoadRecord>();
  }
  std::string_view Name() const override { return "jvm"; }
  Status Collect(const Target& target, TargetSample& out) override;

 private:
  // Static facts of the current target, read once.
  struct StaticInfo {
    pid_t pid = 0;
    uint64_t start_ticks = 0;
    bool done = false;
    std::optional<JvmVersion> version;
    std::map<std::string, std::string, std::less<>> settings;
  };
  // `first_error_cause`: the cause of out.command_errors' first entry.
  Status ReadStatic(const Target& target, JvmSample& out, Cause& first_error_cause);

  AttachOptions options_;
  JcmdExecutor execute_;
  std::optional<AgentLoadOptions> load_;
  std::shared_ptr<AgentLoadRecord> loads_;
  StaticInfo static_;
};

class JvmPerfCollector : public Collector {
 public:
  std::string_view Name() const override { return "hsperfdata"; }
  Status Collect(const Target& target, TargetSample& out) override;

 private:
  void UpdateGcRates(JvmPerf& perf);
  Result<PerfData> ReadFile(const Target& target, TargetSample& sample);
  Result<PerfData> ReadWithoutFile(const Target& target, TargetSample& sample);

  pid_t pid_ = 0;
  uint64_t start_ticks_ = 0;
  std::string path_;     // found once per target: <proc_dir>/root<in_root_>
  std::string in_root_;  // "/tmp/hsperfdata_<user>/<nspid>", opened anew each read
  // Why this target has no perf data file, decided once per target.
  std::string missing_cause_;
  // Without the file: where the JVM keeps the counters in its memory, or
  // why that could not be read (perf_memory.h).
  std::optional<PerfMemoryLocation> memory_;
  bool memory_tried_ = false;
  Status memory_error_;  // ok: none
  // GC counters of this target at the start of the current rate window.
  struct GcBase {
    PerfGc gc;
    std::chrono::steady_clock::time_point at;
  };
  std::optional<GcBase> gc_base_;
  std::optional<GcRates> gc_rates_;  // of the last finished window
};

}  // namespace memtrimd::jvm
