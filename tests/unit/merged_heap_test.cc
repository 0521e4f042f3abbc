// Arena heaps the kernel merged into one mapping: candidates by shape
// (FindHeapCandidates), confirmation by the arenas' header chains
// (ConfirmHeapChain), per-heap resident bytes (pagemap, FitResidentToMappings)
// and the RSS breakdown over them. The recorded fixture proc/merged_heaps
// holds the workload's own list of its heaps (truth.txt) and the words at
// every boundary read from /proc/<pid>/mem (headers.txt).
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "collectors/glibc/arena_heap.h"
#include "collectors/glibc/heap_info.h"
#include "collectors/glibc/rss_breakdown.h"
#include "collectors/procfs/pagemap.h"
#include "collectors/procfs/smaps.h"
#include "tests/unit/fixtures.h"
#include "tests/unit/mappings.h"

namespace memtrimd::glibc {
namespace {

using procfs::CountPresent;
using procfs::kPagemapPresent;
using procfs::kPagemapSwapped;
using procfs::Mapping;
using procfs::MappingKind;
using procfs::Pagemap;

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kHeap = kDefaultHeapSize;
constexpr uint64_t kBase = 0x7f0000000000ull;

using test::Anon;

// A header as glibc writes it.
HeapInfo Header(uint64_t ar_ptr, uint64_t prev, uint64_t size = kMiB, uint64_t mprotect = kMiB) {
  return HeapInfo{ar_ptr, prev, size, mprotect, 4096};
}

uint64_t Sum(const RssBreakdown& b) {
  return b.file_and_shared + b.java_heap + b.arena_heaps + b.main_arena + b.other_anonymous;
}

// ---------------------------------------------------------------------------
// The recorded process: one thread holding 250 MB of 1000-byte blocks (4
// heaps, two of them in one 128 MiB mapping) and a 128 MiB decoy region.

struct TruthHeap {
  uint64_t start = 0;
  uint64_t ar_ptr = 0;
  uint64_t resident = 0;
};

struct Recorded {
  std::vector<Mapping> maps;
  std::vector<TruthHeap> truth;
  uint64_t truth_resident = 0;
  uint64_t decoy = 0;
  // Words at each boundary and the resident bytes of its rw-p part.
  std::map<uint64_t, std::pair<HeapInfo, uint64_t>> words;
};

Recorded LoadRecorded() {
  Recorded r;
  Result<std::vector<Mapping>> maps =
      procfs::ParseSmaps(test::ReadFixture("proc/merged_heaps/smaps"));
  EXPECT_TRUE(maps.ok()) << maps.status().message();
  if (maps.ok()) r.maps = *maps;
  std::istringstream truth(test::ReadFixture("proc/merged_heaps/truth.txt"));
  std::string key;
  while (truth >> key) {
    if (key == "heap") {
      TruthHeap h;
      std::string k, prev, mprotect;
      truth >> std::hex >> h.start >> k >> h.ar_ptr >> k >> prev >> k >> mprotect >> k >>
          std::dec >> h.resident;
      r.truth.push_back(h);
    } else if (key == "resident_bytes") {
      truth >> std::dec >> r.truth_resident;
    } else if (key == "decoy") {
      truth >> std::hex >> r.decoy >> std::dec;
    } else {
      std::string skip;
      truth >> skip;
    }
  }
  std::istringstream headers(test::ReadFixture("proc/merged_heaps/headers.txt"));
  uint64_t at = 0, resident = 0;
  HeapInfo h;
  while (headers >> std::hex >> at >> h.ar_ptr >> h.prev >> h.size >> h.mprotect_size >>
         h.pagesize >> std::dec >> resident) {
    r.words[at] = {h, resident};
  }
  return r;
}

std::vector<std::optional<HeapInfo>> HeadersFor(const Recorded& r,
                                                const std::vector<ArenaHeap>& heaps) {
  std::vector<std::optional<HeapInfo>> out;
  for (const ArenaHeap& h : heaps) {
    auto it = r.words.find(h.start);
    out.push_back(it == r.words.end() ? std::nullopt : std::optional<HeapInfo>(it->second.first));
  }
  return out;
}

TEST(MergedHeapsRecorded, TheOldShapeRuleMissesHalfOfTheHeaps) {
  Recorded r = LoadRecorded();
  ASSERT_EQ(r.truth.size(), 4u);
  // What memtrimd counted before: two heaps, as compute_expected.py counts too.
  EXPECT_EQ(FindArenaHeaps(r.maps).size(),
            test::ReadProcExpected("merged_heaps").at("arena_heaps"));
  EXPECT_EQ(FindArenaHeaps(r.maps).size(), 2u);
}

TEST(MergedHeapsRecorded, HeadersConfirmExactlyTheWorkloadsHeaps) {
  Recorded r = LoadRecorded();
  HeapCandidates c = FindHeapCandidates(r.maps);
  EXPECT_EQ(c.merged_skipped, 0u);
  // Every boundary in an anonymous rw-p mapping: 4 heaps and the decoy's 2.
  ASSERT_EQ(c.heaps.size(), 6u);
  ASSERT_EQ(c.heaps.size(), r.words.size());
  std::size_t merged = 0;
  for (const ArenaHeap& h : c.heaps) merged += h.shape == HeapShape::kMerged ? 1 : 0;
  EXPECT_EQ(merged, 4u);  // the two heaps sharing a mapping and the decoy's two

  std::vector<HeapCheck> checks = ConfirmHeapChain(c.heaps, HeadersFor(r, c.heaps), kHeap);
  std::set<uint64_t> confirmed, rejected;
  for (std::size_t i = 0; i < c.heaps.size(); ++i) {
    if (checks[i] == HeapCheck::kConfirmed) confirmed.insert(c.heaps[i].start);
    if (checks[i] == HeapCheck::kRejected) rejected.insert(c.heaps[i].start);
  }
  std::set<uint64_t> truth;
  for (const TruthHeap& t : r.truth) truth.insert(t.start);
  EXPECT_EQ(confirmed, truth);
  // The decoy: its first boundary holds no header, its second one a header
  // that passes on its own (HeapInfoConsistent) but whose chain does not hold.
  EXPECT_EQ(rejected, (std::set<uint64_t>{r.decoy, r.decoy + kHeap}));
  const ArenaHeap forged{r.decoy + kHeap, kHeap, 0, HeapCheck::kShapeOnly, HeapShape::kMerged};
  EXPECT_TRUE(HeapInfoConsistent(r.words.at(r.decoy + kHeap).first, forged, kHeap));
}

TEST(MergedHeapsRecorded, EachHeapGetsItsOwnResidentBytes) {
  Recorded r = LoadRecorded();
  std::vector<ArenaHeap> heaps = FindHeapCandidates(r.maps).heaps;
  std::vector<HeapCheck> checks = ConfirmHeapChain(heaps, HeadersFor(r, heaps), kHeap);
  for (std::size_t i = 0; i < heaps.size(); ++i) {
    heaps[i].check = checks[i];
    // As the collector does: a merged heap's resident pages from pagemap
    // (recorded with the headers).
    if (heaps[i].shape == HeapShape::kMerged)
      heaps[i].resident_bytes = r.words.at(heaps[i].start).second;
  }
  EXPECT_EQ(KeepCountedHeaps(heaps), 0u);
  FitResidentToMappings(r.maps, heaps);
  ASSERT_EQ(heaps.size(), r.truth.size());
  uint64_t resident = 0;
  for (const ArenaHeap& h : heaps) {
    auto t = std::find_if(r.truth.begin(), r.truth.end(),
                          [&](const TruthHeap& x) { return x.start == h.start; });
    ASSERT_NE(t, r.truth.end());
    EXPECT_EQ(h.resident_bytes, t->resident) << std::hex << h.start;
    resident += h.resident_bytes;
  }
  EXPECT_EQ(resident, r.truth_resident);

  RssBreakdown b = BreakDownRss(r.maps, heaps, std::nullopt);
  EXPECT_EQ(Sum(b), b.total);
  EXPECT_EQ(b.arena_heaps, r.truth_resident);
  // The decoy's 128 MiB, every page written, stay other anonymous.
  EXPECT_GE(b.other_anonymous, 2 * kHeap);
}

TEST(MergedHeapsRecorded, WithoutHeadersOnlyTheExactShapeIsCountedAndNothingWrong) {
  Recorded r = LoadRecorded();
  std::vector<ArenaHeap> heaps = FindHeapCandidates(r.maps).heaps;
  std::vector<std::optional<HeapInfo>> none(heaps.size());
  std::vector<HeapCheck> checks = ConfirmHeapChain(heaps, none, kHeap);
  for (std::size_t i = 0; i < heaps.size(); ++i) heaps[i].check = checks[i];
  EXPECT_EQ(KeepCountedHeaps(heaps), 4u);
  ASSERT_EQ(heaps.size(), 2u);
  std::set<uint64_t> truth;
  for (const TruthHeap& t : r.truth) truth.insert(t.start);
  for (const ArenaHeap& h : heaps) {
    EXPECT_TRUE(truth.count(h.start)) << std::hex << h.start;
    EXPECT_EQ(h.shape, HeapShape::kOwnMapping);
  }
  RssBreakdown b = BreakDownRss(r.maps, heaps, std::nullopt);
  EXPECT_EQ(Sum(b), b.total);
}

TEST(MergedHeapsRecorded, NothingIsReadInsideTheJavaHeap) {
  Recorded r = LoadRecorded();
  // Taken as a Java heap's reserved range: its boundaries are no candidates.
  HeapCandidates c = FindHeapCandidates(r.maps, kHeap, AddressRange{r.decoy, r.decoy + 2 * kHeap});
  EXPECT_EQ(c.heaps.size(), 4u);
  for (const ArenaHeap& h : c.heaps)
    EXPECT_TRUE(h.start < r.decoy || h.start >= r.decoy + 2 * kHeap);
}

// ---------------------------------------------------------------------------
// Synthetic shapes.

TEST(FindHeapCandidates, FullHeapMergedWithTheNextHeap) {
  std::vector<Mapping> maps = {Anon(kBase, kBase + 2 * kHeap, "rw-p", 100 * kMiB)};
  HeapCandidates c = FindHeapCandidates(maps);
  ASSERT_EQ(c.heaps.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(c.heaps[i].start, kBase + i * kHeap);
    EXPECT_EQ(c.heaps[i].usable_bytes, kHeap);
    EXPECT_EQ(c.heaps[i].shape, HeapShape::kMerged);
    EXPECT_EQ(c.heaps[i].resident_bytes, 0u);  // not known before pagemap is read
  }
  EXPECT_TRUE(FindArenaHeaps(maps).empty());  // the old rule
  // Confirmed as one arena: the first heap and its later heap.
  std::vector<std::optional<HeapInfo>> h = {Header(kBase + kHeapInfoSize, 0, kHeap, kHeap),
                                            Header(kBase + kHeapInfoSize, kBase)};
  std::vector<HeapCheck> checks = ConfirmHeapChain(c.heaps, h, kHeap);
  EXPECT_EQ(checks, (std::vector<HeapCheck>{HeapCheck::kConfirmed, HeapCheck::kConfirmed}));
}

TEST(FindHeapCandidates, FullHeapPlusTheNextHeapsUsedPartThenItsNoAccessTail) {
  std::vector<Mapping> maps = {Anon(kBase, kBase + kHeap + 3 * kMiB, "rw-p", 70 * kMiB),
                               Anon(kBase + kHeap + 3 * kMiB, kBase + 2 * kHeap, "---p")};
  HeapCandidates c = FindHeapCandidates(maps);
  ASSERT_EQ(c.heaps.size(), 2u);
  EXPECT_EQ(c.heaps[0].usable_bytes, kHeap);
  EXPECT_EQ(c.heaps[1].start, kBase + kHeap);
  EXPECT_EQ(c.heaps[1].usable_bytes, 3 * kMiB);
  EXPECT_EQ(c.heaps[1].shape, HeapShape::kMerged);
}

TEST(FindHeapCandidates, HeapMergedBelowWithAnUnrelatedMapping) {
  // A large malloc chunk glibc mmapped right below the heap.
  std::vector<Mapping> maps = {Anon(kBase - 5 * kMiB, kBase + 2 * kMiB, "rw-p", 6 * kMiB),
                               Anon(kBase + 2 * kMiB, kBase + kHeap, "---p")};
  HeapCandidates c = FindHeapCandidates(maps);
  ASSERT_EQ(c.heaps.size(), 1u);
  EXPECT_EQ(c.heaps[0].start, kBase);
  EXPECT_EQ(c.heaps[0].usable_bytes, 2 * kMiB);
  EXPECT_EQ(c.heaps[0].shape, HeapShape::kMerged);
  // Its pages counted 2 MiB; the mapping's other 4 MiB stay other anonymous.
  c.heaps[0].check = HeapCheck::kConfirmed;
  c.heaps[0].resident_bytes = 2 * kMiB;
  FitResidentToMappings(maps, c.heaps);
  RssBreakdown b = BreakDownRss(maps, c.heaps, std::nullopt);
  EXPECT_EQ(b.arena_heaps, 2 * kMiB);
  EXPECT_EQ(b.other_anonymous, 4 * kMiB);
  EXPECT_EQ(Sum(b), b.total);
}

TEST(FindHeapCandidates, NoAccessTailMergedWithAGuardPageAbove) {
  std::vector<Mapping> maps = {Anon(kBase, kBase + kMiB, "rw-p", kMiB),
                               Anon(kBase + kMiB, kBase + kHeap + 4096, "---p")};
  HeapCandidates c = FindHeapCandidates(maps);
  ASSERT_EQ(c.heaps.size(), 1u);
  EXPECT_EQ(c.heaps[0].shape, HeapShape::kMerged);
  EXPECT_EQ(c.heaps[0].usable_bytes, kMiB);
}

TEST(FindHeapCandidates, OwnMappingShapeIsKeptAndMarked) {
  std::vector<Mapping> maps = {Anon(kBase, kBase + kMiB, "rw-p", kMiB),
                               Anon(kBase + kMiB, kBase + kHeap, "---p"),
                               Anon(kBase + kHeap, kBase + 2 * kHeap, "rw-p", 5 * kMiB)};
  HeapCandidates c = FindHeapCandidates(maps);
  ASSERT_EQ(c.heaps.size(), 2u);
  EXPECT_EQ(c.heaps[0].shape, HeapShape::kOwnMapping);
  EXPECT_EQ(c.heaps[0].resident_bytes, kMiB);
  EXPECT_EQ(c.heaps[1].shape, HeapShape::kOwnMapping);
  EXPECT_EQ(c.heaps[1].resident_bytes, 5 * kMiB);
  // Without headers they stay counted by shape, as before.
  EXPECT_EQ(KeepCountedHeaps(c.heaps), 0u);
  EXPECT_EQ(c.heaps.size(), 2u);
}

TEST(FindHeapCandidates, BoundaryWithoutANoAccessTailToTheNextIsNoCandidate) {
  // rw-p ends inside the heap and nothing (or something readable) follows.
  std::vector<Mapping> maps = {Anon(kBase - kMiB, kBase + kMiB, "rw-p", kMiB)};
  EXPECT_TRUE(FindHeapCandidates(maps).heaps.empty());
  maps.push_back(Anon(kBase + kMiB, kBase + kHeap, "r--p"));
  EXPECT_TRUE(FindHeapCandidates(maps).heaps.empty());
  std::vector<Mapping> short_tail = {Anon(kBase - kMiB, kBase + kMiB, "rw-p", kMiB),
                                     Anon(kBase + kMiB, kBase + kHeap - 4096, "---p")};
  EXPECT_TRUE(FindHeapCandidates(short_tail).heaps.empty());
}

TEST(FindHeapCandidates, JavaHeapLikeRangeIsNeverCounted) {
  // A 256 MiB Java heap, every page touched, on 64 MiB boundaries.
  std::vector<Mapping> maps = {Anon(kBase, kBase + 4 * kHeap, "rw-p", 4 * kHeap)};
  HeapCandidates c = FindHeapCandidates(maps);
  ASSERT_EQ(c.heaps.size(), 4u);
  // Object data where headers would be: no plausible header, no chain.
  std::vector<std::optional<HeapInfo>> objects(4, HeapInfo{0x1, 0xfc000000, 24, 16, 3});
  std::vector<HeapCheck> checks = ConfirmHeapChain(c.heaps, objects, kHeap);
  for (HeapCheck k : checks) EXPECT_EQ(k, HeapCheck::kRejected);
  // Unread (no access): merged candidates are not counted either.
  std::vector<ArenaHeap> unread = c.heaps;
  EXPECT_EQ(KeepCountedHeaps(unread), 4u);
  EXPECT_TRUE(unread.empty());
  // Its range known: not even a candidate.
  EXPECT_TRUE(
      FindHeapCandidates(maps, kHeap, AddressRange{kBase, kBase + 4 * kHeap}).heaps.empty());
  // A -Xmx64m heap of the exact shape is left out too when its range is known.
  std::vector<Mapping> small = {Anon(kBase, kBase + kHeap, "rw-p", kMiB)};
  EXPECT_EQ(FindHeapCandidates(small).heaps.size(), 1u);
  EXPECT_TRUE(FindHeapCandidates(small, kHeap, AddressRange{kBase, kBase + kHeap}).heaps.empty());
}

TEST(FindHeapCandidates, AReservationWithoutResidentPagesCostsNothing) {
  // A 1 TiB MAP_NORESERVE rw-p range: 16384 boundaries, nothing resident.
  std::vector<Mapping> maps = {Anon(kBase, kBase + (1ull << 40), "rw-p", 0)};
  HeapCandidates c = FindHeapCandidates(maps);
  EXPECT_TRUE(c.heaps.empty());
  EXPECT_EQ(c.merged_skipped, 0u);
  // With a page resident, the cap bounds the candidates and says so.
  maps[0].rss = 4096;
  c = FindHeapCandidates(maps);
  EXPECT_EQ(c.heaps.size(), kMaxMergedCandidates);
  EXPECT_EQ(c.merged_skipped, 16384u - kMaxMergedCandidates);
  c = FindHeapCandidates(maps, kHeap, std::nullopt, 10);
  EXPECT_EQ(c.heaps.size(), 10u);
}

TEST(FindHeapCandidates, CandidatesComeInAddressOrder) {
  std::vector<Mapping> maps = {Anon(kBase, kBase + 3 * kHeap, "rw-p", kMiB),
                               Anon(kBase + 4 * kHeap, kBase + 4 * kHeap + kMiB, "rw-p", kMiB),
                               Anon(kBase + 4 * kHeap + kMiB, kBase + 5 * kHeap, "---p")};
  HeapCandidates c = FindHeapCandidates(maps);
  ASSERT_EQ(c.heaps.size(), 4u);
  for (std::size_t i = 1; i < c.heaps.size(); ++i) {
    EXPECT_GE(c.heaps[i].start, c.heaps[i - 1].start + c.heaps[i - 1].usable_bytes);
  }
  EXPECT_EQ(c.heaps[3].shape, HeapShape::kOwnMapping);
}

// ---------------------------------------------------------------------------
// Header chains.

std::vector<ArenaHeap> Candidates(std::initializer_list<uint64_t> starts) {
  std::vector<ArenaHeap> out;
  for (uint64_t s : starts) out.push_back({s, kMiB, 0, HeapCheck::kShapeOnly, HeapShape::kMerged});
  return out;
}

TEST(ConfirmHeapChain, ChainsInAnyAddressOrder) {
  // glibc placed the later heaps below the first (as in the recording).
  const uint64_t first = kBase + 3 * kHeap;
  const uint64_t ar = first + kHeapInfoSize;
  std::vector<ArenaHeap> c = Candidates({kBase, kBase + kHeap, kBase + 2 * kHeap, first});
  std::vector<std::optional<HeapInfo>> h = {
      Header(ar, kBase + kHeap), Header(ar, kBase + 2 * kHeap), Header(ar, first), Header(ar, 0)};
  std::vector<HeapCheck> checks = ConfirmHeapChain(c, h, kHeap);
  for (HeapCheck k : checks) EXPECT_EQ(k, HeapCheck::kConfirmed);
}

TEST(ConfirmHeapChain, ABrokenLinkRejectsEveryHeapAfterIt) {
  const uint64_t ar = kBase + kHeapInfoSize;
  std::vector<ArenaHeap> c = Candidates({kBase, kBase + kHeap, kBase + 2 * kHeap});
  // The middle heap's header is garbage: the heap after it cannot be reached.
  std::vector<std::optional<HeapInfo>> h = {Header(ar, 0), HeapInfo{7, 7, 0, 0, 0},
                                            Header(ar, kBase + kHeap)};
  EXPECT_EQ(
      ConfirmHeapChain(c, h, kHeap),
      (std::vector<HeapCheck>{HeapCheck::kConfirmed, HeapCheck::kRejected, HeapCheck::kRejected}));
}

TEST(ConfirmHeapChain, ALaterHeapMustShareItsPrevsArena) {
  std::vector<ArenaHeap> c = Candidates({kBase, kBase + kHeap});
  std::vector<std::optional<HeapInfo>> h = {Header(kBase + kHeapInfoSize, 0),
                                            Header(kBase + 5 * kHeap + kHeapInfoSize, kBase)};
  EXPECT_EQ(ConfirmHeapChain(c, h, kHeap)[1], HeapCheck::kRejected);
}

TEST(ConfirmHeapChain, APrevThatIsNoCandidateIsRejected) {
  std::vector<ArenaHeap> c = Candidates({kBase + kHeap});
  std::vector<std::optional<HeapInfo>> h = {Header(kBase + kHeapInfoSize, kBase)};
  EXPECT_EQ(ConfirmHeapChain(c, h, kHeap)[0], HeapCheck::kRejected);
  // HeapInfoConsistent alone (the old single-header check) accepts it.
  EXPECT_TRUE(HeapInfoConsistent(*h[0], c[0], kHeap));
}

TEST(ConfirmHeapChain, ALoopIsRejected) {
  const uint64_t ar = kBase + 7 * kHeap + kHeapInfoSize;
  std::vector<ArenaHeap> c = Candidates({kBase, kBase + kHeap});
  std::vector<std::optional<HeapInfo>> h = {Header(ar, kBase + kHeap), Header(ar, kBase)};
  EXPECT_EQ(ConfirmHeapChain(c, h, kHeap),
            (std::vector<HeapCheck>{HeapCheck::kRejected, HeapCheck::kRejected}));
  std::vector<ArenaHeap> self = Candidates({kBase});
  std::vector<std::optional<HeapInfo>> own = {Header(ar, kBase)};
  EXPECT_EQ(ConfirmHeapChain(self, own, kHeap)[0], HeapCheck::kRejected);
}

TEST(ConfirmHeapChain, AnUnreadPrevLeavesTheHeapUndecided) {
  const uint64_t ar = kBase + kHeapInfoSize;
  std::vector<ArenaHeap> c = Candidates({kBase, kBase + kHeap, kBase + 2 * kHeap});
  std::vector<std::optional<HeapInfo>> h = {std::nullopt, Header(ar, kBase),
                                            Header(ar, kBase + kHeap)};
  EXPECT_EQ(ConfirmHeapChain(c, h, kHeap),
            (std::vector<HeapCheck>{HeapCheck::kShapeOnly, HeapCheck::kShapeOnly,
                                    HeapCheck::kShapeOnly}));
}

TEST(ConfirmHeapChain, ImplausibleNumbersAreRejected) {
  std::vector<ArenaHeap> c = Candidates({kBase});
  const uint64_t ar = kBase + kHeapInfoSize;
  for (HeapInfo bad : {HeapInfo{ar, 0, 0, kMiB, 4096}, HeapInfo{ar, 0, 2 * kMiB, kMiB, 4096},
                       HeapInfo{ar, 0, kMiB, kHeap + 4096, 4096}, HeapInfo{ar, 0, kMiB, kMiB, 0},
                       HeapInfo{ar, 0, kMiB, kMiB, 4095}, HeapInfo{ar + 8, 0, kMiB, kMiB, 4096}}) {
    std::vector<std::optional<HeapInfo>> h = {bad};
    EXPECT_EQ(ConfirmHeapChain(c, h, kHeap)[0], HeapCheck::kRejected);
  }
}

// ---------------------------------------------------------------------------
// Resident bytes.

TEST(FitResidentToMappings, HeapsNeverHoldMoreThanTheirMapping) {
  std::vector<Mapping> maps = {Anon(kBase, kBase + 2 * kHeap, "rw-p", 100 * kMiB)};
  std::vector<ArenaHeap> heaps = Candidates({kBase, kBase + kHeap});
  heaps[0].resident_bytes = 64 * kMiB;
  heaps[1].resident_bytes = 40 * kMiB;  // e.g. zero-page pages pagemap shows, Rss does not
  FitResidentToMappings(maps, heaps);
  EXPECT_EQ(heaps[0].resident_bytes, 64 * kMiB);
  EXPECT_EQ(heaps[1].resident_bytes, 36 * kMiB);
  RssBreakdown b = BreakDownRss(maps, heaps, std::nullopt);
  EXPECT_EQ(b.arena_heaps, 100 * kMiB);
  EXPECT_EQ(b.other_anonymous, 0u);
  EXPECT_EQ(Sum(b), b.total);
}

TEST(CountPresent, CountsThePresentBitOnly) {
  std::vector<uint64_t> entries = {kPagemapPresent, 0, kPagemapSwapped, kPagemapPresent | 0x1234,
                                   1ull << 55};
  EXPECT_EQ(CountPresent(entries), 2u);
  EXPECT_EQ(CountPresent({}), 0u);
}

TEST(Pagemap, OwnPagesTouchedAndUntouched) {
  const long page = sysconf(_SC_PAGESIZE);
  const std::size_t len = 8 * static_cast<std::size_t>(page);
  void* raw = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(raw, MAP_FAILED);
  char* p = static_cast<char*>(raw);
  p[0] = 1;
  p[3 * page] = 1;
  p[7 * page] = 1;
  Result<Pagemap> pm = Pagemap::Open("/proc/self");
  ASSERT_TRUE(pm.ok()) << pm.status().message();
  const auto start = reinterpret_cast<uint64_t>(p);
  Result<uint64_t> resident = pm->ResidentBytes(start, len);
  ASSERT_TRUE(resident.ok()) << resident.status().message();
  EXPECT_EQ(*resident, 3u * static_cast<uint64_t>(page));
  Result<bool> touched = pm->Present(start + 3 * static_cast<uint64_t>(page));
  Result<bool> untouched = pm->Present(start + 4 * static_cast<uint64_t>(page));
  ASSERT_TRUE(touched.ok() && untouched.ok());
  EXPECT_TRUE(*touched);
  EXPECT_FALSE(*untouched);
  munmap(raw, len);
}

TEST(Pagemap, MissingProcessIsAnError) { EXPECT_FALSE(Pagemap::Open("/proc/0").ok()); }

}  // namespace
}  // namespace memtrimd::glibc
