#include "daemon/trim/trim.h"

#include "collectors/agent/client/agent_client.h"
#include "collectors/cgroup/cgroup_collector.h"
#include "collectors/common/file_reader.h"
#include "collectors/glibc/glibc_heap_collector.h"
#include "collectors/jvm/attach_client.h"
#include "collectors/procfs/proc_status.h"
#include "collectors/sample.h"

namespace memtrimd {

const char* TrimBackendName(TrimBackendKind k) {
  switch (k) {
    case TrimBackendKind::kJvm:
      return "jvm";
    case TrimBackendKind::kAgent:
      return "agent";
    case TrimBackendKind::kAuto:
      break;
  }
  return "auto";
}

std::optional<int64_t> TrimResult::ReclaimedCgroup() const {
  if (!before.cgroup_usage_bytes || !after.cgroup_usage_bytes) return std::nullopt;
  return static_cast<int64_t>(*before.cgroup_usage_bytes) -
         static_cast<int64_t>(*after.cgroup_usage_bytes);
}

std::optional<int64_t> TrimResult::ReclaimedArenaHeaps() const {
  if (!before.arena_resident_bytes || !after.arena_resident_bytes) return std::nullopt;
  return static_cast<int64_t>(*before.arena_resident_bytes) -
         static_cast<int64_t>(*after.arena_resident_bytes);
}

std::optional<int64_t> TrimResult::Reported() const {
  if (jvm_report && jvm_report->delta) return -*jvm_report->delta;
  if (agent_rss_delta) return -*agent_rss_delta;
  return std::nullopt;
}

BackendChoice ChooseBackend(const Target& t, TrimBackendKind wanted, bool agent_loaded) {
  auto none = [](std::string reason, std::string why) {
    return BackendChoice{std::nullopt, std::move(reason), std::move(why)};
  };
  if (t.allocator == Allocator::kMusl) {
    return none("no_release_call",
                "musl's malloc has no call that gives free memory back; nothing to trim");
  }
  const bool jvm = t.runtime == Runtime::kJvm;
  const std::string other = GlibcMallocNotApplicable(t);
  if (wanted == TrimBackendKind::kJvm || (wanted == TrimBackendKind::kAuto && jvm)) {
    if (!jvm) return none("not_a_jvm", "not a JVM");
    if (other.empty()) return {TrimBackendKind::kJvm, "", ""};
    // System.trim_native_heap would only trim glibc's (unused) heap.
    if (wanted == TrimBackendKind::kJvm || !agent_loaded) {
      return none("allocator_not_glibc",
                  other +
                      ": System.trim_native_heap would only trim glibc's unused heap; "
                      "preload libmemtrimd_agent.so to release with the allocator's own call");
    }
    return {TrimBackendKind::kAgent, "", ""};
  }
  if (!agent_loaded) {
    // A JVM asked to use the agent it lacks is skipped under the label of
    // its allocator, as the automatic choice would be.
    return none(jvm && !other.empty() ? "allocator_not_glibc" : "no_agent",
                "not a JVM, and libmemtrimd_agent.so is not loaded (start it with "
                "LD_PRELOAD=libmemtrimd_agent.so)");
  }
  return {TrimBackendKind::kAgent, "", ""};
}

Result<TrimBackendKind> ResolveBackend(const Target& t, TrimBackendKind wanted) {
  BackendChoice c = ChooseBackend(t, wanted, agent::HasAgent(t));
  if (!c.backend) return Status(ErrorCode::kUnavailable, c.why);
  return *c.backend;
}

Target WithAgentsAllocator(Target t, const TargetSample& s) {
  if (s.allocator && s.allocator->allocator != t.allocator) {
    t.allocator = s.allocator->allocator;
    t.allocator_source = "the agent: malloc is served by " + s.allocator->object;
  }
  return t;
}

std::string BackendUnavailableReason(const Target& t, TrimBackendKind wanted) {
  // Without a backend the label is the same whether the agent is loaded or
  // not (it decides only whether there is one): no second look at maps.
  return ChooseBackend(t, wanted, /*agent_loaded=*/false).reason;
}

TrimMeasure MeasureForTrim(const Target& t, const TrimOptions& o) {
  TrimMeasure m;
  if (Result<std::string> text = ReadSmallFile(t.proc_dir + "/status"); text.ok()) {
    if (Result<procfs::ProcStatus> st = procfs::ParseProcStatus(*text); st.ok()) {
      m.rss_swap_bytes = st->Rss() + st->vm_swap;
    }
  }
  TargetSample s;
  cgroup::CgroupCollector cg(std::nullopt);
  if (cg.Collect(t, s).ok() && s.cgroup) m.cgroup_usage_bytes = s.cgroup->usage_bytes;
  if (o.measure_arena_heaps) {
    glibc::GlibcHeapOptions g;
    g.heap_size = o.glibc_heap_size;
    // Headers too: heaps the kernel merged into one mapping are found only
    // through them, and the per-heap comparison must cover them.
    g.confirm_with_heap_info = true;
    glibc::GlibcHeapCollector heaps(g);
    // Under another allocator there are no glibc arena heaps to compare.
    if (heaps.Collect(t, s).ok() && s.glibc && s.glibc->arenas_not_applicable.empty()) {
      m.arena_resident_bytes = s.glibc->resident_bytes;
      m.arena_heaps = std::move(s.glibc->heaps);  // the same read: they sum to the above
    }
  }
  return m;
}

std::string TrimFailureReason(const Status& st) {
  switch (st.code()) {
    case ErrorCode::kNotFound:
      return "target_gone";
    case ErrorCode::kPermissionDenied:
      return "permission";
    case ErrorCode::kUnavailable:
      return st.cause() == Cause::kDeadline ? "deadline" : "unavailable";
    default:
      return "error";
  }
}

Result<TrimResult> TrimNow(const Target& t, const TrimOptions& o) {
  Result<TrimBackendKind> backend = ResolveBackend(t, o.backend);
  if (!backend.ok()) return backend.status();
  TrimResult r;
  r.pid = t.pid;
  r.backend = TrimBackendName(*backend);
  r.allocator = AllocatorName(t.allocator == Allocator::kUnknown ? Allocator::kGlibc : t.allocator);
  r.before = MeasureForTrim(t, o);
  auto t0 = std::chrono::steady_clock::now();
  r.at = std::chrono::system_clock::now();
  if (*backend == TrimBackendKind::kJvm) {
    jvm::AttachOptions a;
    a.command_timeout = o.timeout;
    if (o.signal_record) a.signal_record = o.signal_record;
    r.call = "System.trim_native_heap";
    Result<jvm::AttachResponse> resp = jvm::ExecuteJcmd(t, "System.trim_native_heap", a);
    if (!resp.ok()) {
      r.reason = TrimFailureReason(resp.status());
      r.error = resp.status().message();
    } else if (resp->status != 0 ||
               resp->output.find("Unknown diagnostic command") != std::string::npos) {
      r.reason = "not_available";
      r.error = "the JVM has no System.trim_native_heap (JDK 17.0.2+ needed): " +
                resp->output.substr(0, resp->output.find('\n'));
    } else {
      Result<jvm::TrimReport> report = jvm::ParseTrimOutput(resp->output);
      if (report.ok() && report->outcome == jvm::TrimReport::Outcome::kNotAvailable) {
        r.reason = "not_available";
        r.error = "the JVM says trimming is not available (not glibc)";
      } else {
        r.success = true;
        if (report.ok()) r.jvm_report = *report;
      }
    }
  } else {
    agent::AgentOptions a;
    a.timeout = o.timeout;
    Result<agent::AgentTrim> at = agent::AgentTrimNow(t, a);
    if (!at.ok()) {
      r.reason = TrimFailureReason(at.status());
      r.error = at.status().message();
    } else {
      r.success = true;
      r.agent_rss_delta =
          static_cast<int64_t>(at->rss_after) - static_cast<int64_t>(at->rss_before);
      r.allocator = AllocatorName(at->allocator);
      r.call = at->call;
      r.free_kept_before = at->free_kept_before;
      r.free_kept_after = at->free_kept_after;
      r.committed_before = at->committed_before;
      r.committed_after = at->committed_after;
    }
  }
  r.duration_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.after = MeasureForTrim(t, o);
  return r;
}

}  // namespace memtrimd
