#include "daemon/report/incident_page.h"

#include <gtest/gtest.h>

#include <regex>

#include "daemon/analysis/rss_account.h"
#include "daemon/report/svg_chart.h"

namespace memtrimd {
namespace {

using namespace std::chrono_literals;
constexpr uint64_t kMiB = 1u << 20;

// Every data-part's data-bytes in the order drawn, and each rect's width.
struct DrawnPart {
  std::string part;
  uint64_t bytes;
  double x, width;
};
std::vector<DrawnPart> Parts(const std::string& svg) {
  std::vector<DrawnPart> out;
  std::regex re(
      R"re(data-part="([a-z_]+)" data-bytes="(\d+)" x="([\d.]+)" y="0" width="([\d.]+)")re");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator();
       ++it) {
    out.push_back({(*it)[1], std::stoull((*it)[2]), std::stod((*it)[3]), std::stod((*it)[4])});
  }
  return out;
}

TEST(AccountBar, PartsSumToTheRssAndScaleAgainstTheLimit) {
  std::vector<BarPart> parts = {{"file", "file-backed", 20 * kMiB},
                                {"glibc_free", "glibc free", 180 * kMiB},
                                {"native", "native", 56 * kMiB}};
  std::string svg = RenderAccountBar(parts, 256 * kMiB, 1024 * kMiB);
  auto drawn = Parts(svg);
  ASSERT_EQ(drawn.size(), 3u);
  uint64_t sum = 0;
  double width = 0;
  for (const auto& d : drawn) sum += d.bytes, width += d.width;
  EXPECT_EQ(sum, 256 * kMiB);
  // A quarter of the limit: a quarter of the 760 px bar.
  EXPECT_NEAR(width, 190, 0.2);
  EXPECT_NEAR(drawn[1].x, 20.0 / 1024 * 760, 0.1);
  EXPECT_NE(svg.find("data-limit=\"1073741824\""), std::string::npos);
  EXPECT_NE(svg.find("class=\"limit\" x1=\"760.0\""), std::string::npos) << svg;
}

TEST(AccountBar, RssAboveTheLimitFillsTheBarAndTheLimitSitsInside) {
  std::string svg = RenderAccountBar({{"native", "native", 300 * kMiB}}, 300 * kMiB, 200 * kMiB);
  auto drawn = Parts(svg);
  ASSERT_EQ(drawn.size(), 1u);
  EXPECT_NEAR(drawn[0].width, 760, 0.1);
  EXPECT_NE(svg.find("class=\"limit\" x1=\"506.7\""), std::string::npos) << svg;
}

TEST(AccountBar, WithoutALimitTheRssIsTheScale) {
  std::string svg = RenderAccountBar({{"native", "native", 10 * kMiB}}, 10 * kMiB, std::nullopt);
  EXPECT_NEAR(Parts(svg)[0].width, 760, 0.1);
  EXPECT_EQ(svg.find("data-limit"), std::string::npos);
  EXPECT_NE(svg.find("no memory limit known"), std::string::npos);
}

TEST(AccountBar, EmptyAccountHasNoNaN) {
  std::string svg = RenderAccountBar({{"native", "native", 0}}, 0, std::nullopt);
  EXPECT_EQ(svg.find("nan"), std::string::npos) << svg;
  EXPECT_EQ(svg.find("inf"), std::string::npos) << svg;
}

TEST(LineChart, OnePolylinePointPerSampleAndTrimMarks) {
  ChartSeries rss{"rss", "RSS", "#000", false, {}};
  for (int i = 0; i < 7; ++i) rss.points.push_back({i * 10'000, static_cast<uint64_t>(i) * kMiB});
  std::string svg = RenderLineChart("RSS", 0, 60'000, {rss}, {{30'000, 6 * kMiB, 2 * kMiB}});
  std::smatch m;
  ASSERT_TRUE(std::regex_search(svg, m, std::regex(R"re(data-count="7"[^>]* points="([^"]*)")re")))
      << svg;
  std::string pts = m[1];
  EXPECT_EQ(std::count(pts.begin(), pts.end(), ','), 7);
  EXPECT_NE(svg.find("data-before=\"6291456\" data-after=\"2097152\""), std::string::npos);
  // First point at the left edge, last at the right.
  EXPECT_EQ(pts.substr(0, 4), "56.0");
  EXPECT_NE(pts.find("416.0,"), std::string::npos);
}

TEST(LineChart, DegenerateInputsDrawNoNaN) {
  ChartSeries zero{"rss", "RSS", "#000", false, {{5, 0}}};
  ChartSeries none{"direct", "direct", "#000", false, {}};
  // One point, all values 0, an empty time span, an empty series.
  std::string svg = RenderLineChart("t", 5, 5, {zero, none}, {});
  EXPECT_EQ(svg.find("nan"), std::string::npos) << svg;
  EXPECT_EQ(svg.find("inf"), std::string::npos) << svg;
  EXPECT_NE(svg.find("data-count=\"1\""), std::string::npos);
  EXPECT_EQ(svg.find("data-series=\"direct\""), std::string::npos);
  EXPECT_NE(svg.find("direct (no data)"), std::string::npos);
}

TEST(HtmlEscape, EscapesMarkup) {
  EXPECT_EQ(HtmlEscape("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
}

// A glibc program with malloc statistics and a limit.
TargetSnapshot Program(pid_t pid, uint64_t rss_mib, std::optional<uint64_t> limit_mib) {
  TargetSnapshot ts;
  ts.target.pid = pid;
  ts.target.start_ticks = 7;
  ts.target.comm = "prog<" + std::to_string(pid) + ">";
  procfs::ProcStatus st;
  st.rss_anon = rss_mib * kMiB;
  ts.sample.process = st;
  GlibcHeaps g;
  g.breakdown.file_and_shared = 4 * kMiB;
  g.breakdown.arena_heaps = (rss_mib - 5) * kMiB;
  g.breakdown.other_anonymous = 1 * kMiB;
  g.breakdown.total = rss_mib * kMiB;
  g.resident_bytes = (rss_mib - 5) * kMiB;
  ts.sample.glibc = g;
  MallocStats m;
  m.info.system_current = (rss_mib - 5) * kMiB;
  m.info.total_rest_bytes = (rss_mib - 10) * kMiB;
  ts.sample.malloc = m;
  if (limit_mib) {
    CgroupMemory c;
    c.limit_bytes = *limit_mib * kMiB;
    ts.sample.cgroup = c;
  }
  return ts;
}

TEST(IncidentPage, SidecarBarIsTheReportsAccount) {
  Snapshot snap;
  snap.sequence = 3;
  snap.taken_at = std::chrono::system_clock::time_point(1'800'000'000s);
  snap.targets.push_back(Program(42, 100, 400));
  SampleHistory history(1h);
  for (uint64_t i = 1; i <= 3; ++i) {
    Snapshot s = snap;
    s.sequence = i;
    s.taken_at = snap.taken_at - (3 - i) * 10s;
    history.Record(s);
  }
  IncidentPage page = RenderIncidentPage(&snap, nullptr, &history, {});
  EXPECT_EQ(page.code, 200);
  auto drawn = Parts(page.html);
  auto account = AccountRss(snap.targets[0].sample);
  ASSERT_TRUE(account);
  auto parts = AccountParts(*account);
  ASSERT_EQ(drawn.size(), parts.size());
  for (std::size_t i = 0; i < parts.size(); ++i) {
    EXPECT_EQ(drawn[i].part, parts[i].first);
    EXPECT_EQ(drawn[i].bytes, parts[i].second);
  }
  EXPECT_NE(page.html.find("<body data-sequence=\"3\">"), std::string::npos);
  EXPECT_NE(page.html.find("data-samples=\"3\" data-first-sequence=\"1\" data-last-sequence=\"3\""),
            std::string::npos);
  EXPECT_NE(page.html.find("prog&lt;42&gt;"), std::string::npos);  // escaped
  EXPECT_EQ(page.html.find("nan"), std::string::npos);
  // Self-contained: no script, and no URL with a scheme or a host.
  EXPECT_EQ(page.html.find("<script"), std::string::npos);
  EXPECT_EQ(page.html.find("://"), std::string::npos);
  EXPECT_EQ(page.html.find("href=\"//"), std::string::npos);
}

TEST(IncidentPage, NodeModeListsTargetsFullestFirst) {
  Snapshot snap;
  snap.sequence = 1;
  snap.node_mode = true;
  snap.targets.push_back(Program(1, 100, 1000));         // 10 %
  snap.targets.push_back(Program(2, 50, std::nullopt));  // no limit: after those with one
  snap.targets.push_back(Program(3, 90, 100));           // 90 %
  snap.targets.push_back(Program(4, 300, std::nullopt));
  IncidentPage page = RenderIncidentPage(&snap, nullptr, nullptr, {});
  std::vector<std::string> order;
  std::regex row(R"re(<tr data-pid="(\d+)"><td><a href="/\?pid=(\d+)")re");
  for (auto it = std::sregex_iterator(page.html.begin(), page.html.end(), row);
       it != std::sregex_iterator(); ++it) {
    EXPECT_EQ((*it)[1], (*it)[2]);
    order.push_back((*it)[1]);
  }
  EXPECT_EQ(order, (std::vector<std::string>{"3", "1", "4", "2"}));
  // No bar on the overview; each target's own page has one.
  EXPECT_TRUE(Parts(page.html).empty());
  IncidentPageOptions one;
  one.pid = 3;
  EXPECT_FALSE(Parts(RenderIncidentPage(&snap, nullptr, nullptr, one).html).empty());
  one.pid = 99;
  EXPECT_EQ(RenderIncidentPage(&snap, nullptr, nullptr, one).code, 404);
}

TEST(IncidentPage, NoSampleOrNoTarget) {
  EXPECT_NE(RenderIncidentPage(nullptr, nullptr, nullptr, {}).html.find("No sample yet"),
            std::string::npos);
  Snapshot snap;
  snap.no_target_reason = "no process matches --target.match";
  EXPECT_NE(RenderIncidentPage(&snap, nullptr, nullptr, {}).html.find("no process matches"),
            std::string::npos);
}

}  // namespace
}  // namespace memtrimd
