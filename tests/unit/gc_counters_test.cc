// GC counters from recorded hsperfdata files (GcFromPerfData) and the rate
// arithmetic between two readings (GcRatesBetween).
#include <gtest/gtest.h>

#include <string>

#include "collectors/jvm/hsperfdata.h"
#include "tests/unit/fixtures.h"

namespace memtrimd::jvm {
namespace {

using test::ReadFixture;

PerfGc Recorded(const std::string& jdk, const std::string& gc) {
  auto p = ParsePerfData(ReadFixture("jvm/" + jdk + "/hsperfdata_" + gc + ".bin"));
  EXPECT_TRUE(p.ok());
  if (!p.ok()) return {};
  auto g = GcFromPerfData(*p);
  EXPECT_TRUE(g.has_value());
  return g.value_or(PerfGc{});
}

struct Expected {
  std::string name;
  uint64_t invocations;
  double seconds;
};

void ExpectCollectors(const PerfGc& gc, const std::vector<Expected>& want) {
  ASSERT_EQ(gc.collectors.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(want[i].name);
    EXPECT_EQ(gc.collectors[i].name, want[i].name);
    EXPECT_EQ(gc.collectors[i].invocations, want[i].invocations);
    EXPECT_DOUBLE_EQ(gc.collectors[i].seconds, want[i].seconds);
  }
}

// The values below were read from these files by a separate decoder of the
// format, not this parser (ticks / sun.os.hrt.frequency, 1e9 on both JDKs).
TEST(GcCountersTest, G1OnBothJdks) {
  PerfGc g17 = Recorded("17", "g1");
  ExpectCollectors(g17, {{"G1 young collection pauses", 2, 0.005477590},
                         {"G1 full collection pauses", 1, 0.004311713},
                         {"G1 concurrent cycle pauses", 2, 0.000562200}});
  EXPECT_EQ(g17.cause, "No GC");
  EXPECT_EQ(g17.last_cause, "System.gc()");
  PerfGc g25 = Recorded("25", "g1");
  ExpectCollectors(g25, {{"G1 young collection pauses", 2, 0.007892543},
                         {"G1 full collection pauses", 1, 0.015343209},
                         {"G1 concurrent cycle pauses", 2, 0.000893829}});
  EXPECT_EQ(g25.last_cause, "System.gc()");
}

TEST(GcCountersTest, SerialAndParallel) {
  ExpectCollectors(Recorded("17", "serial"), {{"Serial young collection pauses", 1, 0.081634169},
                                              {"Serial full collection pauses", 1, 0.009713909}});
  ExpectCollectors(Recorded("25", "serial"), {{"Serial young collection pauses", 0, 0},
                                              {"Serial full collection pauses", 1, 0.054441349}});
  ExpectCollectors(Recorded("17", "parallel"),
                   {{"Parallel young collection pauses", 2, 0.260274300},
                    {"Parallel full collection pauses", 1, 0.019167323}});
  PerfGc p25 = Recorded("25", "parallel");
  ExpectCollectors(p25, {{"Parallel young collection pauses", 1, 0.078248369},
                         {"Parallel full collection pauses", 1, 0.025592636}});
  EXPECT_EQ(p25.last_cause, "System.gc()");
}

TEST(GcCountersTest, ZgcIndicesAreSparse) {
  // Single-generation ZGC (17) has only collector 2; generational ZGC (25)
  // has 0 (minor) and 2 (major), no 1.
  PerfGc z17 = Recorded("17", "z");
  ExpectCollectors(z17, {{"Z concurrent cycle pauses", 15, 0.000093765}});
  EXPECT_EQ(z17.last_cause, "Allocation Rate");
  PerfGc z25 = Recorded("25", "z");
  ExpectCollectors(z25, {{"ZGC minor collection pauses", 0, 0},
                         {"ZGC major collection pauses", 23, 0.000141056}});
  EXPECT_EQ(z25.last_cause, "System.gc()");
}

TEST(GcCountersTest, Shenandoah) {
  PerfGc s = Recorded("25", "shenandoah");
  ExpectCollectors(s, {{"Shenandoah partial", 0, 0}, {"Shenandoah full", 123, 0.120860893}});
  EXPECT_EQ(s.last_cause, "Concurrent GC");
}

TEST(GcCountersTest, AbsentAndDamagedCounters) {
  PerfData none;
  none.entries["sun.gc.generation.0.capacity"] = int64_t{1};
  EXPECT_FALSE(GcFromPerfData(none).has_value());

  PerfData d;
  d.entries["sun.gc.collector.0.name"] = std::string("young");
  d.entries["sun.gc.collector.0.invocations"] = int64_t{-5};  // torn
  d.entries["sun.gc.collector.0.time"] = int64_t{500};
  d.entries["sun.gc.collector.x.time"] = int64_t{500};         // no index
  d.entries["sun.gc.collector.12345.time"] = int64_t{500};     // index too long
  d.entries["sun.gc.collector.1.lastEntryTime"] = int64_t{7};  // not a counter we read
  auto g = GcFromPerfData(d);
  ASSERT_TRUE(g.has_value());
  ASSERT_EQ(g->collectors.size(), 1u);
  EXPECT_EQ(g->collectors[0].invocations, 0u);
  EXPECT_EQ(g->collectors[0].seconds, 0);  // no sun.os.hrt.frequency: time unknown
  EXPECT_EQ(g->cause, "");
  d.entries["sun.os.hrt.frequency"] = int64_t{1000};
  EXPECT_DOUBLE_EQ(GcFromPerfData(d)->collectors[0].seconds, 0.5);

  // Read while a collection runs: HotSpot has moved "No GC" into lastCause.
  PerfData running;
  running.entries["sun.gc.cause"] = std::string("System.gc()");
  running.entries["sun.gc.lastCause"] = std::string("No GC");
  EXPECT_EQ(GcFromPerfData(running)->last_cause, "System.gc()");
  running.entries["sun.gc.cause"] = std::string("No GC");
  EXPECT_EQ(GcFromPerfData(running)->last_cause, "No GC");  // nothing ran yet

  PerfData many;
  for (int i = 0; i < 100; ++i) {
    many.entries["sun.gc.collector." + std::to_string(i) + ".invocations"] = int64_t{1};
  }
  EXPECT_EQ(GcFromPerfData(many)->collectors.size(), 16u);
}

PerfGc Gc(std::vector<std::pair<uint64_t, double>> counts) {
  PerfGc g;
  for (auto [n, s] : counts) g.collectors.push_back({"c", n, s});
  return g;
}

TEST(GcCountersTest, RatesBetweenReadings) {
  // 65 full GCs in 2 s, 0.5 s of it in GC: the storm of issue 6.
  auto r = GcRatesBetween(Gc({{10, 1.0}, {5, 0.25}}), Gc({{10, 1.0}, {70, 0.75}}), 2.0);
  ASSERT_TRUE(r.has_value());
  EXPECT_DOUBLE_EQ(r->per_second, 32.5);
  EXPECT_DOUBLE_EQ(r->time_ratio, 0.25);
  // Idle: nothing changed.
  auto idle = GcRatesBetween(Gc({{3, 0.1}}), Gc({{3, 0.1}}), 5.0);
  ASSERT_TRUE(idle.has_value());
  EXPECT_EQ(idle->per_second, 0);
  EXPECT_EQ(idle->time_ratio, 0);
  // Too short a window, and counters that went down (torn or another JVM).
  EXPECT_FALSE(GcRatesBetween(Gc({{3, 0.1}}), Gc({{4, 0.2}}), 0.2).has_value());
  EXPECT_FALSE(GcRatesBetween(Gc({{3, 0.1}}), Gc({{2, 0.2}}), 2.0).has_value());
  EXPECT_FALSE(GcRatesBetween(Gc({{3, 0.3}}), Gc({{4, 0.2}}), 2.0).has_value());
  // A torn time counter cannot claim more than all of the wall time.
  EXPECT_DOUBLE_EQ(GcRatesBetween(Gc({{1, 0}}), Gc({{2, 9.0}}), 1.5)->time_ratio, 1.0);
}

// What a System.gc() runs, per collector, in the recorded files: the full
// collector, never the young one (Parallel runs a young collection before
// each full one, with the same cause), G1's concurrent cycles at two pauses
// each, and every pause of a one-collector GC.
TEST(GcCountersTest, FullCollectionsLeaveYoungOnesOut) {
  EXPECT_DOUBLE_EQ(FullCollections(Recorded("17", "g1")), 1 + 2 / 2.0);
  EXPECT_DOUBLE_EQ(FullCollections(Recorded("25", "g1")), 1 + 2 / 2.0);
  EXPECT_DOUBLE_EQ(FullCollections(Recorded("17", "parallel")), 1);
  EXPECT_DOUBLE_EQ(FullCollections(Recorded("25", "serial")), 1);
  EXPECT_DOUBLE_EQ(FullCollections(Recorded("17", "serial")), 1);
  EXPECT_DOUBLE_EQ(FullCollections(Recorded("25", "z")), 23);
  EXPECT_DOUBLE_EQ(FullCollections(Recorded("17", "z")), 15);  // one collector: all of it
  EXPECT_DOUBLE_EQ(FullCollections(Recorded("25", "shenandoah")), 123);
}

// A JVM with 2-5 young collections a second and one System.gc() every 5 s
// (issue 22): 4 young and 1 full collection in a one-second window is one
// full collection a second, of 5 in all; the storm of direct buffers near
// their limit is dozens of full ones.
TEST(GcCountersTest, FullRateBetweenReadings) {
  auto named = [](uint64_t young, uint64_t full) {
    PerfGc g;
    g.collectors = {{"G1 young collection pauses", young, 0},
                    {"G1 full collection pauses", full, 0},
                    {"G1 concurrent cycle pauses", 0, 0}};
    return g;
  };
  auto periodic = GcRatesBetween(named(100, 3), named(104, 4), 1.0);
  ASSERT_TRUE(periodic.has_value());
  EXPECT_DOUBLE_EQ(periodic->per_second, 5);
  EXPECT_DOUBLE_EQ(periodic->full_per_second, 1);
  auto storm = GcRatesBetween(named(0, 20), named(0, 287), 3.0);
  ASSERT_TRUE(storm.has_value());
  EXPECT_DOUBLE_EQ(storm->full_per_second, 89);
  auto churn = GcRatesBetween(named(0, 0), named(758, 0), 2.5);
  ASSERT_TRUE(churn.has_value());
  EXPECT_DOUBLE_EQ(churn->full_per_second, 0);
  EXPECT_GT(churn->per_second, 300);
  // Full counter down (torn): no rate.
  EXPECT_FALSE(GcRatesBetween(named(1, 5), named(2, 4), 2.0).has_value());
}

}  // namespace
}  // namespace memtrimd::jvm
