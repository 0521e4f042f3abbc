// A live program whose main thread called pthread_exit (tests/workloads/
// leader_exit: 40 MiB malloc'd and touched by a second thread). The kernel
// shows its leader as a zombie (State: Z, no memory lines in
// /proc/<pid>/status, empty smaps) while the other thread runs: memtrimd
// must keep watching it, with the figures a live thread's /proc files give,
// and count it as exited once that last thread has ended too.
#include <gtest/gtest.h>
#include <sys/types.h>
#include <unistd.h>

#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/harness.h"

namespace memtrimd::testing {
namespace {

namespace fs = std::filesystem;

std::string Str(pid_t p) { return std::to_string(p); }
std::string PidLabel(pid_t pid) { return "pid=\"" + Str(pid) + "\""; }

struct LeaderExit {
  Process process;
  std::string stop_file;
};

// Starts the workload and waits until its main thread has ended.
LeaderExit Start(const TempDir& dir, const std::string& name) {
  const std::string bin = WorkloadBin("leader_exit");
  LeaderExit w;
  w.stop_file = dir / (name + ".stop");
  const std::string ready = dir / (name + ".ready");
  w.process = Process({bin, "--mib", "40", "--ready-file", ready, "--stop-file", w.stop_file});
  if (!WaitFor([&] { return fs::exists(ready) || !w.process.running(); }, 30s)) w.process.Kill();
  return w;
}

// The process's threads other than its leader, as the test reads them.
std::vector<pid_t> OtherThreads(pid_t pid) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc/" + Str(pid) + "/task", ec)) {
    pid_t tid = static_cast<pid_t>(std::stol(e.path().filename().string()));
    if (tid != pid) out.push_back(tid);
  }
  return out;
}

// RssAnon of the process in bytes, from a live thread's status (the
// leader's has no memory lines).
std::optional<double> OwnRssAnon(pid_t pid) {
  for (pid_t tid : OtherThreads(pid)) {
    std::istringstream in(ReadFile("/proc/" + Str(pid) + "/task/" + Str(tid) + "/status"));
    std::string line;
    while (std::getline(in, line)) {
      // "RssAnon:\t   40964 kB"
      if (line.rfind("RssAnon:", 0) == 0) return std::stod(line.substr(8)) * 1024.0;
    }
  }
  return std::nullopt;
}

class LeaderExitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(WorkloadBin("leader_exit"))) GTEST_SKIP() << "build the leader_exit target";
  }

  // memtrimd `m` watches `w` through samples over 2 s after the leader ended
  // (the old rule dropped it at the first), with its anonymous memory as
  // the test reads it; then `w` ends its last thread and memtrimd drops it.
  void WatchedUntilTheLastThreadEnds(Memtrimd& m, LeaderExit& w) {
    const pid_t pid = w.process.pid();
    ASSERT_EQ(ProcessState(pid), 'Z') << "the leader is a zombie of a live process";
    ASSERT_FALSE(OtherThreads(pid).empty());
    Series s;
    ASSERT_TRUE(WaitFor(
        [&] {
          s = m.Scrape();
          return Find(s, "memtrimd_target_up", {PidLabel(pid)}) == 1.0 &&
                 Find(s, "memtrimd_samples_total").value_or(0) >= 10;
        },
        30s))
        << m.log();
    std::optional<double> own = OwnRssAnon(pid);
    ASSERT_TRUE(own.has_value());
    EXPECT_GE(*own, 40.0 * (1 << 20));
    std::optional<double> anon =
        Find(s, "memtrimd_target_resident_memory_bytes", {PidLabel(pid), "kind=\"anon\""});
    ASSERT_TRUE(anon.has_value()) << m.log();
    // Read a moment apart; the workload allocates nothing more.
    EXPECT_NEAR(*anon, *own, 1 << 20);
    EXPECT_FALSE(LogHas(m.log(), {"target exited"})) << m.log();

    // The last thread ends: the process is gone (its parent, this test,
    // reaps it) and its series with it.
    WriteFile(w.stop_file, "");
    ASSERT_TRUE(w.process.Wait(30s).has_value());
    ASSERT_TRUE(WaitFor(
        [&] {
          s = m.Scrape();
          return !Find(s, "memtrimd_target_up", {PidLabel(pid)}).has_value() ||
                 Find(s, "memtrimd_target_up", {PidLabel(pid)}) == 0.0;
        },
        30s))
        << m.log();
    EXPECT_TRUE(LogHas(m.log(), {"target exited"})) << m.log();
  }
};

TEST_F(LeaderExitTest, SidecarKeepsWatchingAProcessWhoseMainThreadEnded) {
  TempDir dir;
  LeaderExit w = Start(dir, "sidecar");
  ASSERT_TRUE(w.process.running());
  Memtrimd m({"--target.pid=" + Str(w.process.pid()), "--sample.interval=200ms",
              "--smaps.interval=200ms", "--trim.interval=0"});
  ASSERT_TRUE(m.started()) << m.log();
  WatchedUntilTheLastThreadEnds(m, w);
}

TEST_F(LeaderExitTest, NodeModeFindsAndKeepsAProcessWhoseMainThreadEnded) {
  TempDir dir;
  LeaderExit w = Start(dir, "node");
  ASSERT_TRUE(w.process.running());
  // Discovered after its main thread ended: found through a live thread.
  Memtrimd m({"--targets=node", "--targets.match=" + dir.path(), "--targets.min-rss=0",
              "--discovery.interval=500ms", "--sample.interval=200ms", "--smaps.interval=200ms",
              "--trim.interval=0"});
  ASSERT_TRUE(m.started()) << m.log();
  WatchedUntilTheLastThreadEnds(m, w);
}

// A process whose whole group has exited but that its parent has not
// reaped is still exited (the false-positive side): the zombie leader has
// no live thread.
TEST_F(LeaderExitTest, InspectReadsItAndAnUnreapedGroupIsExited) {
  TempDir dir;
  LeaderExit w = Start(dir, "inspect");
  ASSERT_TRUE(w.process.running());
  const pid_t pid = w.process.pid();
  RunResult r = RunCommand({MemtrimdBin(), "inspect", "--pid", Str(pid)});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("leader_exit"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("40."), std::string::npos) << r.out;  // "anonymous 40.x MiB"
  // Read from the live thread's status, and said so.
  EXPECT_NE(r.out.find("Resident memory (from /proc/" + Str(pid) + "/task/"), std::string::npos)
      << r.out;

  // Unreaped: the test does not wait for it until after the check.
  WriteFile(w.stop_file, "");
  ASSERT_TRUE(WaitFor([&] { return OtherThreads(pid).empty(); }, 30s));
  ASSERT_EQ(ProcessState(pid), 'Z');
  RunResult gone = RunCommand({MemtrimdBin(), "inspect", "--pid", Str(pid)});
  EXPECT_NE(gone.exit_code, 0) << gone.out;
  EXPECT_NE((gone.out + gone.err).find("exited"), std::string::npos) << gone.out << gone.err;
}

}  // namespace
}  // namespace memtrimd::testing
