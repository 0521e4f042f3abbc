#include "collectors/agent/client/jvm_buffers.h"

#include <array>
#include <optional>
#include <string>

#include "collectors/agent/agent_protocol.h"
#include "collectors/agent/client/key_values.h"

namespace memtrimd::agent {

Result<JvmBuffers> ParseJvmBuffers(std::string_view body) {
  static constexpr std::array<std::string_view, 8> kKeys = {AGENT_KEYS_JVM_BUFFERS};
  // The pools are required; the cache is there when the agent could walk it.
  std::array<std::optional<uint64_t>, kKeys.size()> values{};
  Status st = ParseKeyValues(body, kKeys, values, 6, "agent jvm_buffers");
  if (!st.ok()) return st;
  if (values[6].has_value() != values[7].has_value()) {
    return Status(ErrorCode::kParseError,
                  "agent jvm_buffers: temp_cache_bytes and temp_cache_buffers come together");
  }
  JvmBuffers out;
  out.direct = BufferPool{*values[0], *values[1], *values[2]};
  out.mapped = BufferPool{*values[3], *values[4], *values[5]};
  out.temp_cache_bytes = values[6];
  out.temp_cache_buffers = values[7];
  return out;
}

}  // namespace memtrimd::agent
