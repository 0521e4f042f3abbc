#include "daemon/report/section_trims.h"

#include <cstdio>
#include <string_view>

#include "daemon/analysis/findings.h"
#include "daemon/base/units.h"
#include "daemon/report/section_allocator.h"
#include "daemon/report/svg_chart.h"
#include "daemon/trim/trim_heaps.h"

namespace memtrimd::report {
namespace {

// What to do about an unreachable agent, from the cause of the client's
// reason.
std::string AgentHint(Cause why) {
  if (why == Cause::kNoSocket) {
    return " (the agent did not start; it says why on the program's stderr, e.g. a socket path "
           "it cannot bind)";
  }
  // A capability or root (kNeedsCapability alone already names the
  // capability memtrimd lacks, a node agent without CAP_DAC_OVERRIDE:
  // nothing to add).
  if (why == Cause::kNeedsCapabilityOrRoot) {
    return " (the program made the socket as root and changed uid without glibc's setuid: run "
           "memtrimd as root)";
  }
  return "";
}

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

void TrimResultFieldsJson(JsonWriter& w, const TrimResult& r) {
  w.Key("pid").Int(r.pid).Key("backend").String(r.backend).Key("trigger").String(r.trigger);
  w.Key("allocator").String(r.allocator).Key("call").String(r.call);
  if (r.free_kept_before) w.Key("free_kept_before_bytes").Uint(*r.free_kept_before);
  if (r.free_kept_after) w.Key("free_kept_after_bytes").Uint(*r.free_kept_after);
  if (r.committed_before) w.Key("committed_before_bytes").Uint(*r.committed_before);
  if (r.committed_after) w.Key("committed_after_bytes").Uint(*r.committed_after);
  w.Key("success").Bool(r.success);
  if (!r.success) w.Key("reason").String(r.reason).Key("error").String(r.error);
  w.Key("at_unix_seconds").Double(UnixSeconds(r.at));
  w.Key("duration_seconds").Double(r.duration_seconds);
  w.Key("rss_swap_before_bytes").Uint(r.before.rss_swap_bytes);
  w.Key("rss_swap_after_bytes").Uint(r.after.rss_swap_bytes);
  w.Key("reclaimed_rss_swap_bytes").Int(r.ReclaimedRssSwap());
  if (auto c = r.ReclaimedCgroup()) w.Key("reclaimed_cgroup_bytes").Int(*c);
  if (auto a = r.ReclaimedArenaHeaps()) w.Key("reclaimed_arena_heaps_bytes").Int(*a);
  if (r.before.arena_resident_bytes)
    w.Key("arena_heaps_before_bytes").Uint(*r.before.arena_resident_bytes);
  if (r.after.arena_resident_bytes)
    w.Key("arena_heaps_after_bytes").Uint(*r.after.arena_resident_bytes);
  if (auto rep = r.Reported()) w.Key("reported_bytes").Int(*rep);
  // Each arena heap before and after (absent side: the heap came or went).
  std::vector<HeapTrimDelta> heaps = PairHeaps(r.before, r.after);
  if (!heaps.empty()) {
    w.Key("arena_heaps").BeginArray();
    for (const HeapTrimDelta& h : heaps) {
      w.BeginObject().Key("start").String(Hex(h.start));
      w.Key("before_resident_bytes");
      h.before_resident ? w.Uint(*h.before_resident) : w.Null();
      w.Key("after_resident_bytes");
      h.after_resident ? w.Uint(*h.after_resident) : w.Null();
      w.EndObject();
    }
    w.EndArray();
  }
}

// One line per arena heap: start, before -> after, change.
void HeapTrimsText(TextTable& t, const TrimResult& r) {
  std::vector<HeapTrimDelta> heaps = PairHeaps(r.before, r.after);
  if (heaps.empty()) return;
  t.Say("arena heaps, resident before -> after:");
  for (const HeapTrimDelta& h : heaps) {
    std::string line = "  " + Hex(h.start) + "  " +
                       (h.before_resident ? Bytes(*h.before_resident) : "(new)") + " -> " +
                       (h.after_resident ? Bytes(*h.after_resident) : "(gone)");
    if (auto c = h.Change()) line += "  (" + SignedBytes(*c) + ")";
    t.Say(line);
  }
}

std::string TrimLine(const TrimResult& r) {
  std::string line = FormatUtc(UnixSeconds(r.at)) + "  " + r.backend + " " + r.trigger + ": ";
  if (!r.success) return line + "failed (" + r.reason + "): " + r.error;
  char dur[32];
  std::snprintf(dur, sizeof(dur), "%.3f s", r.duration_seconds);
  line += "gave back " + SignedBytes(r.ReclaimedRssSwap()) + " RSS+swap in " + dur;
  if (auto a = r.ReclaimedArenaHeaps()) line += ", arena heaps " + SignedBytes(*a);
  if (auto c = r.ReclaimedCgroup()) line += ", cgroup " + SignedBytes(*c);
  if (auto rep = r.Reported()) line += ", reported " + SignedBytes(*rep);
  if (!r.call.empty()) line += " (" + r.allocator + ": " + r.call + ")";
  return line;
}

}  // namespace

void TrimStatsText(TextTable& t, const TrimStats& s) {
  t.Heading("Trimming (backend " + s.backend_setting + ")");
  if (s.effective_interval.count() == 0) {
    t.Say("scheduled trims are off (--trim.interval=0)");
  } else {
    std::string next =
        s.in_progress ? "a trim is running now"
        : s.next_due_in_seconds
            ? "next in " + FormatDuration(std::chrono::milliseconds(
                               static_cast<int64_t>(std::max(0.0, *s.next_due_in_seconds) * 1000)))
            : "";
    t.Say("every " + FormatDuration(s.effective_interval) + "; " + next +
          (s.last_skip_reason.empty() ? "" : "; last decision: skip (" + s.last_skip_reason + ")"));
  }
  t.Say("given back so far: " + Bytes(s.reclaimed_total_bytes) + " RSS+swap");
  for (const TrimResult& r : s.recent) t.Say(TrimLine(r));
  if (!s.recent.empty()) HeapTrimsText(t, s.recent.front());
}

const TrimStats* TrimsOf(const std::vector<TrimStats>* trims, const Target& t) {
  if (trims == nullptr) return nullptr;
  for (const TrimStats& s : *trims) {
    if (s.pid == t.pid && s.start_ticks == t.start_ticks) return &s;
  }
  return nullptr;
}

void TrimBackendText(TextTable& t, const TargetSnapshot& ts, const AllocatorView& alloc) {
  const TargetSample& s = ts.sample;
  // The allocator as the agent or maps named it, and the automatic choice
  // (--trim.backend=auto), made as the trim engine makes it.
  Target tg = ts.target;
  tg.allocator = alloc.allocator;
  const BackendChoice choice = ChooseBackend(tg, TrimBackendKind::kAuto, s.agent_loaded);
  const bool other = IsOtherAllocator(alloc.allocator);
  t.Heading("Trimming");
  if (!choice.backend && choice.reason == "no_release_call") {
    t.Say(
        "no backend: musl's malloc has no call that gives free memory back; memtrimd does not "
        "trim it");
  } else if (!choice.backend && other) {
    t.Say(std::string("no backend: malloc is ") + AllocatorName(alloc.allocator) +
          (tg.runtime == Runtime::kJvm
               ? "; System.trim_native_heap would only trim glibc's unused heap, so memtrimd "
                 "does not send it"
               : "") +
          ". Preload libmemtrimd_agent.so to release with the allocator's own call.");
  } else if (!choice.backend) {
    t.Say(
        "no backend: not a JVM, and libmemtrimd_agent.so is not loaded (start the program "
        "with LD_PRELOAD=libmemtrimd_agent.so to let memtrimd trim it)");
  } else if (*choice.backend == TrimBackendKind::kJvm) {
    t.Say("backend: jvm (System.trim_native_heap through the attach socket, JDK 17.0.2+)");
    if (auto ms = SettingBytes(s, "TrimNativeHeapInterval"); ms && *ms > 0) {
      t.Say("the JVM trims itself every " + std::to_string(*ms) +
            " ms: memtrimd skips it unless --trim.force");
    }
  } else if (other) {
    t.Say(std::string("backend: agent, with ") + AllocatorName(alloc.allocator) +
          "'s own release call (" + ReleaseCallOf(alloc.allocator) + ")" +
          (s.agent_unreachable.empty() ? ""
                                       : "; unreachable now: " + s.agent_unreachable +
                                             AgentHint(s.agent_unreachable_cause)));
  } else if (!s.agent_unreachable.empty()) {
    // Loaded is not enough: say plainly that trims cannot work, and why.
    t.Say("backend: agent loaded but unreachable: " + s.agent_unreachable +
          AgentHint(s.agent_unreachable_cause));
  } else {
    t.Say("backend: agent (libmemtrimd_agent.so is loaded and answers)");
  }
}

void TrimsHtml(std::string& out, const TrimStats& trims) {
  out += "<h3>Trims</h3>\n<p>Given back so far: " + FormatMib(trims.reclaimed_total_bytes) +
         " RSS+swap";
  if (!trims.last_skip_reason.empty()) {
    out += "; last decision: skip (" + HtmlEscape(trims.last_skip_reason) + ")";
  }
  out += ".</p>\n";
  if (trims.recent.empty()) return;
  out += "<ul class=\"trims\">\n";
  for (const TrimResult& r : trims.recent) {
    out += "<li>" + ClockUtc(UnixMs(r.at)) + " UTC, " + HtmlEscape(r.trigger) + ": ";
    out += r.success
               ? FormatMib(r.before.rss_swap_bytes) + " -> " + FormatMib(r.after.rss_swap_bytes)
               : "failed (" + HtmlEscape(r.reason) + "): " + HtmlEscape(r.error);
    out += "</li>\n";
  }
  out += "</ul>\n";
}

void TrimStatsJson(JsonWriter& w, const TrimStats& trims) {
  w.BeginObject();
  w.Key("pid").Int(trims.pid);
  w.Key("opted_in").Bool(trims.opted_in);
  w.Key("backend").String(trims.backend_setting);
  w.Key("interval_seconds").Double(std::chrono::duration<double>(trims.effective_interval).count());
  if (trims.next_due_in_seconds) w.Key("next_in_seconds").Double(*trims.next_due_in_seconds);
  w.Key("in_progress").Bool(trims.in_progress);
  w.Key("last_skip_reason").String(trims.last_skip_reason);
  w.Key("reclaimed_total_bytes").Uint(trims.reclaimed_total_bytes);
  w.Key("recent").BeginArray();
  for (const TrimResult& r : trims.recent) {
    w.BeginObject();
    report::TrimResultFieldsJson(w, r);
    w.EndObject();
  }
  w.EndArray().EndObject();
}

}  // namespace memtrimd::report

namespace memtrimd {

using report::Bytes;
using report::SignedBytes;

std::string RenderTrimText(const TrimResult& r) {
  report::TextTable t;
  t.Heading("trim of pid " + std::to_string(r.pid) + " through the " + r.backend + " backend" +
            (r.call.empty() ? "" : " (" + r.allocator + ": " + r.call + ")") + ": " +
            (r.success ? "done" : "failed (" + r.reason + ")"));
  if (!r.success) t.Say(r.error);
  char dur[32];
  std::snprintf(dur, sizeof(dur), "%.3f s", r.duration_seconds);
  t.Row("duration", dur);
  t.Row("RSS+swap before", Bytes(r.before.rss_swap_bytes));
  t.Row("RSS+swap after", Bytes(r.after.rss_swap_bytes));
  t.Row("given back", SignedBytes(r.ReclaimedRssSwap()), "measured from /proc/<pid>/status");
  if (r.before.arena_resident_bytes && r.after.arena_resident_bytes) {
    t.Row("arena heaps before", Bytes(*r.before.arena_resident_bytes));
    t.Row("arena heaps after", Bytes(*r.after.arena_resident_bytes));
  }
  if (auto c = r.ReclaimedCgroup()) {
    t.Row("cgroup usage change", SignedBytes(-*c),
          "huge pages can keep memory.current from moving");
  }
  if (auto rep = r.Reported()) t.Row("reported by " + r.backend, SignedBytes(*rep));
  if (r.free_kept_before && r.free_kept_after) {
    t.Row(r.allocator + " free kept",
          Bytes(*r.free_kept_before) + " -> " + Bytes(*r.free_kept_after),
          "the allocator's own figure, just before and after its call");
  }
  if (r.committed_before && r.committed_after) {
    t.Row(r.allocator + " committed",
          Bytes(*r.committed_before) + " -> " + Bytes(*r.committed_after),
          "the allocator's own figure, just before and after its call");
  }
  report::HeapTrimsText(t, r);
  return t.Take();
}

std::string RenderTrimJson(const TrimResult& r) {
  JsonWriter w;
  w.BeginObject();
  report::TrimResultFieldsJson(w, r);
  w.EndObject();
  return w.str() + "\n";
}

}  // namespace memtrimd
