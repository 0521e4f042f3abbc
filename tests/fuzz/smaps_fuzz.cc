// Fuzz target: /proc/<pid>/smaps (procfs::ParseSmaps and the streaming
// SmapsParser), with what runs on every parsed smaps: arena heap detection
// (glibc::FindArenaHeaps, MainArenaResident) and the RSS breakdown
// (glibc::BreakDownRss).
//
// Invariants: every mapping has end >= start and whole-kB sizes; the
// streaming parser, reused after Finish(), gives the same answer as
// ParseSmaps; the mappings written back as smaps parse to the same list;
// arena heaps are aligned to the heap size, no larger than it, and in
// address order when the mappings are; the breakdown's parts add up to its total (mod 2^64, as the
// sums themselves wrap on absurd input).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collectors/common/text.h"
#include "collectors/glibc/arena_heap.h"
#include "collectors/glibc/heap_info.h"
#include "collectors/glibc/rss_breakdown.h"
#include "collectors/procfs/smaps.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using memtrimd::procfs::Mapping;
using memtrimd::procfs::MappingKind;
namespace procfs = memtrimd::procfs;
namespace glibc = memtrimd::glibc;

bool Same(const Mapping& a, const Mapping& b) {
  return a.start == b.start && a.end == b.end && a.inode == b.inode && a.perms == b.perms &&
         a.kind == b.kind && a.glibc_arena_name == b.glibc_arena_name && a.rss == b.rss &&
         a.anonymous == b.anonymous && a.swap == b.swap && a.shared == b.shared;
}

bool Same(const std::vector<Mapping>& a, const std::vector<Mapping>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!Same(a[i], b[i])) return false;
  }
  return true;
}

std::string Format(const std::vector<Mapping>& maps) {
  std::string out;
  for (const Mapping& m : maps) {
    std::string perms = "----";
    if (m.perms & procfs::kRead) perms[0] = 'r';
    if (m.perms & procfs::kWrite) perms[1] = 'w';
    if (m.perms & procfs::kExec) perms[2] = 'x';
    perms[3] = (m.perms & procfs::kShared) ? 's' : 'p';
    std::string path;
    switch (m.kind) {
      case MappingKind::kAnonymous:
        if (m.glibc_arena_name) path = "[anon: glibc: malloc arena]";
        break;
      case MappingKind::kFile:
        path = "/usr/lib/x86_64-linux-gnu/libc.so.6";
        break;
      case MappingKind::kHeap:
        path = "[heap]";
        break;
      case MappingKind::kStack:
        path = "[stack]";
        break;
      case MappingKind::kSpecial:
        path = "[vdso]";
        break;
    }
    out += memtrimd::fuzz::Hex(m.start) + "-" + memtrimd::fuzz::Hex(m.end) + " " + perms +
           " 00000000 00:00 " + std::to_string(m.inode) + "                    " + path + "\n";
    out += "Size:               " + std::to_string(m.size() >> 10) + " kB\n";
    out += "Rss:                " + std::to_string(m.rss >> 10) + " kB\n";
    out += "Shared_Clean:       " + std::to_string(m.shared >> 10) + " kB\n";
    out += "Shared_Dirty:       0 kB\n";
    out += "Anonymous:          " + std::to_string(m.anonymous >> 10) + " kB\n";
    out += "Swap:               " + std::to_string(m.swap >> 10) + " kB\n";
    out += "VmFlags: rd wr mr mw me ac sd\n";
  }
  return out;
}

void CheckHeaps(const std::vector<Mapping>& maps, uint64_t heap_size) {
  std::vector<glibc::ArenaHeap> heaps = glibc::FindArenaHeaps(maps, heap_size);
  // The kernel lists mappings in address order without overlaps; only then
  // must the heaps come out in order too.
  bool sorted = true;
  for (std::size_t i = 1; i < maps.size(); ++i) sorted = sorted && maps[i].start >= maps[i - 1].end;
  uint64_t last_end = 0;
  for (const glibc::ArenaHeap& h : heaps) {
    FUZZ_CHECK(h.start % heap_size == 0);
    FUZZ_CHECK(h.usable_bytes <= heap_size);
    FUZZ_CHECK(h.check == glibc::HeapCheck::kShapeOnly);
    if (sorted) FUZZ_CHECK(h.start >= last_end);
    last_end = h.start + h.usable_bytes;
  }
  // A java heap range from the first mapping, when there is one.
  std::optional<glibc::AddressRange> java;
  if (!maps.empty()) java = glibc::AddressRange{maps.front().start, maps.front().end};
  // Candidates in merged mappings too (capped low to keep runs fast), their
  // chains decided from headers made of the mappings' own numbers.
  glibc::HeapCandidates c = glibc::FindHeapCandidates(maps, heap_size, java, 64);
  FUZZ_CHECK(c.heaps.size() <= heaps.size() + 64 + maps.size());
  std::vector<std::optional<glibc::HeapInfo>> headers;
  for (std::size_t i = 0; i < c.heaps.size(); ++i) {
    const glibc::ArenaHeap& h = c.heaps[i];
    FUZZ_CHECK(h.start % heap_size == 0 && h.usable_bytes <= heap_size);
    if (java) FUZZ_CHECK(h.start + heap_size <= java->start || h.start >= java->end);
    const Mapping& m = maps[i % maps.size()];
    if (i % 3 == 0) {
      headers.emplace_back(std::nullopt);
    } else {
      headers.emplace_back(glibc::HeapInfo{m.start + glibc::kHeapInfoSize, i % 2 ? m.end : 0, m.rss,
                                           m.anonymous, m.swap});
    }
  }
  std::vector<glibc::HeapCheck> checks = glibc::ConfirmHeapChain(c.heaps, headers, heap_size);
  FUZZ_CHECK(checks.size() == c.heaps.size());
  for (std::size_t i = 0; i < checks.size(); ++i) {
    if (!headers[i]) FUZZ_CHECK(checks[i] != glibc::HeapCheck::kConfirmed);
    c.heaps[i].check = checks[i];
    c.heaps[i].resident_bytes = maps[i % maps.size()].rss;
  }
  glibc::KeepCountedHeaps(c.heaps);
  glibc::FitResidentToMappings(maps, c.heaps);
  {
    glibc::RssBreakdown b = glibc::BreakDownRss(maps, c.heaps, java);
    FUZZ_CHECK(b.file_and_shared + b.java_heap + b.arena_heaps + b.main_arena + b.other_anonymous ==
               b.total);
  }
  for (const auto& range : {std::optional<glibc::AddressRange>(), java}) {
    glibc::RssBreakdown b = glibc::BreakDownRss(maps, heaps, range);
    FUZZ_CHECK(b.file_and_shared + b.java_heap + b.arena_heaps + b.main_arena + b.other_anonymous ==
               b.total);
    if (!range) FUZZ_CHECK(b.java_heap == 0);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = memtrimd::fuzz::AsText(data, size);
  auto maps = procfs::ParseSmaps(text);

  // The streaming parser, fed the same lines twice (Finish leaves it empty).
  procfs::SmapsParser parser;
  for (int round = 0; round < 2; ++round) {
    memtrimd::text::ForEachLineIn(text, [&](std::string_view line) { parser.Feed(line); });
    auto streamed = parser.Finish();
    FUZZ_CHECK(streamed.ok() == maps.ok());
    if (maps.ok()) FUZZ_CHECK(Same(*streamed, *maps));
  }
  if (!maps.ok()) return 0;

  uint64_t main_rss = 0;
  for (const Mapping& m : *maps) {
    FUZZ_CHECK(m.end >= m.start);
    FUZZ_CHECK(m.rss % 1024 == 0 && m.anonymous % 1024 == 0 && m.swap % 1024 == 0 &&
               m.shared % 1024 == 0);
    FUZZ_CHECK(!m.glibc_arena_name || m.kind == MappingKind::kAnonymous);
    if (m.kind == MappingKind::kHeap) main_rss += m.rss;
  }
  FUZZ_CHECK(glibc::MainArenaResident(*maps) == main_rss);

  auto again = procfs::ParseSmaps(Format(*maps));
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(Same(*again, *maps));

  CheckHeaps(*maps, glibc::kDefaultHeapSize);
  CheckHeaps(*maps, 8u << 20);
  CheckHeaps(*maps, 4096);
  // Not a power of two: no heaps at all.
  FUZZ_CHECK(glibc::FindArenaHeaps(*maps, 3u << 20).empty());
  FUZZ_CHECK(glibc::FindArenaHeaps(*maps, 0).empty());
  return 0;
}
