// Resident bytes per allocation site (collectors/agent/client/site_resident,
// procfs::ResidentInRange, the page's share): ranges over a recorded page
// map, each sample weighted as its bytes are, pages shared by neighbours
// counted once, and the pass's bounds.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <set>
#include <string>

#include "collectors/agent/client/agent_sites.h"
#include "collectors/agent/client/site_resident.h"
#include "collectors/procfs/pagemap.h"
#include "daemon/analysis/site_share.h"

namespace memtrimd::agent {
namespace {

constexpr uint64_t kPage = 4096;

// Pages marked present; the rest not. Counts the entries read.
class FakePages : public procfs::PageResidency {
 public:
  std::set<uint64_t> present;  // page numbers
  mutable uint64_t entries_read = 0;
  mutable int reads = 0;
  bool fail = false;

  Result<bool> Present(uint64_t address) const override {
    return present.contains(address / kPage);
  }
  Result<uint64_t> ResidentBytes(uint64_t, uint64_t) const override {
    return Status(ErrorCode::kInternal, "not used");
  }
  Status Entries(uint64_t first_page, std::span<uint64_t> out) const override {
    if (fail) return Status(ErrorCode::kNotFound, "no such process");
    ++reads;
    entries_read += out.size();
    for (std::size_t i = 0; i < out.size(); ++i) {
      out[i] = present.contains(first_page + i) ? procfs::kPagemapPresent : 0;
    }
    return Status::Ok();
  }
  void Touch(uint64_t from, uint64_t bytes) {
    for (uint64_t p = from / kPage; p * kPage < from + bytes; ++p) present.insert(p);
  }
};

TEST(ResidentInRange, PartialPagesCountByOverlapSoNeighboursNeverDoubleCount) {
  std::vector<uint64_t> entries = {procfs::kPagemapPresent, procfs::kPagemapPresent, 0,
                                   procfs::kPagemapPresent};
  // Pages 10..13: 10, 11 and 13 resident.
  const uint64_t base = 10 * kPage;
  EXPECT_EQ(procfs::ResidentInRange(base, 4 * kPage, 10, entries, kPage), 3 * kPage);
  // Two allocations sharing page 11: their resident bytes add up to it once.
  const uint64_t a = procfs::ResidentInRange(base + 100, kPage + 1000, 10, entries, kPage);
  const uint64_t b = procfs::ResidentInRange(base + kPage + 1100, 3000, 10, entries, kPage);
  EXPECT_EQ(a, kPage - 100 + 1100);  // to base + kPage + 1100
  EXPECT_EQ(b, 2996u);               // to the end of page 11 only: page 12 is not resident
  EXPECT_EQ(procfs::ResidentInRange(base + kPage, kPage, 10, entries, kPage), kPage);
  EXPECT_LE(procfs::ResidentInRange(base + kPage + 1000, 100, 10, entries, kPage) +
                procfs::ResidentInRange(base + kPage + 1100, 50, 10, entries, kPage),
            150u);
  // Pages the entries do not cover are not counted; an empty range is 0.
  EXPECT_EQ(procfs::ResidentInRange(base + 3 * kPage, 4 * kPage, 10, entries, kPage), kPage);
  EXPECT_EQ(procfs::ResidentInRange(base, 0, 10, entries, kPage), 0u);
}

TEST(RangeResidentBytes, ReadsLargeRangesInChunks) {
  FakePages pages;
  pages.Touch(1 << 30, 10000 * kPage);  // 10,000 pages: five reads of 2048
  Result<uint64_t> r = pages.RangeResidentBytes((1 << 30) - 10, 10000 * kPage + 20);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 10000 * kPage);
  EXPECT_EQ(pages.reads, 5);
}

AgentSites TwoStacks() {
  AgentSites s;
  s.stacks.resize(2);
  s.has_live = true;
  return s;
}

void AddLive(AgentSites& s, uint32_t stack, uint64_t ptr, uint64_t size, uint64_t weight) {
  s.live.push_back(LiveSample{stack, ptr, size, weight});
  s.stacks[stack].values.live_bytes += weight;
  s.live_seen = s.live_listed = s.live.size();
}

TEST(EstimateResident, WeightsEachSampleByTheShareOfItsRangeInRam) {
  AgentSites s = TwoStacks();
  FakePages pages;
  // Stack 0: 8 blocks of 1 MiB, a quarter of each written; weight 2 MiB each.
  for (uint64_t i = 0; i < 8; ++i) {
    const uint64_t at = (1ull << 32) + i * (2u << 20);
    AddLive(s, 0, at, 1u << 20, 2u << 20);
    pages.Touch(at, 256u << 10);
  }
  // Stack 1: small blocks that share pages, all written; weight 512 KiB.
  for (uint64_t i = 0; i < 100; ++i) {
    const uint64_t at = (1ull << 33) + i * 48;
    AddLive(s, 1, at, 48, 512u << 10);
    pages.Touch(at, 48);
  }
  EstimateResident(s, pages, ResidentOptions{});
  ASSERT_TRUE(s.resident.known) << s.resident.why;
  EXPECT_FALSE(s.resident.scaled);
  EXPECT_EQ(s.resident.read, 108u);
  EXPECT_EQ(s.stacks[0].values.resident_bytes, 8 * (512u << 10));  // weight x 1/4
  EXPECT_EQ(s.stacks[1].values.resident_bytes, s.stacks[1].values.live_bytes);
  // Never above the live bytes; nearby ranges shared their reads.
  EXPECT_LE(s.stacks[0].values.resident_bytes, s.stacks[0].values.live_bytes);
  EXPECT_LT(pages.reads, 20);
  EXPECT_GT(s.stacks[0].values.resident_variance, 0.0);
}

TEST(EstimateResident, OverThePageBoundAUniformSubsetIsScaled) {
  AgentSites s = TwoStacks();
  FakePages pages;
  for (uint64_t i = 0; i < 4000; ++i) {
    const uint64_t at = (1ull << 32) + i * (64u << 10);
    AddLive(s, i % 2, at, 64u << 10, 64u << 10);  // 16 pages each
    if (i % 2 == 0) pages.Touch(at, 64u << 10);   // stack 0 resident, stack 1 not
  }
  ResidentOptions o;
  o.max_pages = 16000;  // a quarter of the 64,000 pages
  EstimateResident(s, pages, o);
  ASSERT_TRUE(s.resident.known);
  EXPECT_TRUE(s.resident.scaled);
  EXPECT_EQ(s.resident.read, 1000u);
  EXPECT_LE(pages.entries_read, 16000u + 1000u * 32u);
  const double truth = 2000.0 * (64u << 10);
  EXPECT_NEAR(static_cast<double>(s.stacks[0].values.resident_bytes), truth, truth * 0.1);
  EXPECT_EQ(s.stacks[1].values.resident_bytes, 0u);
}

TEST(EstimateResident, OverTheTimeBoundTheRoundsReadAreScaled) {
  AgentSites s = TwoStacks();
  FakePages pages;
  for (uint64_t i = 0; i < 10000; ++i) {
    const uint64_t at = (1ull << 32) + i * kPage * 4;
    AddLive(s, 0, at, kPage, kPage);
    pages.Touch(at, kPage);
  }
  ResidentOptions o;
  // A clock that moves 150 ms a look: the budget (250 ms) ends the pass
  // after two rounds of 4096.
  auto t = std::chrono::steady_clock::time_point{};
  o.now = [&t] { return t += std::chrono::milliseconds(150); };
  EstimateResident(s, pages, o);
  ASSERT_TRUE(s.resident.known);
  EXPECT_TRUE(s.resident.scaled);
  EXPECT_EQ(s.resident.read, 8192u);
  EXPECT_EQ(s.stacks[0].values.resident_bytes, s.stacks[0].values.live_bytes);
}

TEST(EstimateResident, AnOldAgentOrAnUnreadablePagemapIsNotKnownNeverZero) {
  AgentSites old = TwoStacks();
  old.has_live = false;
  FakePages pages;
  EstimateResident(old, pages, ResidentOptions{});
  EXPECT_FALSE(old.resident.known);
  EXPECT_NE(old.resident.why.find("version 5"), std::string::npos) << old.resident.why;

  AgentSites s = TwoStacks();
  AddLive(s, 0, 1 << 20, 4096, 4096);
  pages.fail = true;
  EstimateResident(s, pages, ResidentOptions{});
  EXPECT_FALSE(s.resident.known);
  EXPECT_NE(s.resident.why.find("no such process"), std::string::npos) << s.resident.why;

  // No live sample at all: known, and 0.
  AgentSites none = TwoStacks();
  pages.fail = false;
  EstimateResident(none, pages, ResidentOptions{});
  EXPECT_TRUE(none.resident.known);
  EXPECT_EQ(none.stacks[0].values.resident_bytes, 0u);
}

TEST(SiteShare, NeverAboveTheWholeAndSaysWhenCapped) {
  SiteShare s = ShareOf(50, 0, 200);
  EXPECT_EQ(s.text, "25 %");
  EXPECT_FALSE(s.capped);
  SiteShare over = ShareOf(300, 100.0 * 100.0, 200);
  EXPECT_EQ(over.text, "100 % *");
  EXPECT_TRUE(over.capped);
  EXPECT_DOUBLE_EQ(over.percent, 100.0);
  EXPECT_DOUBLE_EQ(over.error_percent, 100.0);  // 2 x 100 of 200
  EXPECT_EQ(ShareOf(1, 0, 0).text, "");
  EXPECT_EQ(TwoStandardErrors(25.0), 10u);
}

}  // namespace
}  // namespace memtrimd::agent
