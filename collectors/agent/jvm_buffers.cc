#include "collectors/agent/jvm_buffers.h"

#include <array>
#include <optional>
#include <string>

#include "collectors/common/text.h"

namespace memtrimd::agent {

Result<JvmBuffers> ParseJvmBuffers(std::string_view body) {
  static constexpr std::array<std::string_view, 8> kKeys = {
      "direct_count",    "direct_capacity", "direct_used",      "mapped_count",
      "mapped_capacity", "mapped_used",     "temp_cache_bytes", "temp_cache_buffers"};
  constexpr std::size_t kRequired = 6;
  // The agent ends every line with '\n': without it the answer was cut short
  // and the last number may be missing digits.
  if (body.empty() || body.back() != '\n') {
    return Status(ErrorCode::kParseError, "agent jvm_buffers: answer cut short");
  }
  std::array<std::optional<uint64_t>, kKeys.size()> values;
  Status error;
  text::ForEachLineIn(body, [&](std::string_view line) {
    if (!error.ok() || line.empty()) return;
    std::size_t eq = line.find('=');
    if (eq == std::string_view::npos) {
      error = Status(ErrorCode::kParseError,
                     "agent jvm_buffers: line without '=': " + std::string(line.substr(0, 64)));
      return;
    }
    std::string_view key = line.substr(0, eq);
    for (std::size_t i = 0; i < kKeys.size(); ++i) {
      if (key != kKeys[i]) continue;
      std::optional<uint64_t> v = text::ParseUint(line.substr(eq + 1));
      if (!v || values[i]) {
        error = Status(ErrorCode::kParseError, std::string("agent jvm_buffers: ") +
                                                   (values[i] ? "repeated " : "bad value for ") +
                                                   std::string(key));
        return;
      }
      values[i] = v;
    }
  });
  if (!error.ok()) return error;
  for (std::size_t i = 0; i < kRequired; ++i) {
    if (!values[i]) {
      return Status(ErrorCode::kParseError, "agent jvm_buffers: missing " + std::string(kKeys[i]));
    }
  }
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
