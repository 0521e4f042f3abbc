// The JVM section: heap, Native Memory Tracking, direct and mapped buffer
// pools, the temporary buffer cache, GC, settings, risks and advice.
#pragma once

#include "daemon/base/json_writer.h"
#include "daemon/report/text_table.h"
#include "daemon/sampling/snapshot.h"

namespace memtrimd::report {

// Nothing for a program that is not a JVM.
void JvmText(TextTable& t, const TargetSample& s);
// "jvm": {...}.
void JvmJson(JsonWriter& w, const TargetSample& s);

}  // namespace memtrimd::report
