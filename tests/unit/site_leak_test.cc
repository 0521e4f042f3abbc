#include "daemon/analysis/site_leak.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

namespace memtrimd {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr int64_t kT0 = 1'800'000'000'000;  // Unix ms
constexpr int64_t kRead = 30'000;           // the sites collector's default interval

// A deterministic noise in [-1, 1]: the same reads on every run.
class Noise {
 public:
  double Next() {
    state_ = state_ * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(state_ >> 11) / static_cast<double>(1ULL << 53) * 2 - 1;
  }

 private:
  uint64_t state_ = 42;
};

// An hour of reads every 30 s of `bytes(minutes since the first read)`.
template <typename F>
std::vector<SiteLeakPoint> Hour(F bytes, int reads = 120) {
  std::vector<SiteLeakPoint> out;
  for (int i = 0; i < reads; ++i) {
    const double minutes = i * 0.5;
    out.push_back({kT0 + i * kRead, static_cast<uint64_t>(std::max(0.0, bytes(minutes)))});
  }
  return out;
}

TEST(SiteLeak, ASlowLeakBesideNoisyChurnIsFound) {
  // 10 MiB an hour on top of 40 MiB, while the same site frees and
  // allocates up to 3 MiB either way between reads.
  Noise noise;
  auto points =
      Hour([&](double m) { return 40 * kMiB + 10 * kMiB * m / 60 + 3 * kMiB * noise.Next(); });
  std::optional<SiteLeak> leak = FindSiteLeak(points);
  ASSERT_TRUE(leak);
  EXPECT_NEAR(leak->bytes_per_hour / kMiB, 10, 1.5);
  EXPECT_GE(leak->tau, 0.4);
  EXPECT_EQ(leak->since_ms, kT0);
  EXPECT_TRUE(leak->from_first_point);
  EXPECT_EQ(leak->last_ms, points.back().t_ms);
  EXPECT_EQ(leak->points, points.size());
}

TEST(SiteLeak, NoisyChurnWithoutALeakIsNot) {
  Noise noise;
  auto points = Hour([&](double) { return 40 * kMiB + 8 * kMiB * noise.Next(); });
  EXPECT_FALSE(FindSiteLeak(points));
}

TEST(SiteLeak, ACacheThatFillsThenHoldsIsNot) {
  // 60 MiB in the first 20 minutes, then full (its reads still wobble).
  Noise noise;
  auto points =
      Hour([&](double m) { return std::min(m, 20.0) * 3 * kMiB + 0.5 * kMiB * noise.Next(); });
  EXPECT_FALSE(FindSiteLeak(points));
}

TEST(SiteLeak, ASawtoothIsNot) {
  // A batch buffer that grows to 30 MiB and is freed, every 5 to 30
  // minutes, at every phase: a 30-minute ramp as long as the minimum span
  // starts from a fall.
  for (double period : {5.0, 10.0, 20.0, 30.0}) {
    for (double phase = 0; phase < period; phase += period / 6) {
      auto points =
          Hour([&](double m) { return std::fmod(m + phase, period) * 30 * kMiB / period; });
      EXPECT_FALSE(FindSiteLeak(points)) << "period " << period << " phase " << phase;
    }
  }
}

TEST(SiteLeak, ABurstAtStartIsNot) {
  // 100 MiB in the first two minutes, then nothing new.
  auto points = Hour([&](double m) { return std::min(m, 2.0) * 50 * kMiB; });
  EXPECT_FALSE(FindSiteLeak(points));
}

TEST(SiteLeak, TheRunStartsWhereTheRiseDid) {
  // Flat for 20 minutes, then 20 MiB an hour: found since about minute 20.
  auto points = Hour([&](double m) { return 50 * kMiB + std::max(0.0, m - 20) * kMiB / 3; });
  std::optional<SiteLeak> leak = FindSiteLeak(points);
  ASSERT_TRUE(leak);
  EXPECT_NEAR(leak->bytes_per_hour / kMiB, 20, 1);
  EXPECT_FALSE(leak->from_first_point);
  EXPECT_GE(leak->since_ms, kT0 + 13 * 60'000);
  EXPECT_LE(leak->since_ms, kT0 + 23 * 60'000);
  EXPECT_GE(leak->tau, 0.9);
}

TEST(SiteLeak, TooShortTooFewOrTooSlowIsNot) {
  const auto steady = [](double m) { return 10 * kMiB * m / 60; };
  // 29 minutes of reads: under the minimum span.
  EXPECT_FALSE(FindSiteLeak(Hour(steady, 58)));
  // Exactly enough reads over an hour: found.
  std::vector<SiteLeakPoint> sparse;
  for (int i = 0; i < 12; ++i)
    sparse.push_back({kT0 + i * 6 * 60'000, static_cast<uint64_t>(i * kMiB)});
  EXPECT_TRUE(FindSiteLeak(sparse));
  sparse.pop_back();  // one read fewer than the minimum
  EXPECT_FALSE(FindSiteLeak(sparse));
  // 1 MiB an hour: steady, but under the minimum rate.
  EXPECT_FALSE(FindSiteLeak(Hour([](double m) { return kMiB * m / 60; })));
  // 3 MiB an hour for 40 minutes: 2 MiB grown, under the minimum growth.
  EXPECT_FALSE(FindSiteLeak(Hour([](double m) { return 3 * kMiB * m / 60; }, 80)));
}

TEST(SiteLeak, AShrinkingSiteAndEdgeCasesAreNot) {
  EXPECT_FALSE(FindSiteLeak(Hour([](double m) { return 100 * kMiB - kMiB * m; })));
  EXPECT_FALSE(FindSiteLeak({}));
  const std::vector<SiteLeakPoint> one = {{kT0, 1}};
  EXPECT_FALSE(FindSiteLeak(one));
  // Reads with one timestamp: no rate at all.
  std::vector<SiteLeakPoint> same;
  for (int i = 0; i < 20; ++i) same.push_back({kT0, static_cast<uint64_t>(i * kMiB)});
  EXPECT_FALSE(FindSiteLeak(same));
  EXPECT_EQ(TheilSenBytesPerHour(same), 0);
}

TEST(SiteLeak, TheilSenIgnoresAFewWildReads) {
  auto points = Hour([](double m) { return 12 * kMiB * m / 60; });
  // A tenth of the reads far off, both ways: a least-squares line would move.
  for (std::size_t i = 3; i < points.size(); i += 10) {
    points[i].bytes = i % 20 == 3 ? points[i].bytes * 4 : 0;
  }
  EXPECT_NEAR(TheilSenBytesPerHour(points) / kMiB, 12, 0.5);
  std::optional<SiteLeak> leak = FindSiteLeak(points);
  ASSERT_TRUE(leak);
  EXPECT_LT(leak->tau, 0.9);  // less sure than without them
}

TEST(SiteLeak, KendallCountsPairsInOrder) {
  const std::vector<SiteLeakPoint> up = {{0, 1}, {1, 2}, {2, 3}, {3, 4}};
  EXPECT_DOUBLE_EQ(KendallOf(up).tau, 1);
  const std::vector<SiteLeakPoint> down = {{0, 4}, {1, 3}, {2, 2}, {3, 1}};
  EXPECT_DOUBLE_EQ(KendallOf(down).tau, -1);
  const std::vector<SiteLeakPoint> flat = {{0, 2}, {1, 2}, {2, 2}};
  EXPECT_DOUBLE_EQ(KendallOf(flat).tau, 0);
  EXPECT_DOUBLE_EQ(KendallOf(flat).z, 0);
  // 1 2 4 3: five pairs rise, one falls.
  const std::vector<SiteLeakPoint> mixed = {{0, 1}, {1, 2}, {2, 4}, {3, 3}};
  EXPECT_DOUBLE_EQ(KendallOf(mixed).tau, 4.0 / 6);
}

}  // namespace
}  // namespace memtrimd
