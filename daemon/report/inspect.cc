#include "daemon/report/inspect.h"

#include <vector>

#include "daemon/analysis/allocator_view.h"
#include "daemon/analysis/findings.h"
#include "daemon/base/json_writer.h"
#include "daemon/report/section_account.h"
#include "daemon/report/section_allocator.h"
#include "daemon/report/section_cgroup.h"
#include "daemon/report/section_glibc.h"
#include "daemon/report/section_jvm.h"
#include "daemon/report/section_process.h"
#include "daemon/report/section_sites.h"
#include "daemon/report/section_trims.h"
#include "daemon/report/text_table.h"

namespace memtrimd {
namespace {

using report::TextTable;

// "Not shown, and why": every figure missing from the sample, with its reason.
void MissingText(TextTable& t, const TargetSample& s) {
  std::vector<MissingFigure> missing = MissingFigures(s);
  if (missing.empty()) return;
  t.Heading("Not shown, and why");
  for (const MissingFigure& m : missing) t.Say(m.figure + ": " + m.why);
}

void MissingJson(JsonWriter& w, const TargetSample& s) {
  w.Key("missing").BeginArray();
  for (const MissingFigure& m : MissingFigures(s)) {
    w.BeginObject().Key("figure").String(m.figure).Key("why").String(m.why).EndObject();
  }
  w.EndArray();
}

// Whether the preloaded agent answers, and why not.
void AgentJson(JsonWriter& w, const TargetSample& s) {
  if (!s.agent_loaded) return;
  w.Key("agent").BeginObject();
  w.Key("reachable").Bool(s.agent_unreachable.empty());
  if (!s.agent_unreachable.empty()) w.Key("unreachable_reason").String(s.agent_unreachable);
  w.EndObject();
}

void CollectorsJson(JsonWriter& w, const TargetSnapshot& ts) {
  w.Key("collectors").BeginArray();
  for (const CollectorOutcome& o : ts.collectors) {
    w.BeginObject().Key("name").String(o.name).Key("success").Bool(o.success);
    w.Key("duration_seconds").Double(o.duration_seconds);
    if (!o.success) w.Key("error").String(o.error);
    w.EndObject();
  }
  w.EndArray();
}

}  // namespace

std::string RenderInspectTable(const TargetSnapshot& ts) {
  return RenderInspectTable(ts, std::chrono::system_clock::now());
}

std::string RenderInspectTable(const TargetSnapshot& ts, std::chrono::system_clock::time_point now,
                               const report::SiteGrowth* growth) {
  TextTable t;
  const AllocatorView alloc = ViewAllocator(ts.target, ts.sample);
  report::TargetHeadingText(t, ts, alloc, now);
  report::ProcessText(t, ts, alloc);
  report::GlibcText(t, ts);
  report::AllocatorText(t, ts.target, alloc, ts.sample);
  report::JvmText(t, ts.sample);
  report::AccountText(t, ts.sample, now);
  report::BreakdownText(t, ts.sample);
  MissingText(t, ts.sample);
  report::TrimBackendText(t, ts, alloc);
  report::CgroupText(t, ts);
  report::SitesSectionText(t, ts, now, growth);
  return t.Take();
}

std::string RenderInspectJson(const TargetSnapshot& ts, const report::SiteGrowth* growth) {
  JsonWriter w;
  const Target& tg = ts.target;
  w.BeginObject();
  w.Key("pid").Int(tg.pid).Key("comm").String(tg.comm).Key("runtime").String(
      RuntimeName(tg.runtime));
  w.Key("start_time_seconds").Double(ts.start_time_seconds);
  if (ts.reads > 0) {
    // In /report: how many samples read this target and which one last did
    // (older than the report's own after another target's trim).
    w.Key("samples").Uint(ts.reads).Key("sample_sequence").Uint(ts.read_in_sequence);
  }
  // A read of this target has not ended for this long: the figures are from
  // before it (Scheduler::ReadTarget).
  if (ts.read_stalled_seconds > 0) w.Key("read_stalled_seconds").Double(ts.read_stalled_seconds);
  report::AllocatorJson(w, tg, ViewAllocator(tg, ts.sample), ts.sample);
  report::ProcessJson(w, ts.sample);
  report::GlibcJson(w, ts.sample);
  report::AccountJson(w, ts.sample);
  AgentJson(w, ts.sample);
  report::CgroupJson(w, ts.sample);
  report::BreakdownJson(w, ts.sample);
  report::JvmJson(w, ts.sample);
  report::SitesSectionJson(w, ts.sample, growth);
  MissingJson(w, ts.sample);
  CollectorsJson(w, ts);
  w.EndObject();
  return w.str() + "\n";
}

}  // namespace memtrimd
