#include "daemon/report/report_page.h"

#include "collectors/common/text.h"
#include "daemon/base/json_writer.h"
#include "daemon/report/inspect.h"
#include "daemon/report/section_trims.h"
#include "daemon/report/site_report.h"

namespace memtrimd {

using report::TrimsOf;
using report::TrimStatsJson;

std::string RenderReportText(const Snapshot* snap, const std::vector<TrimStats>* trims,
                             const SampleHistory* history) {
  std::string out;
  if (snap == nullptr) {
    out = "no sample yet\n";
  } else if (snap->targets.empty()) {
    out = "no target: " + snap->no_target_reason + "\n";
  } else {
    if (snap->node_mode) {
      out += "node-agent mode: " + std::to_string(snap->targets.size() + snap->targets_unsampled) +
             " targets watched";
      if (snap->targets_skipped > 0) {
        out += ", " + std::to_string(snap->targets_skipped) + " more left out by --targets.max";
      }
      if (snap->targets_read_stalled > 0) {
        out += "; reads of " + std::to_string(snap->targets_read_stalled) +
               " have run past their deadline (last figures shown; " +
               std::to_string(snap->targets_unsampled) + " with none yet, not listed)";
      }
      out += "\n";
    }
    if (snap->sites_budget) out += report::SitesBudgetText(*snap->sites_budget) + "\n";
    if (snap->node_mode || snap->sites_budget) out += "\n";
    for (std::size_t i = 0; i < snap->targets.size(); ++i) {
      const TargetSnapshot& ts = snap->targets[i];
      if (i > 0) out += "\n";
      if (ts.read_stalled_seconds > 0) {
        out += "(figures from before a read of this process that has run " +
               std::to_string(static_cast<long long>(ts.read_stalled_seconds)) +
               " s without ending)\n";
      }
      const std::optional<report::SiteGrowth> growth =
          report::SiteGrowthOf(history, ts.target, snap->sequence);
      out += RenderInspectTable(ts, std::chrono::system_clock::now(), growth ? &*growth : nullptr);
      if (const TrimStats* st = TrimsOf(trims, ts.target)) {
        report::TextTable t;
        report::TrimStatsText(t, *st);
        out += "\n" + t.Take();
      }
    }
  }
  return text::ToValidUtf8(out);
}

std::string RenderReportJson(const Snapshot* snap, const std::vector<TrimStats>* trims,
                             const SampleHistory* history) {
  std::string out = "{\"targets\":[";
  if (snap != nullptr) {
    for (std::size_t i = 0; i < snap->targets.size(); ++i) {
      const std::optional<report::SiteGrowth> growth =
          report::SiteGrowthOf(history, snap->targets[i].target, snap->sequence);
      std::string one = RenderInspectJson(snap->targets[i], growth ? &*growth : nullptr);
      if (!one.empty() && one.back() == '\n') one.pop_back();
      out += (i ? "," : "") + one;
    }
  }
  out += "],\"no_target_reason\":";
  AppendJsonString(out, snap == nullptr ? "no sample yet" : snap->no_target_reason);
  if (snap != nullptr) {
    // The sample the page at / was drawn from carries the same number.
    out += ",\"sequence\":" + std::to_string(snap->sequence);
    out += ",\"node_mode\":" + std::string(snap->node_mode ? "true" : "false");
    out += ",\"targets_skipped\":" + std::to_string(snap->targets_skipped);
    out += ",\"targets_read_stalled\":" + std::to_string(snap->targets_read_stalled);
    if (snap->sites_budget) {
      JsonWriter w;
      report::SitesBudgetJson(w, *snap->sites_budget);
      out += ",\"sites_budget\":" + w.str();
    }
  }
  if (trims != nullptr) {
    // "trims": one entry per target; "trim": the first target's, as the
    // sidecar has always served it.
    std::string all = "[";
    for (std::size_t i = 0; i < trims->size(); ++i) {
      JsonWriter w;
      TrimStatsJson(w, (*trims)[i]);
      all += (i ? "," : "") + w.str();
    }
    out += ",\"trims\":" + all + "]";
    const TrimStats* first = snap != nullptr && !snap->targets.empty()
                                 ? TrimsOf(trims, snap->targets.front().target)
                                 : nullptr;
    if (first != nullptr) {
      JsonWriter w;
      TrimStatsJson(w, *first);
      out += ",\"trim\":" + w.str();
    }
  }
  out += "}\n";
  return out;
}

}  // namespace memtrimd
