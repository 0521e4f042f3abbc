// What `memtrimd inspect` prints: one target's sample as a table a person
// can read during an incident, or as JSON.
#pragma once

#include <chrono>
#include <string>

#include "daemon/sampling/snapshot.h"
#include "daemon/trim/trim_engine.h"

namespace memtrimd {

// `now` gives the target's age ("up 4s"): a rendering of a recorded sample
// passes the moment it was recorded.
std::string RenderInspectTable(const TargetSnapshot& ts);
std::string RenderInspectTable(const TargetSnapshot& ts, std::chrono::system_clock::time_point now);
std::string RenderInspectJson(const TargetSnapshot& ts);

// GET /report: the same for every target of the latest snapshot (nullptr:
// none yet), or why there is none, plus the trim engine's state when there
// is one (`trims` may be null).
// /report: every target of the snapshot, each with its trims (`trims`:
// TrimEngine::Stats, or null without a trim engine).
std::string RenderReportText(const Snapshot* snap, const std::vector<TrimStats>* trims);
std::string RenderReportJson(const Snapshot* snap, const std::vector<TrimStats>* trims);

// One trim's outcome (memtrimd trim, POST /api/v1/trim).
std::string RenderTrimText(const TrimResult& r);
std::string RenderTrimJson(const TrimResult& r);

}  // namespace memtrimd
