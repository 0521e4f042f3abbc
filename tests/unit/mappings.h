// Mappings as smaps would show them, for the arena heap and breakdown tests.
#pragma once

#include <cstdint>
#include <string>

#include "collectors/procfs/smaps.h"

namespace memtrimd::test {

// An anonymous private mapping; perms as in smaps ("rw-p", "---p", ...),
// all of its Rss anonymous.
inline procfs::Mapping Anon(uint64_t start, uint64_t end, const char* perms, uint64_t rss = 0) {
  procfs::Mapping m;
  m.start = start;
  m.end = end;
  std::string p = perms;
  m.perms =
      static_cast<uint8_t>((p[0] == 'r' ? procfs::kRead : 0) | (p[1] == 'w' ? procfs::kWrite : 0) |
                           (p[2] == 'x' ? procfs::kExec : 0) | (p[3] == 's' ? procfs::kShared : 0));
  m.kind = procfs::MappingKind::kAnonymous;
  m.rss = rss;
  m.anonymous = rss;
  return m;
}

}  // namespace memtrimd::test
