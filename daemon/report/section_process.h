// The process section: who the target is (pid, command, runtime, allocator,
// age) and its resident memory from /proc/<pid>/status.
#pragma once

#include <chrono>

#include "daemon/analysis/allocator_view.h"
#include "daemon/base/json_writer.h"
#include "daemon/report/text_table.h"
#include "daemon/sampling/snapshot.h"

namespace memtrimd::report {

// "pid 42 (java), runtime jvm, allocator glibc, started ... (up 4s)": `now`
// gives the age (a recorded sample passes the moment it was recorded).
void TargetHeadingText(TextTable& t, const TargetSnapshot& ts, const AllocatorView& alloc,
                       std::chrono::system_clock::time_point now);

// "Resident memory (from /proc/<pid>/status)": RSS and its parts, swap,
// peak, threads.
void ProcessText(TextTable& t, const TargetSnapshot& ts, const AllocatorView& alloc);

// "process": {...}; nothing without a status read.
void ProcessJson(JsonWriter& w, const TargetSample& s);

}  // namespace memtrimd::report
