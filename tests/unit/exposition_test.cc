#include "daemon/exposition/exposition.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <set>
#include <sstream>

#include "daemon/exposition/metric_table.h"
#include "daemon/exposition/metrics_page.h"
#include "daemon/trim/trim_engine.h"
#include "tests/unit/gunzip.h"

namespace memtrimd {
namespace {

Snapshot SampleSnapshot() {
  Snapshot s;
  s.sequence = 7;
  s.taken_at = std::chrono::system_clock::now();
  s.taken_steady = std::chrono::steady_clock::now();
  TargetSnapshot ts;
  ts.target.pid = 4242;
  ts.target.comm = "we\"ird\\name";
  ts.target.runtime = Runtime::kGlibc;
  ts.start_time_seconds = 1700000000;
  procfs::ProcStatus p;
  p.rss_anon = 100 << 20;
  p.rss_file = 5 << 20;
  p.rss_shmem = 1 << 20;
  p.vm_swap = 0;
  p.vm_hwm = 120 << 20;
  p.threads = 17;
  ts.sample.process = p;
  GlibcHeaps g;
  g.heaps.push_back({64ull << 20, 1 << 20, 512 << 10, glibc::HeapCheck::kConfirmed});
  g.heaps.push_back({128ull << 20, 2 << 20, 1 << 20, glibc::HeapCheck::kConfirmed});
  g.usable_bytes = 3 << 20;
  g.resident_bytes = (1 << 20) + (512 << 10);
  g.main_arena_resident_bytes = 4096;
  g.read_at = s.taken_at;
  g.read_steady = s.taken_steady;
  ts.sample.glibc = g;
  CgroupMemory c;
  c.version = 2;
  c.usage_bytes = 200 << 20;
  c.anon_bytes = 150 << 20;
  c.file_bytes = 50 << 20;
  c.oom_kills = 3;
  ts.sample.cgroup = c;  // no limit
  ts.collectors = {{"process", true, 0.001, ""}, {"glibc", false, 0.01, "permission denied"}};
  s.targets.push_back(ts);
  return s;
}

bool Has(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos || text.rfind(line + "\n", 0) == 0;
}

TEST(Exposition, RendersTargetSeriesWithPidLabel) {
  Snapshot s = SampleSnapshot();
  std::string text = RenderText(SnapshotFamilies(&s));
  EXPECT_TRUE(Has(text, "memtrimd_target_up{pid=\"4242\"} 1"));
  EXPECT_TRUE(Has(text, "memtrimd_targets_watched 1"));
  EXPECT_TRUE(Has(text, "memtrimd_samples_total 7"));
  EXPECT_TRUE(
      Has(text, "memtrimd_target_resident_memory_bytes{pid=\"4242\",kind=\"anon\"} 104857600"));
  EXPECT_TRUE(Has(text, "memtrimd_target_threads{pid=\"4242\"} 17"));
  EXPECT_TRUE(Has(text, "memtrimd_glibc_arena_heaps{pid=\"4242\"} 2"));
  EXPECT_TRUE(
      Has(text, "memtrimd_glibc_arena_heap_bytes{pid=\"4242\",state=\"resident\"} 1572864"));
  EXPECT_TRUE(Has(text, "memtrimd_target_oom_kills_total{pid=\"4242\"} 3"));
  EXPECT_TRUE(Has(text, "memtrimd_collector_success{pid=\"4242\",collector=\"glibc\"} 0"));
  EXPECT_TRUE(Has(text, "memtrimd_collector_success{pid=\"4242\",collector=\"process\"} 1"));
  EXPECT_TRUE(Has(text, "memtrimd_collector_failing_targets{collector=\"glibc\"} 1"));
  EXPECT_TRUE(Has(text, "memtrimd_collector_failing_targets{collector=\"process\"} 0"));
  // Label values are escaped.
  EXPECT_NE(text.find("comm=\"we\\\"ird\\\\name\""), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE memtrimd_target_oom_kills_total counter"), std::string::npos);
}

TEST(Exposition, NoLimitMeansNoLimitSeries) {
  Snapshot s = SampleSnapshot();
  std::string text = RenderText(SnapshotFamilies(&s));
  EXPECT_EQ(text.find("memtrimd_target_memory_limit_bytes{"), std::string::npos);
  s.targets[0].sample.cgroup->limit_bytes = 1ull << 30;
  text = RenderText(SnapshotFamilies(&s));
  EXPECT_TRUE(Has(text, "memtrimd_target_memory_limit_bytes{pid=\"4242\"} 1073741824"));
}

TEST(Exposition, NoTargetMeansUpZeroAndNoTargetSeries) {
  Snapshot s;
  s.sequence = 3;
  s.taken_at = std::chrono::system_clock::now();
  std::string text = RenderText(SnapshotFamilies(&s));
  EXPECT_TRUE(Has(text, "memtrimd_target_up 0"));
  EXPECT_EQ(text.find("pid=\""), std::string::npos) << text;
  EXPECT_NE(text.find("memtrimd_build_info{version=\""), std::string::npos);
  // Before the first sample too.
  text = RenderText(SnapshotFamilies(nullptr));
  EXPECT_TRUE(Has(text, "memtrimd_target_up 0"));
}

TEST(Exposition, FamiliesAreContiguousAndInTableOrder) {
  Snapshot s = SampleSnapshot();
  s.targets.push_back(s.targets[0]);
  s.targets[1].target.pid = 5151;
  auto families = SnapshotFamilies(&s);
  std::vector<std::string> names;
  for (const auto& f : families) names.push_back(f.name);
  std::vector<std::string> table_order;
  for (const MetricDef* d : AllMetrics()) {
    if (std::find(names.begin(), names.end(), d->name) != names.end()) {
      table_order.emplace_back(d->name);
    }
  }
  EXPECT_EQ(names, table_order);
  for (const auto& f : families) {
    if (f.name == "memtrimd_target_threads") {
      EXPECT_EQ(f.metric.size(), 2u);
    }
  }
}

TEST(Exposition, SelfProcessMetricsAreStandard) {
  std::string text = RenderText(SelfProcessFamilies());
  for (const char* name : {"process_cpu_seconds_total ", "process_resident_memory_bytes ",
                           "process_virtual_memory_bytes ", "process_start_time_seconds ",
                           "process_open_fds ", "process_max_fds "}) {
    EXPECT_NE(text.find(std::string("\n") + name), std::string::npos) << name;
  }
}

TEST(Exposition, AgesAreMeasuredFromTheGivenTime) {
  Snapshot s = SampleSnapshot();
  s.targets[0].sample.glibc->read_steady = s.taken_steady - std::chrono::seconds(30);
  // The wall clock stepped an hour ahead since (an NTP correction, a resumed
  // VM): the ages are those of the monotonic clock.
  s.taken_at -= std::chrono::hours(1);
  s.targets[0].sample.glibc->read_at -= std::chrono::hours(1);
  std::string text = RenderText(AgeFamilies(&s, s.taken_steady + std::chrono::seconds(5)));
  EXPECT_TRUE(Has(text, "memtrimd_sample_age_seconds 5")) << text;
  EXPECT_TRUE(Has(text, "memtrimd_smaps_age_seconds{pid=\"4242\"} 35")) << text;
  EXPECT_TRUE(AgeFamilies(nullptr, s.taken_steady).empty());
  // The snapshot's own families carry no age: they are rendered once per
  // snapshot, and an age in them would stand still.
  std::string fixed = RenderText(SnapshotFamilies(&s));
  EXPECT_EQ(fixed.find("_age_seconds"), std::string::npos) << fixed;
}

TEST(Exposition, SnapshotFamiliesAreAFunctionOfTheSnapshot) {
  Snapshot s = SampleSnapshot();
  std::string first = RenderText(SnapshotFamilies(&s));
  std::string again = RenderText(SnapshotFamilies(&s));
  EXPECT_EQ(first, again);
}

// Sample lines of the page by family, checking on the way that every family
// has one TYPE line and that its samples follow it without a break.
std::map<std::string, std::vector<std::string>> FamiliesOf(const std::string& page) {
  std::map<std::string, std::vector<std::string>> out;
  std::istringstream in(page);
  std::string line, current;
  while (std::getline(in, line)) {
    if (line.rfind("# TYPE ", 0) == 0) {
      current = line.substr(7, line.find(' ', 7) - 7);
      EXPECT_EQ(out.count(current), 0u) << "family " << current << " appears twice";
      out[current];
    } else if (!line.empty() && line[0] != '#') {
      std::string name = line.substr(0, line.find_first_of("{ "));
      bool ours = name == current || name == current + "_bucket" || name == current + "_sum" ||
                  name == current + "_count";
      EXPECT_TRUE(ours) << line << " is not next to its family's TYPE line";
      out[current].push_back(line);
    }
  }
  return out;
}

double ValueOf(const std::string& sample_line) {
  return std::stod(sample_line.substr(sample_line.rfind(' ') + 1));
}

TEST(MetricsPage, CombinesTheSnapshotItsAgesAndTheProcess) {
  SnapshotStore store;
  MetricsPage page(store, nullptr);
  auto before = FamiliesOf(page.Render().Joined());
  ASSERT_EQ(before["memtrimd_target_up"].size(), 1u);
  EXPECT_EQ(before["memtrimd_target_up"][0], "memtrimd_target_up 0");
  EXPECT_EQ(before.count("memtrimd_sample_age_seconds"), 0u);
  EXPECT_EQ(before["process_open_fds"].size(), 1u);

  auto s = std::make_shared<Snapshot>(SampleSnapshot());
  s->taken_steady = std::chrono::steady_clock::now() - std::chrono::seconds(100);
  s->targets[0].sample.glibc->read_steady = s->taken_steady - std::chrono::seconds(20);
  store.Publish(s);
  auto f = FamiliesOf(page.Render().Joined());
  ASSERT_EQ(f["memtrimd_target_up"].size(), 1u);
  EXPECT_EQ(f["memtrimd_target_up"][0], "memtrimd_target_up{pid=\"4242\"} 1");
  ASSERT_EQ(f["memtrimd_sample_age_seconds"].size(), 1u);
  EXPECT_GE(ValueOf(f["memtrimd_sample_age_seconds"][0]), 100);
  ASSERT_EQ(f["memtrimd_smaps_age_seconds"].size(), 1u);
  EXPECT_GE(ValueOf(f["memtrimd_smaps_age_seconds"][0]), 120);
  EXPECT_EQ(f["process_cpu_seconds_total"].size(), 1u);
  // Every family the snapshot makes is on the page, with all its samples.
  for (const auto& fam : SnapshotFamilies(s.get())) {
    EXPECT_EQ(f[fam.name].size(), fam.metric.size()) << fam.name;
  }
}

TEST(MetricsPage, EachNewSnapshotIsRenderedAgain) {
  SnapshotStore store;
  MetricsPage page(store, nullptr);
  auto s = std::make_shared<Snapshot>(SampleSnapshot());
  store.Publish(s);
  MetricsText first = page.Render();
  EXPECT_TRUE(Has(first.Joined(), "memtrimd_target_threads{pid=\"4242\"} 17"));
  // The same snapshot: its text comes from the cache.
  ASSERT_NE(first.snapshot, nullptr);
  EXPECT_EQ(page.Render().snapshot, first.snapshot);
  // Same sequence number, new snapshot: the cache follows the snapshot
  // itself, not its number.
  auto next = std::make_shared<Snapshot>(*s);
  next->targets[0].sample.process->threads = 18;
  store.Publish(next);
  s.reset();
  MetricsText second = page.Render();
  EXPECT_NE(second.snapshot, first.snapshot);
  std::string text = second.Joined();
  EXPECT_TRUE(Has(text, "memtrimd_target_threads{pid=\"4242\"} 18")) << text;
  EXPECT_FALSE(Has(text, "memtrimd_target_threads{pid=\"4242\"} 17"));
}

TEST(MetricsPage, ProcessFiguresAreReusedOnlyWithinTheirMaxAge) {
  SnapshotStore store;
  store.Publish(std::make_shared<Snapshot>(SampleSnapshot()));
  MetricsPage reusing(store, nullptr, std::chrono::hours(1));
  EXPECT_EQ(reusing.Render().process, reusing.Render().process);
  MetricsPage fresh(store, nullptr, std::chrono::milliseconds(0));
  MetricsText a = fresh.Render();
  MetricsText b = fresh.Render();
  EXPECT_NE(a.process, b.process);
  EXPECT_NE(a.process->find("process_open_fds "), std::string::npos);
}

TEST(MetricsPage, TrimFiguresAreRenderedAgainWhenATrimIsCounted) {
  SnapshotStore store;
  auto s = std::make_shared<Snapshot>(SampleSnapshot());
  // This test process as the target: a glibc program without the agent, so
  // a manual trim through the agent fails at once and is counted.
  s->targets[0].target.pid = ::getpid();
  s->targets[0].target.proc_dir = "/proc/" + std::to_string(::getpid());
  store.Publish(s);
  TrimEngineOptions options;
  options.trim.backend = TrimBackendKind::kAgent;
  TrimEngine trims(options, store);
  MetricsPage page(store, &trims);
  const std::string failed = "memtrimd_trim_runs_total{pid=\"" + std::to_string(::getpid()) +
                             "\",result=\"failure\",reason=\"unavailable\"}";

  // The engine has not seen the target yet: no series of it.
  MetricsText before = page.Render();
  ASSERT_NE(before.trims, nullptr);
  EXPECT_EQ(before.trims->find(failed), std::string::npos) << *before.trims;
  EXPECT_EQ(page.Render().trims, before.trims);  // nothing counted: from the cache

  uint64_t version = trims.MetricsVersion();
  EXPECT_FALSE(trims.TrimManually().ok());
  EXPECT_GT(trims.MetricsVersion(), version);
  MetricsText after = page.Render();
  EXPECT_NE(after.trims, before.trims);
  EXPECT_TRUE(Has(*after.trims, failed + " 1")) << *after.trims;
}

TEST(MetricTable, NamesFollowConventions) {
  for (const MetricDef* d : AllMetrics()) {
    std::string n(d->name);
    EXPECT_TRUE(n.rfind("memtrimd_", 0) == 0 || n.rfind("process_", 0) == 0) << n;
    bool total = n.size() > 6 && n.substr(n.size() - 6) == "_total";
    EXPECT_EQ(total, d->type == prometheus::MetricType::Counter) << n;
    EXPECT_FALSE(d->help.empty()) << n;
  }
}

}  // namespace
}  // namespace memtrimd

namespace memtrimd {
namespace {

// Series of one target in a rendering.
std::size_t SeriesOf(const std::string& text, const std::string& pid) {
  std::size_t n = 0;
  std::size_t at = 0;
  const std::string label = "pid=\"" + pid + "\"";
  while ((at = text.find('\n', at)) != std::string::npos) {
    ++at;
    std::size_t end = text.find('\n', at);
    std::string line = text.substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (!line.empty() && line[0] != '#' && line.find(label) != std::string::npos) ++n;
  }
  return n;
}

TEST(MetricsPage, PrepareRendersANewSnapshotBeforeAnyRequest) {
  SnapshotStore store;
  MetricsPage page(store, nullptr, std::chrono::hours(1));
  // The store calls it after each publish, as the daemon wires it.
  store.SetAfterPublish([&page] { page.Prepare(); });
  Snapshot first = SampleSnapshot();
  store.Publish(std::make_shared<Snapshot>(first));
  std::shared_ptr<const std::string> prepared = page.Render().snapshot;
  Snapshot next = SampleSnapshot();
  next.sequence = 41;
  store.Publish(std::make_shared<Snapshot>(next));
  MetricsText after = page.Render();
  EXPECT_NE(after.snapshot, prepared);
  EXPECT_NE(after.snapshot->find("memtrimd_samples_total 41\n"), std::string::npos);
  EXPECT_EQ(page.Render().snapshot, after.snapshot);  // cached, not rendered again
}

TEST(MetricsPage, GzipIsThePlainPageAndFollowsNewSnapshots) {
  SnapshotStore store;
  store.Publish(std::make_shared<Snapshot>(SampleSnapshot()));
  MetricsPage page(store, nullptr, std::chrono::hours(1));
  auto gz = page.RenderGzip();
  ASSERT_TRUE(gz);
  std::string plain = Gunzip(*gz);
  // The ages differ by when each was rendered; the rest is the same text.
  MetricsText text = page.Render();
  EXPECT_NE(plain.find(*text.snapshot), std::string::npos);
  EXPECT_NE(plain.find(*text.process), std::string::npos);
  EXPECT_EQ(plain.find("# HELP memtrimd_sample_age_seconds"), 0u) << plain.substr(0, 200);
  Snapshot next = SampleSnapshot();
  next.sequence = 99;
  store.Publish(std::make_shared<Snapshot>(next));
  std::string again = Gunzip(*page.RenderGzip());
  EXPECT_NE(again.find("memtrimd_samples_total 99\n"), std::string::npos);
  EXPECT_EQ(again.find("memtrimd_samples_total 7\n"), std::string::npos);
}

TEST(Exposition, DetailFamiliesAreLeftOutUnlessAsked) {
  Snapshot s = SampleSnapshot();
  MetricDetail none;
  ASSERT_EQ(ParseMetricDetail("none", none), "");
  std::string all = RenderText(SnapshotFamilies(&s));
  std::string lean = RenderText(SnapshotFamilies(&s, none));
  // Left out: the detail families; kept: what alerts and the fleet need.
  EXPECT_NE(all.find("memtrimd_target_threads{"), std::string::npos);
  EXPECT_EQ(lean.find("memtrimd_target_threads{"), std::string::npos) << lean;
  EXPECT_EQ(lean.find("memtrimd_collector_success{"), std::string::npos) << lean;
  EXPECT_EQ(lean.find("state=\"mapped\""), std::string::npos) << lean;
  EXPECT_TRUE(Has(lean, "memtrimd_target_up{pid=\"4242\"} 1"));
  EXPECT_NE(lean.find("memtrimd_glibc_arena_heap_bytes{pid=\"4242\",state=\"resident\"}"),
            std::string::npos);
  EXPECT_NE(lean.find("memtrimd_target_info{"), std::string::npos);
  EXPECT_LT(SeriesOf(lean, "4242"), SeriesOf(all, "4242"));
  // A glibc target in node mode stays within its budget.
  EXPECT_LE(SeriesOf(lean, "4242"), 15u) << lean;
  MetricDetail some;
  ASSERT_EQ(ParseMetricDetail("process", some), "");
  EXPECT_NE(RenderText(SnapshotFamilies(&s, some)).find("memtrimd_target_threads{"),
            std::string::npos);
}

}  // namespace
}  // namespace memtrimd
