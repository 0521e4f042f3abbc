// The agent's live table (collectors/agent/in_target/live_table.c), built on
// its own as a C library: samples keep their size beside their weights,
// frees take them out, a pointer sampled again replaces its unseen free,
// a full probe window drops, and live_table_each walks what is live.

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <vector>

#include "live_table.h"

namespace {

// The table's memory, zeroed like the agent's fresh mapping.
class LiveTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    memory_.assign(LIVE_TABLE_BYTES / sizeof(uint64_t) + 1, 0);
    live_table_attach(memory_.data());
  }

  static std::map<uintptr_t, live_sample> Live() {
    std::map<uintptr_t, live_sample> out;
    live_table_each(
        [](const live_sample* s, void* arg) {
          (*static_cast<std::map<uintptr_t, live_sample>*>(arg))[s->ptr] = *s;
        },
        &out);
    return out;
  }

  // Records every sample `gone` is told of.
  static void Gone(const live_sample* s, void* arg) {
    static_cast<std::vector<live_sample>*>(arg)->push_back(*s);
  }

  // The live table's slot for p (live_table.c's hash).
  static uint32_t SlotOf(uintptr_t p) {
    return static_cast<uint32_t>((static_cast<uint64_t>(p) * 0x9e3779b97f4a7c15ull) >> 48) &
           (LIVE_SLOTS - 1);
  }

  std::vector<uint64_t> memory_;
  std::vector<live_sample> gone_;
};

TEST_F(LiveTableTest, KeepsSizeBesideWeights) {
  ASSERT_EQ(live_table_insert(0x1000, 24, 524288, 21845 << 16, 7, 3, Gone, &gone_), 1);
  ASSERT_EQ(live_table_insert(0x2000, uint64_t{1} << 40, uint64_t{1} << 40, 1 << 16, 4095, 3, Gone,
                              &gone_),
            1);
  std::map<uintptr_t, live_sample> live = Live();
  ASSERT_EQ(live.size(), 2u);
  EXPECT_EQ(live[0x1000].size, 24u);
  EXPECT_EQ(live[0x1000].bytes, 524288);
  EXPECT_EQ(live[0x1000].objects, 21845u << 16);
  EXPECT_EQ(live[0x1000].row, 7u);
  EXPECT_EQ(live[0x1000].gen, 3u);
  EXPECT_EQ(live[0x2000].size, uint64_t{1} << 40);
  EXPECT_EQ(live[0x2000].row, 4095u);
  EXPECT_TRUE(gone_.empty());
}

TEST_F(LiveTableTest, SizeBeyond48BitsIsClamped) {
  ASSERT_EQ(live_table_insert(0x3000, UINT64_MAX, 1, 1, 1, 1, Gone, &gone_), 1);
  EXPECT_EQ(Live()[0x3000].size, LIVE_SIZE_MAX);
}

TEST_F(LiveTableTest, RemoveTellsWhatLeft) {
  ASSERT_EQ(live_table_insert(0x1000, 100, 4096, 1 << 16, 2, 5, Gone, &gone_), 1);
  live_table_remove(0x5000, Gone, &gone_);  // never sampled: nothing happens
  EXPECT_TRUE(gone_.empty());
  live_table_remove(0x1000, Gone, &gone_);
  ASSERT_EQ(gone_.size(), 1u);
  EXPECT_EQ(gone_[0].ptr, 0x1000u);
  EXPECT_EQ(gone_[0].size, 100u);
  EXPECT_EQ(gone_[0].bytes, 4096);
  EXPECT_EQ(gone_[0].row, 2u);
  EXPECT_EQ(gone_[0].gen, 5u);
  EXPECT_TRUE(Live().empty());
  live_table_remove(0x1000, Gone, &gone_);  // freed twice: told once
  EXPECT_EQ(gone_.size(), 1u);
}

TEST_F(LiveTableTest, SampledAgainReplacesUnseenFree) {
  ASSERT_EQ(live_table_insert(0x1000, 10, 1000, 1, 1, 1, Gone, &gone_), 1);
  ASSERT_EQ(live_table_insert(0x1000, 20, 2000, 2, 2, 1, Gone, &gone_), 1);
  ASSERT_EQ(gone_.size(), 1u);
  EXPECT_EQ(gone_[0].size, 10u);
  std::map<uintptr_t, live_sample> live = Live();
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live[0x1000].size, 20u);
  EXPECT_EQ(live[0x1000].row, 2u);
}

TEST_F(LiveTableTest, FullProbeWindowDropsAndTombstonesAreReused) {
  // LIVE_PROBES + 1 pointers that all start at one slot.
  std::vector<uintptr_t> same;
  const uint32_t target = SlotOf(8);
  for (uintptr_t p = 8; same.size() < LIVE_PROBES + 1; p += 8) {
    if (SlotOf(p) == target) same.push_back(p);
  }
  for (int i = 0; i < LIVE_PROBES; ++i) {
    ASSERT_EQ(live_table_insert(same[i], 1, 1, 1, 1, 1, Gone, &gone_), 1) << i;
  }
  EXPECT_EQ(live_table_insert(same[LIVE_PROBES], 1, 1, 1, 1, 1, Gone, &gone_), 0);
  live_table_remove(same[10], Gone, &gone_);
  EXPECT_EQ(live_table_insert(same[LIVE_PROBES], 1, 1, 1, 1, 1, Gone, &gone_), 1);
  EXPECT_EQ(Live().size(), static_cast<std::size_t>(LIVE_PROBES));
}

}  // namespace
