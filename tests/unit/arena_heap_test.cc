#include "collectors/glibc/arena_heap.h"

#include <gtest/gtest.h>

#include <unistd.h>
#include "tests/unit/fixtures.h"
#include "tests/unit/mappings.h"

#include <array>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "collectors/common/file_reader.h"
#include "collectors/glibc/heap_info.h"
#include "collectors/procfs/smaps.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MEMTRIMD_TEST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define MEMTRIMD_TEST_ASAN 1
#endif

namespace memtrimd::glibc {
namespace {

using procfs::Mapping;
using procfs::MappingKind;

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kHeap = kDefaultHeapSize;  // 64 MiB
// A 64 MiB-aligned base address, as glibc places heaps.
constexpr uint64_t kBase = 0x7f0000000000ull;
static_assert(kBase % kHeap == 0);

using test::ReadFixture;
using test::ReadWhole;
std::map<std::string, uint64_t> ReadExpected(const std::string& dir) {
  return test::ReadProcExpected(dir);
}

using test::Anon;

Mapping File(uint64_t start, uint64_t end, const char* perms, uint64_t inode = 1234) {
  Mapping m = Anon(start, end, perms);
  m.kind = MappingKind::kFile;
  m.inode = inode;
  return m;
}

// ---------------------------------------------------------------------------
// Recorded processes.

class ArenaHeapFixture : public testing::TestWithParam<const char*> {};

TEST_P(ArenaHeapFixture, HeapsMatchExpected) {
  const std::string dir = GetParam();
  auto expected = ReadExpected(dir);
  Result<std::vector<Mapping>> maps = procfs::ParseSmaps(ReadFixture("proc/" + dir + "/smaps"));
  ASSERT_TRUE(maps.ok()) << maps.status().message();
  std::vector<ArenaHeap> heaps = FindArenaHeaps(*maps);
  EXPECT_EQ(heaps.size(), expected.at("arena_heaps"));
  uint64_t usable = 0, resident = 0;
  for (const ArenaHeap& h : heaps) {
    usable += h.usable_bytes;
    resident += h.resident_bytes;
    EXPECT_EQ(h.start % kHeap, 0u);
    EXPECT_LE(h.usable_bytes, kHeap);
    EXPECT_LE(h.resident_bytes, h.usable_bytes);
    EXPECT_EQ(h.check, HeapCheck::kShapeOnly);
  }
  EXPECT_EQ(usable, expected.at("arena_heap_mapped_bytes"));
  EXPECT_EQ(resident, expected.at("arena_heap_resident_bytes"));
  EXPECT_EQ(MainArenaResident(*maps), expected.at("main_arena_resident_bytes"));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ArenaHeapFixture,
                         testing::Values("fragmenter", "jvm17", "sleep"));

TEST(FindArenaHeaps, FragmenterHeapsAreInAddressOrder) {
  Result<std::vector<Mapping>> maps = procfs::ParseSmaps(ReadFixture("proc/fragmenter/smaps"));
  ASSERT_TRUE(maps.ok()) << maps.status().message();
  std::vector<ArenaHeap> heaps = FindArenaHeaps(*maps);
  ASSERT_EQ(heaps.size(), 6u);
  EXPECT_EQ(heaps[0].start, 0x7fd018000000u);
  EXPECT_EQ(heaps[0].usable_bytes, 0x7fd0190d1000u - 0x7fd018000000u);
  EXPECT_EQ(heaps[5].start, 0x7fd030000000u);
  for (std::size_t i = 1; i < heaps.size(); ++i) EXPECT_LT(heaps[i - 1].start, heaps[i].start);
}

// ---------------------------------------------------------------------------
// Synthetic shapes.

TEST(FindArenaHeaps, FullSizeReadWriteMapping) {
  std::vector<Mapping> maps = {Anon(kBase, kBase + kHeap, "rw-p", 10 * kMiB)};
  std::vector<ArenaHeap> heaps = FindArenaHeaps(maps);
  ASSERT_EQ(heaps.size(), 1u);
  EXPECT_EQ(heaps[0].start, kBase);
  EXPECT_EQ(heaps[0].usable_bytes, kHeap);
  EXPECT_EQ(heaps[0].resident_bytes, 10 * kMiB);
  EXPECT_EQ(heaps[0].check, HeapCheck::kShapeOnly);
}

TEST(FindArenaHeaps, ReadWritePartAndOneNoAccessTail) {
  std::vector<Mapping> maps = {Anon(kBase, kBase + 3 * kMiB, "rw-p", 2 * kMiB),
                               Anon(kBase + 3 * kMiB, kBase + kHeap, "---p")};
  std::vector<ArenaHeap> heaps = FindArenaHeaps(maps);
  ASSERT_EQ(heaps.size(), 1u);
  EXPECT_EQ(heaps[0].start, kBase);
  EXPECT_EQ(heaps[0].usable_bytes, 3 * kMiB);
  EXPECT_EQ(heaps[0].resident_bytes, 2 * kMiB);
}

TEST(FindArenaHeaps, SeveralContiguousNoAccessPiecesEndingAtTheBoundary) {
  std::vector<Mapping> maps = {Anon(kBase, kBase + kMiB, "rw-p", kMiB),
                               Anon(kBase + kMiB, kBase + 5 * kMiB, "---p"),
                               Anon(kBase + 5 * kMiB, kBase + 6 * kMiB, "---p"),
                               Anon(kBase + 6 * kMiB, kBase + kHeap, "---p")};
  std::vector<ArenaHeap> heaps = FindArenaHeaps(maps);
  ASSERT_EQ(heaps.size(), 1u);
  EXPECT_EQ(heaps[0].start, kBase);
  EXPECT_EQ(heaps[0].usable_bytes, kMiB);
  EXPECT_EQ(heaps[0].resident_bytes, kMiB);
}

TEST(FindArenaHeaps, TailEndingShortOfTheBoundaryIsRejected) {
  std::vector<Mapping> maps = {Anon(kBase, kBase + kMiB, "rw-p"),
                               Anon(kBase + kMiB, kBase + kHeap - 4096, "---p")};
  EXPECT_TRUE(FindArenaHeaps(maps).empty());
  // Also when something unrelated follows right at the boundary.
  maps.push_back(File(kBase + kHeap - 4096, kBase + kHeap + 4096, "r--p"));
  EXPECT_TRUE(FindArenaHeaps(maps).empty());
}

TEST(FindArenaHeaps, TailEndingPastTheBoundaryIsRejected) {
  std::vector<Mapping> maps = {Anon(kBase, kBase + kMiB, "rw-p"),
                               Anon(kBase + kMiB, kBase + kHeap + 4096, "---p")};
  EXPECT_TRUE(FindArenaHeaps(maps).empty());
  std::vector<Mapping> pieces = {Anon(kBase, kBase + kMiB, "rw-p"),
                                 Anon(kBase + kMiB, kBase + 2 * kMiB, "---p"),
                                 Anon(kBase + 2 * kMiB, kBase + 2 * kHeap, "---p")};
  EXPECT_TRUE(FindArenaHeaps(pieces).empty());
}

TEST(FindArenaHeaps, ReadWritePartLargerThanAHeapIsRejected) {
  std::vector<Mapping> maps = {Anon(kBase, kBase + kHeap + kMiB, "rw-p")};
  EXPECT_TRUE(FindArenaHeaps(maps).empty());
}

TEST(FindArenaHeaps, UnalignedStartIsRejected) {
  std::vector<Mapping> maps = {Anon(kBase + 4096, kBase + kMiB, "rw-p"),
                               Anon(kBase + kMiB, kBase + kHeap, "---p")};
  EXPECT_TRUE(FindArenaHeaps(maps).empty());
  // 64 MiB long but not on a 64 MiB boundary.
  std::vector<Mapping> full = {Anon(kBase + 32 * kMiB, kBase + 32 * kMiB + kHeap, "rw-p")};
  EXPECT_TRUE(FindArenaHeaps(full).empty());
}

TEST(FindArenaHeaps, FileBackedMappingIsRejected) {
  std::vector<Mapping> rw_file = {File(kBase, kBase + kMiB, "rw-p"),
                                  Anon(kBase + kMiB, kBase + kHeap, "---p")};
  EXPECT_TRUE(FindArenaHeaps(rw_file).empty());
  std::vector<Mapping> full_file = {File(kBase, kBase + kHeap, "rw-p")};
  EXPECT_TRUE(FindArenaHeaps(full_file).empty());
  std::vector<Mapping> file_tail = {Anon(kBase, kBase + kMiB, "rw-p"),
                                    File(kBase + kMiB, kBase + kHeap, "---p")};
  EXPECT_TRUE(FindArenaHeaps(file_tail).empty());
  // A deleted file or memfd mapped with inode 0 still has a path: kFile.
  std::vector<Mapping> inode0_file = {File(kBase, kBase + kHeap, "rw-p", 0)};
  EXPECT_TRUE(FindArenaHeaps(inode0_file).empty());
}

TEST(FindArenaHeaps, SharedMappingIsRejected) {
  std::vector<Mapping> shared = {Anon(kBase, kBase + kMiB, "rw-s"),
                                 Anon(kBase + kMiB, kBase + kHeap, "---p")};
  EXPECT_TRUE(FindArenaHeaps(shared).empty());
  std::vector<Mapping> full_shared = {Anon(kBase, kBase + kHeap, "rw-s")};
  EXPECT_TRUE(FindArenaHeaps(full_shared).empty());
  std::vector<Mapping> shared_tail = {Anon(kBase, kBase + kMiB, "rw-p"),
                                      Anon(kBase + kMiB, kBase + kHeap, "---s")};
  EXPECT_TRUE(FindArenaHeaps(shared_tail).empty());
}

TEST(FindArenaHeaps, OtherPermissionsAreRejected) {
  for (const char* perms : {"rwxp", "r--p", "-w-p", "---p"}) {
    std::vector<Mapping> maps = {Anon(kBase, kBase + kMiB, perms),
                                 Anon(kBase + kMiB, kBase + kHeap, "---p")};
    EXPECT_TRUE(FindArenaHeaps(maps).empty()) << perms;
  }
  // The tail must be ---p.
  std::vector<Mapping> readable_tail = {Anon(kBase, kBase + kMiB, "rw-p"),
                                        Anon(kBase + kMiB, kBase + kHeap, "r--p")};
  EXPECT_TRUE(FindArenaHeaps(readable_tail).empty());
}

TEST(FindArenaHeaps, GapBetweenReadWriteAndTailIsRejected) {
  std::vector<Mapping> maps = {Anon(kBase, kBase + kMiB, "rw-p"),
                               Anon(kBase + kMiB + 4096, kBase + kHeap, "---p")};
  EXPECT_TRUE(FindArenaHeaps(maps).empty());
  std::vector<Mapping> gap_between_pieces = {Anon(kBase, kBase + kMiB, "rw-p"),
                                             Anon(kBase + kMiB, kBase + 2 * kMiB, "---p"),
                                             Anon(kBase + 3 * kMiB, kBase + kHeap, "---p")};
  EXPECT_TRUE(FindArenaHeaps(gap_between_pieces).empty());
}

TEST(FindArenaHeaps, NamedArenaMappingsAreAnonymous) {
  // glibc 2.41+ names its arena mappings; they stay anonymous.
  std::vector<Mapping> maps = {Anon(kBase, kBase + kMiB, "rw-p", 4096),
                               Anon(kBase + kMiB, kBase + kHeap, "---p")};
  maps[0].glibc_arena_name = true;
  maps[1].glibc_arena_name = true;
  std::vector<ArenaHeap> heaps = FindArenaHeaps(maps);
  ASSERT_EQ(heaps.size(), 1u);
  EXPECT_EQ(heaps[0].resident_bytes, 4096u);
}

TEST(FindArenaHeaps, SeveralHeapsAmongOtherMappings) {
  const uint64_t b2 = kBase + kHeap;
  const uint64_t b3 = kBase + 3 * kHeap;
  std::vector<Mapping> maps = {
      File(kBase - 2 * kMiB, kBase - kMiB, "r-xp"),
      Anon(kBase, kBase + kMiB, "rw-p", 100),
      Anon(kBase + kMiB, kBase + kHeap, "---p"),
      Anon(b2, b2 + kHeap, "rw-p", 200),                 // full heap right after the first
      Anon(b2 + kHeap, b2 + kHeap + kMiB, "rw-p", 300),  // aligned, but no tail to the boundary
      Anon(b3, b3 + 2 * kMiB, "rw-p", 400),
      Anon(b3 + 2 * kMiB, b3 + 40 * kMiB, "---p"),
      Anon(b3 + 40 * kMiB, b3 + kHeap, "---p"),
      Anon(b3 + kHeap, b3 + kHeap + kMiB, "rw-p", 500),  // thread stack, say
  };
  std::vector<ArenaHeap> heaps = FindArenaHeaps(maps);
  ASSERT_EQ(heaps.size(), 3u);
  EXPECT_EQ(heaps[0].start, kBase);
  EXPECT_EQ(heaps[0].resident_bytes, 100u);
  EXPECT_EQ(heaps[1].start, b2);
  EXPECT_EQ(heaps[1].usable_bytes, kHeap);
  EXPECT_EQ(heaps[1].resident_bytes, 200u);
  EXPECT_EQ(heaps[2].start, b3);
  EXPECT_EQ(heaps[2].usable_bytes, 2 * kMiB);
  EXPECT_EQ(heaps[2].resident_bytes, 400u);
}

TEST(FindArenaHeaps, EightMiBHeapSize) {
  constexpr uint64_t k8 = 8 * kMiB;
  const uint64_t base = kBase + k8;  // 8 MiB aligned, not 64 MiB aligned
  std::vector<Mapping> maps = {Anon(base, base + kMiB, "rw-p", 12345),
                               Anon(base + kMiB, base + k8, "---p")};
  std::vector<ArenaHeap> heaps = FindArenaHeaps(maps, k8);
  ASSERT_EQ(heaps.size(), 1u);
  EXPECT_EQ(heaps[0].start, base);
  EXPECT_EQ(heaps[0].usable_bytes, kMiB);
  EXPECT_EQ(heaps[0].resident_bytes, 12345u);
  EXPECT_TRUE(FindArenaHeaps(maps).empty());  // not a 64 MiB heap
  std::vector<Mapping> full = {Anon(base, base + k8, "rw-p")};
  EXPECT_EQ(FindArenaHeaps(full, k8).size(), 1u);
}

TEST(FindArenaHeaps, HeapSizeNotAPowerOfTwoGivesNothing) {
  constexpr uint64_t k48 = 48 * kMiB;
  constexpr uint64_t base = kBase + 32 * kMiB;  // a multiple of 48 MiB
  static_assert(base % k48 == 0);
  std::vector<Mapping> maps = {Anon(base, base + kMiB, "rw-p"),
                               Anon(base + kMiB, base + k48, "---p")};
  EXPECT_TRUE(FindArenaHeaps(maps, k48).empty());
  std::vector<Mapping> full = {Anon(kBase, kBase + kHeap, "rw-p")};
  EXPECT_TRUE(FindArenaHeaps(full, kHeap + 4096).empty());
  EXPECT_TRUE(FindArenaHeaps(full, 0).empty());
  EXPECT_EQ(FindArenaHeaps(full, kHeap).size(), 1u);
}

TEST(FindArenaHeaps, EmptyInput) { EXPECT_TRUE(FindArenaHeaps({}).empty()); }

TEST(MainArenaResident, RssOfTheBrkHeap) {
  Mapping heap = Anon(0x55c0910bb000ull, 0x55c0910dc000ull, "rw-p", 16384);
  heap.kind = MappingKind::kHeap;
  std::vector<Mapping> maps = {File(0x55c057378000ull, 0x55c057379000ull, "rw-p"), heap,
                               Anon(kBase, kBase + kHeap, "rw-p", 999)};
  EXPECT_EQ(MainArenaResident(maps), 16384u);
  maps.erase(maps.begin() + 1);
  EXPECT_EQ(MainArenaResident(maps), 0u);
}

// ---------------------------------------------------------------------------
// heap_info.

ArenaHeap HeapAt(uint64_t start, uint64_t usable) {
  return ArenaHeap{start, usable, usable / 2, HeapCheck::kShapeOnly};
}

HeapInfo FirstHeapInfo(const ArenaHeap& h) {
  HeapInfo info;
  info.ar_ptr = h.start + kHeapInfoSize;
  info.prev = 0;
  info.size = h.usable_bytes - 8192;
  info.mprotect_size = h.usable_bytes;
  info.pagesize = 4096;
  return info;
}

TEST(HeapInfoConsistent, FirstHeapOfAnArena) {
  ArenaHeap h = HeapAt(kBase, 2 * kMiB);
  EXPECT_TRUE(HeapInfoConsistent(FirstHeapInfo(h), h, kHeap));
  HeapInfo full = FirstHeapInfo(h);
  full.size = full.mprotect_size;  // size == mprotect_size is fine
  EXPECT_TRUE(HeapInfoConsistent(full, h, kHeap));
}

TEST(HeapInfoConsistent, WrongArenaPointerIsRejected) {
  ArenaHeap h = HeapAt(kBase, 2 * kMiB);
  HeapInfo info = FirstHeapInfo(h);
  info.ar_ptr = h.start + 32;
  EXPECT_FALSE(HeapInfoConsistent(info, h, kHeap));
  info.ar_ptr = 0;
  EXPECT_FALSE(HeapInfoConsistent(info, h, kHeap));
  info.ar_ptr = kBase - kHeap + kHeapInfoSize;  // another heap's arena, but prev is 0
  EXPECT_FALSE(HeapInfoConsistent(info, h, kHeap));
}

TEST(HeapInfoConsistent, SizeBeyondMprotectSizeIsRejected) {
  ArenaHeap h = HeapAt(kBase, 2 * kMiB);
  HeapInfo info = FirstHeapInfo(h);
  info.size = info.mprotect_size + 4096;
  EXPECT_FALSE(HeapInfoConsistent(info, h, kHeap));
  info.size = 0;
  EXPECT_FALSE(HeapInfoConsistent(info, h, kHeap));
}

TEST(HeapInfoConsistent, HeaderBehindTheMappingAgrees) {
  // grow_heap has run mprotect but not yet stored the new length (or a
  // shrink re-mapped PROT_NONE after the smaps walk): the header says less
  // than the mapping smaps showed.
  ArenaHeap h = HeapAt(kBase, 1859584);
  HeapInfo info = FirstHeapInfo(h);
  info.mprotect_size = 1843200;  // as read from a growing arena_grower
  info.size = 1843200;
  EXPECT_TRUE(HeapInfoConsistent(info, h, kHeap));
}

TEST(HeapInfoConsistent, HeaderNotYetWrittenIsRejected) {
  // A heap caught between its mprotect and glibc writing its header.
  ArenaHeap h = HeapAt(kBase, 132 * 1024);
  EXPECT_FALSE(HeapInfoConsistent(HeapInfo{}, h, kHeap));
  HeapInfo sized;
  sized.size = sized.mprotect_size = 132 * 1024;
  sized.pagesize = 4096;  // ar_ptr not yet set
  EXPECT_FALSE(HeapInfoConsistent(sized, h, kHeap));
}

TEST(HeapInfoConsistent, HeapThatGrewAfterTheSmapsWalkAgrees) {
  // smaps saw 2 MiB; by the time the header was read glibc had grown the
  // heap (mprotect, then mprotect_size and size), up to the whole heap.
  ArenaHeap h = HeapAt(kBase, 2 * kMiB);
  HeapInfo info = FirstHeapInfo(h);
  info.mprotect_size = h.usable_bytes + 4096;
  EXPECT_TRUE(HeapInfoConsistent(info, h, kHeap));
  info.size = info.mprotect_size;
  EXPECT_TRUE(HeapInfoConsistent(info, h, kHeap));
  info.mprotect_size = kHeap;
  info.size = kHeap - 4096;
  EXPECT_TRUE(HeapInfoConsistent(info, h, kHeap));
  // Past the heap's end is no heap of this size.
  info.mprotect_size = kHeap + 4096;
  EXPECT_FALSE(HeapInfoConsistent(info, h, kHeap));
}

TEST(HeapInfoConsistent, HeapShrunkWithoutRemapAgrees) {
  // shrink_heap gives pages back with MADV_DONTNEED and keeps mprotect_size:
  // size drops below it, the mapping stays as it was.
  ArenaHeap h = HeapAt(kBase, 8 * kMiB);
  HeapInfo info = FirstHeapInfo(h);
  info.size = 1 * kMiB;
  EXPECT_TRUE(HeapInfoConsistent(info, h, kHeap));
}

TEST(HeapInfoConsistent, MprotectSizeBeyondTheHeapIsRejected) {
  ArenaHeap h = HeapAt(kBase, kHeap + 4096);
  HeapInfo info = FirstHeapInfo(h);
  EXPECT_FALSE(HeapInfoConsistent(info, h, kHeap));
}

TEST(HeapInfoConsistent, BadPageSizeIsRejected) {
  ArenaHeap h = HeapAt(kBase, 2 * kMiB);
  HeapInfo info = FirstHeapInfo(h);
  info.pagesize = 0;
  EXPECT_FALSE(HeapInfoConsistent(info, h, kHeap));
  info.pagesize = 4095;
  EXPECT_FALSE(HeapInfoConsistent(info, h, kHeap));
  info.pagesize = 2 * kMiB;  // huge pages are fine
  EXPECT_TRUE(HeapInfoConsistent(info, h, kHeap));
}

TEST(HeapInfoConsistent, LaterHeapOfAnArena) {
  const uint64_t first = kBase;
  ArenaHeap h = HeapAt(kBase + 5 * kHeap, 4 * kMiB);
  HeapInfo info;
  info.ar_ptr = first + kHeapInfoSize;  // the arena lives in its first heap
  info.prev = kBase + 2 * kHeap;        // any earlier heap, aligned
  info.size = 3 * kMiB;
  info.mprotect_size = 4 * kMiB;
  info.pagesize = 4096;
  EXPECT_TRUE(HeapInfoConsistent(info, h, kHeap));

  HeapInfo unaligned_prev = info;
  unaligned_prev.prev += 4096;
  EXPECT_FALSE(HeapInfoConsistent(unaligned_prev, h, kHeap));
  HeapInfo unaligned_arena = info;
  unaligned_arena.ar_ptr = first + 4096;
  EXPECT_FALSE(HeapInfoConsistent(unaligned_arena, h, kHeap));
  HeapInfo null_arena = info;
  null_arena.ar_ptr = 0;
  EXPECT_FALSE(HeapInfoConsistent(null_arena, h, kHeap));
}

TEST(HeapInfoConsistent, EightMiBHeaps) {
  constexpr uint64_t k8 = 8 * kMiB;
  ArenaHeap h = HeapAt(kBase + k8, kMiB);
  HeapInfo info = FirstHeapInfo(h);
  EXPECT_TRUE(HeapInfoConsistent(info, h, k8));
  info.prev = kBase;  // as a later heap: ar_ptr - 48 is 8 MiB aligned
  EXPECT_TRUE(HeapInfoConsistent(info, h, k8));
  EXPECT_FALSE(HeapInfoConsistent(info, h, kHeap));  // but not 64 MiB aligned
}

// ---------------------------------------------------------------------------
// The test process itself: a thread's malloc makes glibc create an arena.

TEST(ReadHeapInfo, OwnProcessArenaHeapIsConfirmed) {
#ifdef MEMTRIMD_TEST_ASAN
  GTEST_SKIP() << "AddressSanitizer replaces glibc malloc";
#endif
  if (std::getenv("MALLOC_ARENA_MAX") != nullptr) {
    GTEST_SKIP() << "MALLOC_ARENA_MAX is set; a thread may share the main arena";
  }
  // Small blocks come from the thread's arena (large ones would be mmap'ed).
  std::array<void*, 64> blocks{};
  std::thread worker([&blocks] {
    for (void*& b : blocks) b = std::malloc(1000);
  });
  worker.join();  // the arena and its heap outlive the thread
  for (void* b : blocks) ASSERT_NE(b, nullptr);
  const auto probe = reinterpret_cast<uint64_t>(blocks[0]);

  procfs::SmapsParser parser;
  Status read = ForEachLine("/proc/self/smaps", 256u << 20,
                            [&](std::string_view line) { parser.Feed(line); });
  ASSERT_TRUE(read.ok()) << read.message();
  Result<std::vector<Mapping>> maps = parser.Finish();
  ASSERT_TRUE(maps.ok()) << maps.status().message();
  std::vector<ArenaHeap> heaps = FindArenaHeaps(*maps);
  ASSERT_FALSE(heaps.empty());

  const ArenaHeap* ours = nullptr;
  for (const ArenaHeap& h : heaps) {
    if (probe >= h.start && probe < h.start + h.usable_bytes) ours = &h;
  }
  ASSERT_NE(ours, nullptr) << "the thread's block 0x" << std::hex << probe
                           << " is not in any arena heap";

  Result<HeapInfo> info = ReadHeapInfo(getpid(), ours->start);
  if (!info.ok() && info.status().code() == ErrorCode::kPermissionDenied) {
    GTEST_SKIP() << "process_vm_readv not permitted here: " << info.status().message();
  }
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_TRUE(HeapInfoConsistent(*info, *ours, kDefaultHeapSize))
      << "ar_ptr=0x" << std::hex << info->ar_ptr << " prev=0x" << info->prev << " size=0x"
      << info->size << " mprotect_size=0x" << info->mprotect_size << " pagesize=0x"
      << info->pagesize << " heap start=0x" << ours->start << " usable=0x" << ours->usable_bytes;
  EXPECT_EQ(info->pagesize, static_cast<uint64_t>(sysconf(_SC_PAGESIZE)));
  EXPECT_NE(info->ar_ptr, 0u);

  const uint64_t our_start = ours->start;
  ConfirmArenaHeaps(getpid(), heaps, kDefaultHeapSize);
  bool found = false;
  for (const ArenaHeap& h : heaps) {
    if (h.start != our_start) continue;
    found = true;
    EXPECT_EQ(h.check, HeapCheck::kConfirmed);
  }
  EXPECT_TRUE(found);

  for (void* b : blocks) std::free(b);
}

TEST(ConfirmArenaHeaps, SetsEachHeapsCheck) {
  // Headers laid out in this process's own memory, read back through
  // process_vm_readv like a target's.
  alignas(16) uint64_t good[5] = {0, 0, 8192, 2 * kMiB, 4096};
  alignas(16) uint64_t bad[5] = {0x1234, 0, 8192, 2 * kMiB, 4096};
  good[0] = reinterpret_cast<uint64_t>(good) + kHeapInfoSize;  // ar_ptr of a first heap
  std::vector<ArenaHeap> heaps = {HeapAt(reinterpret_cast<uint64_t>(good), 2 * kMiB),
                                  HeapAt(8, 2 * kMiB),  // unmapped: header unreadable
                                  HeapAt(reinterpret_cast<uint64_t>(bad), 2 * kMiB)};
  ConfirmArenaHeaps(getpid(), heaps, kHeap);
  if (heaps[0].check == HeapCheck::kShapeOnly) {
    Result<HeapInfo> probe = ReadHeapInfo(getpid(), heaps[0].start);
    if (!probe.ok() && probe.status().code() == ErrorCode::kPermissionDenied) {
      GTEST_SKIP() << "process_vm_readv not permitted here: " << probe.status().message();
    }
  }
  EXPECT_EQ(heaps[0].check, HeapCheck::kConfirmed);
  EXPECT_EQ(heaps[1].check, HeapCheck::kShapeOnly);
  EXPECT_EQ(heaps[2].check, HeapCheck::kRejected);
}

TEST(ReadHeapInfo, ReadsTheFiveWords) {
  const uint64_t words[5] = {0x1111, 0x2222, 0x3333, 0x4444, 0x5555};
  Result<HeapInfo> info = ReadHeapInfo(getpid(), reinterpret_cast<uint64_t>(words));
  if (!info.ok() && info.status().code() == ErrorCode::kPermissionDenied) {
    GTEST_SKIP() << "process_vm_readv not permitted here: " << info.status().message();
  }
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_EQ(info->ar_ptr, 0x1111u);
  EXPECT_EQ(info->prev, 0x2222u);
  EXPECT_EQ(info->size, 0x3333u);
  EXPECT_EQ(info->mprotect_size, 0x4444u);
  EXPECT_EQ(info->pagesize, 0x5555u);
}

TEST(ReadHeapInfo, UnmappedAddressFails) {
  Result<HeapInfo> info = ReadHeapInfo(getpid(), 0);
  EXPECT_FALSE(info.ok());
}

TEST(ReadHeapInfo, MissingProcessIsNotFound) {
  // pid_max itself is never handed out.
  const long pid_max = std::strtol(ReadWhole("/proc/sys/kernel/pid_max").c_str(), nullptr, 10);
  ASSERT_GT(pid_max, 1);
  Result<HeapInfo> info = ReadHeapInfo(static_cast<pid_t>(pid_max), kBase);
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.status().code(), ErrorCode::kNotFound) << info.status().message();
}

}  // namespace
}  // namespace memtrimd::glibc
