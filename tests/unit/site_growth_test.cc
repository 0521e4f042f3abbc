#include "daemon/report/site_growth.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <tuple>

#include "daemon/report/incident_page.h"
#include "daemon/report/report_page.h"

namespace memtrimd {
namespace {

using namespace std::chrono_literals;
constexpr uint64_t kMiB = 1u << 20;
const std::chrono::system_clock::time_point kT0{std::chrono::seconds(1'800'000'000)};

// Sites read every 30 s for `reads` reads: "leaky < main" grows 12 MiB an
// hour from 40 MiB, "cache < main" fills 30 MiB in 10 minutes then holds,
// "batch < main" is a 10-minute sawtooth up to 20 MiB.
struct Fixture {
  SampleHistory history{1h};
  Snapshot last;

  explicit Fixture(int reads) {
    for (int i = 0; i < reads; ++i) {
      const double minutes = i * 0.5;
      auto p = std::make_shared<agent::SiteProfile>();
      p->read_at = kT0 + i * 30s;
      p->started_at = kT0;
      p->period = 512 * 1024;
      p->resident.known = true;
      // Resident bytes are what the finding follows; "untouched" allocates
      // steadily more (calloc'd, never written) while its resident bytes
      // stay flat, so it is no leak of RSS.
      const std::tuple<const char*, double, double> sites[] = {
          {"leaky < main", 2 * (40 * kMiB + 12 * kMiB * minutes / 60),
           40 * kMiB + 12 * kMiB * minutes / 60},
          {"cache < main", std::min(minutes, 10.0) * 3 * kMiB, std::min(minutes, 10.0) * 3 * kMiB},
          {"batch < main", std::fmod(minutes, 10.0) * 2 * kMiB + kMiB,
           std::fmod(minutes, 10.0) * 2 * kMiB + kMiB},
          {"untouched < main", 10 * kMiB + 30 * kMiB * minutes / 60, kMiB}};
      for (const auto& [name, live, resident] : sites) {
        agent::NamedSite s;
        s.name = name;
        s.values.live_bytes = static_cast<uint64_t>(live);
        s.values.resident_bytes = static_cast<uint64_t>(resident);
        s.values.live_samples = 10;
        s.stacks = 1;
        p->total.live_bytes += s.values.live_bytes;
        p->total.resident_bytes += s.values.resident_bytes;
        p->sites.push_back(std::move(s));
      }
      std::stable_sort(p->sites.begin(), p->sites.end(), [](const auto& a, const auto& b) {
        return a.values.live_bytes > b.values.live_bytes;
      });
      TargetSnapshot ts;
      ts.target.pid = 42;
      ts.target.start_ticks = 7;
      ts.target.comm = "prog";
      ts.sample.sites = std::move(p);
      last = Snapshot{};
      last.sequence = static_cast<uint64_t>(i + 1);
      last.taken_at = kT0 + i * 30s;
      last.targets.push_back(std::move(ts));
      history.Record(last);
    }
  }
};

TEST(SiteGrowth, OnlyTheLeakingSiteIsFound) {
  Fixture f(120);
  std::optional<report::SiteGrowth> g =
      report::SiteGrowthOf(&f.history, f.last.targets[0].target, f.last.sequence);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->reads, 120u);
  ASSERT_EQ(g->growing.size(), 1u);
  const report::GrowingSite& s = g->growing[0];
  EXPECT_EQ(s.site, "leaky < main");
  EXPECT_NEAR(s.leak.bytes_per_hour / kMiB, 12, 0.1);
  EXPECT_EQ(
      report::GrowingSiteSentence(s),
      "leaky < main: resident bytes grew 12.0 MiB/h since 08:00:00 UTC, steady for 59m (as far "
      "back as the history goes), Kendall tau 1.00 over 120 reads");
  // Not judged from a sample older than the history's newest read.
  EXPECT_FALSE(report::SiteGrowthOf(nullptr, f.last.targets[0].target, f.last.sequence));
}

TEST(SiteGrowth, ShownInReportTextJsonAndThePage) {
  Fixture f(120);
  const std::string text = RenderReportText(&f.last, nullptr, &f.history);
  EXPECT_NE(text.find("Growing steadily, a leak until shown otherwise:\n"
                      "    leaky < main: resident bytes grew 12.0 MiB/h"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("cache < main: resident bytes grew"), std::string::npos);
  // Allocated more and more, resident flat: not a leak of RSS.
  EXPECT_EQ(text.find("untouched < main: resident bytes grew"), std::string::npos) << text;
  // Without the history (a one-shot inspect), no word of growth.
  EXPECT_EQ(RenderReportText(&f.last, nullptr).find("Growing steadily"), std::string::npos);

  const std::string json = RenderReportJson(&f.last, nullptr, &f.history);
  EXPECT_NE(json.find("\"site_growth\":{\"measure\":\"resident\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"growing\":[{\"site\":\"leaky < main\",\"bytes_per_hour\":"),
            std::string::npos);
  EXPECT_EQ(RenderReportJson(&f.last, nullptr).find("site_growth"), std::string::npos);

  const std::string html = RenderIncidentPage(&f.last, nullptr, &f.history, {}).html;
  EXPECT_NE(html.find("<p class=\"site-growth\" data-growing=\"1\">"), std::string::npos);
  EXPECT_NE(html.find("<li class=\"risk\" data-site=\"leaky &lt; main\" data-bytes-per-hour=\"12"),
            std::string::npos)
      << html;
}

TEST(SiteGrowth, ShortHistoryIsNotJudgedYet) {
  Fixture f(20);  // ten minutes
  std::optional<report::SiteGrowth> g =
      report::SiteGrowthOf(&f.history, f.last.targets[0].target, f.last.sequence);
  ASSERT_TRUE(g);
  EXPECT_TRUE(g->growing.empty());
  EXPECT_EQ(report::NoGrowthSentence(*g),
            "Steady growth: not judged yet; it needs 30m and 12 reads of the sites, there are 20 "
            "over 9m");
  const std::string html = RenderIncidentPage(&f.last, nullptr, &f.history, {}).html;
  EXPECT_NE(html.find("<p class=\"site-growth\" data-growing=\"0\">Steady growth: not judged yet"),
            std::string::npos);
}

}  // namespace
}  // namespace memtrimd
