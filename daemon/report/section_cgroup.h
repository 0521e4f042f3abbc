// The cgroup section: the memory limit the target lives under (its
// cgroup's, or --target.memory-limit), the cgroup's usage and OOM kills.
#pragma once

#include <cstdint>
#include <optional>

#include "daemon/base/json_writer.h"
#include "daemon/report/text_table.h"
#include "daemon/sampling/snapshot.h"

namespace memtrimd::report {

// The memory limit, when one is known.
std::optional<uint64_t> LimitOf(const TargetSample& s);

// "Container memory (cgroup v2)": limit, usage, RSS / limit, OOM kills.
void CgroupText(TextTable& t, const TargetSnapshot& ts);
// "cgroup": {...}.
void CgroupJson(JsonWriter& w, const TargetSample& s);

}  // namespace memtrimd::report
