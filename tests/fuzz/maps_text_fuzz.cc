// Fuzz target: maps as symbolisation reads it (procfs::ParseMaps,
// FindMapping).
//
// Invariants: an accepted text gives mappings that are non-empty, sorted
// and apart, one per non-empty line; every path is the rest of its line
// with each "\012" decoded (printed again the kernel's way, it is in the
// text); FindMapping finds each mapping's first and last byte and
// nothing just past a mapping that the next does not start at; a rejected
// text names a line.
#include <cstddef>
#include <cstdint>
#include <string>

#include "collectors/procfs/maps.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using memtrimd::procfs::FindMapping;
  using memtrimd::procfs::MapsEntry;
  using memtrimd::procfs::ParseMaps;
  std::string_view text = memtrimd::fuzz::AsText(data, size);
  auto maps = ParseMaps(text);
  if (!maps.ok()) {
    FUZZ_CHECK(maps.status().message().find("maps line ") == 0);
    return 0;
  }
  std::size_t lines = 0;
  for (std::size_t at = 0; at < text.size();) {
    std::size_t nl = std::min(text.find('\n', at), text.size());
    if (nl > at) ++lines;
    at = nl + 1;
  }
  FUZZ_CHECK(maps->size() == lines);
  for (std::size_t i = 0; i < maps->size(); ++i) {
    const MapsEntry& m = (*maps)[i];
    FUZZ_CHECK(m.start < m.end);
    std::string printed;
    for (char c : m.path) printed += c == '\n' ? std::string("\\012") : std::string(1, c);
    FUZZ_CHECK(text.find(printed) != std::string_view::npos);
    if (i > 0) FUZZ_CHECK((*maps)[i - 1].end <= m.start);
    FUZZ_CHECK(FindMapping(*maps, m.start) == &m);
    FUZZ_CHECK(FindMapping(*maps, m.end - 1) == &m);
    const MapsEntry* after = FindMapping(*maps, m.end);
    FUZZ_CHECK(after == nullptr || (i + 1 < maps->size() && after == &(*maps)[i + 1]));
  }
  return 0;
}
