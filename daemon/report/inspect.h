// What `memtrimd inspect` prints: one target's sample as a table a person
// can read during an incident, or as JSON. Each part of it is a section
// (section_*.h), shared with /report (report_page.h) and the incident page.
#pragma once

#include <chrono>
#include <string>

#include "daemon/sampling/snapshot.h"

namespace memtrimd {

// `now` gives the target's age ("up 4s"): a rendering of a recorded sample
// passes the moment it was recorded.
std::string RenderInspectTable(const TargetSnapshot& ts);
std::string RenderInspectTable(const TargetSnapshot& ts, std::chrono::system_clock::time_point now);
std::string RenderInspectJson(const TargetSnapshot& ts);

}  // namespace memtrimd
