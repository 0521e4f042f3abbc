// What `memtrimd inspect` prints: one target's sample as a table a person
// can read during an incident, or as JSON.
#pragma once

#include <string>

#include "daemon/snapshot.h"

namespace memtrimd {

std::string RenderInspectTable(const TargetSnapshot& ts);
std::string RenderInspectJson(const TargetSnapshot& ts);

// GET /report: the same for every target of the latest snapshot (nullptr:
// none yet), or why there is none.
std::string RenderReportText(const Snapshot* snap);
std::string RenderReportJson(const Snapshot* snap);

}  // namespace memtrimd
