// The agent's sampled allocation sites for people and tools: the lines
// `memtrimd inspect --sites` and /report print, their JSON, and the pprof
// heap profile /debug/pprof/heap serves.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

#include "collectors/agent/client/agent_ping.h"
#include "collectors/agent/client/site_profile.h"
#include "collectors/agent/client/sites_budget.h"
#include "daemon/base/json_writer.h"

namespace memtrimd::report {

// Sites listed by inspect and /report.
inline constexpr std::size_t kReportSites = 10;

// "Allocation sites (...)" heading and one line per site, the largest
// `top` by live bytes, then the rest summed. `now` gives the sampling's age.
std::string SitesText(const agent::SiteProfile& p, std::size_t top,
                      std::chrono::system_clock::time_point now);

// What the sampler cannot see, in one line without a final period
// ("not sampled: ..."), or "" when the agent hooked every allocation call
// it found (or does not say): no hooked entry at all, or objects whose
// allocation calls pass by the hooks (bound to another malloc, as under
// RTLD_DEEPBIND, or an allocator linked in statically).
std::string NotSampledText(const agent::SiteProfile& p);

// One line on a file that stands for its functions in the sites' names
// ("no function names in /usr/sbin/app (shown as app in sites holding
// 12.0 MiB): stripped: ..."); control bytes of the target's file names in
// octal, as maps writes them.
std::string UnnamedFileText(const agent::UnnamedFile& f);

// The same as a JSON object value ("sites": {...}).
void SitesJson(JsonWriter& w, const agent::SiteProfile& p, std::size_t top);

// The node's sites memory budget in one line (no newline): what it holds
// of its limit and what it has not kept so far.
std::string SitesBudgetText(const agent::SitesBudgetState& b);
void SitesBudgetJson(JsonWriter& w, const agent::SitesBudgetState& b);
// Whether the agent's allocation sampler is on, at which period, and until
// when its lease runs: one sentence, without a final period.
std::string SamplerText(const agent::SamplerState& s);
// "sampler": {"on": ..., "period_bytes": ..., "lease_until_seconds": ...}.
void SamplerJson(JsonWriter& w, const agent::SamplerState& s);

// The gzip'd profile.proto of every kept stack (inuse and alloc, objects
// and bytes, already unbiased), with one "[other stacks]" sample for what
// was summed; nullopt only when zlib fails.
std::optional<std::string> SitesPprof(const agent::SiteProfile& p);

}  // namespace memtrimd::report
