#include "collectors/common/text.h"

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

namespace {

// The loops are written out rather than find_first_of/find_first_not_of:
// smaps parsing calls this for every field of every mapping, where
// libstdc++'s set search (a memchr over the blanks per character) made
// SmapsParser twice as slow (docs/benchmarks.md, section 1).
template <typename IsBlank>
std::string_view SplitToken(std::string_view& s, IsBlank is_blank) {
  std::size_t i = 0;
  while (i < s.size() && is_blank(s[i])) ++i;
  std::size_t j = i;
  while (j < s.size() && !is_blank(s[j])) ++j;
  std::string_view tok = s.substr(i, j - i);
  s.remove_prefix(j);
  return tok;
}

}  // namespace

std::string_view NextToken(std::string_view& s) { return SplitToken(s, IsSpace); }

std::string_view NextToken(std::string_view& s, std::string_view blanks) {
  return SplitToken(s, [blanks](char c) { return blanks.find(c) != std::string_view::npos; });
}

}  // namespace memtrimd::text
