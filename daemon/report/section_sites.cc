#include "daemon/report/section_sites.h"

#include <string>

#include "daemon/report/collector_note.h"
#include "daemon/report/site_report.h"

namespace memtrimd::report {

void SitesSectionText(TextTable& t, const TargetSnapshot& ts,
                      std::chrono::system_clock::time_point now, const SiteGrowth* growth) {
  const std::optional<agent::SamplerState>& sampler = ts.sample.sampler;
  if (ts.sample.sites) {
    std::string sites = SitesText(*ts.sample.sites, kReportSites, now);
    if (!sites.empty() && sites.back() == '\n') sites.pop_back();
    t.Heading(sites);
    if (growth != nullptr) SiteGrowthText(t, *growth);
    if (sampler) t.Say(SamplerText(*sampler));
  } else if (OutcomeOf(ts, "sites") != nullptr) {
    // Only when it ran: the collector is off unless asked for.
    t.Heading("Allocation sites");
    if (sampler) t.Say(SamplerText(*sampler));
    if (!ts.sample.sites_missing.empty()) t.Say(ts.sample.sites_missing);
    ExplainFailure(t, ts, "sites");
  } else if (sampler) {
    // The agent collector asked: whether something samples this program.
    t.Heading(SamplerText(*sampler));
  }
}

void SitesSectionJson(JsonWriter& w, const TargetSample& s, const SiteGrowth* growth) {
  if (s.sampler) SamplerJson(w, *s.sampler);
  if (s.sites) {
    w.Key("sites");
    SitesJson(w, *s.sites, kReportSites);
    if (growth != nullptr) SiteGrowthJson(w, *growth);
  } else if (!s.sites_missing.empty()) {
    w.Key("sites_missing").String(s.sites_missing);
  }
}

}  // namespace memtrimd::report
