// Why a section has no figures: its collector is switched off, or its read
// failed. Sections say so instead of leaving a gap.
#pragma once

#include <string_view>

#include "daemon/report/text_table.h"
#include "daemon/sampling/snapshot.h"

namespace memtrimd::report {

// The outcome of the collector `name` in this sample; nullptr when it did
// not run (switched off).
const CollectorOutcome* OutcomeOf(const TargetSnapshot& ts, std::string_view name);

// "(collector X is switched off)" or "could not read: ..."; nothing when
// the read succeeded.
void ExplainFailure(TextTable& t, const TargetSnapshot& ts, std::string_view name);

}  // namespace memtrimd::report
