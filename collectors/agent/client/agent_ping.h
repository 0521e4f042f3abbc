// The agent's answer to "ping" (agent_protocol.h): which process answers,
// the protocol version it speaks, and how many peers it refused.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string_view>

#include "collectors/common/status.h"

namespace memtrimd::agent {

struct AgentPing {
  uint64_t pid = 0;  // in the target's pid namespace
  uint64_t version = 0;
  uint64_t refused = 0;  // connections closed without an answer
};

// Pure. Unknown keys are ignored; a missing or repeated key, or a body not
// ending in '\n', is kParseError.
Result<AgentPing> ParseAgentPing(std::string_view body);

}  // namespace memtrimd::agent
