#include "daemon/report/site_history.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "daemon/report/history.h"

namespace memtrimd {
namespace {

using namespace std::chrono_literals;
constexpr uint64_t kMiB = 1u << 20;
const std::chrono::system_clock::time_point kT0{std::chrono::seconds(1'800'000'000)};

// A profile read at `read_at` with sites of the given names and live bytes
// (largest first, as BuildSiteProfile sorts them) and `unnamed` more bytes
// in stacks beyond the kept ones.
std::shared_ptr<const agent::SiteProfile> Profile(
    std::chrono::system_clock::time_point read_at,
    std::vector<std::pair<std::string, uint64_t>> sites, uint64_t unnamed = 0,
    bool first_nmt_tracked = false) {
  auto p = std::make_shared<agent::SiteProfile>();
  p->read_at = read_at;
  for (auto& [name, bytes] : sites) {
    agent::NamedSite s;
    s.name = name;
    s.values.live_bytes = bytes;
    s.stacks = 1;
    p->total.live_bytes += bytes;
    p->sites.push_back(std::move(s));
  }
  if (!p->sites.empty()) p->sites[0].nmt_tracked = first_nmt_tracked;
  p->other.live_bytes = unnamed;
  p->total.live_bytes += unnamed;
  return p;
}

TargetSnapshot TargetWith(pid_t pid, std::shared_ptr<const agent::SiteProfile> sites) {
  TargetSnapshot ts;
  ts.target.pid = pid;
  ts.target.start_ticks = 500 + static_cast<uint64_t>(pid);
  ts.sample.sites = std::move(sites);
  return ts;
}

Snapshot At(uint64_t seq, std::vector<TargetSnapshot> targets) {
  Snapshot s;
  s.sequence = seq;
  s.taken_at = kT0 + std::chrono::seconds(seq);
  s.targets = std::move(targets);
  return s;
}

std::vector<std::pair<std::string, uint64_t>> Seven() {
  return {{"hold < hold_200 < main", 200 * kMiB},
          {"hold < hold_50 < main", 50 * kMiB},
          {"hold < hold_10 < main", 10 * kMiB},
          {"d", 4 * kMiB},
          {"e", 3 * kMiB},
          {"f", 2 * kMiB},
          {"g", 1 * kMiB}};
}

TEST(SiteHistory, OnePointPerReadWithTheFiveLargestAndTheRest) {
  SiteHistory h(1h);
  auto first = Profile(kT0, Seven(), 5 * kMiB, true);
  // Three snapshots carry the same read: one point.
  for (uint64_t seq = 1; seq <= 3; ++seq) h.Record(At(seq, {TargetWith(7, first)}));
  auto second = Profile(kT0 + 30s, Seven(), 6 * kMiB);
  h.Record(At(4, {TargetWith(7, second)}));
  auto view = h.Of(TargetWith(7, nullptr).target, 4);
  ASSERT_TRUE(view);
  EXPECT_EQ(view->first_sequence, 1u);
  EXPECT_EQ(view->last_sequence, 4u);
  ASSERT_EQ(view->rest.size(), 2u);
  // f, g and the unnamed stacks: 3 + 5 MiB, then 3 + 6 MiB.
  EXPECT_EQ(view->rest[0].bytes, 8 * kMiB);
  EXPECT_EQ(view->rest[1].bytes, 9 * kMiB);
  EXPECT_EQ(view->rest[1].t_ms, 1'800'000'030'000);
  ASSERT_EQ(view->sites.size(), SiteHistory::kTopSites);
  EXPECT_EQ(view->sites[0].name, "hold < hold_200 < main");
  EXPECT_EQ(view->sites[0].max_bytes, 200 * kMiB);
  ASSERT_EQ(view->sites[0].points.size(), 2u);
  EXPECT_EQ(view->sites[0].points[0].t_ms, 1'800'000'000'000);
  // The flag is the latest read's.
  EXPECT_FALSE(view->sites[0].nmt_tracked);
  EXPECT_EQ(view->sites[4].name, "e");
  // A page drawn from sample 3 shows nothing newer.
  auto older = h.Of(TargetWith(7, nullptr).target, 3);
  ASSERT_TRUE(older);
  EXPECT_EQ(older->rest.size(), 1u);
  EXPECT_EQ(older->last_sequence, 1u);
}

TEST(SiteHistory, NmtTrackedIsKeptWithTheName) {
  SiteHistory h(1h);
  h.Record(At(1, {TargetWith(7, Profile(kT0, Seven(), 0, true))}));
  auto view = h.Of(TargetWith(7, nullptr).target, 1);
  ASSERT_TRUE(view);
  EXPECT_TRUE(view->sites[0].nmt_tracked);
  EXPECT_FALSE(view->sites[1].nmt_tracked);
}

TEST(SiteHistory, ATargetWithoutSitesHasNoEntryAndTargetsThatLeaveAreDropped) {
  SiteHistory h(1h);
  h.Record(At(1, {TargetWith(1, nullptr), TargetWith(2, Profile(kT0, Seven()))}));
  EXPECT_EQ(h.targets(), 1u);
  EXPECT_FALSE(h.Of(TargetWith(1, nullptr).target, 1));
  // Sites gone from a sample (the collector off): the points stay.
  h.Record(At(2, {TargetWith(2, nullptr)}));
  EXPECT_TRUE(h.Of(TargetWith(2, nullptr).target, 2));
  h.Record(At(3, {TargetWith(1, nullptr)}));
  EXPECT_EQ(h.targets(), 0u);
}

TEST(SiteHistory, AnExecStartsAfresh) {
  SiteHistory h(1h);
  TargetSnapshot ts = TargetWith(3, Profile(kT0, Seven()));
  ts.target.exec_mark = 11;
  h.Record(At(1, {ts}));
  ts.target.exec_mark = 12;
  ts.sample.sites = Profile(kT0 + 30s, {{"x", kMiB}});
  h.Record(At(2, {ts}));
  auto view = h.Of(ts.target, 2);
  ASSERT_TRUE(view);
  EXPECT_EQ(view->rest.size(), 1u);
  ASSERT_EQ(view->sites.size(), 1u);
  EXPECT_EQ(view->sites[0].name, "x");
}

TEST(SiteHistory, KeepsOnlyTheWindow) {
  SiteHistory h(10min);
  for (uint64_t i = 0; i < 40; ++i) {
    h.Record(At(i + 1, {TargetWith(4, Profile(kT0 + std::chrono::minutes(i), Seven()))}));
  }
  auto view = h.Of(TargetWith(4, nullptr).target, 40);
  ASSERT_TRUE(view);
  // Minutes 29..39: the read 10 minutes back and everything since.
  EXPECT_EQ(view->rest.size(), 11u);
  EXPECT_EQ(view->first_sequence, 30u);
}

TEST(SiteHistory, BoundedWhateverTheReadInterval) {
  SiteHistory h(1h);
  // A read a second for an hour: thinned, the span kept.
  for (uint64_t i = 0; i < 3600; ++i) {
    h.Record(At(i + 1, {TargetWith(5, Profile(kT0 + std::chrono::seconds(i), Seven()))}));
  }
  auto view = h.Of(TargetWith(5, nullptr).target, 3600);
  ASSERT_TRUE(view);
  EXPECT_LE(view->rest.size(), SiteHistory::kMaxPoints);
  EXPECT_GE(view->rest.size(), SiteHistory::kMaxPoints / 2);
  EXPECT_EQ(view->first_sequence, 1u);
  EXPECT_EQ(view->last_sequence, 3600u);
}

TEST(SiteHistory, ChurningNamesStayBoundedAndTheirBytesStayCounted) {
  SiteHistory h(1h);
  // Every read five new sites: the oldest names give their slots up, and
  // the points that showed them count those bytes in their rest.
  for (uint64_t i = 0; i < 200; ++i) {
    std::vector<std::pair<std::string, uint64_t>> sites;
    for (int k = 0; k < 5; ++k) {
      sites.push_back({"site " + std::to_string(i) + "." + std::to_string(k), (10 - k) * kMiB});
    }
    h.Record(At(i + 1, {TargetWith(6, Profile(kT0 + std::chrono::seconds(30 * i), sites))}));
  }
  auto view = h.Of(TargetWith(6, nullptr).target, 200);
  ASSERT_TRUE(view);
  EXPECT_LE(view->sites.size(), SiteHistory::kMaxNames);
  // Each read's bytes add up to what it held: 10+9+8+7+6 MiB.
  std::map<int64_t, uint64_t> sum;
  for (const SiteHistoryPoint& p : view->rest) sum[p.t_ms] += p.bytes;
  for (const SiteTimeline& t : view->sites) {
    for (const SiteHistoryPoint& p : t.points) sum[p.t_ms] += p.bytes;
  }
  ASSERT_EQ(sum.size(), view->rest.size());
  for (const auto& [t, bytes] : sum) EXPECT_EQ(bytes, 40 * kMiB) << t;
  // The newest reads are named, all five sites.
  EXPECT_EQ(view->rest.back().bytes, 0u);
  EXPECT_EQ(view->sites.size(), SiteHistory::kMaxNames);
  const std::string newest = "site 199.0";
  EXPECT_TRUE(std::any_of(view->sites.begin(), view->sites.end(),
                          [&](const SiteTimeline& t) { return t.name == newest; }));
}

TEST(SiteHistory, AnOverlongNameIsCutAtACharacter) {
  SiteHistory h(1h);
  std::string name(SiteHistory::kNameBytes - 1, 'a');
  name += "\xc3\xa9\xc3\xa9";  // two 2-byte characters across the limit
  h.Record(At(1, {TargetWith(8, Profile(kT0, {{name, kMiB}}))}));
  auto view = h.Of(TargetWith(8, nullptr).target, 1);
  ASSERT_TRUE(view);
  ASSERT_EQ(view->sites.size(), 1u);
  EXPECT_EQ(view->sites[0].name, std::string(SiteHistory::kNameBytes - 1, 'a'));
}

TEST(SiteHistory, KeptCompactly) {
  EXPECT_EQ(SiteHistory::kStoredPointBytes, 48u);
  EXPECT_EQ(SiteHistory::kTargetBytes, 10152u);  // as site_history.h says
}

TEST(SiteHistory, SampleHistoryFeedsIt) {
  SampleHistory h(1h);
  TargetSnapshot ts = TargetWith(9, Profile(kT0, Seven()));
  h.Record(At(1, {ts}));
  auto view = h.sites().Of(ts.target, 1);
  ASSERT_TRUE(view);
  EXPECT_EQ(view->sites.front().name, "hold < hold_200 < main");
  h.Record(At(2, {}));
  EXPECT_EQ(h.sites().targets(), 0u);
}

}  // namespace
}  // namespace memtrimd
