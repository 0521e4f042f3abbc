#include "collectors/common/text.h"

#include <algorithm>
#include <limits>

namespace memtrimd::text {

std::optional<uint64_t> ParseUint(std::string_view s) {
  if (s.empty() || s.size() > 20) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (std::numeric_limits<uint64_t>::max() - d) / 10) return std::nullopt;
    v = v * 10 + d;
  }
  return v;
}

std::optional<uint64_t> ParseHex(std::string_view s) {
  if (s.empty() || s.size() > 16) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    uint64_t d;
    if (c >= '0' && c <= '9') {
      d = static_cast<uint64_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      d = static_cast<uint64_t>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      d = static_cast<uint64_t>(c - 'A' + 10);
    } else {
      return std::nullopt;
    }
    v = (v << 4) | d;
  }
  return v;
}

std::string_view NextToken(std::string_view& s) { return NextToken(s, " \t"); }

std::string_view NextToken(std::string_view& s, std::string_view blanks) {
  std::size_t i = std::min(s.find_first_not_of(blanks), s.size());
  std::size_t j = std::min(s.find_first_of(blanks, i), s.size());
  std::string_view tok = s.substr(i, j - i);
  s.remove_prefix(j);
  return tok;
}

}  // namespace memtrimd::text
