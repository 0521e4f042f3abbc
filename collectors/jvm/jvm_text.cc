#include "collectors/jvm/jvm_text.h"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <vector>

#include "collectors/common/text.h"

namespace memtrimd::jvm {
namespace {

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// jcmd output read from a file saved on Windows, or passed through a
// terminal, has '\r' before each '\n'. In the one-line outputs split into
// words (VM.version, VM.flags) it counts as a blank like space and tab, so
// no word or name ever holds one: what is parsed, written back with single
// spaces, parses the same.
constexpr std::string_view kBlanks = " \t\r";
bool IsBlank(char c) { return kBlanks.find(c) != std::string_view::npos; }

// Leading decimal digits of `s` as an int (advancing `s`); nullopt when there
// are none or the value does not fit.
std::optional<int> TakeInt(std::string_view& s) {
  std::size_t n = 0;
  while (n < s.size() && IsDigit(s[n])) ++n;
  auto v = text::ParseUint(s.substr(0, n));
  if (!v || *v > static_cast<uint64_t>(std::numeric_limits<int>::max())) return std::nullopt;
  s.remove_prefix(n);
  return static_cast<int>(*v);
}

// "0x00000000fc000000" (optionally followed by ',' or ')') -> value.
std::optional<uint64_t> ParseAddress(std::string_view s) {
  while (!s.empty() && (s.back() == ',' || s.back() == ')')) s.remove_suffix(1);
  if (!StartsWith(s, "0x")) return std::nullopt;
  return text::ParseHex(s.substr(2));
}

// The addresses inside the first "[...)" or "[...]" of `line`.
std::vector<uint64_t> AddressList(std::string_view line) {
  std::vector<uint64_t> out;
  std::size_t open = line.find('[');
  if (open == std::string_view::npos) return out;
  std::string_view rest = line.substr(open + 1);
  std::size_t close = rest.find_first_of(")]");
  if (close != std::string_view::npos) rest = rest.substr(0, close);
  while (!rest.empty()) {
    std::size_t comma = rest.find(',');
    std::string_view item = text::Trim(rest.substr(0, comma));
    if (auto a = ParseAddress(item)) out.push_back(*a);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return out;
}

uint64_t SatAdd(uint64_t a, uint64_t b) {
  return a > std::numeric_limits<uint64_t>::max() - b ? std::numeric_limits<uint64_t>::max()
                                                      : a + b;
}

// The size token right after `word` in `line` ("total 65536K," -> 65536K);
// the token's trailing ',' is dropped.
std::optional<uint64_t> SizeAfter(std::string_view line, std::string_view word) {
  std::size_t from = 0;
  while (true) {
    std::size_t at = line.find(word, from);
    if (at == std::string_view::npos) return std::nullopt;
    bool starts_word = at == 0 || text::IsSpace(line[at - 1]);
    std::size_t after = at + word.size();
    if (starts_word && after < line.size() && text::IsSpace(line[after])) {
      std::string_view rest = line.substr(after);
      std::string_view tok = text::NextToken(rest);
      while (!tok.empty() && tok.back() == ',') tok.remove_suffix(1);
      return ParseJvmSize(tok);
    }
    from = at + 1;
  }
}

// The size token right before `word` ("65536K committed" -> 65536K), for
// Shenandoah's " 65536K max, 65536K soft max, 65536K committed, 18075K used".
std::optional<uint64_t> SizeBefore(std::string_view line, std::string_view word) {
  std::size_t pos = 0;
  while (pos < line.size()) {
    std::size_t comma = line.find(',', pos);
    std::string_view item = text::Trim(
        line.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos));
    std::string_view copy = item;
    std::string_view value = text::NextToken(copy);
    if (text::Trim(copy) == word) return ParseJvmSize(value);
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return std::nullopt;
}

}  // namespace

std::optional<uint64_t> ParseJvmSize(std::string_view s) {
  s = text::Trim(s);
  uint64_t mult = 1;
  if (s.size() >= 2 && (s.back() == 'B' || s.back() == 'b') &&
      (s[s.size() - 2] == 'K' || s[s.size() - 2] == 'M' || s[s.size() - 2] == 'G' ||
       s[s.size() - 2] == 'k' || s[s.size() - 2] == 'm' || s[s.size() - 2] == 'g')) {
    s.remove_suffix(1);  // "KB" -> "K"
  }
  if (!s.empty() && !IsDigit(s.back())) {
    switch (s.back()) {
      case 'B':
      case 'b':
        mult = 1;
        break;
      case 'K':
      case 'k':
        mult = uint64_t{1} << 10;
        break;
      case 'M':
      case 'm':
        mult = uint64_t{1} << 20;
        break;
      case 'G':
      case 'g':
        mult = uint64_t{1} << 30;
        break;
      case 'T':
      case 't':
        mult = uint64_t{1} << 40;
        break;
      default:
        return std::nullopt;
    }
    s.remove_suffix(1);
  }
  auto v = text::ParseUint(s);
  if (!v || *v > std::numeric_limits<uint64_t>::max() / mult) return std::nullopt;
  return *v * mult;
}

// --- VM.version ------------------------------------------------------------

// Accepts "17.0.15+6-Debian-1deb12u1", "25+36-LTS", "21.0.1+12",
// "1.8.0_392-b08" (legacy: feature 8, update 392), "8.0_392" (what JDK 8
// prints after "JDK"), "25-ea+3".
Result<JvmVersion> ParseVersionString(std::string_view version) {
  version = text::Trim(version);
  JvmVersion v;
  v.full = std::string(version);
  std::string_view s = version;
  std::vector<int> parts;
  while (true) {
    auto n = TakeInt(s);
    if (!n) break;
    parts.push_back(*n);
    if (s.size() >= 2 && s[0] == '.' && IsDigit(s[1])) {
      s.remove_prefix(1);
      continue;
    }
    break;
  }
  if (parts.empty()) {
    return Status(ErrorCode::kParseError, "version: no leading number in \"" + v.full + "\"");
  }
  std::optional<int> underscore_update;
  if (!s.empty() && s[0] == '_') {
    s.remove_prefix(1);
    underscore_update = TakeInt(s);
  }
  if (parts[0] == 1 && parts.size() >= 2) {
    // Legacy scheme 1.<feature>.0_<update>.
    v.feature = parts[1];
    v.interim = 0;
    v.update = underscore_update.value_or(parts.size() >= 4 ? parts[3] : 0);
  } else {
    v.feature = parts[0];
    v.interim = parts.size() >= 2 ? parts[1] : 0;
    v.update = underscore_update ? *underscore_update : (parts.size() >= 3 ? parts[2] : 0);
  }
  return v;
}

// "OpenJDK 64-Bit Server VM version 17.0.15+6-Debian-1deb12u1\nJDK 17.0.15\n".
// The numbers come from the "JDK x" line when present: JDK 8 prints the
// HotSpot version on the first line ("... VM version 25.392-b08") and the
// JDK version ("JDK 8.0_392") on the second.
Result<JvmVersion> ParseVmVersion(std::string_view text) {
  std::string_view vm_name;
  std::string_view full;
  std::string_view jdk;
  bool found = false;
  text::ForEachLineIn(text, [&](std::string_view raw) {
    std::string_view line = text::Trim(raw);
    if (!found) {
      // The first " version" followed by a blank ends the VM name.
      std::size_t at = line.find(" version");
      while (at != std::string_view::npos && !(at + 8 < line.size() && IsBlank(line[at + 8]))) {
        at = line.find(" version", at + 1);
      }
      if (at != std::string_view::npos) {
        std::string_view rest = line.substr(at + 9);
        std::string_view tok = text::NextToken(rest, kBlanks);
        if (!tok.empty()) {
          vm_name = text::Trim(line.substr(0, at));
          full = tok;
          found = true;
          return;
        }
      }
    }
    if (jdk.empty() && StartsWith(line, "JDK ")) jdk = text::Trim(line.substr(4));
  });
  if (!found) return Status(ErrorCode::kParseError, "VM.version: no \"... version X\" line");
  Result<JvmVersion> numbers = ParseVersionString(jdk.empty() ? full : jdk);
  if (!numbers.ok() && !jdk.empty()) numbers = ParseVersionString(full);
  if (!numbers.ok()) return numbers.status();
  JvmVersion v = std::move(numbers).value();
  v.vm_name = std::string(vm_name);
  v.full = std::string(full);
  return v;
}

// --- VM.flags ----------------------------------------------------------------

Result<std::map<std::string, std::string, std::less<>>> ParseVmFlags(std::string_view text) {
  std::map<std::string, std::string, std::less<>> flags;
  text::ForEachLineIn(text, [&](std::string_view line) {
    while (true) {
      std::string_view tok = text::NextToken(line, kBlanks);
      if (tok.empty()) break;
      if (!StartsWith(tok, "-XX:")) continue;
      tok.remove_prefix(4);
      if (tok.empty()) continue;
      if (tok[0] == '+' || tok[0] == '-') {
        std::string_view name = tok.substr(1);
        if (!name.empty()) flags[std::string(name)] = tok[0] == '+' ? "true" : "false";
        continue;
      }
      std::size_t eq = tok.find('=');
      if (eq == std::string_view::npos || eq == 0) continue;
      flags[std::string(tok.substr(0, eq))] = std::string(tok.substr(eq + 1));
    }
  });
  if (flags.empty()) return Status(ErrorCode::kParseError, "VM.flags: no -XX: flags");
  return flags;
}

// --- VM.system_properties ------------------------------------------------------

namespace {

void AppendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// Four hex digits at s[i..i+4), or nullopt.
std::optional<uint32_t> Hex4(std::string_view s, std::size_t i) {
  if (i + 4 > s.size()) return std::nullopt;
  auto v = text::ParseHex(s.substr(i, 4));
  if (!v) return std::nullopt;
  return static_cast<uint32_t>(*v);
}

// Unescapes a key or value of a logical line (continuations already joined).
// A malformed \uXXXX (Java would throw) is kept as the literal text "\u...".
std::string Unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c != '\\' || i + 1 >= s.size()) {
      out.push_back(c);
      continue;
    }
    char e = s[++i];
    switch (e) {
      case 't':
        out.push_back('\t');
        break;
      case 'n':
        out.push_back('\n');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 'f':
        out.push_back('\f');
        break;
      case 'u': {
        auto hi = Hex4(s, i + 1);
        if (!hi) {
          out.append("\\u");
          break;
        }
        i += 4;
        uint32_t cp = *hi;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          // A high surrogate: combine with a following \uDC00-\uDFFF.
          std::optional<uint32_t> lo;
          if (i + 2 < s.size() && s[i + 1] == '\\' && s[i + 2] == 'u') lo = Hex4(s, i + 3);
          if (lo && *lo >= 0xDC00 && *lo <= 0xDFFF) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (*lo - 0xDC00);
            i += 6;
          } else {
            cp = 0xFFFD;
          }
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          cp = 0xFFFD;
        }
        AppendUtf8(out, cp);
        break;
      }
      default:
        out.push_back(e);  // "\:" "\=" "\\" "\#" "\ " ...
    }
  }
  return out;
}

bool IsPropSpace(char c) { return c == ' ' || c == '\t' || c == '\f'; }

// True when `line` ends with an odd number of backslashes (a continuation).
bool EndsWithContinuation(std::string_view line) {
  std::size_t n = 0;
  while (n < line.size() && line[line.size() - 1 - n] == '\\') ++n;
  return n % 2 == 1;
}

}  // namespace

// java.util.Properties.load semantics: natural lines end at \n, \r or \r\n;
// a line ending in an odd number of backslashes continues on the next one
// (whose leading whitespace is skipped); '#' or '!' as the first non-blank
// character starts a comment; the key ends at the first unescaped '=', ':'
// or whitespace, then blanks and one '=' or ':' are skipped.
Result<std::map<std::string, std::string, std::less<>>> ParseSystemProperties(
    std::string_view text) {
  std::map<std::string, std::string, std::less<>> props;
  std::string logical;
  bool continuing = false;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find_first_of("\r\n", pos);
    std::string_view natural =
        text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    if (end == std::string_view::npos) {
      pos = text.size();
    } else {
      pos = end + 1;
      if (text[end] == '\r' && pos < text.size() && text[pos] == '\n') ++pos;
    }
    std::size_t lead = 0;
    while (lead < natural.size() && IsPropSpace(natural[lead])) ++lead;
    natural.remove_prefix(lead);
    if (!continuing) {
      if (natural.empty() || natural[0] == '#' || natural[0] == '!') continue;
      logical.clear();
    }
    bool more = EndsWithContinuation(natural);
    if (more) natural.remove_suffix(1);
    logical.append(natural);
    continuing = more && pos < text.size();
    if (continuing) continue;

    // Split key and value on the first unescaped separator.
    std::string_view l = logical;
    std::size_t k = 0;
    bool escaped = false;
    for (; k < l.size(); ++k) {
      char c = l[k];
      if (escaped) {
        escaped = false;
        continue;
      }
      if (c == '\\') {
        escaped = true;
        continue;
      }
      if (c == '=' || c == ':' || IsPropSpace(c)) break;
    }
    std::string_view key = l.substr(0, k);
    std::size_t v = k;
    while (v < l.size() && IsPropSpace(l[v])) ++v;
    if (v < l.size() && (l[v] == '=' || l[v] == ':')) ++v;
    while (v < l.size() && IsPropSpace(l[v])) ++v;
    props[Unescape(key)] = Unescape(l.substr(v));
    continuing = false;
  }
  return props;
}

// --- GC.heap_info ----------------------------------------------------------------

// Layouts seen on 17.0.15 and 25 (one space of indent more on 17):
//   G1 17:   " garbage-first heap   total 65536K, used 35958K [0x..fc000000, 0x..100000000)"
//   G1 25:   "garbage-first heap   total reserved 65536K, committed 65536K, used 37094K [a, b)"
//   Serial / Parallel: one "<gen> total NK, used MK [low, high, high_boundary)" line per
//            generation (DefNew/Tenured, def new generation/tenured generation,
//            PSYoungGen/ParOldGen), indented "space" lines below.
//   Shenandoah: " 65536K max, 65536K soft max, 65536K committed, 18075K used" and
//            "Reserved region:" followed by " - [a, b) ".
//   ZGC:     " ZHeap           used 36M, capacity 64M, max capacity 64M".
// Generations are summed. With three addresses committed is high - low (the
// committed part of the generation's virtual space; the printed "total" of a
// young generation leaves out the to-survivor space) and reserved is
// high_boundary - low; with two, [a, b) is the reserved range and committed
// is the printed total. ZGC prints no reserved size or range.
Result<HeapInfo> ParseGcHeapInfo(std::string_view text) {
  HeapInfo out;
  bool found = false;
  bool bad = false;
  bool reserved_known = true;
  uint64_t reserved_sum = 0;
  bool expect_reserved_range = false;
  auto widen = [&](uint64_t start, uint64_t end) {
    if (!out.start || start < *out.start) out.start = start;
    if (!out.end || end > *out.end) out.end = end;
  };

  text::ForEachLineIn(text, [&](std::string_view raw) {
    if (bad) return;
    std::string_view line = text::Trim(raw);
    if (line.empty()) return;

    if (expect_reserved_range) {
      expect_reserved_range = false;
      std::vector<uint64_t> a = AddressList(line);
      if (a.size() == 2 && a[1] >= a[0]) {
        widen(a[0], a[1]);
        out.reserved_bytes = a[1] - a[0];
      }
      return;
    }
    if (line == "Reserved region:") {
      expect_reserved_range = true;
      return;
    }

    // Generation / whole-heap lines.
    if (line.find(" total ") != std::string_view::npos &&
        line.find('[') != std::string_view::npos && line.find("used") != std::string_view::npos) {
      std::optional<uint64_t> committed;
      std::optional<uint64_t> reserved;
      std::optional<uint64_t> used = SizeAfter(line, "used");
      if (auto r = SizeAfter(line, "reserved")) {
        reserved = r;
        committed = SizeAfter(line, "committed");
      } else {
        committed = SizeAfter(line, "total");
      }
      std::vector<uint64_t> a = AddressList(line);
      if (!committed || !used || a.size() < 2 || a.size() > 3) {
        bad = true;
        return;
      }
      for (std::size_t i = 1; i < a.size(); ++i) {
        if (a[i] < a[i - 1]) {
          bad = true;
          return;
        }
      }
      if (a.size() == 3) {
        committed = a[1] - a[0];
        reserved = a[2] - a[0];
      } else if (!reserved) {
        reserved = a[1] - a[0];
      }
      widen(a.front(), a.back());
      out.committed_bytes = SatAdd(out.committed_bytes, *committed);
      out.used_bytes = SatAdd(out.used_bytes, *used);
      reserved_sum = SatAdd(reserved_sum, *reserved);
      found = true;
      return;
    }

    // Shenandoah.
    if (line.find(" committed, ") != std::string_view::npos &&
        line.find(" max,") != std::string_view::npos) {
      auto committed = SizeBefore(line, "committed");
      auto used = SizeBefore(line, "used");
      if (!committed || !used) {
        bad = true;
        return;
      }
      out.committed_bytes = *committed;
      out.used_bytes = *used;
      reserved_known = false;  // from "Reserved region:" below, if printed
      found = true;
      return;
    }

    // ZGC.
    if (StartsWith(line, "ZHeap")) {
      auto used = SizeAfter(line, "used");
      auto capacity = SizeAfter(line, "capacity");
      if (!used || !capacity) {
        bad = true;
        return;
      }
      out.committed_bytes = *capacity;
      out.used_bytes = *used;
      reserved_known = false;
      found = true;
      return;
    }
  });

  if (bad) return Status(ErrorCode::kParseError, "GC.heap_info: malformed heap line");
  if (!found) return Status(ErrorCode::kParseError, "GC.heap_info: no heap totals printed");
  if (reserved_known) out.reserved_bytes = reserved_sum;
  return out;
}

// --- System.trim_native_heap ---------------------------------------------------------

namespace {

// "311M->304M" -> (before, after).
bool ParseArrow(std::string_view s, uint64_t& before, uint64_t& after) {
  std::size_t arrow = s.find("->");
  if (arrow == std::string_view::npos) return false;
  auto b = ParseJvmSize(s.substr(0, arrow));
  auto a = ParseJvmSize(s.substr(arrow + 2));
  if (!b || !a) return false;
  before = *b;
  after = *a;
  return true;
}

// "-6420K", "+0B", "7M" -> signed bytes.
std::optional<int64_t> ParseSignedSize(std::string_view s) {
  s = text::Trim(s);
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  auto v = ParseJvmSize(s);
  if (!v || *v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
  return negative ? -static_cast<int64_t>(*v) : static_cast<int64_t>(*v);
}

int64_t Difference(uint64_t after, uint64_t before) {
  constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (after >= before) return static_cast<int64_t>(std::min(after - before, kMax));
  return -static_cast<int64_t>(std::min(before - after, kMax));
}

// "RSS+Swap: 311M->304M (-6420K)" or "RSS+Swap reduction: 311M->304M (-7M))"
// starting at `s` (after the label's ':').
Result<TrimReport> ParseBeforeAfter(std::string_view s) {
  s = text::Trim(s);
  std::size_t open = s.find('(');
  std::string_view arrow = text::Trim(s.substr(0, open));
  TrimReport r;
  uint64_t before = 0;
  uint64_t after = 0;
  if (!ParseArrow(arrow, before, after)) {
    return Status(ErrorCode::kParseError, "trim: bad \"before->after\"");
  }
  r.outcome = TrimReport::Outcome::kTrimmed;
  r.rss_swap_before = before;
  r.rss_swap_after = after;
  r.delta = Difference(after, before);
  if (open != std::string_view::npos) {
    std::string_view inner = s.substr(open + 1);
    std::size_t close = inner.find(')');
    if (close != std::string_view::npos) inner = inner.substr(0, close);
    // The JVM computes the delta before truncating it to a unit, so it is
    // more precise than after - before of the truncated figures.
    if (auto d = ParseSignedSize(inner)) r.delta = *d;
  }
  return r;
}

// "RSS before: 1234k, after: 1000k, (-234k)" -> before/after in bytes.
bool ParseOldLine(std::string_view line, std::string_view label, uint64_t& before,
                  uint64_t& after) {
  if (!StartsWith(line, label)) return false;
  std::string_view rest = line.substr(label.size());
  std::size_t comma = rest.find(',');
  if (comma == std::string_view::npos) return false;
  auto b = ParseJvmSize(rest.substr(0, comma));
  rest.remove_prefix(comma + 1);
  rest = text::Trim(rest);
  if (!StartsWith(rest, "after:")) return false;
  rest.remove_prefix(6);
  std::size_t comma2 = rest.find(',');
  auto a = ParseJvmSize(rest.substr(0, comma2));
  if (!b || !a) return false;
  before = *b;
  after = *a;
  return true;
}

}  // namespace

Result<TrimReport> ParseTrimOutput(std::string_view text) {
  constexpr std::string_view kNew = "Trim native heap:";
  constexpr std::string_view kMid = "Done. RSS+Swap reduction:";

  std::optional<Result<TrimReport>> result;
  bool attempting = false;
  bool old_done = false;
  bool have_rss = false;
  bool have_swap = false;
  uint64_t rss_before = 0, rss_after = 0, swap_before = 0, swap_after = 0;

  text::ForEachLineIn(text, [&](std::string_view raw) {
    if (result) return;
    std::string_view line = text::Trim(raw);
    if (line.empty()) return;
    if (StartsWith(line, kNew)) {
      std::string_view rest = text::Trim(line.substr(kNew.size()));
      if (StartsWith(rest, "(no details available)")) {
        TrimReport r;
        r.outcome = TrimReport::Outcome::kNoDetails;
        result = r;
      } else if (StartsWith(rest, "RSS+Swap:")) {
        result = ParseBeforeAfter(rest.substr(9));
      } else {
        result = Status(ErrorCode::kParseError, "trim: unknown \"Trim native heap:\" line");
      }
      return;
    }
    if (StartsWith(line, kMid)) {
      result = ParseBeforeAfter(line.substr(kMid.size()));
      return;
    }
    if (StartsWith(line, "Done (no details available)")) {
      TrimReport r;
      r.outcome = TrimReport::Outcome::kNoDetails;
      result = r;
      return;
    }
    if (line == "Not available.") {
      TrimReport r;
      r.outcome = TrimReport::Outcome::kNotAvailable;
      result = r;
      return;
    }
    if (line == "Attempting trim...") {
      attempting = true;
      return;
    }
    if (!attempting) return;
    if (line == "Done.") {
      old_done = true;
      return;
    }
    uint64_t b = 0, a = 0;
    if (ParseOldLine(line, "RSS before:", b, a)) {
      rss_before = b;
      rss_after = a;
      have_rss = true;
    } else if (ParseOldLine(line, "Swap before:", b, a)) {
      swap_before = b;
      swap_after = a;
      have_swap = true;
    }
  });

  if (result) return *result;
  if (attempting && old_done) {
    TrimReport r;
    if (have_rss) {
      r.outcome = TrimReport::Outcome::kTrimmed;
      uint64_t before = SatAdd(rss_before, have_swap ? swap_before : 0);
      uint64_t after = SatAdd(rss_after, have_swap ? swap_after : 0);
      r.rss_swap_before = before;
      r.rss_swap_after = after;
      r.delta = Difference(after, before);
    } else {
      r.outcome = TrimReport::Outcome::kNoDetails;  // "No details available."
    }
    return r;
  }
  return Status(ErrorCode::kParseError, "trim: output not recognised");
}

}  // namespace memtrimd::jvm
