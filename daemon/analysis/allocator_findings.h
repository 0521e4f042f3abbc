// Findings for the people who run a program on another allocator than
// glibc's: free memory that allocator keeps and its own release call gives
// back (jemalloc's dirty and muzzy pages, tcmalloc's free page heap), and a
// program that restarted onto another allocator. Pure.
#pragma once

#include <array>
#include <string_view>
#include <vector>

#include "collectors/common/target.h"
#include "collectors/sample.h"
#include "daemon/analysis/findings.h"

namespace memtrimd {

// Every check AssessAllocator can return (memtrimd_allocator_risk{check});
// the alert rules are tested against it (docs/allocators.md says what
// each means).
inline constexpr std::array<std::string_view, 2> kAllocatorChecks = {"free_kept_high",
                                                                     "allocator_changed"};

// free_kept_high is decided for jemalloc and tcmalloc when their figures
// were read (at risk: at least 16 MiB and a tenth of RSS kept free);
// allocator_changed is returned (at risk) only when a change was seen.
std::vector<RiskFinding> AssessAllocator(const Target& target, const TargetSample& s);

// JVM risks and allocator findings together, as inspect, /report and the
// incident page list them.
std::vector<RiskFinding> AllFindings(const Target& target, const TargetSample& s);

}  // namespace memtrimd
