#include "collectors/common/text.h"

#include <limits>

namespace memtrimd::text {

std::size_t Utf8SequenceLength(std::string_view s) {
  if (s.empty()) return 0;
  const auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  // The lead byte decides the length and the range of the second byte
  // (which rules out overlong forms, surrogates and > U+10FFFF); the others
  // are plain continuation bytes.
  std::size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (s.size() < len) return 0;
  if (b(1) < lo || b(1) > hi) return 0;
  for (std::size_t i = 2; i < len; ++i) {
    if (b(i) < 0x80 || b(i) > 0xBF) return 0;
  }
  return len;
}

bool IsValidUtf8(std::string_view s) {
  while (!s.empty()) {
    std::size_t n = Utf8SequenceLength(s);
    if (n == 0) return false;
    s.remove_prefix(n);
  }
  return true;
}

std::string ToValidUtf8(std::string_view s) {
  if (IsValidUtf8(s)) return std::string(s);
  std::string out;
  out.reserve(s.size() + 8);
  while (!s.empty()) {
    std::size_t n = Utf8SequenceLength(s);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      n = 1;
    } else {
      out.append(s.substr(0, n));
    }
    s.remove_prefix(n);
  }
  return out;
}

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
