// The glibc section: the arena heaps found in smaps, malloc's own
// statistics and settings, and where the RSS is by mapping.
#pragma once

#include "daemon/base/json_writer.h"
#include "daemon/report/text_table.h"
#include "daemon/sampling/snapshot.h"

namespace memtrimd::report {

// "glibc malloc (from smaps: ...)": arena heaps, malloc arenas, the
// trimmable estimate and the malloc settings; or why not applicable.
void GlibcText(TextTable& t, const TargetSnapshot& ts);

// "glibc", "malloc", "last_trim_unix_seconds" and "malloc_env", each when
// known.
void GlibcJson(JsonWriter& w, const TargetSample& s);

// "Where the RSS is, by mapping": the smaps read's split.
void BreakdownText(TextTable& t, const TargetSample& s);
void BreakdownJson(JsonWriter& w, const TargetSample& s);

}  // namespace memtrimd::report
