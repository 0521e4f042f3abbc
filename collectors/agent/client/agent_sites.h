// The agent's allocation sampler as memtrimd sees it: the answers to
// "sampling on <period>" and "sites" (collectors/agent/in_target/sampler_hooks.c
// writes them). The counts are the agent's: bytes and objects already
// unbiased (each sampled allocation of s bytes at mean period T stands for
// s / (1 - e^(-s/T)) bytes), the stacks raw return addresses of the target.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/common/status.h"
#include "collectors/symbols/java_frames.h"

namespace memtrimd::agent {

// What one stack (or all of a profile) holds and has allocated.
struct SiteValues {
  uint64_t live_samples = 0;  // sampled allocations still live
  uint64_t live_bytes = 0;    // estimate of the bytes they stand for
  uint64_t live_objects = 0;
  uint64_t alloc_samples = 0;  // sampled allocations since sampling started
  uint64_t alloc_bytes = 0;
  uint64_t alloc_objects = 0;
  // Estimate of the live bytes' resident part (site_resident.h: each live
  // sample's weight times the resident share of its range), and the
  // estimate's variance (bytes squared). Whether it is known at all is the
  // profile's (SiteResident::known): 0 from an agent before version 6.
  uint64_t resident_bytes = 0;
  double resident_variance = 0;

  SiteValues& operator+=(const SiteValues& o) {
    live_samples += o.live_samples;
    live_bytes += o.live_bytes;
    live_objects += o.live_objects;
    alloc_samples += o.alloc_samples;
    alloc_bytes += o.alloc_bytes;
    alloc_objects += o.alloc_objects;
    resident_bytes += o.resident_bytes;
    resident_variance += o.resident_variance;
    return *this;
  }
};

struct AgentStack {
  SiteValues values;
  // Return addresses, innermost first: the first is in the caller of malloc.
  // Empty for the agent's "[stack table full]" row.
  std::vector<uint64_t> pcs;
};

// One live sampled allocation ("sites live", version 6): its stack (an
// index into AgentSites::stacks), its range and the bytes it stands for.
struct LiveSample {
  uint32_t stack = 0;
  uint64_t ptr = 0;
  uint64_t size = 0;
  uint64_t weight = 0;
};

// How the resident estimate of a read was made (site_resident.cc), or why
// there is none.
struct SiteResident {
  bool known = false;
  std::string why;          // when not known: the reason, said where sites are shown
  uint64_t samples = 0;     // live samples the agent found (live_seen)
  uint64_t listed = 0;      // of them in its answer (fewer: its buffer was full)
  uint64_t read = 0;        // of them whose pages were read
  uint64_t pages_read = 0;  // pagemap entries read
  bool scaled = false;      // read < samples: a uniform subset, scaled up
  double seconds = 0;       // the pass's time
};

struct AgentSites {
  bool on = false;
  uint64_t period = 0;  // mean bytes between samples, in force now
  // Version 5: the period asked for (the budget may raise the one in
  // force), the budget in samples a second (0: none), how often it raised
  // the period since "on", the lease and how much of it is left, and how
  // often a lease ran out since the agent was loaded. An older agent sends
  // none of these: base_period is then `period`, the rest 0.
  uint64_t base_period = 0;
  uint64_t max_rate = 0;
  uint64_t raised = 0;
  uint64_t lease_s = 0;
  uint64_t lease_left_ms = 0;
  uint64_t lease_ended = 0;
  uint64_t generation = 0;
  uint64_t started_ns = 0;  // CLOCK_MONOTONIC of the last "on", in the target
  uint64_t samples = 0;
  uint64_t live_samples = 0;
  uint64_t dropped_live = 0;
  uint64_t dropped_stacks = 0;
  uint64_t sampler_bytes = 0;
  uint64_t hooked_objects = 0;
  // The malloc family's GOT entries holding a hook, and the objects whose
  // allocation calls pass by the hooks (bound to another definition, as
  // under RTLD_DEEPBIND, or an allocator of their own called directly).
  // Absent from older agents: then hooks_counted is false and both 0.
  bool hooks_counted = false;
  uint64_t hooked_entries = 0;
  uint64_t unhooked_objects = 0;
  bool truncated = false;  // the agent's answer ended the stack list early
  std::vector<AgentStack> stacks;
  // "sites live" only: live_seen and live_listed were in the head, and the
  // live lines (at most kMaxLiveSamples kept).
  bool has_live = false;
  uint64_t live_seen = 0;
  uint64_t live_listed = 0;
  std::vector<LiveSample> live;
  // Version 7, in a JVM: whether the agent walks Java frames now, the
  // method ids it made, its walks and those that found no Java frame, and
  // its names of the listed stacks' Java frames (the "java" lines, at most
  // kMaxJavaNames). java_counted false: an agent before version 7.
  bool java_counted = false;
  bool java_frames = false;
  uint64_t java_ids = 0;
  uint64_t java_walks = 0;
  uint64_t java_walks_empty = 0;
  std::vector<symbols::JavaFrameName> java;
  // Filled by EstimateResident (site_resident.h), not by the parser.
  SiteResident resident;
};

// The most live lines kept of one answer: twice the agent's live table.
inline constexpr uint64_t kMaxLiveSamples = 131072;
// The most "java" lines kept of one answer: twice what the agent names.
inline constexpr uint64_t kMaxJavaNames = 32768;

// The answer to "sampling on <period>".
struct SamplingStarted {
  uint64_t period = 0;
  uint64_t generation = 0;
  uint64_t hooked_objects = 0;
  uint64_t hooked_entries = 0;
  uint64_t lease_s = 0;  // version 5; 0 from an older agent
  uint64_t max_rate = 0;
  std::optional<uint64_t> unhooked_objects;  // absent from older agents
};

// Pure parsers. Unknown keys are ignored; a missing known key, a stack line
// that is not "stack" and six counts and hex addresses, more stack lines
// than `stacks=` said, a live line that is not "live", a stack index below
// `stacks=`, a hex address and two counts, more live lines than
// `live_listed=` said (or than kMaxLiveSamples), a "java" line that is not
// a hex word with bit 63 set, a line number and two escaped words (%XX),
// more of them than `java_names=` said (or than kMaxJavaNames), a stack or
// live line after them, or a body not ending in '\n' are kParseError.
Result<AgentSites> ParseAgentSites(std::string_view body);
Result<SamplingStarted> ParseSamplingStarted(std::string_view body);
// The answer to "sampling off": whether the sampler was on.
Result<bool> ParseSamplingStopped(std::string_view body);

}  // namespace memtrimd::agent
