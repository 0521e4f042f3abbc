// Command-line numbers for the bench programs: one strict parser, one
// message, so every bench refuses a bad value the same way.
#pragma once

#include <cerrno>
#include <cstdlib>
#include <optional>
#include <string>

namespace bench {

// `s` as a whole decimal integer in [lo, hi]; nullopt otherwise.
inline std::optional<long> ParseLongIn(const char* s, long lo, long hi) {
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) return std::nullopt;
  return v;
}

inline std::string NotAnInteger(const char* what, const char* s, long lo, long hi) {
  return std::string(what) + ": '" + s + "' is not an integer in [" + std::to_string(lo) + ", " +
         std::to_string(hi) + "]";
}

}  // namespace bench
