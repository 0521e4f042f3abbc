// GC counters from a real JVM's hsperfdata, through the hsperfdata
// collector as the daemon runs it: a JVM calling System.gc() back to back
// shows collections per second and "System.gc()" as the last cause; an idle
// one shows none. On every JDK under /usr/lib/jvm.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "collectors/jvm/jvm_collector.h"
#include "collectors/procfs/target_reader.h"
#include "collectors/sample.h"
#include "tests/integration/harness.h"

namespace memtrimd::testing {
namespace {

class GcCountersTest : public ::testing::TestWithParam<std::string> {
 protected:
  // Reads hsperfdata every 20 ms until the collector reports a rate (it
  // needs readings at least 1 s apart); the last reading.
  std::optional<JvmPerf> ReadUntilRate(pid_t pid) {
    Result<Target> t = procfs::ReadTarget("/proc", pid);
    EXPECT_TRUE(t.ok()) << t.status().message();
    if (!t.ok()) return std::nullopt;
    EXPECT_EQ(t->runtime, Runtime::kJvm);
    jvm::JvmPerfCollector collector;
    std::optional<JvmPerf> last;
    WaitFor(
        [&] {
          TargetSample s;
          Status st = collector.Collect(*t, s);
          EXPECT_TRUE(st.ok()) << st.message();
          last = s.jvm_perf;
          return !last || last->gc_per_second.has_value();
        },
        30s);
    return last;
  }

  TempDir dir_;
};

TEST_P(GcCountersTest, GcLoopShowsRateAndCause) {
  Process jvm = StartJvm(dir_, {"-Xmx64m"}, "GcLoop", {"--loop"}, {}, GetParam());
  ASSERT_TRUE(jvm.running());
  std::optional<JvmPerf> perf = ReadUntilRate(jvm.pid());
  ASSERT_TRUE(perf.has_value());
  ASSERT_TRUE(perf->gc.has_value());
  ASSERT_TRUE(perf->gc_per_second.has_value());
  EXPECT_GT(*perf->gc_per_second, 0);
  ASSERT_TRUE(perf->gc_time_ratio.has_value());
  EXPECT_GT(*perf->gc_time_ratio, 0);
  EXPECT_LE(*perf->gc_time_ratio, 1);
  EXPECT_EQ(perf->gc->last_cause, "System.gc()");
  // G1 (the default on both JDKs): young, full and concurrent-cycle pauses.
  ASSERT_EQ(perf->gc->collectors.size(), 3u);
  EXPECT_EQ(perf->gc->collectors[1].name, "G1 full collection pauses");
  EXPECT_GT(perf->gc->collectors[1].invocations, 1u);
}

// The collectors each GC names in hsperfdata (the recorded files show the
// same; tests/fixtures/jvm/README.md), live, with a System.gc() storm.
TEST_P(GcCountersTest, EveryGcNamesItsCollectors) {
  const bool jdk17 = GetParam().find("17") != std::string::npos;
  struct Case {
    std::string flag;
    std::vector<std::string> names;
  };
  const std::vector<Case> cases = {
      {"-XX:+UseSerialGC", {"Serial young collection pauses", "Serial full collection pauses"}},
      {"-XX:+UseParallelGC",
       {"Parallel young collection pauses", "Parallel full collection pauses"}},
      {"-XX:+UseZGC", jdk17 ? std::vector<std::string>{"Z concurrent cycle pauses"}
                            : std::vector<std::string>{"ZGC minor collection pauses",
                                                       "ZGC major collection pauses"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.flag);
    Process jvm = StartJvm(dir_, {"-Xmx64m", c.flag}, "GcLoop", {"--loop"}, {}, GetParam());
    ASSERT_TRUE(jvm.running());
    std::optional<JvmPerf> perf = ReadUntilRate(jvm.pid());
    ASSERT_TRUE(perf.has_value());
    ASSERT_TRUE(perf->gc.has_value());
    std::vector<std::string> names;
    for (const auto& collector : perf->gc->collectors) names.push_back(collector.name);
    EXPECT_EQ(names, c.names);
    ASSERT_TRUE(perf->gc_per_second.has_value());
    EXPECT_GT(*perf->gc_per_second, 0);
    EXPECT_EQ(perf->gc->last_cause, "System.gc()");
  }
}

TEST_P(GcCountersTest, IdleJvmShowsNoCollections) {
  Process jvm = StartJvm(dir_, {"-Xmx64m"}, "GcLoop", {}, {}, GetParam());
  ASSERT_TRUE(jvm.running());
  std::optional<JvmPerf> perf = ReadUntilRate(jvm.pid());
  ASSERT_TRUE(perf.has_value());
  ASSERT_TRUE(perf->gc.has_value());
  ASSERT_TRUE(perf->gc_per_second.has_value());
  // Nothing allocates after start-up: no collection in the window (a rare
  // start-up one would still be under one a second).
  EXPECT_LT(*perf->gc_per_second, 1.0);
  EXPECT_NE(perf->gc->last_cause, "System.gc()");
}

INSTANTIATE_TEST_SUITE_P(Jdks, GcCountersTest, ::testing::ValuesIn(FindJdkHomes()),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           return JdkTestName(p.param);
                         });

}  // namespace
}  // namespace memtrimd::testing
