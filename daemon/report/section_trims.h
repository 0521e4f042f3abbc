// The trims section: which backend trims a target and why (or why none),
// the trim engine's schedule and its recent trims, and one trim's outcome
// (memtrimd trim, POST /api/v1/trim).
#pragma once

#include <string>
#include <vector>

#include "daemon/analysis/allocator_view.h"
#include "daemon/base/json_writer.h"
#include "daemon/report/text_table.h"
#include "daemon/sampling/snapshot.h"
#include "daemon/trim/trim_engine.h"

namespace memtrimd {

// One trim's outcome, as a table or JSON.
std::string RenderTrimText(const TrimResult& r);
std::string RenderTrimJson(const TrimResult& r);

}  // namespace memtrimd

namespace memtrimd::report {

// The trim engine's state for `target` (same pid and start), or nullptr
// (no engine, or the target is not one it knows).
const TrimStats* TrimsOf(const std::vector<TrimStats>* trims, const Target& target);

// "Trimming": the backend a trim of this target would use, or why none.
void TrimBackendText(TextTable& t, const TargetSnapshot& ts, const AllocatorView& alloc);

// "Trimming (backend auto)": the schedule, what was given back, recent trims.
void TrimStatsText(TextTable& t, const TrimStats& s);
// The page's "Trims": what was given back, the last skip, recent trims.
void TrimsHtml(std::string& out, const TrimStats& trims);
// One target's trim engine state as a JSON object value.
void TrimStatsJson(JsonWriter& w, const TrimStats& trims);

}  // namespace memtrimd::report
