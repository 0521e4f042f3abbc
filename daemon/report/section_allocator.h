// The allocator section: which malloc serves the target, how sure memtrimd
// is, the allocator's findings and its own figures (through the agent).
#pragma once

#include <string>

#include "daemon/analysis/allocator_view.h"
#include "daemon/base/json_writer.h"
#include "daemon/report/text_table.h"

namespace memtrimd::report {

// What the agent calls to release memory under each allocator
// ("malloc_trim(0)" for glibc).
std::string ReleaseCallOf(Allocator a);

// "Allocator: jemalloc (...)": findings, then the figures, or why none.
void AllocatorText(TextTable& t, const Target& target, const AllocatorView& v,
                   const TargetSample& s);
// "allocator": {...}.
void AllocatorJson(JsonWriter& w, const Target& target, const AllocatorView& v,
                   const TargetSample& s);

}  // namespace memtrimd::report
