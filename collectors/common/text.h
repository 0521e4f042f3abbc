// Small allocation-free helpers the parsers share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace memtrimd::text {

inline bool IsSpace(char c) { return c == ' ' || c == '\t'; }

inline std::string_view Trim(std::string_view s) {
  while (!s.empty() && (IsSpace(s.front()) || s.front() == '\n' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() && (IsSpace(s.back()) || s.back() == '\n' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// ASCII case-insensitive equality, for HTTP tokens and the like.
inline bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

// Decimal unsigned integer that must fill all of `s`; nullopt on anything else
// (empty, sign, overflow, trailing text).
std::optional<uint64_t> ParseUint(std::string_view s);

// Lower-case hex without prefix, filling all of `s`.
std::optional<uint64_t> ParseHex(std::string_view s);

// Splits off the next whitespace-separated token from `s` (advancing it).
std::string_view NextToken(std::string_view& s);
// The same with the characters in `blanks` as separators.
std::string_view NextToken(std::string_view& s, std::string_view blanks);

// Length of the well-formed UTF-8 sequence (RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF) at the start of `s`; 0 when `s` does
// not start with one (or is empty).
std::size_t Utf8SequenceLength(std::string_view s);

bool IsValidUtf8(std::string_view s);

// `s` made valid UTF-8: each byte that does not belong to a well-formed
// sequence becomes U+FFFD (the replacement character, EF BF BD); valid
// text is returned unchanged. Every text memtrimd serves passes through
// this at its writer (Prometheus label values, JSON strings, the incident
// page's HTML), whatever its source: a target's comm (which the kernel cuts
// at 15 bytes, possibly inside a character), command line, cgroup path, JVM
// output, or an error naming one of its files. U+FFFD is what a reader
// shows as "undecodable here" and cannot be mistaken for the name's own
// text (an escape such as \xc3 could be, and JSON has none for bytes); one
// per byte keeps the count of bad bytes visible and needs no state.
std::string ToValidUtf8(std::string_view s);

// Calls on_line for each line of `text` (without '\n').
template <typename F>
void ForEachLineIn(std::string_view text, F&& on_line) {
  while (!text.empty()) {
    std::size_t nl = text.find('\n');
    if (nl == std::string_view::npos) {
      on_line(text);
      return;
    }
    on_line(text.substr(0, nl));
    text.remove_prefix(nl + 1);
  }
}

}  // namespace memtrimd::text
