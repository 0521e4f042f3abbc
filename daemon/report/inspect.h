// What `memtrimd inspect` prints: one target's sample as a table a person
// can read during an incident, or as JSON. Each part of it is a section
// (section_*.h), shared with /report (report_page.h) and the incident page.
#pragma once

#include <chrono>
#include <string>

#include "daemon/report/site_growth.h"
#include "daemon/sampling/snapshot.h"

namespace memtrimd {

// `now` gives the target's age ("up 4s"): a rendering of a recorded sample
// passes the moment it was recorded.
std::string RenderInspectTable(const TargetSnapshot& ts);
// `growth`: which sites grow steadily, from the daemon's history (/report);
// null in a one-shot inspect, which reads once.
std::string RenderInspectTable(const TargetSnapshot& ts, std::chrono::system_clock::time_point now,
                               const report::SiteGrowth* growth = nullptr);
std::string RenderInspectJson(const TargetSnapshot& ts, const report::SiteGrowth* growth = nullptr);

}  // namespace memtrimd
