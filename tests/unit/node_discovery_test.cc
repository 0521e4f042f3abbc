#include "daemon/sampling/node_discovery.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "daemon/exposition/metric_detail.h"
#include "daemon/sampling/target_selector.h"

extern char** environ;

namespace memtrimd {
namespace {

using namespace std::string_literals;

NodeCandidate Candidate(pid_t pid, const char* comm, Runtime rt, uint64_t rss_mib,
                        std::string cmdline = "") {
  NodeCandidate c;
  c.target.pid = pid;
  c.target.comm = comm;
  c.target.runtime = rt;
  c.rss_bytes = rss_mib << 20;
  c.private_bytes = rss_mib << 20;
  c.cmdline = std::move(cmdline);
  return c;
}

std::vector<pid_t> Pids(const std::vector<NodeCandidate>& c, const NodeChoice& choice) {
  std::vector<pid_t> out;
  for (std::size_t i : choice.chosen) out.push_back(c[i].target.pid);
  return out;
}

TEST(ChooseNodeTargets, EveryJvmAndNativeProgramsAboveTheFloorJvmsFirst) {
  std::vector<NodeCandidate> c = {
      Candidate(10, "java", Runtime::kJvm, 1),          // a JVM, however small
      Candidate(11, "envoy", Runtime::kGlibc, 100),     // above the floor
      Candidate(12, "bash", Runtime::kGlibc, 4),        // below it
      Candidate(13, "app", Runtime::kMusl, 500),        // musl: watched, never trimmed
      Candidate(18, "tiny", Runtime::kMusl, 4),         // musl below the floor
      Candidate(14, "server", Runtime::kUnknown, 900),  // static (Go)
      Candidate(15, "pause", Runtime::kGlibc, 900),     // the pod's pause
      Candidate(16, "memtrimd-daemon", Runtime::kGlibc, 900),
      Candidate(17, "self", Runtime::kGlibc, 900),
  };
  NodeSelectors s;
  s.min_rss_bytes = 32ull << 20;
  NodeChoice choice = ChooseNodeTargets(c, s, /*self=*/17);
  // The JVM first, however small; then the others, largest first.
  EXPECT_EQ(Pids(c, choice), (std::vector<pid_t>{10, 13, 11}));
  EXPECT_EQ(choice.skipped_by_cap, 0u);
}

TEST(ChooseNodeTargets, CapKeepsTheLargestAndCountsTheRest) {
  std::vector<NodeCandidate> c;
  for (pid_t p = 100; p < 110; ++p) c.push_back(Candidate(p, "java", Runtime::kJvm, 200 - p));
  // A tie goes to the lower pid, so the same targets stay from scan to scan.
  c.push_back(Candidate(99, "java", Runtime::kJvm, 97));
  NodeSelectors s;
  s.max_targets = 3;
  NodeChoice choice = ChooseNodeTargets(c, s, 1);
  EXPECT_EQ(Pids(c, choice), (std::vector<pid_t>{100, 101, 102}));
  EXPECT_EQ(choice.skipped_by_cap, 8u);
}

// 300 processes that each map one shared 120 MiB file have 120 MiB of VmRSS
// and almost nothing of their own: they neither pass the floor nor, with it
// at 0, push out the programs that cost the node memory.
TEST(ChooseNodeTargets, RankedByMemoryHeldAloneJvmsAndOptedInFirst) {
  std::vector<NodeCandidate> c;
  for (pid_t p = 1000; p < 1300; ++p) {
    NodeCandidate f = Candidate(p, "mapper", Runtime::kGlibc, 0);
    f.rss_bytes = 120ull << 20;  // the shared file's pages
    f.private_bytes = 200ull << 10;
    c.push_back(f);
  }
  NodeCandidate jvm = Candidate(50, "java", Runtime::kJvm, 0);
  jvm.rss_bytes = 90ull << 20;
  jvm.private_bytes = 60ull << 20;
  NodeCandidate glibc = Candidate(51, "fragmenter", Runtime::kGlibc, 0);
  glibc.rss_bytes = 48ull << 20;
  glibc.private_bytes = 46ull << 20;
  // Opted in to trims, smaller than every mapper's private memory ranks
  // below: first with the JVMs.
  NodeCandidate opted = Candidate(52, "worker", Runtime::kGlibc, 0);
  opted.rss_bytes = 2ull << 20;
  opted.private_bytes = 100ull << 10;
  opted.target.trim_opt_in = true;
  // A glibc program that shares a lot of file pages but holds more of its
  // own than the JVM: above it in its own class, below the JVM overall.
  NodeCandidate big = Candidate(53, "cache", Runtime::kGlibc, 0);
  big.rss_bytes = 400ull << 20;
  big.private_bytes = 200ull << 20;
  c.push_back(jvm);
  c.push_back(glibc);
  c.push_back(opted);
  c.push_back(big);

  NodeSelectors s;
  s.max_targets = 3;
  s.min_rss_bytes = 32ull << 20;  // the default: the mappers are below it
  NodeChoice choice = ChooseNodeTargets(c, s, 1);
  EXPECT_EQ(Pids(c, choice), (std::vector<pid_t>{50, 53, 51}));
  EXPECT_EQ(choice.skipped_by_cap, 0u);

  // Without a floor every mapper matches; the cap still keeps the ones that
  // cost the node, and counts the mappers.
  s.min_rss_bytes = 0;
  s.max_targets = 4;
  choice = ChooseNodeTargets(c, s, 1);
  EXPECT_EQ(Pids(c, choice), (std::vector<pid_t>{50, 52, 53, 51}));
  EXPECT_EQ(choice.skipped_by_cap, 300u);
  // The false-negative side: with room, the mappers are watched too, the
  // lower pid first among equals.
  s.max_targets = 6;
  choice = ChooseNodeTargets(c, s, 1);
  EXPECT_EQ(Pids(c, choice), (std::vector<pid_t>{50, 52, 53, 51, 1000, 1001}));
  // A program with little private memory but a large VmRSS stays below the
  // floor; one that holds its memory alone passes it.
  s.min_rss_bytes = 32ull << 20;
  s.max_targets = 300;
  choice = ChooseNodeTargets(c, s, 1);
  EXPECT_EQ(Pids(c, choice), (std::vector<pid_t>{50, 53, 51}));
}

TEST(ChooseNodeTargets, RegexesOnTheCommandLineAndTheOptOut) {
  std::vector<NodeCandidate> c = {
      Candidate(1, "java", Runtime::kJvm, 100, "java -jar orders.jar"),
      Candidate(2, "java", Runtime::kJvm, 100, "java -jar billing.jar"),
      Candidate(3, "java", Runtime::kJvm, 100, "java -jar orders-batch.jar"),
      Candidate(4, "nginx", Runtime::kGlibc, 100, ""),  // no command line: comm
  };
  NodeSelectors s;
  s.match = "orders|^nginx$";
  s.exclude = "batch";
  EXPECT_EQ(Pids(c, ChooseNodeTargets(c, s, 99)), (std::vector<pid_t>{1, 4}));
  c[0].watch_opt_out = true;
  EXPECT_EQ(Pids(c, ChooseNodeTargets(c, s, 99)), (std::vector<pid_t>{4}));
}

TEST(ChooseNodeTargets, RegexesSeeTheCommAsWellAsTheCommandLine) {
  // A worker that renamed itself: its comm is not in its arguments.
  std::vector<NodeCandidate> c = {
      Candidate(1, "orders-worker", Runtime::kGlibc, 100, "/usr/bin/python3 -m worker"),
      Candidate(2, "python3", Runtime::kGlibc, 100, "/usr/bin/python3 -m worker --batch"),
      Candidate(3, "java", Runtime::kJvm, 100, "/opt/jdk/bin/java -jar app.jar"),
  };
  NodeSelectors s;
  s.match = "^orders-|^java$";
  // (The JVM ranks first.)
  EXPECT_EQ(Pids(c, ChooseNodeTargets(c, s, 99)), (std::vector<pid_t>{3, 1}));
  s.match = "";
  s.exclude = "^java$|--batch";
  EXPECT_EQ(Pids(c, ChooseNodeTargets(c, s, 99)), (std::vector<pid_t>{1}));
  // An empty command line is not a text the regexes see.
  c[0].cmdline = "";
  s.exclude = "^$";
  EXPECT_EQ(Pids(c, ChooseNodeTargets(c, s, 99)), (std::vector<pid_t>{3, 1, 2}));
}

TEST(EnvironValue, FindsNamesExactlyAndTheLastOneWins) {
  std::string env = "PATH=/bin\0MEMTRIMD_TRIMX=1\0MEMTRIMD_TRIM=0\0HOME=/\0MEMTRIMD_TRIM=1"s;
  EXPECT_EQ(EnvironValue(env, "MEMTRIMD_TRIM"), "1");
  EXPECT_EQ(EnvironValue(env, "HOME"), "/");
  EXPECT_FALSE(EnvironValue(env, "MEMTRIMD").has_value());
  EXPECT_FALSE(EnvironValue("", "HOME").has_value());
  EXPECT_EQ(TrimOptIn(env), true);
  EXPECT_EQ(TrimOptIn("MEMTRIMD_TRIM=no\0"s), false);
  EXPECT_FALSE(TrimOptIn("MEMTRIMD_TRIM=maybe"s).has_value());
  EXPECT_FALSE(TrimOptIn("A=1"s).has_value());
}

TEST(MetricDetail, ParsesListsAndRejectsUnknownFamilies) {
  MetricDetail d;
  EXPECT_EQ(ParseMetricDetail("none", d), "");
  EXPECT_FALSE(d.Has("nmt"));
  EXPECT_EQ(ParseMetricDetail("nmt,gc", d), "");
  EXPECT_TRUE(d.Has("nmt"));
  EXPECT_TRUE(d.Has("gc"));
  EXPECT_FALSE(d.Has("heaps"));
  EXPECT_EQ(ParseMetricDetail("all", d), "");
  EXPECT_TRUE(d.Has("heaps"));
  std::string err = ParseMetricDetail("nmt,nope", d);
  EXPECT_NE(err.find("\"nope\" is not a detail family"), std::string::npos) << err;
}

// A real scan of /proc: children of this test, told apart by a marker in
// their command line.
class Child {
 public:
  Child(const std::string& marker, std::vector<std::string> env) {
    std::vector<std::string> args = {"/bin/sleep", "300", marker};
    // sleep takes every operand as a duration: give it a marker it accepts.
    args[2] = "0." + marker;
    std::vector<char*> argv, envp;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    env_ = std::move(env);
    for (std::string& e : env_) envp.push_back(e.data());
    envp.push_back(nullptr);
    if (posix_spawn(&pid_, argv[0], nullptr, nullptr, argv.data(), envp.data()) != 0) pid_ = 0;
  }
  ~Child() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = 0;
  std::vector<std::string> env_;
};

TEST(NodeDiscovery, FindsMatchingProcessesHonoursOptOutAndReadsTrimOptIn) {
  const std::string marker = std::to_string(getpid()) + "4242";
  Child plain(marker, {"PATH=/bin"});
  Child opted_in(marker, {"MEMTRIMD_TRIM=1"});
  Child opted_out_of_watch(marker, {"MEMTRIMD_WATCH=0"});
  ASSERT_GT(plain.pid(), 0);
  ASSERT_GT(opted_in.pid(), 0);
  ASSERT_GT(opted_out_of_watch.pid(), 0);
  NodeSelectors s;
  s.min_rss_bytes = 0;
  s.match = "0\\." + marker + "$";
  NodeDiscovery discovery(s);
  // The children may not have exec'd yet: poll until both are seen.
  std::vector<Target> found;
  for (int i = 0; i < 200; ++i) {
    found = discovery.Discover().targets;
    if (found.size() >= 2) break;
    usleep(10000);
  }
  std::vector<pid_t> pids;
  for (const Target& t : found) pids.push_back(t.pid);
  std::sort(pids.begin(), pids.end());
  std::vector<pid_t> want = {plain.pid(), opted_in.pid()};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(pids, want);
  for (const Target& t : found) {
    EXPECT_EQ(t.runtime, Runtime::kGlibc);
    if (t.pid == opted_in.pid()) {
      EXPECT_EQ(t.trim_opt_in, true);
    } else {
      EXPECT_FALSE(t.trim_opt_in.has_value());
    }
  }
  // A cap of one keeps one and counts the other.
  s.max_targets = 1;
  NodeDiscovery capped(s);
  // A look that outlasts its wait on a busy machine is taken at a later scan.
  Discovery d;
  for (int i = 0; i < 200; ++i) {
    d = capped.Discover();
    if (d.targets.size() + d.skipped_by_cap >= 2) break;
    usleep(10000);
  }
  EXPECT_EQ(d.targets.size(), 1u);
  EXPECT_EQ(d.skipped_by_cap, 1u);
}

TEST(TargetSelector, TheSidecarsTargetMayOptOutOfTrims) {
  const std::string marker = std::to_string(getpid()) + "4343";
  Child out(marker, {"MEMTRIMD_TRIM=0"});
  ASSERT_GT(out.pid(), 0);
  TargetRule r;
  r.mode = TargetRule::Mode::kPid;
  r.pid = out.pid();
  TargetSelector selector(r);
  // Until the child has exec'd, its environment is this test's; right after
  // it, the selector waits for the loader to map the C library (not a
  // target yet).
  std::optional<bool> opt_in;
  std::string not_yet;
  for (int i = 0; i < 200 && opt_in != false; ++i) {
    Result<Target> t = selector.Select();
    if (t.ok()) {
      opt_in = t->trim_opt_in;
    } else {
      not_yet = t.status().message();
      EXPECT_NE(not_yet.find("is starting"), std::string::npos) << not_yet;
    }
    if (opt_in != false) usleep(10000);
  }
  EXPECT_EQ(opt_in, false) << not_yet;
}

}  // namespace
}  // namespace memtrimd
