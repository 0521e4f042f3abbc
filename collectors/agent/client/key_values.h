// The agent's "key=value\n" answer bodies (trim, mallinfo2, jvm_buffers):
// one parser for all of them.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "collectors/common/status.h"
#include "collectors/common/text.h"

namespace memtrimd::agent {

// Fills `values[i]` for `keys[i]`. Unknown keys are ignored (newer agents
// may add some); a repeated or non-numeric known key, a missing one among
// the first `required`, and a body not ending in '\n' (cut short) are
// kParseError, prefixed with `what`.
template <std::size_t N>
Status ParseKeyValues(std::string_view body, const std::array<std::string_view, N>& keys,
                      std::array<std::optional<uint64_t>, N>& values, std::size_t required,
                      std::string_view what) {
  // The agent ends every line with '\n': without it the answer was cut short
  // and the last number may be missing digits.
  if (body.empty() || body.back() != '\n') {
    return Status(ErrorCode::kParseError, std::string(what) + ": answer cut short");
  }
  Status error;
  text::ForEachLineIn(body, [&](std::string_view line) {
    if (!error.ok() || line.empty()) return;
    std::size_t eq = line.find('=');
    if (eq == std::string_view::npos) {
      error = Status(ErrorCode::kParseError,
                     std::string(what) + ": line without '=': " + std::string(line.substr(0, 64)));
      return;
    }
    std::string_view key = line.substr(0, eq);
    for (std::size_t i = 0; i < N; ++i) {
      if (key != keys[i]) continue;
      std::optional<uint64_t> v = text::ParseUint(line.substr(eq + 1));
      if (!v || values[i]) {
        error = Status(ErrorCode::kParseError, std::string(what) + ": " +
                                                   (values[i] ? "repeated " : "bad value for ") +
                                                   std::string(key));
        return;
      }
      values[i] = v;
    }
  });
  if (!error.ok()) return error;
  for (std::size_t i = 0; i < required && i < N; ++i) {
    if (!values[i]) {
      return Status(ErrorCode::kParseError,
                    std::string(what) + ": missing " + std::string(keys[i]));
    }
  }
  return Status::Ok();
}

}  // namespace memtrimd::agent
