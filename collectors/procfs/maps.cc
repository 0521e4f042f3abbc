#include "collectors/procfs/maps.h"

#include "collectors/common/text.h"

#include <algorithm>

namespace memtrimd::procfs {
namespace {

// Into `out`, as the parsers below want them (common/text.h's parsers).
bool Hex(std::string_view h, uint64_t& out) {
  std::optional<uint64_t> v = text::ParseHex(h);
  if (v) out = *v;
  return v.has_value();
}

bool Decimal(std::string_view s, uint64_t& out) {
  std::optional<uint64_t> v = text::ParseUint(s);
  if (v) out = *v;
  return v.has_value();
}

// The next space-separated field (leading spaces skipped).
std::string_view Field(std::string_view& rest) {
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  std::size_t sp = std::min(rest.find(' '), rest.size());
  std::string_view f = rest.substr(0, sp);
  rest.remove_prefix(sp);
  return f;
}

// The kernel prints a mapped file's path with each newline as the four
// characters "\012" (seq_file_path's escape set for maps is "\n" alone; a
// backslash itself is printed as is). Turned back, so that the name is the
// file's. A name that holds a literal "\012" reads the same: what is opened
// by such a name is checked against the mapping's device and inode.
std::string UnescapePath(std::string_view printed) {
  constexpr std::string_view kNewline = "\\012";
  std::string out;
  out.reserve(printed.size());
  while (!printed.empty()) {
    if (printed.substr(0, kNewline.size()) == kNewline) {
      out.push_back('\n');
      printed.remove_prefix(kNewline.size());
    } else {
      out.push_back(printed.front());
      printed.remove_prefix(1);
    }
  }
  return out;
}

bool ParseLine(std::string_view line, MapsEntry& e) {
  std::string_view rest = line;
  std::string_view range = Field(rest);
  std::string_view perms = Field(rest);
  std::string_view offset = Field(rest);
  std::string_view dev = Field(rest);
  std::string_view inode = Field(rest);
  std::size_t dash = range.find('-');
  std::size_t colon = dev.find(':');
  uint64_t major = 0, minor = 0;
  if (dash == std::string_view::npos || !Hex(range.substr(0, dash), e.start) ||
      !Hex(range.substr(dash + 1), e.end) || e.end <= e.start || perms.size() != 4 ||
      !Hex(offset, e.offset) || colon == std::string_view::npos ||
      !Hex(dev.substr(0, colon), major) || !Hex(dev.substr(colon + 1), minor) ||
      major > UINT32_MAX || minor > UINT32_MAX || !Decimal(inode, e.inode)) {
    return false;
  }
  e.dev_major = static_cast<uint32_t>(major);
  e.dev_minor = static_cast<uint32_t>(minor);
  e.executable = perms[2] == 'x';
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  // The kernel pads before the path with spaces; the path itself may hold
  // spaces, so the rest of the line is the path.
  constexpr std::string_view kDeleted = " (deleted)";
  if (rest.size() > kDeleted.size() && rest.substr(rest.size() - kDeleted.size()) == kDeleted) {
    rest.remove_suffix(kDeleted.size());
    e.deleted = true;
  }
  e.path = UnescapePath(rest);
  return true;
}

}  // namespace

Result<std::vector<MapsEntry>> ParseMaps(std::string_view text) {
  std::vector<MapsEntry> out;
  std::size_t line_no = 0;
  while (!text.empty()) {
    std::size_t nl = std::min(text.find('\n'), text.size());
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(std::min(nl + 1, text.size()));
    ++line_no;
    if (line.empty()) continue;
    MapsEntry e;
    if (!ParseLine(line, e)) {
      return Status(ErrorCode::kParseError,
                    "maps line " + std::to_string(line_no) + " is not a mapping");
    }
    if (!out.empty() && e.start < out.back().end) {
      return Status(ErrorCode::kParseError, "maps line " + std::to_string(line_no) +
                                                " starts before the previous mapping ends");
    }
    out.push_back(std::move(e));
  }
  return out;
}

const MapsEntry* FindMapping(std::span<const MapsEntry> maps, uint64_t address) {
  auto it = std::upper_bound(maps.begin(), maps.end(), address,
                             [](uint64_t a, const MapsEntry& m) { return a < m.start; });
  if (it == maps.begin()) return nullptr;
  --it;
  return address < it->end ? &*it : nullptr;
}

}  // namespace memtrimd::procfs
