#include "collectors/agent/client/agent_ping.h"

#include <array>
#include <optional>

#include "collectors/agent/agent_protocol.h"
#include "collectors/agent/client/key_values.h"

namespace memtrimd::agent {

Result<AgentPing> ParseAgentPing(std::string_view body) {
  static constexpr std::array<std::string_view, 7> kKeys = {AGENT_KEYS_PING};
  std::array<std::optional<uint64_t>, kKeys.size()> values{};
  Status st = ParseKeyValues(body, kKeys, values, 3, "agent ping");
  if (!st.ok()) return st;
  AgentPing out;
  out.pid = *values[0];
  out.version = *values[1];
  out.refused = *values[2];
  if (values[3]) {
    if (*values[3] > 1) return Status(ErrorCode::kParseError, "agent ping: sampling not 0 or 1");
    out.sampling = *values[3] == 1;
  }
  out.period = values[4].value_or(0);
  out.lease_left_ms = values[5].value_or(0);
  out.hooked_now = values[6];
  return out;
}

}  // namespace memtrimd::agent
