// The incident page's "Who holds the direct memory": the Java callers of a
// JVM's sampled allocation stacks that hold direct memory, the temporary
// buffer cache apart from the other direct buffers (DirectCallersOf). Under
// the direct memory chart, which says how much; this says who.
#pragma once

#include <string>

#include "collectors/sample.h"

namespace memtrimd::report {

// Nothing for a target that is not a JVM or has no sites; for a JVM with
// sites, the largest callers of each kind, or a line saying why none.
void DirectCallersHtml(std::string& out, const TargetSample& s);

}  // namespace memtrimd::report
