#include "collectors/jvm/jvm_collector.h"

#include <algorithm>

#include <dirent.h>
#include <sys/stat.h>

#include <memory>

#include "collectors/common/access.h"
#include "collectors/common/file_reader.h"
#include "collectors/jvm/jvm_figures.h"
#include "collectors/jvm/malloc_stats.h"
#include "collectors/jvm/perf_data_cause.h"
#include "collectors/jvm/perf_file.h"
#include "collectors/jvm/perf_memory.h"
#include "collectors/jvm/signal_facts.h"
#include "collectors/procfs/rss_now.h"
#include "collectors/sample.h"

namespace memtrimd::jvm {
namespace {

// Runs one command; records a failure in `errors` (and, for the first one,
// its cause in `first_cause`) and returns nullopt.
std::optional<std::string> Run(const JcmdExecutor& execute, const Target& t, const char* command,
                               const AttachOptions& o, std::vector<std::string>& errors,
                               Cause& first_cause, Status* attach_failure) {
  Result<AttachResponse> r = execute(t, command, o);
  if (!r.ok()) {
    if (attach_failure != nullptr) *attach_failure = r.status();
    errors.push_back(std::string(command) + ": " + r.status().message());
    if (errors.size() == 1) first_cause = r.status().cause();
    return std::nullopt;
  }
  if (r->status != 0) {
    std::string first = r->output.substr(0, r->output.find('\n'));
    errors.push_back(std::string(command) + ": status " + std::to_string(r->status) + ": " + first);
    return std::nullopt;
  }
  return std::move(r->output);
}

bool UnknownCommand(const std::string& output) {
  return output.find("Unknown diagnostic command") != std::string::npos ||
         output.find("No such command") != std::string::npos;
}

}  // namespace

Status JvmAttachCollector::ReadStatic(const Target& t, JvmSample& out, Cause& first_error_cause) {
  if (!(static_.done && static_.pid == t.pid && static_.start_ticks == t.start_ticks)) {
    StaticInfo s;
    s.pid = t.pid;
    s.start_ticks = t.start_ticks;
    Status attach;
    std::vector<std::string> errors;
    Cause first_cause = Cause::kNone;
    if (auto v = Run(execute_, t, "VM.version", options_, errors, first_cause, &attach)) {
      Result<JvmVersion> pv = ParseVmVersion(*v);
      if (pv.ok()) s.version = *pv;
    }
    if (!attach.ok()) return attach;  // not attachable: no point in the rest
    if (auto f = Run(execute_, t, "VM.flags", options_, errors, first_cause, nullptr)) {
      auto flags = ParseVmFlags(*f);
      if (flags.ok()) {
        for (const char* name : kSettingFlags) {
          if (auto it = flags->find(name); it != flags->end()) s.settings[name] = it->second;
        }
      }
    }
    if (auto p = Run(execute_, t, "VM.system_properties", options_, errors, first_cause, nullptr)) {
      auto props = ParseSystemProperties(*p);
      if (props.ok()) {
        for (const char* name : kSettingProperties) {
          if (auto it = props->find(name); it != props->end()) s.settings[name] = it->second;
        }
      }
    }
    // Flags default to "off" for NMT when the JVM does not print it.
    if (!s.settings.count("NativeMemoryTracking")) s.settings["NativeMemoryTracking"] = "off";
    s.done = errors.empty();
    out.command_errors = errors;
    first_error_cause = first_cause;
    static_ = std::move(s);
  }
  out.version = static_.version;
  out.settings = static_.settings;
  return Status::Ok();
}

Status JvmAttachCollector::Collect(const Target& t, TargetSample& sample) {
  if (t.runtime != Runtime::kJvm) return Status::Ok();
  JvmSample out;
  out.read_at = std::chrono::system_clock::now();
  Cause first_error_cause = Cause::kNone;
  Status attach = ReadStatic(t, out, first_error_cause);
  if (!attach.ok()) {
    out.attachable = false;
    out.attach_error = attach.message();
    out.attach_cause = attach.cause();
    sample.jvm = std::move(out);
    return attach;
  }
  out.attachable = true;
  if (load_) {
    // Recorded once per JVM: later runs only read the record.
    AgentLoadOutcome loaded = loads_->LoadOnce(t, *load_);
    out.agent_load = AgentLoadResultName(loaded.result);
    out.agent_load_text = loaded.text;
  }
  if (auto nmt = Run(execute_, t, "VM.native_memory summary scale=B", options_, out.command_errors,
                     first_error_cause, nullptr)) {
    Result<NmtSummary> parsed = ParseNmtSummary(*nmt);
    if (parsed.ok()) {
      out.nmt = std::move(parsed).value();
      out.nmt_read_at = std::chrono::system_clock::now();
      out.nmt_rss_bytes = procfs::RssNow(t.proc_dir);
    } else {
      out.command_errors.push_back("VM.native_memory: " + parsed.status().message());
    }
  }
  if (auto heap = Run(execute_, t, "GC.heap_info", options_, out.command_errors, first_error_cause,
                      nullptr)) {
    Result<HeapInfo> parsed = ParseGcHeapInfo(*heap);
    if (parsed.ok()) out.gc_heap = *parsed;
  }
  // JDK 21+ only; older JDKs answer "unknown command", which is not an error.
  // On a preloaded jemalloc (or another allocator) it would describe glibc's
  // unused heap: not asked.
  if ((!out.version || out.version->feature >= 21) && GlibcMallocNotApplicable(t).empty()) {
    Result<AttachResponse> r = execute_(t, "System.native_heap_info", options_);
    if (r.ok() && r->status == 0 && !UnknownCommand(r->output)) {
      Result<MallocInfo> mi = ParseMallocInfo(r->output);
      if (mi.ok()) {
        sample.malloc =
            MallocStats{std::move(mi).value(), MallocSource::kJvm, std::chrono::system_clock::now(),
                        std::chrono::steady_clock::now(), procfs::RssNow(t.proc_dir)};
      }
    }
  }
  Status result =
      out.command_errors.empty()
          ? Status::Ok()
          : Status(ErrorCode::kUnavailable, out.command_errors.front(), first_error_cause);
  sample.jvm = std::move(out);
  return result;
}

Status JvmPerfCollector::Collect(const Target& t, TargetSample& sample) {
  if (t.runtime != Runtime::kJvm) return Status::Ok();
  if (pid_ != t.pid || start_ticks_ != t.start_ticks) {
    pid_ = t.pid;
    start_ticks_ = t.start_ticks;
    path_.clear();
    missing_cause_.clear();
    memory_.reset();
    memory_tried_ = false;
    memory_error_ = Status::Ok();
    gc_base_.reset();
    gc_rates_.reset();
  }
  if (path_.empty()) {
    // /tmp/hsperfdata_<user>/<nspid> in the JVM's mount namespace; the user
    // name is the JVM's, which memtrimd cannot resolve reliably (another
    // /etc/passwd), so look for the directory of the JVM's uid holding our
    // file (without following symlinks; ReadTargetPerfFile checks again on
    // every read).
    Result<std::string> dir = FindPerfFileDir(t);
    if (dir.ok()) {
      in_root_ = "/tmp/" + *dir + "/" + std::to_string(t.nspid);
      path_ = t.proc_dir + "/root" + in_root_;
    } else if (dir.status().code() != ErrorCode::kNotFound) {
      return dir.status();
    }
  }
  Result<PerfData> data = path_.empty() ? ReadWithoutFile(t, sample) : ReadFile(t, sample);
  if (!data.ok()) return data.status();
  std::optional<PerfHeap> heap = HeapFromPerfData(*data);
  if (!heap) return Status(ErrorCode::kParseError, "hsperfdata: no sun.gc.generation counters");
  JvmPerf perf;
  perf.heap = *heap;
  perf.path = path_;
  if (path_.empty()) {
    perf.source = "memory";
    perf.no_file = missing_cause_;
  }
  perf.gc = GcFromPerfData(*data);
  UpdateGcRates(perf);
  if (perf.gc && !perf.gc_per_second) {
    // No window yet (the first read, e.g. a one-shot inspect): the average
    // since the JVM started, said as such.
    std::optional<int64_t> began_ms = data->Long("sun.rt.createVmBeginTime");
    auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
    if (began_ms && *began_ms > 0 && now_ms - *began_ms >= 1000) {
      double up = static_cast<double>(now_ms - *began_ms) / 1000.0;
      double n = 0, seconds = 0;
      for (const PerfGcCollector& c : perf.gc->collectors) {
        n += static_cast<double>(c.invocations);
        seconds += c.seconds;
      }
      perf.gc_per_second = n / up;
      perf.full_gc_per_second = FullCollections(*perf.gc) / up;
      perf.gc_time_ratio = std::min(1.0, seconds / up);
      perf.gc_rates_since_start = true;
    }
  }
  sample.jvm_perf = std::move(perf);
  return Status::Ok();
}

Result<PerfData> JvmPerfCollector::ReadFile(const Target& t, TargetSample& sample) {
  Result<PerfData> data = ReadTargetPerfFile(t, in_root_);
  if (!data.ok()) {
    // The file is the JVM user's, mode 0600: another user needs
    // CAP_DAC_OVERRIDE (found by name above, which needs no permission).
    // Any failure, a refused owner or a symlink on the way included, makes
    // the next sample look for the file again.
    Status st = ExplainDenied(data.status(), "hsperfdata: open " + path_, path_);
    path_.clear();
    in_root_.clear();
    sample.jvm_perf_missing = st.message();
    sample.jvm_perf_missing_cause = st.cause();
    return st;
  }
  return data;
}

// No file: say why from the JVM's options and its /etc/passwd, once per
// JVM (a uid without a name is the usual reason in a pod; the flags are
// named only when they are set), and read the same counters from the
// JVM's memory, where they are unless -XX:-UsePerfData.
Result<PerfData> JvmPerfCollector::ReadWithoutFile(const Target& t, TargetSample& sample) {
  if (missing_cause_.empty()) {
    PerfDataCauseFacts facts = ReadPerfDataCauseFacts(t);
    PerfDataVerdict verdict = DecidePerfDataCause(facts);
    missing_cause_ = PerfDataCauseText(verdict, facts);
    memory_tried_ = verdict.cause == PerfDataCause::kPerfDataOff;  // nothing there to read
    memory_error_ = Status::Ok();
  }
  if (!memory_ && !memory_tried_) {
    // Found once per JVM. A JVM still starting has no perf memory yet:
    // looked for again at the next sample; any other failure is final.
    Result<PerfMemoryLocation> where = FindPerfMemory(t);
    if (where.ok()) {
      memory_ = *where;
    } else {
      memory_error_ = where.status();
      memory_tried_ = where.status().code() != ErrorCode::kNotFound ||
                      where.status().cause() != Cause::kStarting;
    }
  }
  std::string why = missing_cause_;
  if (memory_) {
    Result<PerfData> data = ReadPerfMemory(ProcessMemory(t.pid), *memory_);
    if (data.ok()) return data;
    memory_error_ = data.status();
  }
  if (!memory_error_.ok())
    why += "; reading its perf counters from its memory failed: " + memory_error_.message();
  sample.jvm_perf_missing = why;
  sample.jvm_perf_missing_cause = memory_error_.cause();
  return Status(ErrorCode::kNotFound, "hsperfdata: no perf data file: " + why,
                FirstCause(memory_error_.cause(), Cause::kNoPerfFile));
}

// The window starts at a baseline reading and ends at the first reading at
// least kGcWindow later, which becomes the next baseline; readings in
// between report the last finished window, so the series does not come and
// go with a sample interval shorter than the window.
void JvmPerfCollector::UpdateGcRates(JvmPerf& perf) {
  constexpr double kGcWindowSeconds = 1.0;
  const auto now = std::chrono::steady_clock::now();
  if (!perf.gc) {
    gc_base_.reset();
    gc_rates_.reset();
    return;
  }
  if (!gc_base_) {
    gc_base_ = GcBase{*perf.gc, now};
  } else {
    const double wall = std::chrono::duration<double>(now - gc_base_->at).count();
    if (wall >= kGcWindowSeconds) {
      gc_rates_ = GcRatesBetween(gc_base_->gc, *perf.gc, wall, kGcWindowSeconds);
      gc_base_ = GcBase{*perf.gc, now};
    }
  }
  if (gc_rates_) {
    perf.gc_per_second = gc_rates_->per_second;
    perf.full_gc_per_second = gc_rates_->full_per_second;
    perf.gc_time_ratio = gc_rates_->time_ratio;
  }
}

}  // namespace memtrimd::jvm
