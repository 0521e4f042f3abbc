#include "collectors/glibc/rss_breakdown.h"

#include <gtest/gtest.h>

#include "tests/unit/fixtures.h"

#include <fstream>
#include <sstream>

namespace memtrimd::glibc {
namespace {

std::string Fixture(const std::string& name) {
  return test::ReadFixture("proc/" + name + "/smaps");
}

uint64_t Sum(const RssBreakdown& b) {
  return b.file_and_shared + b.java_heap + b.arena_heaps + b.main_arena + b.other_anonymous;
}

TEST(RssBreakdown, PartsAddUpExactlyOnEveryFixture) {
  for (const char* name : {"fragmenter", "jvm17", "sleep"}) {
    SCOPED_TRACE(name);
    auto maps = procfs::ParseSmaps(Fixture(name));
    ASSERT_TRUE(maps.ok()) << maps.status().message();
    std::vector<ArenaHeap> heaps = FindArenaHeaps(*maps);
    uint64_t rss = 0;
    for (const procfs::Mapping& m : *maps) rss += m.rss;
    RssBreakdown b = BreakDownRss(*maps, heaps, std::nullopt);
    EXPECT_EQ(b.total, rss);
    EXPECT_EQ(Sum(b), b.total);
    uint64_t heap_rss = 0;
    for (const ArenaHeap& h : heaps) heap_rss += h.resident_bytes;
    EXPECT_EQ(b.arena_heaps, heap_rss);
    EXPECT_EQ(b.main_arena, MainArenaResident(*maps));
    EXPECT_EQ(b.java_heap, 0u);
  }
}

TEST(RssBreakdown, JavaHeapRangeTakesItsAnonymousMappings) {
  auto maps = procfs::ParseSmaps(Fixture("jvm17"));
  ASSERT_TRUE(maps.ok());
  std::vector<ArenaHeap> heaps = FindArenaHeaps(*maps);
  // The fixture JVM ran with -Xmx64m; its heap is reserved at
  // fc000000-100000000 (see the fixture's smaps).
  RssBreakdown with = BreakDownRss(*maps, heaps, AddressRange{0xfc000000, 0x100000000});
  RssBreakdown without = BreakDownRss(*maps, heaps, std::nullopt);
  EXPECT_GT(with.java_heap, 0u);
  EXPECT_EQ(with.total, without.total);
  EXPECT_EQ(Sum(with), with.total);
  EXPECT_EQ(with.other_anonymous + with.java_heap, without.other_anonymous);
}

TEST(RssBreakdown, FileAndSharedMappingsAreOnePart) {
  std::vector<procfs::Mapping> maps(3);
  maps[0] = {
      0x1000, 0x2000, 77, procfs::kRead | procfs::kExec, procfs::MappingKind::kFile, false, 4096,
      0,      0,      0};
  // A written private file page (a relocated data page) is anonymous memory.
  maps.push_back({0x8000, 0xa000, 77, procfs::kRead | procfs::kWrite, procfs::MappingKind::kFile,
                  false, 8192, 4096, 0, 0});
  maps[1] = {0x3000,
             0x5000,
             0,
             procfs::kRead | procfs::kWrite | procfs::kShared,
             procfs::MappingKind::kAnonymous,
             false,
             8192,
             0,
             0,
             8192};
  maps[2] = {
      0x6000, 0x7000, 0, procfs::kRead | procfs::kWrite, procfs::MappingKind::kStack, false, 4096,
      4096,   0,      0};
  RssBreakdown b = BreakDownRss(maps, {}, std::nullopt);
  EXPECT_EQ(b.file_and_shared, 12288u + 4096u);
  EXPECT_EQ(b.other_anonymous, 4096u + 4096u);
  EXPECT_EQ(b.total, 16384u + 8192u);
}

}  // namespace
}  // namespace memtrimd::glibc
