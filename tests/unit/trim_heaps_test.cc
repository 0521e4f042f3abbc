// Pairing each arena heap's resident bytes before and after a trim
// (PairHeaps).
#include <gtest/gtest.h>

#include "daemon/trim/trim_heaps.h"

namespace memtrimd {
namespace {

constexpr uint64_t kHeap = 64ull << 20;
constexpr uint64_t kBase = 0x7f0000000000;

TrimMeasure Measure(std::vector<std::pair<uint64_t, uint64_t>> heaps) {
  TrimMeasure m;
  uint64_t sum = 0;
  for (auto [start, resident] : heaps) {
    m.arena_heaps.push_back(
        glibc::ArenaHeap{start, resident, resident, glibc::HeapCheck::kShapeOnly});
    sum += resident;
  }
  m.arena_resident_bytes = sum;
  return m;
}

TEST(PairHeapsTest, ByStartAddressWithHeapsThatCameAndWent) {
  // Out of address order on purpose: the result is sorted by start.
  TrimMeasure before =
      Measure({{kBase + 2 * kHeap, 30 << 20}, {kBase, 40 << 20}, {kBase + kHeap, 5 << 20}});
  TrimMeasure after =
      Measure({{kBase, 4 << 20}, {kBase + 2 * kHeap, 30 << 20}, {kBase + 7 * kHeap, 1 << 20}});
  std::vector<HeapTrimDelta> d = PairHeaps(before, after);
  ASSERT_EQ(d.size(), 4u);
  EXPECT_EQ(d[0].start, kBase);
  EXPECT_EQ(d[0].before_resident, 40u << 20);
  EXPECT_EQ(d[0].after_resident, 4u << 20);
  EXPECT_EQ(d[0].Change(), -(36 << 20));
  // Gone after the trim (unmapped).
  EXPECT_EQ(d[1].start, kBase + kHeap);
  EXPECT_EQ(d[1].before_resident, 5u << 20);
  EXPECT_FALSE(d[1].after_resident.has_value());
  EXPECT_FALSE(d[1].Change().has_value());
  // Unchanged.
  EXPECT_EQ(d[2].Change(), 0);
  // New after the trim.
  EXPECT_EQ(d[3].start, kBase + 7 * kHeap);
  EXPECT_FALSE(d[3].before_resident.has_value());
  EXPECT_EQ(d[3].after_resident, 1u << 20);

  // Each side sums to that read's arena_resident_bytes.
  uint64_t sum_before = 0;
  uint64_t sum_after = 0;
  for (const HeapTrimDelta& h : d) {
    sum_before += h.before_resident.value_or(0);
    sum_after += h.after_resident.value_or(0);
  }
  EXPECT_EQ(sum_before, *before.arena_resident_bytes);
  EXPECT_EQ(sum_after, *after.arena_resident_bytes);
}

TEST(PairHeapsTest, NothingWithoutBothReads) {
  TrimMeasure measured = Measure({{kBase, 1 << 20}});
  TrimMeasure unmeasured;  // smaps not read (--trim.measure off, or it failed)
  EXPECT_TRUE(PairHeaps(measured, unmeasured).empty());
  EXPECT_TRUE(PairHeaps(unmeasured, measured).empty());
  EXPECT_TRUE(PairHeaps(Measure({}), Measure({})).empty());
}

}  // namespace
}  // namespace memtrimd
