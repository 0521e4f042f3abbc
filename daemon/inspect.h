// What `memtrimd inspect` prints: one target's sample as a table a person
// can read during an incident, or as JSON.
#pragma once

#include <string>

#include "daemon/snapshot.h"

namespace memtrimd {

std::string RenderInspectTable(const TargetSnapshot& ts);
std::string RenderInspectJson(const TargetSnapshot& ts);

}  // namespace memtrimd
