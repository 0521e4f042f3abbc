// The series a node agent serves per target, counted on real processes: a
// JVM with NMT on and the agent preloaded (the most a JVM target can have),
// and a glibc program with the agent, both trimmed. Node mode's default
// stays within the budget of docs/metrics.md (40 a JVM, 15 a glibc program);
// --metrics.detail=all serves the rest. On every JDK under /usr/lib/jvm.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/integration/harness.h"

namespace memtrimd::testing {
namespace {

std::size_t SeriesOf(const Series& s, pid_t pid) {
  const std::string label = "pid=\"" + std::to_string(pid) + "\"";
  std::size_t n = 0;
  for (const auto& [key, value] : s) n += key.find(label) != std::string::npos ? 1 : 0;
  return n;
}

class SeriesBudgetTest : public ::testing::TestWithParam<std::string> {
 protected:
  // Every figure the target can have is in: the JVM's NMT, risks and
  // buffer pools (through the agent), and a trim of each.
  static bool Complete(const Series& s, pid_t jvm, pid_t glibc) {
    auto pid = [](pid_t p) { return "pid=\"" + std::to_string(p) + "\""; };
    return Find(s, "memtrimd_jvm_risk", {pid(jvm), "check=\"direct_memory_high\""}).has_value() &&
           Find(s, "memtrimd_rss_account_bytes", {pid(jvm), "part=\"nmt_gc\""}).has_value() &&
           Find(s, "memtrimd_rss_account_bytes", {pid(glibc), "part=\"glibc_free\""}).has_value() &&
           Find(s, "memtrimd_trim_reclaimed_bytes_total", {pid(jvm)}).has_value() &&
           Find(s, "memtrimd_trim_reclaimed_bytes_total", {pid(glibc)}).has_value();
  }

  TempDir dir_;
};

TEST_P(SeriesBudgetTest, NodeModeStaysWithinTheBudgetAndDetailBuysTheRest) {
  const std::string preload = std::string("LD_PRELOAD=") + AGENT_LIB;
  SpawnOptions opted_in;
  opted_in.env = {preload, "MEMTRIMD_TRIM=1"};
  Process jvm = StartJvm(dir_, {"-Xmx64m", "-XX:NativeMemoryTracking=summary"}, "GcLoop", {},
                         opted_in, GetParam());
  ASSERT_TRUE(jvm.running());
  Process glibc =
      StartFragmenter(dir_, {"--threads", "4", "--rounds", "1", "--burst-mib", "8"}, "", opted_in);
  ASSERT_TRUE(glibc.running());
  // The test's own processes only: their command lines name its directory.
  const std::vector<std::string> common = {
      "--targets=node",         "--targets.match=" + dir_.path(),
      "--targets.min-rss=0",    "--sample.interval=200ms",
      "--smaps.interval=1s",    "--jvm.interval=1s",
      "--trim.interval=1s",     "--trim.jitter=0",
      "--discovery.interval=1s"};
  for (bool all : {false, true}) {
    std::vector<std::string> flags = common;
    if (all) flags.push_back("--metrics.detail=all");
    Memtrimd m(flags);
    ASSERT_TRUE(m.started()) << m.log();
    Series s;
    ASSERT_TRUE(WaitFor(
        [&] {
          s = m.Scrape();
          return Complete(s, jvm.pid(), glibc.pid());
        },
        60s))
        << m.log();
    EXPECT_EQ(Find(s, "memtrimd_targets_watched"), 2.0);
    // Every process of this test is readable and within the cap: nothing
    // is counted as left out (the counts' false positives).
    EXPECT_EQ(Find(s, "memtrimd_targets_skipped", {"reason=\"unreadable\""}), 0.0);
    EXPECT_EQ(Find(s, "memtrimd_targets_skipped", {"reason=\"targets_max\""}), 0.0);
    const std::size_t jvm_series = SeriesOf(s, jvm.pid());
    const std::size_t glibc_series = SeriesOf(s, glibc.pid());
    RecordProperty(all ? "jvm_series_all" : "jvm_series_default", static_cast<int>(jvm_series));
    RecordProperty(all ? "glibc_series_all" : "glibc_series_default",
                   static_cast<int>(glibc_series));
    if (!all) {
      EXPECT_LE(jvm_series, 40u);
      EXPECT_LE(glibc_series, 15u);
      EXPECT_FALSE(Find(s, "memtrimd_jvm_nmt_committed_bytes").has_value());
    } else {
      // The detail is there when asked for: NMT's categories alone are
      // three series each.
      EXPECT_GT(jvm_series, 100u);
      EXPECT_GT(glibc_series, 15u);
      EXPECT_TRUE(Find(s, "memtrimd_jvm_nmt_committed_bytes",
                       {"pid=\"" + std::to_string(jvm.pid()) + "\"", "category=\"Class\""})
                      .has_value());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Jdks, SeriesBudgetTest, ::testing::ValuesIn(FindJdkHomes()),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           return JdkTestName(p.param);
                         });

}  // namespace
}  // namespace memtrimd::testing
