#include "collectors/agent/client/agent_ping.h"

#include <array>
#include <optional>

#include "collectors/agent/agent_protocol.h"
#include "collectors/agent/client/key_values.h"

namespace memtrimd::agent {

Result<AgentPing> ParseAgentPing(std::string_view body) {
  static constexpr std::array<std::string_view, 3> kKeys = {AGENT_KEYS_PING};
  std::array<std::optional<uint64_t>, kKeys.size()> values{};
  Status st = ParseKeyValues(body, kKeys, values, kKeys.size(), "agent ping");
  if (!st.ok()) return st;
  return AgentPing{*values[0], *values[1], *values[2]};
}

}  // namespace memtrimd::agent
