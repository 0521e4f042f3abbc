#include "daemon/report/incident_page.h"

#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <tuple>

#include "daemon/analysis/rss_account.h"
#include "daemon/base/json_writer.h"
#include "daemon/report/site_report.h"
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
  std::vector<BarPart> parts = {{"file", "file-backed", 20 * kMiB, ""},
                                {"glibc_free", "glibc free", 180 * kMiB, ""},
                                {"native", "native", 56 * kMiB, ""}};
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
  std::string svg =
      RenderAccountBar({{"native", "native", 300 * kMiB, ""}}, 300 * kMiB, 200 * kMiB);
  auto drawn = Parts(svg);
  ASSERT_EQ(drawn.size(), 1u);
  EXPECT_NEAR(drawn[0].width, 760, 0.1);
  EXPECT_NE(svg.find("class=\"limit\" x1=\"506.7\""), std::string::npos) << svg;
}

TEST(AccountBar, WithoutALimitTheRssIsTheScale) {
  std::string svg =
      RenderAccountBar({{"native", "native", 10 * kMiB, ""}}, 10 * kMiB, std::nullopt);
  EXPECT_NEAR(Parts(svg)[0].width, 760, 0.1);
  EXPECT_EQ(svg.find("data-limit"), std::string::npos);
  EXPECT_NE(svg.find("no memory limit known"), std::string::npos);
}

TEST(AccountBar, EmptyAccountHasNoNaN) {
  std::string svg = RenderAccountBar({{"native", "native", 0, ""}}, 0, std::nullopt);
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

Snapshot OneTarget(TargetSnapshot ts, SampleHistory* history) {
  Snapshot snap;
  snap.sequence = 1;
  snap.taken_at = std::chrono::system_clock::time_point(1'800'000'000s);
  snap.targets.push_back(std::move(ts));
  if (history != nullptr) history->Record(snap);
  return snap;
}

// A Content-Security-Policy of default-src 'self' blocks style elements and
// attributes and data: URLs: the page has none, its colours are SVG
// presentation attributes, and its stylesheet and icon are memtrimd's own.
TEST(IncidentPage, NeedsNothingAStrictContentSecurityPolicyBlocks) {
  SampleHistory history(1h);
  Snapshot snap = OneTarget(Program(42, 100, 400), &history);
  const std::string html = RenderIncidentPage(&snap, nullptr, &history, {}).html;
  EXPECT_EQ(html.find("<style"), std::string::npos);
  EXPECT_EQ(html.find("style="), std::string::npos);
  EXPECT_EQ(html.find("data:"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(
      html.find("<link rel=\"stylesheet\" href=\"/incident.css" + IncidentPageAssetQuery() + "\">"),
      std::string::npos);
  EXPECT_NE(html.find("<link rel=\"icon\" href=\"/favicon.svg" + IncidentPageAssetQuery() + "\""),
            std::string::npos);
  EXPECT_TRUE(std::regex_match(IncidentPageAssetQuery(), std::regex(R"(\?v=[A-Za-z0-9._-]+)")))
      << IncidentPageAssetQuery();
  // Every part of the bar and every legend key has its colour on itself.
  std::regex part(R"re(<rect class="part" [^>]*>)re");
  int parts = 0;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), part); it != std::sregex_iterator();
       ++it, ++parts) {
    EXPECT_TRUE(std::regex_search(it->str(), std::regex(R"re( fill="#[0-9a-f]{6}")re")))
        << it->str();
  }
  EXPECT_EQ(parts, 3);
  EXPECT_NE(html.find("<svg class=\"key\" width=\"10\" height=\"10\" aria-hidden=\"true\"><rect "
                      "width=\"10\" height=\"10\" fill=\"#"),
            std::string::npos);
  EXPECT_TRUE(
      std::regex_search(html, std::regex(R"re(<polyline data-series="rss"[^>]* stroke="#)re")));
  EXPECT_EQ(IncidentPageCss().find("url("), std::string::npos);
  EXPECT_NE(IncidentPageCss().find("body{"), std::string::npos);
  EXPECT_EQ(IncidentPageIcon().rfind("<svg", 0), 0u);
}

// Each part's figure is the same in the legend and in the equation: both
// are the tenths that add up to the RSS. Three parts of 0.46 MiB: alone
// each rounds to 0.5, but they add up to 1.4.
TEST(IncidentPage, LegendAndEquationPrintTheSameFigures) {
  const uint64_t part = 46 * kMiB / 100;
  TargetSnapshot ts = Program(42, 100, std::nullopt);
  ts.sample.glibc->breakdown.file_and_shared = part;
  ts.sample.glibc->breakdown.arena_heaps = 2 * part;
  ts.sample.glibc->breakdown.other_anonymous = 0;
  ts.sample.glibc->breakdown.total = 3 * part;
  ts.sample.process->rss_anon = 3 * part;  // of the smaps read's moment
  ts.sample.malloc->info.system_current = 2 * part;
  ts.sample.malloc->info.total_rest_bytes = part;
  Snapshot snap = OneTarget(ts, nullptr);
  const std::string html = RenderIncidentPage(&snap, nullptr, nullptr, {}).html;
  std::vector<std::string> legend;
  std::regex key(R"re(data-legend-part="[a-z_]+"><svg.*?</svg>[^<]* (\d+\.\d MiB)</span>)re");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), key); it != std::sregex_iterator();
       ++it) {
    legend.push_back((*it)[1]);
  }
  std::smatch eq;
  ASSERT_TRUE(std::regex_search(html, eq, std::regex(R"re(<p>(RSS [^<]*)</p>)re"))) << html;
  std::vector<std::string> printed;
  const std::string line = eq[1];
  std::regex num(R"re(\d+\.\d MiB)re");
  for (auto it = std::sregex_iterator(line.begin(), line.end(), num); it != std::sregex_iterator();
       ++it) {
    printed.push_back(it->str());
  }
  ASSERT_EQ(printed.size(), 4u) << line;
  EXPECT_EQ(printed[0], "1.4 MiB") << line;
  EXPECT_EQ(legend, std::vector<std::string>(printed.begin() + 1, printed.end())) << line;
}

TargetSnapshot JvmTarget() {
  TargetSnapshot ts;
  ts.target.pid = 50;
  ts.target.start_ticks = 9;
  ts.target.comm = "java";
  ts.target.runtime = Runtime::kJvm;
  procfs::ProcStatus st;
  st.rss_anon = 80 * kMiB;
  ts.sample.process = st;
  JvmSample j;
  j.attachable = true;
  jvm::NmtSummary n;
  n.enabled = true;
  jvm::NmtCategory other;
  other.name = "Other";
  other.committed = 9 * kMiB;
  n.categories = {other};
  j.nmt = n;
  ts.sample.jvm = j;
  ts.sample.jvm_buffers_missing = "libmemtrimd_agent.so is not preloaded into the JVM";
  return ts;
}

// Without the agent the direct buffer pool is unknown; NMT Other is drawn
// under its own name, as the upper bound it is, and the note says how to
// get the pool.
TEST(IncidentPage, DirectChartDrawsNmtOtherAsAnUpperBoundWithoutTheAgent) {
  SampleHistory history(1h);
  Snapshot snap = OneTarget(JvmTarget(), &history);
  std::string html = RenderIncidentPage(&snap, nullptr, &history, {}).html;
  EXPECT_NE(html.find("data-series=\"nmt_other\" data-count=\"1\" data-last=\"9437184\""),
            std::string::npos)
      << html;
  EXPECT_EQ(html.find("data-series=\"direct\""), std::string::npos);
  EXPECT_EQ(html.find("direct buffer pool (no data)"), std::string::npos);
  EXPECT_NE(html.find("NMT Other (direct buffers, temporary buffer cache, FFM, Unsafe): 9.0 MiB"),
            std::string::npos);
  EXPECT_NE(html.find("not the direct buffer pool"), std::string::npos);
  EXPECT_NE(html.find("LD_PRELOAD=libmemtrimd_agent.so"), std::string::npos);

  // Neither figure: the chart says why, and what to do.
  TargetSnapshot none = JvmTarget();
  none.sample.jvm->attachable = false;
  none.sample.jvm->attach_error = "attach: process 50 is gone";
  none.sample.jvm->attach_cause = Cause::kGone;
  SampleHistory empty(1h);
  snap = OneTarget(none, &empty);
  html = RenderIncidentPage(&snap, nullptr, &empty, {}).html;
  EXPECT_NE(html.find("direct buffer pool (no data)"), std::string::npos);
  EXPECT_NE(html.find("No data: the direct buffer pool needs libmemtrimd_agent.so in the JVM, "
                      "and NMT cannot be read: the JVM is not attachable (see below). To chart "
                      "the pool, start the JVM with LD_PRELOAD=libmemtrimd_agent.so."),
            std::string::npos)
      << html;
}

// Issue 22: jdk.nio.maxCachedBufferSize unset with the agent measuring the
// cache at 0 B is advice, in its own list and not red; no risk is shown.
TEST(IncidentPage, AnUnsetPropertyIsAdviceNotARisk) {
  TargetSnapshot ts = JvmTarget();
  jvm::JvmVersion v;
  v.feature = 17;
  ts.sample.jvm->version = v;
  ts.sample.jvm->settings["MaxHeapSize"] = std::to_string(256 * kMiB);
  JvmBuffers b;
  b.temp_cache_bytes = 0;
  b.temp_cache_buffers = 0;
  ts.sample.jvm_buffers = b;
  Snapshot snap = OneTarget(ts, nullptr);
  std::string html = RenderIncidentPage(&snap, nullptr, nullptr, {}).html;
  EXPECT_EQ(html.find("data-check=\"nio_cache_unbounded\""), std::string::npos) << html;
  const std::size_t advice = html.find("<ul class=\"advice\">");
  ASSERT_NE(advice, std::string::npos) << html;
  EXPECT_NE(html.find("<li data-advice=\"nio_cache_unbounded\">set "
                      "-Djdk.nio.maxCachedBufferSize=262144",
                      advice),
            std::string::npos)
      << html;
  // A cache of a quarter of the direct limit (the max heap here) is a risk.
  ts.sample.jvm_buffers->temp_cache_bytes = 80 * kMiB;
  snap = OneTarget(ts, nullptr);
  html = RenderIncidentPage(&snap, nullptr, nullptr, {}).html;
  EXPECT_NE(html.find("<li class=\"risk\" data-check=\"nio_cache_unbounded\">"), std::string::npos)
      << html;
  // Bounded: neither.
  ts.sample.jvm->settings["jdk.nio.maxCachedBufferSize"] = "262144";
  snap = OneTarget(ts, nullptr);
  html = RenderIncidentPage(&snap, nullptr, nullptr, {}).html;
  EXPECT_EQ(html.find("data-advice="), std::string::npos);
  EXPECT_EQ(html.find("class=\"risk\" data-check=\"nio_cache_unbounded\""), std::string::npos);
}

TEST(IncidentPage, ACollectorFailureSaysWhatToDo) {
  TargetSnapshot ts = Program(42, 100, 400);
  ts.collectors = {{"glibc", false, 0, "open /proc/42/smaps: Permission denied"}};
  Snapshot snap = OneTarget(ts, nullptr);
  std::string html = RenderIncidentPage(&snap, nullptr, nullptr, {}).html;
  EXPECT_NE(html.find("The glibc collector failed: open /proc/42/smaps: Permission denied. <span "
                      "class=\"todo\">What to do: reading /proc/&lt;pid&gt;/smaps needs"),
            std::string::npos)
      << html;
}

TEST(IncidentPage, NoSampleOrNoTarget) {
  EXPECT_NE(RenderIncidentPage(nullptr, nullptr, nullptr, {}).html.find("No sample yet"),
            std::string::npos);
  Snapshot snap;
  snap.no_target_reason = "no process matches --target.match";
  EXPECT_NE(RenderIncidentPage(&snap, nullptr, nullptr, {}).html.find("no process matches"),
            std::string::npos);
}

// Sites as BuildSiteProfile leaves them: named, largest first.
std::shared_ptr<const agent::SiteProfile> Sites(
    std::chrono::system_clock::time_point read_at,
    std::vector<std::tuple<std::string, uint64_t, bool>> sites, uint64_t unnamed = 0) {
  auto p = std::make_shared<agent::SiteProfile>();
  p->read_at = read_at;
  p->started_at = read_at - 5min;
  p->period = 512 * 1024;
  for (auto& [name, bytes, tracked] : sites) {
    agent::NamedSite s;
    s.name = name;
    s.values.live_bytes = bytes;
    s.nmt_tracked = tracked;
    p->total.live_bytes += bytes;
    p->sites.push_back(std::move(s));
  }
  p->total.live_bytes += unnamed;
  return p;
}

std::string Attr(const std::string& text, const std::string& pattern) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex(pattern))) return "";
  return m[1];
}

// Issue 25: the sites' table against the account's native part, what they
// explain of it, and their last hour as a chart.
TEST(IncidentPage, SitesTableExplainsTheNativePartAndChartsTheLastHour) {
  SampleHistory history(1h);
  TargetSnapshot ts = Program(42, 100, 400);
  Snapshot snap;
  for (uint64_t i = 1; i <= 3; ++i) {
    snap.sequence = i;
    snap.taken_at = std::chrono::system_clock::time_point(1'800'000'000s) + i * 30s;
    ts.sample.sites = Sites(snap.taken_at,
                            {{"hold < hold_200 < main", (40 + i) * kMiB, false},
                             {"hold < hold_50 < main", 10 * kMiB, false},
                             {"zcalloc < inflate", 2 * kMiB, false}},
                            kMiB);
    snap.targets = {ts};
    history.Record(snap);
  }
  const std::string html = RenderIncidentPage(&snap, nullptr, &history, {}).html;
  auto account = AccountRss(ts.sample);
  ASSERT_TRUE(account);
  ASSERT_FALSE(account->nmt);
  // Against "native", no NMT column for a program that is not a JVM.
  EXPECT_NE(html.find("<h3>Who holds the native memory</h3>"), std::string::npos);
  EXPECT_EQ(Attr(html, R"re(<table class="sites" data-part="([a-z_]+)")re"), "native");
  EXPECT_EQ(Attr(html, R"re(data-part-bytes="(\d+)")re"), std::to_string(account->outside));
  EXPECT_EQ(html.find("NMT counts it"), std::string::npos);
  // Rows in order, names escaped, the share of native per site.
  EXPECT_EQ(Attr(html, R"re(data-site-rank="0" data-live-bytes="(\d+)")re"),
            std::to_string(43 * kMiB));
  EXPECT_NE(html.find("<td class=\"l\">hold &lt; hold_200 &lt; main</td><td>43.0 MiB</td><td>" +
                      std::to_string(static_cast<int>(
                          std::lround(4300.0 * kMiB / static_cast<double>(account->outside)))) +
                      " %</td>"),
            std::string::npos)
      << html;
  EXPECT_EQ(Attr(html, R"re(data-site-rank="2" data-live-bytes="(\d+)")re"),
            std::to_string(2 * kMiB));
  EXPECT_EQ(Attr(html, R"re(data-site-rank="other" data-live-bytes="(\d+)")re"),
            std::to_string(kMiB));
  // What the sites explain: all of them, none being NMT's.
  EXPECT_EQ(Attr(html, R"re(class="sites-explain" data-explained-bytes="(\d+)")re"),
            std::to_string(55 * kMiB));
  EXPECT_NE(html.find("The sampled sites explain 55.0 MiB of the "), std::string::npos);
  EXPECT_NE(html.find("Sampling since 07:56:30 UTC (5m ago): older allocations are not seen."),
            std::string::npos)
      << html;
  // The chart: one point per read for each site, the rest dashed.
  EXPECT_EQ(Attr(html, R"re(data-site-reads="(\d+)")re"), "3");
  EXPECT_EQ(Attr(html, R"re(data-series="site0" data-count="(\d+)")re"), "3");
  EXPECT_EQ(Attr(html, R"re(data-series="site0" data-count="3" data-last="(\d+)")re"),
            std::to_string(43 * kMiB));
  EXPECT_EQ(Attr(html, R"re(data-series="other_sites" data-count="3" data-last="(\d+)")re"),
            std::to_string(kMiB));
  EXPECT_NE(html.find("hold &lt; hold_200 &lt; main: 43.0 MiB"), std::string::npos);
  EXPECT_EQ(html.find("style="), std::string::npos);
  EXPECT_EQ(html.find("sites-missing"), std::string::npos);
}

// For a JVM the sites NMT counts are said to be NMT's, and only the others
// explain what is outside NMT.
TEST(IncidentPage, SitesOfAJvmSayWhichNmtCounts) {
  TargetSnapshot ts = JvmTarget();
  ts.sample.sites =
      Sites(std::chrono::system_clock::time_point(1'800'000'000s),
            {{"os::malloc < Unsafe_AllocateMemory0 < [java]", 30 * kMiB, true},
             {"zcalloc < inflateInit2_ < Java_java_util_zip_Inflater_init", 20 * kMiB, false}});
  Snapshot snap = OneTarget(ts, nullptr);
  const std::string html = RenderIncidentPage(&snap, nullptr, nullptr, {}).html;
  EXPECT_NE(html.find("<th>NMT counts it</th>"), std::string::npos);
  EXPECT_EQ(Attr(html, R"re(data-site-rank="0" [^>]*data-nmt-tracked="(\d)")re"), "1");
  EXPECT_EQ(Attr(html, R"re(data-site-rank="1" [^>]*data-nmt-tracked="(\d)")re"), "0");
  EXPECT_EQ(Attr(html, R"re(class="sites-explain" data-explained-bytes="(\d+)")re"),
            std::to_string(20 * kMiB));
  EXPECT_NE(html.find("Sites NMT counts (the JVM's own malloc) hold 30.0 MiB more."),
            std::string::npos)
      << html;
  // No account (no smaps read in this sample): said, and no share.
  EXPECT_NE(html.find("needs the account"), std::string::npos);
  // No history given: no chart, the table still there.
  EXPECT_EQ(html.find("data-site-reads"), std::string::npos);
}

// Issue 33: with resident figures the shares of native are of resident
// bytes, with their error; one above the part is "100 % *" with a
// footnote, never more.
TEST(IncidentPage, SiteSharesAreOfResidentBytesAndNeverAboveTheWhole) {
  TargetSnapshot ts = Program(42, 100, 400);
  auto account = AccountRss(ts.sample);
  ASSERT_TRUE(account);
  auto p = std::const_pointer_cast<agent::SiteProfile>(
      Sites(std::chrono::system_clock::time_point(1'800'000'000s),
            {{"zcalloc < deflateInit2_ < main", 300 * kMiB, false},
             {"hold < hold_50 < main", 50 * kMiB, false}}));
  p->resident.known = true;
  p->sites[0].values.resident_bytes = account->outside + 10 * kMiB;  // above the part
  p->sites[0].values.resident_variance = 4.0 * kMiB * kMiB;
  p->sites[1].values.resident_bytes = 12 * kMiB;
  p->total.resident_bytes = account->outside + 22 * kMiB;
  ts.sample.sites = p;
  Snapshot snap = OneTarget(ts, nullptr);
  const std::string html = RenderIncidentPage(&snap, nullptr, nullptr, {}).html;
  EXPECT_NE(html.find("<th>resident</th>"), std::string::npos);
  EXPECT_EQ(Attr(html, R"re(data-site-rank="1" [^>]*data-resident-bytes="(\d+)")re"),
            std::to_string(12 * kMiB));
  EXPECT_NE(html.find("<td>100 % *</td>"), std::string::npos) << html;
  EXPECT_NE(html.find("class=\"sites-footnote\">* The resident estimate is above the native"),
            std::string::npos);
  // No share shown above 100 %: the whole table's too is capped.
  std::smatch m;
  const std::regex pct(R"re(<td>(\d+) %)re");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), pct); it != std::sregex_iterator();
       ++it) {
    EXPECT_LE(std::stoi((*it)[1]), 100) << (*it)[0];
  }
  EXPECT_EQ(Attr(html, R"re(data-share-percent="([0-9.]+)")re"), "100.0");
  EXPECT_NE(html.find("The sampled sites hold "), std::string::npos);
  EXPECT_EQ(html.find("Shares are of bytes allocated"), std::string::npos);

  // Not known (an older agent): the live shares, and the reason.
  p->resident = agent::SiteResident{};
  p->resident.why = "the agent (protocol version 5 or older) does not list its live samples";
  snap = OneTarget(ts, nullptr);
  const std::string old = RenderIncidentPage(&snap, nullptr, nullptr, {}).html;
  EXPECT_EQ(old.find("<th>resident</th>"), std::string::npos);
  EXPECT_NE(old.find("Shares are of bytes allocated, not resident"), std::string::npos);
  EXPECT_NE(old.find("protocol version 5 or older"), std::string::npos);
}

TEST(IncidentPage, WithoutSitesOneLineSaysWhyOnlyWhenTheCollectorIsOn) {
  TargetSnapshot ts = Program(42, 100, 400);
  Snapshot snap = OneTarget(ts, nullptr);
  std::string html = RenderIncidentPage(&snap, nullptr, nullptr, {}).html;
  EXPECT_EQ(html.find("Who holds the native memory"), std::string::npos);
  EXPECT_EQ(html.find("Allocation sites"), std::string::npos);
  ts.sample.sites_missing = "the agent is not loaded <here>";
  snap = OneTarget(ts, nullptr);
  html = RenderIncidentPage(&snap, nullptr, nullptr, {}).html;
  EXPECT_NE(html.find("<p class=\"sites-missing\">Allocation sites: the agent is not loaded "
                      "&lt;here&gt;.</p>"),
            std::string::npos);
  EXPECT_EQ(html.find("Who holds the native memory"), std::string::npos);
}

// Issue 33: what the sampler cannot hook is said in one line above the
// sites, never left as a bare "0 B"; inspect's text and /report's JSON say
// the same.
TEST(IncidentPage, WhatTheHooksCannotSeeIsSaidInOneLine) {
  TargetSnapshot ts = Program(42, 100, 400);
  auto sites = std::make_shared<agent::SiteProfile>(
      *Sites(std::chrono::system_clock::time_point(1'800'000'000s),
             {{"hold < hold_200 < main", 40 * kMiB, false}}));
  // An agent that does not count: nothing said.
  ts.sample.sites = sites;
  Snapshot snap = OneTarget(ts, nullptr);
  std::string html = RenderIncidentPage(&snap, nullptr, nullptr, {}).html;
  EXPECT_EQ(html.find("not sampled"), std::string::npos);
  // Every entry hooked: nothing said either.
  sites->hooks_counted = true;
  sites->hooked_entries = 12;
  snap = OneTarget(ts, nullptr);
  html = RenderIncidentPage(&snap, nullptr, nullptr, {}).html;
  EXPECT_EQ(html.find("not sampled"), std::string::npos);
  EXPECT_EQ(report::NotSampledText(*sites), "");
  // Two objects bound elsewhere.
  sites->unhooked_objects = 2;
  snap = OneTarget(ts, nullptr);
  html = RenderIncidentPage(&snap, nullptr, nullptr, {}).html;
  EXPECT_EQ(Attr(html, R"re(<p class="not-sampled" data-unhooked-objects="(\d+)">)re"), "2");
  EXPECT_NE(html.find(">not sampled: the allocations of 2 loaded objects whose calls pass by the "
                      "hooks"),
            std::string::npos)
      << html;
  const std::string text = report::SitesText(*sites, 10, std::chrono::system_clock::now());
  EXPECT_NE(text.find("\n  not sampled: the allocations of 2 loaded objects"), std::string::npos)
      << text;
  // Nothing hooked at all: said so, before any figure.
  sites->hooked_entries = 0;
  EXPECT_EQ(report::NotSampledText(*sites).rfind("not sampled: no allocation call", 0), 0u);
  // An allocator memtrimd found linked into the executable.
  sites->hooked_entries = 3;
  sites->unhooked_objects = 0;
  sites->linked_allocator = "jemalloc linked into the executable";
  EXPECT_EQ(report::NotSampledText(*sites),
            "not sampled: the executable's own allocations (jemalloc linked into the "
            "executable: its calls never pass through a GOT entry the hooks could take)");
}

// A file standing for its functions in the sites' names: the page, the
// text and the JSON say which and why, a target's control bytes escaped.
TEST(IncidentPage, AFileWithoutFunctionNamesIsSaidWithItsReason) {
  TargetSnapshot ts = Program(42, 100, 400);
  auto sites = std::make_shared<agent::SiteProfile>(
      *Sites(std::chrono::system_clock::time_point(1'800'000'000s),
             {{"app < __libc_start_call_main", 40 * kMiB, false}}));
  ts.sample.sites = sites;
  Snapshot snap = OneTarget(ts, nullptr);
  std::string html = RenderIncidentPage(&snap, nullptr, nullptr, {}).html;
  EXPECT_EQ(html.find("unnamed-file"), std::string::npos);
  sites->unnamed_files = {
      {"/srv/a<b>\npp", "stripped: only the functions it exports have names", 40 * kMiB}};
  snap = OneTarget(ts, nullptr);
  html = RenderIncidentPage(&snap, nullptr, nullptr, {}).html;
  EXPECT_NE(html.find("<p class=\"unnamed-file\">no function names in /srv/a&lt;b&gt;\\012pp "
                      "(shown as a&lt;b&gt;\\012pp in sites holding 40.0 MiB): stripped: only "
                      "the functions it exports have names.</p>"),
            std::string::npos)
      << html;
  const std::string text = report::SitesText(*sites, 10, std::chrono::system_clock::now());
  EXPECT_NE(text.find("\n  no function names in /srv/a<b>\\012pp (shown as"), std::string::npos)
      << text;
  // A name that is not UTF-8: U+FFFD in its place, in the page, the text and
  // the JSON alike.
  sites->unnamed_files[0].path = "/srv/\xff.so";
  snap = OneTarget(ts, nullptr);
  html = RenderIncidentPage(&snap, nullptr, nullptr, {}).html;
  EXPECT_NE(html.find("no function names in /srv/\uFFFD.so (shown as \uFFFD.so in"),
            std::string::npos)
      << html;
  EXPECT_NE(report::SitesText(*sites, 10, std::chrono::system_clock::now())
                .find("no function names in /srv/\uFFFD.so"),
            std::string::npos);
  JsonWriter w;
  report::SitesJson(w, *sites, 10);
  EXPECT_NE(w.str().find("\"file\":\"/srv/\uFFFD.so\""), std::string::npos) << w.str();
}

// Issue 33: the page's header shows the RSS of this sample; the account is
// of the last smaps read. Dated always; against figures of now (the sites)
// only when its RSS is in step with the RSS now.
TEST(IncidentPage, AnAccountOfAnotherMomentIsDatedAndGivesNoShare) {
  TargetSnapshot ts = Program(42, 40, 400);
  const auto taken = std::chrono::system_clock::time_point(1'800'000'000s);
  ts.sample.glibc->read_at = taken - 47s;
  ts.sample.glibc->status_rss_bytes = 40 * kMiB;
  ts.sample.process->rss_anon = 99 * kMiB;  // grew since
  ts.sample.sites = Sites(taken, {{"hold < hold_200 < main", 60 * kMiB, false}});
  Snapshot snap = OneTarget(ts, nullptr);
  std::string html = RenderIncidentPage(&snap, nullptr, nullptr, {}).html;
  EXPECT_NE(html.find("<p class=\"meta\">RSS 99.0 MiB"), std::string::npos) << html;
  EXPECT_EQ(Attr(html, R"re(data-smaps-age-seconds="(\d+)")re"), "47");
  EXPECT_EQ(Attr(html, R"re(data-in-step-with-now="(\d)")re"), "0");
  EXPECT_NE(html.find("<p class=\"account-moment\">As of the smaps read 47 s ago (07:59:13 UTC), "
                      "when RSS was 40.0 MiB (99.0 MiB now"),
            std::string::npos)
      << html;
  // The equation is dated where it stands.
  EXPECT_NE(html.find("<p>As of the smaps read 47 s ago: RSS 40.0 MiB = "), std::string::npos)
      << html;
  // No share of "native" from the older read: not per site, not in all.
  EXPECT_EQ(Attr(html, R"re(data-shares="(\d)")re"), "0");
  EXPECT_NE(html.find("<td>60.0 MiB</td><td></td>"), std::string::npos) << html;
  EXPECT_EQ(html.find(" %</td>"), std::string::npos) << html;
  EXPECT_EQ(html.find("The sampled sites explain"), std::string::npos) << html;
  EXPECT_NE(html.find("The sampled sites hold 60.0 MiB; no share of native: the account is of "
                      "the smaps read 47 s ago, when RSS was 40.0 MiB, not of now (99.0 MiB"),
            std::string::npos)
      << html;

  // In step with now (RSS 41 MiB), still 47 s old: dated, and the shares
  // are taken.
  ts.sample.process->rss_anon = 41 * kMiB;
  snap = OneTarget(ts, nullptr);
  html = RenderIncidentPage(&snap, nullptr, nullptr, {}).html;
  EXPECT_EQ(Attr(html, R"re(data-in-step-with-now="(\d)")re"), "1");
  EXPECT_NE(html.find("<p>As of the smaps read 47 s ago: RSS 40.0 MiB = "), std::string::npos);
  EXPECT_EQ(html.find("when RSS was"), std::string::npos) << html;
  EXPECT_EQ(Attr(html, R"re(data-shares="(\d)")re"), "1");
  EXPECT_NE(html.find("The sampled sites explain 60.0 MiB of the "), std::string::npos) << html;

  // Read this second: nothing to date.
  ts.sample.glibc->read_at = taken;
  snap = OneTarget(ts, nullptr);
  html = RenderIncidentPage(&snap, nullptr, nullptr, {}).html;
  EXPECT_EQ(html.find("As of the smaps read"), std::string::npos) << html;
  EXPECT_TRUE(std::regex_search(html, std::regex(R"re(<p>RSS 40\.0 MiB = )re"))) << html;
}

}  // namespace
}  // namespace memtrimd
