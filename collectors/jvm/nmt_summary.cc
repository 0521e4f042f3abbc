#include "collectors/jvm/nmt_summary.h"

#include <cstddef>
#include <limits>

#include "collectors/common/text.h"

namespace memtrimd::jvm {
namespace {

constexpr std::string_view kNotEnabled = "Native memory tracking is not enabled";
constexpr std::string_view kHeader = "Native Memory Tracking:";

// "123", "123KB", "4MB", "2GB" (and a bare "B") -> bytes. NMT prints plain
// numbers with scale=B and a unit suffix otherwise.
std::optional<uint64_t> ParseScaled(std::string_view s) {
  uint64_t mult = 1;
  if (s.size() >= 2 && s.substr(s.size() - 2) == "KB") {
    mult = uint64_t{1} << 10;
    s.remove_suffix(2);
  } else if (s.size() >= 2 && s.substr(s.size() - 2) == "MB") {
    mult = uint64_t{1} << 20;
    s.remove_suffix(2);
  } else if (s.size() >= 2 && s.substr(s.size() - 2) == "GB") {
    mult = uint64_t{1} << 30;
    s.remove_suffix(2);
  } else if (!s.empty() && s.back() == 'B') {
    s.remove_suffix(1);
  }
  auto v = text::ParseUint(s);
  if (!v || *v > std::numeric_limits<uint64_t>::max() / mult) return std::nullopt;
  return *v * mult;
}

bool IsValueEnd(char c) { return c == ',' || c == ')' || c == '(' || text::IsSpace(c); }

// The value of `key` ("reserved=", "malloc=", ...) in `s`, where key starts a
// word (start of `s` or after a space, '(' or ','). Stops at ',', ')' or
// whitespace. nullopt when absent or not a number.
std::optional<uint64_t> ValueOf(std::string_view s, std::string_view key) {
  std::size_t from = 0;
  while (true) {
    std::size_t at = s.find(key, from);
    if (at == std::string_view::npos) return std::nullopt;
    if (at == 0 || s[at - 1] == ' ' || s[at - 1] == '(' || s[at - 1] == ',' || s[at - 1] == '\t') {
      std::size_t b = at + key.size();
      std::size_t e = b;
      while (e < s.size() && !IsValueEnd(s[e])) ++e;
      return ParseScaled(s.substr(b, e - b));
    }
    from = at + 1;
  }
}

// The number after the first '#' in `s` ("(malloc=12 #34)" -> 34).
std::optional<uint64_t> CountOf(std::string_view s) {
  std::size_t at = s.find('#');
  if (at == std::string_view::npos) return std::nullopt;
  std::size_t e = at + 1;
  while (e < s.size() && s[e] >= '0' && s[e] <= '9') ++e;
  return text::ParseUint(s.substr(at + 1, e - at - 1));
}

// The first parenthesised group of a detail line, without the parentheses:
// "(malloc=1 #2) (at peak)" -> "malloc=1 #2".
std::string_view FirstGroup(std::string_view line) {
  std::size_t open = line.find('(');
  if (open == std::string_view::npos) return {};
  std::size_t close = line.find(')', open);
  if (close == std::string_view::npos) close = line.size();
  return line.substr(open + 1, close - open - 1);
}

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

}  // namespace

const NmtCategory* NmtSummary::Find(std::string_view name) const {
  for (const NmtCategory& c : categories) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

// Layout (JDK 17 and 25, scale=B or KB/MB/GB):
//
//   Native Memory Tracking:
//   (Omitting categories weighting less than 1KB)       <- not with scale=B
//   Total: reserved=N, committed=M
//          malloc: N #count[, peak=N #count]            <- 25 adds peak
//          mmap:   reserved=N, committed=M
//   -                 Java Heap (reserved=N, committed=M)
//                               (mmap: reserved=N, committed=M[, at peak|, peak=N])
//   -                     Class (reserved=N, committed=M)
//                               (malloc=N [tag=Class ]#count) (at peak)
//                               (    reserved=N, committed=M)   <- metaspace detail, not mmap
//   ...
//
// 17 ends detail lines with a space and separates categories with a lone " "
// line; 25 does neither. Lines are handled one at a time, so both work.
Result<NmtSummary> ParseNmtSummary(std::string_view text) {
  if (text.find(kNotEnabled) != std::string_view::npos) {
    NmtSummary off;
    off.enabled = false;
    return off;
  }
  if (text.find(kHeader) == std::string_view::npos) {
    return Status(ErrorCode::kParseError, "NMT: no \"Native Memory Tracking:\" header");
  }

  NmtSummary out;
  out.enabled = true;
  bool have_total = false;
  bool in_total = false;  // between "Total:" and the first category
  NmtCategory* cat = nullptr;
  Status error;

  text::ForEachLineIn(text, [&](std::string_view raw) {
    if (!error.ok()) return;
    std::string_view line = text::Trim(raw);
    if (line.empty()) return;

    if (StartsWith(line, "Total:")) {
      auto r = ValueOf(line, "reserved=");
      auto c = ValueOf(line, "committed=");
      if (!r || !c) {
        error = Status(ErrorCode::kParseError, "NMT: bad Total line");
        return;
      }
      out.total_reserved = *r;
      out.total_committed = *c;
      have_total = true;
      in_total = true;
      cat = nullptr;
      return;
    }

    if (line.front() == '-') {
      // "-                 Java Heap (reserved=N, committed=M)". The values
      // are the last " (reserved=" group: a name is taken whole even if it
      // held such text, so that the same summary written back parses the same.
      std::size_t open = line.rfind(" (reserved=");
      if (open == std::string_view::npos) {
        // Not a category header (no known layout has other '-' lines here).
        cat = nullptr;
        return;
      }
      std::string_view name = text::Trim(line.substr(1, open - 1));
      std::string_view values = line.substr(open + 1);
      auto r = ValueOf(values, "reserved=");
      auto c = ValueOf(values, "committed=");
      if (name.empty() || !r || !c) {
        error = Status(ErrorCode::kParseError, "NMT: bad category line");
        return;
      }
      NmtCategory& added = out.categories.emplace_back();
      added.name = std::string(name);
      added.reserved = *r;
      added.committed = *c;
      cat = &added;
      in_total = false;
      return;
    }

    if (in_total) {
      if (StartsWith(line, "malloc:")) {
        std::string_view rest = text::Trim(line.substr(7));
        std::string_view tok = text::NextToken(rest);
        if (auto v = ParseScaled(tok)) out.total_malloc_bytes = *v;
      } else if (StartsWith(line, "mmap:")) {
        if (auto v = ValueOf(line, "committed=")) out.total_mmap_committed = *v;
      }
      return;
    }

    if (cat == nullptr || line.front() != '(') return;
    std::string_view group = text::Trim(FirstGroup(line));
    if (StartsWith(group, "malloc=")) {
      if (auto v = ValueOf(group, "malloc=")) cat->malloc_bytes = *v;
      if (auto n = CountOf(group)) cat->malloc_count = *n;
    } else if (StartsWith(group, "mmap:")) {
      if (auto v = ValueOf(group, "reserved=")) cat->mmap_reserved = *v;
      if (auto v = ValueOf(group, "committed=")) cat->mmap_committed = *v;
    } else if (StartsWith(group, "arena=")) {
      if (auto v = ValueOf(group, "arena=")) cat->arena_bytes = *v;
    }
    // Everything else ("classes #", "thread #"/"threads #", "stack: ...",
    // metaspace details, "tracking overhead=") has no field here.
  });

  if (!error.ok()) return error;
  if (!have_total) return Status(ErrorCode::kParseError, "NMT: no Total line");
  return out;
}

}  // namespace memtrimd::jvm
