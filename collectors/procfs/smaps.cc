#include "collectors/procfs/smaps.h"

#include <string>

#include "collectors/common/text.h"

namespace memtrimd::procfs {
namespace {

bool IsLowerHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

// "Rss:                 123 kB" -> bytes; the caller passes the text after ':'.
bool ParseKbValue(std::string_view v, uint64_t& out) {
  std::string_view num = text::NextToken(v);
  auto n = text::ParseUint(num);
  if (!n || *n > (UINT64_MAX >> 10)) return false;
  out = *n << 10;
  return true;
}

// "7f0000000000-7f0000021000 rw-p 00000000 00:00 0      [path]"
bool ParseHeader(std::string_view line, Mapping& m) {
  std::string_view range = text::NextToken(line);
  std::size_t dash = range.find('-');
  if (dash == std::string_view::npos) return false;
  auto start = text::ParseHex(range.substr(0, dash));
  auto end = text::ParseHex(range.substr(dash + 1));
  if (!start || !end || *end < *start) return false;
  std::string_view perms = text::NextToken(line);
  if (perms.size() != 4) return false;
  std::string_view offset = text::NextToken(line);
  std::string_view dev = text::NextToken(line);
  std::string_view inode = text::NextToken(line);
  auto ino = text::ParseUint(inode);
  if (offset.empty() || dev.empty() || !ino) return false;
  m.start = *start;
  m.end = *end;
  m.inode = *ino;
  m.perms = static_cast<uint8_t>((perms[0] == 'r' ? kRead : 0) | (perms[1] == 'w' ? kWrite : 0) |
                                 (perms[2] == 'x' ? kExec : 0) | (perms[3] == 's' ? kShared : 0));
  std::string_view path = text::Trim(line);
  if (path.empty()) {
    m.kind = MappingKind::kAnonymous;
  } else if (path.front() == '[') {
    if (path == "[heap]") {
      m.kind = MappingKind::kHeap;
    } else if (path.substr(0, 6) == "[stack") {
      m.kind = MappingKind::kStack;
    } else if (path.substr(0, 6) == "[anon:") {
      m.kind = MappingKind::kAnonymous;
      m.glibc_arena_name = path.find("malloc arena") != std::string_view::npos;
    } else {
      m.kind = MappingKind::kSpecial;
    }
  } else {
    m.kind = MappingKind::kFile;
  }
  return true;
}

}  // namespace

void SmapsParser::Feed(std::string_view line) {
  ++line_no_;
  if (!error_.ok() || line.empty()) return;
  char c = line.front();
  if (IsLowerHex(c)) {
    // Field names start with an upper-case letter; mapping headers with a hex
    // digit, so one character tells them apart.
    Mapping m;
    if (!ParseHeader(line, m)) {
      error_ = Status(ErrorCode::kParseError,
                      "smaps line " + std::to_string(line_no_) + ": malformed mapping header");
      return;
    }
    mappings_.push_back(m);
    last_vmflags_ = false;
    return;
  }
  if (mappings_.empty()) {
    error_ = Status(ErrorCode::kParseError,
                    "smaps line " + std::to_string(line_no_) + ": field before any mapping");
    return;
  }
  // Only five of the ~25 fields matter. Dispatch on the first letter and an
  // exact "Key:" prefix, so the other lines cost one or two compares.
  Mapping& m = mappings_.back();
  std::string_view key;
  uint64_t* target = nullptr;
  uint64_t shared_part = 0;
  auto match = [&](std::string_view k, uint64_t* out) {
    if (line.size() > k.size() && line.compare(0, k.size(), k) == 0) {
      key = k;
      target = out;
      return true;
    }
    return false;
  };
  switch (c) {
    case 'R':
      match("Rss:", &m.rss);
      break;
    case 'A':
      match("Anonymous:", &m.anonymous);
      break;
    case 'S':
      match("Swap:", &m.swap) || match("Shared_Clean:", &shared_part) ||
          match("Shared_Dirty:", &shared_part);
      break;
    case 'V':
      if (line.compare(0, 8, "VmFlags:") == 0) {
        any_vmflags_ = true;
        last_vmflags_ = true;
      }
      break;
    default:
      break;
  }
  if (target == nullptr) return;
  bool ok = ParseKbValue(line.substr(key.size()), *target);
  if (target == &shared_part) m.shared += shared_part;
  if (!ok) {
    error_ =
        Status(ErrorCode::kParseError, "smaps line " + std::to_string(line_no_) + ": malformed " +
                                           std::string(key.substr(0, key.size() - 1)));
  }
}

Result<std::vector<Mapping>> SmapsParser::Finish() {
  Status err = error_;
  if (err.ok() && any_vmflags_ && !last_vmflags_) {
    err = Status(ErrorCode::kParseError,
                 "smaps: the last mapping has no VmFlags line (the text ends inside a record)");
  }
  error_ = Status::Ok();
  line_no_ = 0;
  any_vmflags_ = false;
  last_vmflags_ = false;
  std::vector<Mapping> out = std::move(mappings_);
  mappings_.clear();
  if (!err.ok()) return err;
  return out;
}

void SmapsParser::Reset(std::vector<Mapping> storage) {
  storage.clear();
  mappings_ = std::move(storage);
  error_ = Status::Ok();
  line_no_ = 0;
  any_vmflags_ = false;
  last_vmflags_ = false;
}

Result<std::vector<Mapping>> ParseSmaps(std::string_view text) {
  SmapsParser p;
  text::ForEachLineIn(text, [&](std::string_view line) { p.Feed(line); });
  return p.Finish();
}

}  // namespace memtrimd::procfs
