// Node mode short of a capability, for what discovery itself reads: without
// CAP_SYS_PTRACE another user's process cannot be read at all, so it is not
// watched but counted (memtrimd_targets_skipped{reason="unreadable"}) and
// logged once; without CAP_DAC_OVERRIDE its environment cannot be read, so
// whether it opted out is unknown: it is watched but never trimmed, even
// with --trim.targets=all, and that too is logged once.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/integration/harness.h"
#include "tests/integration/node_agent.h"

namespace memtrimd::testing {
namespace {

namespace fs = std::filesystem;

std::size_t Count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class NodePermissionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!IsRoot()) GTEST_SKIP() << "needs root: the target runs as another user";
    marker_ = "nodeperm" + std::to_string(::getpid());
  }
  // The fragmenter as another uid, with `env` ("K=V") and the agent.
  std::unique_ptr<Process> StartOtherUser(std::vector<std::string> env) {
    const std::string ready = shared_ / "frag.ready";
    std::vector<std::string> argv = AsUser(kNamelessUid);
    argv.push_back("env");
    env.push_back(std::string("LD_PRELOAD=") + AGENT_LIB);
    argv.insert(argv.end(), env.begin(), env.end());
    argv.insert(argv.end(), {FragmenterBin(), "--quiet", "--threads", "2", "--rounds", "1",
                             "--burst-mib", "4", "--tag", marker_, "--ready-file", ready});
    auto p = std::make_unique<Process>(argv);
    EXPECT_TRUE(WaitFor([&] { return fs::exists(ready) || !p->running(); }, 60s));
    return p;
  }
  std::vector<std::string> NodeFlags() const {
    return {
        "--targets=node",         "--targets.match=" + marker_, "--targets.exclude=^(setpriv|env) ",
        "--targets.min-rss=1MiB", "--discovery.interval=300ms", "--sample.interval=200ms",
        "--trim.targets=all",     "--trim.interval=1s",         "--trim.jitter=0"};
  }

  SharedDir shared_;
  std::string marker_;
};

TEST_F(NodePermissionsTest, WithoutSysPtraceAnotherUsersProcessIsCountedAndLoggedOnce) {
  std::unique_ptr<Process> target = StartOtherUser({});
  ASSERT_TRUE(target->running());
  Memtrimd m(WrapWith{NodeAgentCaps("sys_ptrace")}, NodeFlags());
  ASSERT_TRUE(m.started()) << m.log();
  Series s;
  ASSERT_TRUE(WaitFor(
      [&] {
        s = m.Scrape();
        return Find(s, "memtrimd_targets_skipped", {"reason=\"unreadable\""}) == 1.0 &&
               Find(s, "memtrimd_samples_total").value_or(0) >= 10;  // several discoveries
      },
      30s))
      << m.log();
  EXPECT_EQ(Find(s, "memtrimd_targets_watched"), 0.0);
  const std::string log = m.log();
  EXPECT_EQ(Count(log, "msg=\"processes not readable\""), 1u) << log;
  EXPECT_TRUE(LogHas(log, {"processes not readable", "count=1", "CAP_SYS_PTRACE"})) << log;
}

TEST_F(NodePermissionsTest, WithoutDacOverrideAnUnreadableEnvironmentMeansWatchedNeverTrimmed) {
  std::unique_ptr<Process> target = StartOtherUser({"MEMTRIMD_TRIM=1"});
  ASSERT_TRUE(target->running());
  Memtrimd m(WrapWith{NodeAgentCaps("dac_override")}, NodeFlags());
  ASSERT_TRUE(m.started()) << m.log();
  const std::string pid = "pid=\"" + std::to_string(target->pid()) + "\"";
  Series s;
  ASSERT_TRUE(WaitFor(
      [&] {
        s = m.Scrape();
        return Find(s, "memtrimd_trim_runs_total",
                    {pid, "result=\"skipped\"", "reason=\"not_opted_in\""})
                   .value_or(0) >= 2;
      },
      30s))
      << m.log();
  EXPECT_EQ(Find(s, "memtrimd_targets_watched"), 1.0);
  EXPECT_EQ(Find(s, "memtrimd_target_up", {pid}), 1.0);
  EXPECT_FALSE(Find(s, "memtrimd_trim_runs_total", {pid, "result=\"success\""}).has_value());
  EXPECT_FALSE(Find(s, "memtrimd_trim_runs_total", {pid, "result=\"failure\""}).has_value());
  const std::string log = m.log();
  EXPECT_EQ(Count(log, "msg=\"environment not readable"), 1u) << log;
}

}  // namespace
}  // namespace memtrimd::testing
