// nio_cache_unbounded on a real JVM with the agent, against the workload's
// own account of its temporary buffer cache (tests/workloads/
// DirectBufferRead.java: threads x the size each thread read): a cache that
// stays as it is, with no limit it takes a share of, is no risk, and the
// unset property is advice; the same cache growing between two of the
// agent's reads is a risk, by as much as the workload grew it. The jvm and
// agent collectors run here as the daemon runs them, into one sample per
// read. JDK 18+ (17 reads in small chunks: no cache to speak of).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "collectors/agent/client/agent_collector.h"
#include "collectors/jvm/jvm_collector.h"
#include "collectors/procfs/target_reader.h"
#include "collectors/sample.h"
#include "daemon/analysis/advice.h"
#include "daemon/analysis/findings.h"
#include "tests/integration/harness.h"

namespace memtrimd::testing {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kMiB = 1 << 20;

class NioCacheTest : public ::testing::TestWithParam<std::string> {};

const RiskFinding* Nio(const std::vector<RiskFinding>& risks) {
  for (const RiskFinding& f : risks) {
    if (f.check == "nio_cache_unbounded") return &f;
  }
  return nullptr;
}

TEST_P(NioCacheTest, ASteadyCacheIsAdviceAndAGrowingOneARisk) {
  const std::string& jdk = GetParam();
  if (JdkFeature(jdk) < 18) GTEST_SKIP() << jdk << " reads in small chunks";
  TempDir dir;
  const std::string grow = dir / "grow";
  const int threads = 4, mib = 16;
  SpawnOptions o;
  o.env = {std::string("LD_PRELOAD=") + AGENT_LIB};
  Process jvm = StartJvm(dir, {"-XX:NativeMemoryTracking=summary"}, "DirectBufferRead",
                         {"--threads", std::to_string(threads), "--mib", std::to_string(mib),
                          "--dir", dir.path(), "--grow-file", grow},
                         o, jdk);
  ASSERT_TRUE(jvm.running());
  Result<Target> t = procfs::ReadTarget("/proc", jvm.pid());
  ASSERT_TRUE(t.ok()) << t.status().message();
  jvm::JvmAttachCollector attach(jvm::AttachOptions{});
  agent::AgentMallocCollector agent(agent::AgentOptions{});
  auto read = [&] {
    TargetSample s;
    Status a = attach.Collect(*t, s);
    EXPECT_TRUE(a.ok()) << a.message();
    Status b = agent.Collect(*t, s);
    EXPECT_TRUE(b.ok()) << b.message();
    return s;
  };
  auto cache = [](const TargetSample& s) -> double {
    return s.jvm_buffers && s.jvm_buffers->temp_cache_bytes
               ? static_cast<double>(*s.jvm_buffers->temp_cache_bytes)
               : -1;
  };
  // The workload's truth: each pool thread caches what it read.
  const double before = static_cast<double>(threads) * mib * kMiB;
  TargetSample s;
  ASSERT_TRUE(WaitFor(
      [&] {
        s = read();
        return cache(s) >= 0.95 * before;
      },
      30s))
      << "cache " << cache(s) << " of " << before;
  // Read once more: a cache that did not grow, under every share of a limit.
  s = read();
  std::vector<RiskFinding> risks = AssessJvmRisks(s);
  const RiskFinding* f = Nio(risks);
  ASSERT_NE(f, nullptr);
  EXPECT_FALSE(f->at_risk) << f->explanation;
  std::vector<Advice> advice = AdviseJvm(s);
  ASSERT_EQ(advice.size(), 1u);
  EXPECT_EQ(advice[0].check, "nio_cache_unbounded");

  // Grow it: every thread reads twice as much; the workload says when done.
  WriteFile(grow, "");
  ASSERT_TRUE(WaitFor([&] { return fs::exists(grow + ".done"); }, 30s));
  const double after =
      static_cast<double>(std::stoll(ReadKeyValueFile(grow + ".done")["cache_bytes"]));
  s = read();
  EXPECT_GE(cache(s), 0.95 * after);
  risks = AssessJvmRisks(s);
  f = Nio(risks);
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->at_risk) << f->explanation;
  // "grown by X MiB": the growth the workload made, within 5 %.
  const std::string key = "grown by ";
  std::size_t at = f->explanation.find(key);
  ASSERT_NE(at, std::string::npos) << f->explanation;
  const double grown = std::stod(f->explanation.substr(at + key.size())) * kMiB;
  EXPECT_LE(std::fabs(grown - (after - before)), 0.05 * (after - before)) << f->explanation;

  // Read again: it holds what it held, and grows no more.
  s = read();
  risks = AssessJvmRisks(s);
  f = Nio(risks);
  ASSERT_NE(f, nullptr);
  EXPECT_FALSE(f->at_risk) << f->explanation;
}

INSTANTIATE_TEST_SUITE_P(Jdks, NioCacheTest, ::testing::ValuesIn(FindJdkHomes()),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           return JdkTestName(p.param);
                         });

}  // namespace
}  // namespace memtrimd::testing
