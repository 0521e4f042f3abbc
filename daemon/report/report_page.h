// GET /report: every target of the latest snapshot as inspect shows it,
// each with its trims, as text or JSON.
#pragma once

#include <string>
#include <vector>

#include "daemon/sampling/snapshot.h"
#include "daemon/trim/trim_engine.h"

namespace memtrimd {

// `snap`: the latest snapshot (nullptr: none yet, which the page says, as
// it says why there is no target); `trims`: TrimEngine::Stats, or null
// without a trim engine.
std::string RenderReportText(const Snapshot* snap, const std::vector<TrimStats>* trims);
std::string RenderReportJson(const Snapshot* snap, const std::vector<TrimStats>* trims);

}  // namespace memtrimd
