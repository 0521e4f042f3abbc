// The sites section: the agent's sampled allocation sites in inspect and
// /report (site_report.h draws the list itself), or why there are none.
#pragma once

#include <chrono>

#include "daemon/base/json_writer.h"
#include "daemon/report/site_growth.h"
#include "daemon/report/text_table.h"
#include "daemon/sampling/snapshot.h"

namespace memtrimd::report {

// "Allocation sites (...)": the largest sites and the rest, then which
// grow steadily when `growth` (the daemon's history) is given; nothing when
// the sites collector did not run (it is off unless asked for).
void SitesSectionText(TextTable& t, const TargetSnapshot& ts,
                      std::chrono::system_clock::time_point now,
                      const SiteGrowth* growth = nullptr);
// "sites": {...} and "site_growth": {...}, or "sites_missing": why.
void SitesSectionJson(JsonWriter& w, const TargetSample& s, const SiteGrowth* growth = nullptr);

}  // namespace memtrimd::report
