// The agent's answer to "ping" (agent_protocol.h): which process answers,
// the protocol version it speaks, how many peers it refused, and (version 5
// on) whether its allocation sampler is on.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

#include "collectors/common/status.h"

namespace memtrimd::agent {

struct AgentPing {
  uint64_t pid = 0;  // in the target's pid namespace
  uint64_t version = 0;
  uint64_t refused = 0;  // connections closed without an answer
  // Left out by agents before version 5 (which cannot say).
  std::optional<bool> sampling;
  uint64_t period = 0;         // the sampler's period in force
  uint64_t lease_left_ms = 0;  // until the agent turns it off by itself
  // GOT entries holding a hook now (0 once "off" put them back); left out
  // by agents that never unpatch.
  std::optional<uint64_t> hooked_now;
};

// The allocation sampler as "ping" saw it (the agent collector asks, every
// --smaps.interval): shown by inspect, /report and the incident page.
struct SamplerState {
  bool on = false;
  uint64_t period = 0;
  // When the agent turns sampling off unless memtrimd reads its sites again.
  std::optional<std::chrono::system_clock::time_point> lease_until;
};

// Pure. Unknown keys are ignored; a missing or repeated key, or a body not
// ending in '\n', is kParseError.
Result<AgentPing> ParseAgentPing(std::string_view body);

}  // namespace memtrimd::agent
