// Resident bytes per allocation site: which of the bytes a site holds are
// in RAM now. The agent lists its live sampled allocations ("sites live":
// range and weight); memtrimd reads the resident pages of each range from
// /proc/<pid>/pagemap (from outside: the target runs on) and estimates each
// stack's resident bytes as the sum over its samples of
//   weight * resident bytes of the range / size,
// unbiased as the live bytes are (each sample stands for `weight` bytes of
// allocations like it). A page shared by neighbouring allocations counts
// by overlap, so never twice.
//
// The pass is bounded: at most max_pages pagemap entries and `budget` of
// time. Past either, the samples read are a uniform random subset (they are
// read in a random order, in rounds) and each is scaled by listed / read;
// the profile says so.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

#include "collectors/agent/client/agent_sites.h"
#include "collectors/procfs/pagemap.h"

namespace memtrimd::agent {

struct ResidentOptions {
  uint64_t max_pages = 262144;  // 2 MiB of pagemap entries, 1 GiB of ranges
  std::chrono::milliseconds budget{250};
  uint64_t seed = 0x5eed;  // the subset's order (a test gives its own)
  // The clock the budget is measured on (tests give a fake one).
  std::function<std::chrono::steady_clock::time_point()> now = std::chrono::steady_clock::now;
};

// Fills every stack's values.resident_bytes and resident_variance from
// sites.live and `pages`, and sites.resident (known, or why not). An answer
// without live lines (an agent before version 6, or plain "sites") leaves
// them unknown with the reason. A read error of the pagemap (the target
// gone, no access) is the reason too: never a 0 that reads as "nothing
// resident".
void EstimateResident(AgentSites& sites, const procfs::PageResidency& pages,
                      const ResidentOptions& options);

// Why there is no resident figure: an agent too old to list live samples.
inline constexpr const char* kResidentOldAgent =
    "the agent (protocol version 5 or older) does not list its live samples; a version 6 agent "
    "does";

}  // namespace memtrimd::agent
