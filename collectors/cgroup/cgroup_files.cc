#include "collectors/cgroup/cgroup_files.h"

#include "collectors/common/text.h"

namespace memtrimd::cgroup {
namespace {

constexpr uint64_t kV1Unlimited = 1ull << 62;

}  // namespace

bool CgroupLine::HasController(std::string_view name) const {
  std::string_view list = controllers;
  while (!list.empty()) {
    std::size_t comma = list.find(',');
    if (list.substr(0, comma) == name) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

std::size_t ForEachCgroupLine(std::string_view text,
                              const std::function<void(const CgroupLine&)>& on_line) {
  std::size_t malformed = 0;
  text::ForEachLineIn(text, [&](std::string_view line) {
    if (line.empty()) return;
    std::size_t c1 = line.find(':');
    std::size_t c2 = c1 == std::string_view::npos ? c1 : line.find(':', c1 + 1);
    if (c2 == std::string_view::npos) {
      ++malformed;
      return;
    }
    on_line({line.substr(0, c1), line.substr(c1 + 1, c2 - c1 - 1), line.substr(c2 + 1)});
  });
  return malformed;
}

Result<ProcCgroup> ParseProcCgroup(std::string_view text) {
  ProcCgroup out;
  const std::size_t malformed = ForEachCgroupLine(text, [&](const CgroupLine& line) {
    if (line.unified()) {
      out.unified = std::string(line.path);
    } else if (line.HasController("memory")) {
      out.v1_memory = std::string(line.path);
    }
  });
  if (malformed > 0) return Status(ErrorCode::kParseError, "cgroup: malformed line");
  if (!out.unified && !out.v1_memory) {
    return Status(ErrorCode::kParseError, "cgroup: neither a v2 nor a v1 memory entry");
  }
  return out;
}

Result<std::optional<uint64_t>> ParseMemoryMax(std::string_view text) {
  std::string_view v = text::Trim(text);
  if (v == "max") return std::optional<uint64_t>();
  auto n = text::ParseUint(v);
  if (!n) return Status(ErrorCode::kParseError, "memory.max: not a number or \"max\"");
  return std::optional<uint64_t>(*n);
}

Result<std::optional<uint64_t>> ParseV1Limit(std::string_view text) {
  auto n = text::ParseUint(text::Trim(text));
  if (!n) return Status(ErrorCode::kParseError, "memory.limit_in_bytes: not a number");
  if (*n >= kV1Unlimited) return std::optional<uint64_t>();
  return std::optional<uint64_t>(*n);
}

Result<uint64_t> ParseSingleValue(std::string_view text) {
  auto n = text::ParseUint(text::Trim(text));
  if (!n) return Status(ErrorCode::kParseError, "not a single number");
  return *n;
}

Result<std::map<std::string, uint64_t, std::less<>>> ParseFlatKeyed(std::string_view text) {
  std::map<std::string, uint64_t, std::less<>> out;
  bool bad = false;
  text::ForEachLineIn(text, [&](std::string_view line) {
    if (text::Trim(line).empty()) return;
    std::string_view rest = line;
    std::string_view key = text::NextToken(rest);
    auto v = text::ParseUint(text::Trim(rest));
    if (key.empty() || !v) {
      bad = true;
      return;
    }
    out.emplace(std::string(key), *v);
  });
  if (bad) return Status(ErrorCode::kParseError, "malformed \"key value\" line");
  return out;
}

}  // namespace memtrimd::cgroup
