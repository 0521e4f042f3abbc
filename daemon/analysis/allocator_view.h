// Which allocator serves a target's malloc and its figures, as every
// printer shows them (/metrics, inspect, /report, the incident page,
// findings): the agent's answer when there is one (it asked the dynamic
// linker), else what maps showed; the common measures from the agent, or
// for glibc from malloc_info when only that was read (a JDK 21+ JVM without
// the agent). glibc's free memory is the resident part (with the smaps read;
// absent without it). Pure.
#pragma once

#include <optional>
#include <string>

#include "collectors/agent/client/allocator_stats.h"
#include "collectors/common/allocator.h"
#include "collectors/common/target.h"
#include "collectors/sample.h"

namespace memtrimd {

struct AllocatorView {
  Allocator allocator = Allocator::kUnknown;
  std::string source;  // how it was told ("the agent: malloc is in ...", "libjemalloc.so.2 mapped")
  agent::AllocatorMeasures measures;
  std::string measures_from;  // "agent" or "malloc_info"; empty without figures
  // What a release would give back now. jemalloc's and tcmalloc's free_kept
  // is that already; glibc's free_kept is the free memory its arenas hold
  // resident (the RSS account's glibc_free, not malloc's fordblks, which
  // also counts free chunks whose pages a trim already dropped), of which a
  // trim takes only the whole free pages: TrimmableEstimate.
  std::optional<uint64_t> release_gives;
  // Why there are no figures ("" when there are).
  std::string missing;
};

AllocatorView ViewAllocator(const Target& target, const TargetSample& sample);

}  // namespace memtrimd
