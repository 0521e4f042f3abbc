// GET /report: every target of the latest snapshot as inspect shows it,
// each with its trims, as text or JSON.
#pragma once

#include <string>
#include <vector>

#include "daemon/report/history.h"
#include "daemon/sampling/snapshot.h"
#include "daemon/trim/trim_engine.h"

namespace memtrimd {

// `snap`: the latest snapshot (nullptr: none yet, which the page says, as
// it says why there is no target); `trims`: TrimEngine::Stats, or null
// without a trim engine; `history`: the page's (which sites grow
// steadily), may be null.
std::string RenderReportText(const Snapshot* snap, const std::vector<TrimStats>* trims,
                             const SampleHistory* history = nullptr);
std::string RenderReportJson(const Snapshot* snap, const std::vector<TrimStats>* trims,
                             const SampleHistory* history = nullptr);

}  // namespace memtrimd
