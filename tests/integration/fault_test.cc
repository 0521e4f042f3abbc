// Faults: a target stopped (SIGSTOP) while memtrimd attaches to it or trims
// it, a target that exits in the middle of a smaps read, an agent socket that
// is gone or stale, scrapes during a long trim, and 100 target restarts in a
// row after which memtrimd holds no more descriptors, threads or memory than
// before. memtrimd must hit its deadlines, count what failed, keep serving
// /metrics, and recover.

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <iostream>
#include <sstream>

#include "daemon/sampling/process_look.h"
#include "daemon/sampling/socket_sweeper.h"
#include "daemon/sampling/target_read.h"
#include "daemon/sampling/target_search.h"
#include "tests/integration/harness.h"

namespace memtrimd::testing {
namespace {

namespace fs = std::filesystem;

std::string Str(pid_t pid) { return std::to_string(pid); }
std::string PidLabel(pid_t pid) { return "pid=\"" + Str(pid) + "\""; }

// memtrimd's threads less those of reads in flight (a sample reads each
// target, a --target.match search each process, a node scan each new
// process, a sweep of stale agent sockets, on short-lived threads of their
// own): what a target that came and went could have left behind.
uint64_t LastingThreads(pid_t pid) {
  uint64_t n = 0;
  std::error_code ec;
  for (const auto& task : fs::directory_iterator("/proc/" + Str(pid) + "/task", ec)) {
    std::string comm = ReadFile(task.path().string() + "/comm");
    bool in_flight = false;
    for (const char* name : {TargetRead::kThreadName, TargetSearch::kThreadName,
                             ProcessLook::kThreadName, SocketSweeper::kThreadName}) {
      in_flight = in_flight || comm.rfind(name, 0) == 0;
    }
    if (!in_flight) ++n;
  }
  return n;
}

// Scrapes until `done(series)` holds or `timeout` passes; every scrape must
// answer 200 with memtrimd's own series in it. Returns whether `done` held.
bool ScrapeUntil(const Memtrimd& m, const std::function<bool(const Series&)>& done,
                 std::chrono::milliseconds timeout) {
  int count = 0;
  bool all_answered = true;
  bool held = WaitFor(
      [&] {
        HttpResponse r = Curl(m.url());
        ++count;
        if (r.status != 200 || r.body.find("memtrimd_build_info{") == std::string::npos) {
          all_answered = false;
          return true;
        }
        return done(ParseExposition(r.body));
      },
      timeout);
  EXPECT_TRUE(all_answered) << "a scrape failed after " << count << " scrapes";
  return held && all_answered;
}

bool Java17Present() { return fs::exists(std::string(kJava17Home) + "/bin/java"); }

class FaultTest : public ::testing::Test {
 protected:
  Process StartAgentFragmenter(std::vector<std::string> args) {
    SpawnOptions o;
    o.env = {std::string("LD_PRELOAD=") + AGENT_LIB};
    Process p = StartFragmenter(dir_, std::move(args), "", o);
    agent_pids_.push_back(p.pid());
    return p;
  }
  Process StartJava(int threads, SpawnOptions o = {}) {
    Process p =
        StartJvm(dir_, {}, "NativeChurn", {"--threads", std::to_string(threads), "--quiet"}, o);
    jvm_pids_.push_back(p.pid());
    return p;
  }
  // SIGKILLed agents and JVMs leave their sockets in /tmp.
  void TearDown() override {
    for (pid_t pid : agent_pids_) {
      if (::kill(pid, 0) != 0) RemoveStaleAgentSocket(pid);
    }
    for (pid_t pid : jvm_pids_) {
      if (::kill(pid, 0) != 0) RemoveStaleJvmSocket(pid);
    }
  }
  TempDir dir_;
  std::vector<pid_t> agent_pids_;
  std::vector<pid_t> jvm_pids_;
};

TEST_F(FaultTest, JvmStoppedDuringAttachHitsTheDeadlineWhileMetricsAnswer) {
  if (!Java17Present()) GTEST_SKIP() << "no JDK 17";
  Process jvm = StartJava(2);
  ASSERT_TRUE(jvm.running());
  Memtrimd m({"--target.pid=" + Str(jvm.pid()), "--sample.interval=200ms", "--jvm.interval=300ms",
              "--jvm.command-timeout=1s", "--smaps.interval=1s", "--trim.interval=0"});
  ASSERT_TRUE(m.started()) << m.log();
  ASSERT_TRUE(ScrapeUntil(
      m, [](const Series& s) { return Find(s, "memtrimd_collector_success", {"\"jvm\""}) == 1.0; },
      30s))
      << m.log();

  Stopped stop(jvm.pid());
  ASSERT_TRUE(stop.ok());
  // Every attach command now waits for its 1 s deadline; scrapes do not wait.
  ASSERT_TRUE(ScrapeUntil(
      m, [](const Series& s) { return Find(s, "memtrimd_collector_success", {"\"jvm\""}) == 0.0; },
      20s))
      << m.log();
  EXPECT_TRUE(LogHas(m.log(), {"collector failed", "collector=jvm", "before the deadline"}))
      << m.log();
  // Sampling goes on at its interval: the jvm collector waits on its own
  // thread.
  double samples = Find(m.Scrape(), "memtrimd_samples_total").value_or(0);
  EXPECT_TRUE(ScrapeUntil(
      m,
      [&](const Series& s) { return Find(s, "memtrimd_samples_total").value_or(0) >= samples + 3; },
      20s));
  EXPECT_EQ(Find(m.Scrape(), "memtrimd_target_up"), 1.0) << "a stopped target is still there";
  EXPECT_EQ(Curl(m.url("/healthz")).status, 200);

  stop.Continue();
  EXPECT_TRUE(ScrapeUntil(
      m, [](const Series& s) { return Find(s, "memtrimd_collector_success", {"\"jvm\""}) == 1.0; },
      30s))
      << m.log();
  EXPECT_TRUE(LogHas(m.log(), {"collector recovered", "collector=jvm"})) << m.log();
  EXPECT_TRUE(jvm.running());
}

TEST_F(FaultTest, JcmdAgainstAStoppedJvmEndsAtItsDeadlines) {
  if (!Java17Present()) GTEST_SKIP() << "no JDK 17";
  SpawnOptions o;
  o.stdout_path = dir_ / "jvm.out";
  Process jvm = StartJava(1, o);
  ASSERT_TRUE(jvm.running());
  const std::string pid = Str(jvm.pid());
  const std::string name = ".attach_pid" + Str(NsPid(jvm.pid()));
  auto jcmd = [&] {
    return RunCommand({MemtrimdBin(), "jcmd", "--pid", pid, "--timeout", "1s", "VM.version"});
  };
  {
    // No listener yet, and the JVM cannot start one while stopped: the
    // connect deadline (3 s) ends it, and the trigger file is cleaned up.
    Stopped stop(jvm.pid());
    ASSERT_TRUE(stop.ok());
    RunResult r = jcmd();
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_NE(r.err.find("did not appear within 3000 ms"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
    EXPECT_FALSE(fs::exists(fs::symlink_status("/proc/" + pid + "/cwd/" + name)));
    EXPECT_FALSE(fs::exists(fs::symlink_status("/proc/" + pid + "/root/tmp/" + name)));
  }
  // Continued, it gets the pending SIGQUIT without a trigger file (a thread
  // dump, harmless) and a new jcmd works.
  RunResult again = jcmd();
  EXPECT_EQ(again.exit_code, 0) << again.err;
  {
    // Now the listener runs but the JVM is stopped: the answer deadline (1 s).
    Stopped stop(jvm.pid());
    ASSERT_TRUE(stop.ok());
    RunResult r = jcmd();
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_NE(r.err.find("no complete answer before the deadline"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
  }
  RunResult last = jcmd();
  EXPECT_EQ(last.exit_code, 0) << last.err;
  EXPECT_TRUE(jvm.running());
}

TEST_F(FaultTest, AgentTargetStoppedDuringTrimHitsTheDeadlineAndIsCounted) {
  Process frag = StartAgentFragmenter({"--threads", "2", "--rounds", "1", "--burst-mib", "4"});
  ASSERT_TRUE(frag.running());
  Memtrimd m({"--target.pid=" + Str(frag.pid()), "--sample.interval=200ms", "--smaps.interval=1s",
              "--jvm.command-timeout=1s", "--trim.interval=1s", "--trim.timeout=1s",
              "--trim.jitter=0", "--trim.max-interval=2s"});
  ASSERT_TRUE(m.started()) << m.log();
  auto runs = [](const Series& s, const std::string& result, const std::string& reason) {
    return Find(s, "memtrimd_trim_runs_total",
                {"result=\"" + result + "\"", "reason=\"" + reason + "\""})
        .value_or(-1);
  };
  ASSERT_TRUE(ScrapeUntil(
      m, [&](const Series& s) { return runs(s, "success", "scheduled") >= 1; }, 20s))
      << m.log();
  EXPECT_EQ(runs(m.Scrape(), "failure", "deadline"), 0.0) << "the series exists from the start";

  Stopped stop(frag.pid());
  ASSERT_TRUE(stop.ok());
  ASSERT_TRUE(ScrapeUntil(
      m, [&](const Series& s) { return runs(s, "failure", "deadline") >= 1; }, 20s))
      << m.log();
  std::string report = Curl(m.url("/report?format=json")).body;
  EXPECT_NE(report.find("agent: no complete answer before the deadline"), std::string::npos)
      << report;
  EXPECT_TRUE(LogHas(m.log(), {"trim failed", "backend=agent", "before the deadline"})) << m.log();

  stop.Continue();
  const double successes = runs(m.Scrape(), "success", "scheduled");
  EXPECT_TRUE(ScrapeUntil(
      m, [&](const Series& s) { return runs(s, "success", "scheduled") > successes; }, 20s))
      << m.log();
  EXPECT_TRUE(frag.running());
}

TEST_F(FaultTest, TargetExitingDuringTheSmapsReadIsSurvived) {
  const std::string bin = WorkloadBin("many_mappings");
  ASSERT_TRUE(fs::exists(bin)) << bin << " is missing: build the many_mappings target";
  const std::string tag = "smaps-exit-" + Str(getpid());
  Memtrimd m({"--target.match=many_mappings.*" + tag, "--sample.interval=100ms",
              "--smaps.interval=100ms", "--trim.interval=0"});
  ASSERT_TRUE(m.started()) << m.log();
  const pid_t self = m.process().pid();
  int n = 0;
  auto start_target = [&] {
    const std::string ready = dir_ / ("mappings." + Str(++n) + ".ready");
    // ~60,000 mappings: memtrimd's smaps read takes a few hundred ms.
    Process p({bin, "--mappings", "60000", "--quiet", "--tag", tag, "--ready-file", ready});
    if (!WaitFor([&] { return fs::exists(ready) || !p.running(); }, 30s) || !p.running()) p.Kill();
    return p;
  };
  // Kill the target while memtrimd has its smaps open; retry until that was
  // the case (the descriptor was open before and still open right after the
  // SIGKILL was sent; a read takes a few hundred ms, reads are 100 ms apart).
  bool observed = false;
  pid_t killed = 0;
  const auto deadline = std::chrono::steady_clock::now() + 90s;
  int attempts = 0;
  while (attempts < 20 && !observed && std::chrono::steady_clock::now() < deadline) {
    ++attempts;
    Process t = start_target();
    ASSERT_TRUE(t.running());
    const std::string smaps = "/proc/" + Str(t.pid()) + "/smaps";
    auto reading = [&] {
      for (const std::string& f : OpenFiles(self)) {
        if (f.rfind(smaps, 0) == 0) return true;
      }
      return false;
    };
    if (!WaitFor(reading, 10s)) continue;
    // Still open right after SIGKILL went out: the read spans the exit.
    ::kill(t.pid(), SIGKILL);
    observed = reading();
    killed = t.pid();
    t.Kill();  // reaps it
  }
  ASSERT_TRUE(observed) << "never caught memtrimd inside a smaps read\n" << m.log();
  std::cout << "target " << killed << " killed inside memtrimd's smaps read after " << attempts
            << " attempt(s)\n";

  // memtrimd lives on, drops the dead target within a sample or two, and
  // serves no series of it.
  EXPECT_TRUE(m.process().running());
  Series s;
  ASSERT_TRUE(ScrapeUntil(
      m,
      [&](const Series& x) {
        s = x;
        return Find(x, "memtrimd_target_up") == 0.0;
      },
      10s))
      << m.log();
  double samples = Find(s, "memtrimd_samples_total").value_or(0);
  ASSERT_TRUE(ScrapeUntil(
      m,
      [&](const Series& x) {
        s = x;
        return Find(x, "memtrimd_samples_total").value_or(0) >= samples + 2;
      },
      10s));
  for (const auto& [key, value] : s)
    EXPECT_EQ(key.find(PidLabel(killed)), std::string::npos) << key;
  EXPECT_TRUE(LogHas(m.log(), {"target exited", "pid=" + Str(killed)})) << m.log();

  // And the next matching process is picked and read whole.
  Process next = start_target();
  ASSERT_TRUE(next.running());
  EXPECT_TRUE(ScrapeUntil(
      m,
      [&](const Series& x) {
        return Find(x, "memtrimd_glibc_arena_heaps", {PidLabel(next.pid())}).has_value() &&
               Find(x, "memtrimd_collector_success", {"\"glibc\""}) == 1.0;
      },
      20s))
      << m.log();
}

TEST_F(FaultTest, AgentSocketMissingOrStaleFailsTrimsWithAReasonAndNoHang) {
  Process frag = StartAgentFragmenter({"--threads", "2", "--rounds", "1", "--burst-mib", "4"});
  ASSERT_TRUE(frag.running());
  const std::string socket = AgentSocketOf(frag.pid());
  ASSERT_TRUE(fs::exists(socket));
  Memtrimd m({"--target.pid=" + Str(frag.pid()), "--sample.interval=200ms",
              "--smaps.interval=300ms", "--jvm.command-timeout=2s", "--trim.interval=1s",
              "--trim.timeout=2s", "--trim.jitter=0", "--trim.max-interval=2s"});
  ASSERT_TRUE(m.started()) << m.log();
  auto runs = [](const Series& s, const std::string& result, const std::string& reason) {
    return Find(s, "memtrimd_trim_runs_total",
                {"result=\"" + result + "\"", "reason=\"" + reason + "\""})
        .value_or(-1);
  };
  ASSERT_TRUE(ScrapeUntil(
      m,
      [&](const Series& s) {
        return runs(s, "success", "scheduled") >= 1 &&
               Find(s, "memtrimd_collector_success", {"\"agent\""}) == 1.0;
      },
      20s))
      << m.log();

  struct Case {
    const char* name;
    const char* error;  // what memtrimd says, in /report and from `memtrimd trim`
  };
  for (const Case& c :
       {Case{"missing", "agent: no socket at"}, Case{"stale", "(nobody listens)"}}) {
    SCOPED_TRACE(c.name);
    // Missing: someone cleaned /tmp under a running program. Stale: then a
    // socket file was left there that nobody listens on.
    ::unlink(socket.c_str());
    ScopedUnlink cleanup;
    if (std::string(c.name) == "stale") {
      ASSERT_TRUE(BindUnixSocket(socket, 0600));
      ASSERT_TRUE(fs::is_socket(socket));
      cleanup.path = socket;
    }
    const double failures = runs(m.Scrape(), "failure", "unavailable");
    ASSERT_TRUE(ScrapeUntil(
        m,
        [&](const Series& s) {
          return runs(s, "failure", "unavailable") > failures &&
                 Find(s, "memtrimd_collector_success", {"\"agent\""}) == 0.0;
        },
        20s))
        << m.log();
    std::string report = Curl(m.url("/report?format=json")).body;
    EXPECT_NE(report.find(c.error), std::string::npos) << report;
    EXPECT_EQ(runs(m.Scrape(), "failure", "deadline"), 0.0) << "refused at once, not waited on";
    // The one-shot command says the same and ends.
    RunResult r = RunCommand({MemtrimdBin(), "trim", "--pid", Str(frag.pid())});
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_NE(r.out.find("failed (unavailable)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(c.error), std::string::npos) << r.out;
  }
  EXPECT_TRUE(m.process().running());
  EXPECT_TRUE(frag.running());
}

TEST_F(FaultTest, ScrapesAnswerWhileALongTrimRuns) {
  // A fragmented heap, stopped before memtrimd starts: the scheduled trim's
  // request waits in the agent's socket until the target runs again, so the
  // trim lasts as long as this test wants, on any machine, busy or idle.
  Process frag = StartAgentFragmenter({"--threads", "8", "--rounds", "2", "--burst-mib", "16"});
  ASSERT_TRUE(frag.running());
  Stopped stopped(frag.pid());
  ASSERT_TRUE(stopped.ok());
  Memtrimd m({"--target.pid=" + Str(frag.pid()), "--sample.interval=200ms",
              "--smaps.interval=500ms", "--trim.interval=1s", "--trim.jitter=0",
              "--trim.timeout=60s"});
  ASSERT_TRUE(m.started()) << m.log();
  auto in_progress = [&] {
    return Curl(m.url("/report?format=json")).body.find("\"in_progress\":true") !=
           std::string::npos;
  };
  // Trims counted so far, whatever their result.
  auto trims = [](const Series& s) {
    double n = 0;
    for (const auto& [key, value] : s) {
      if (key.rfind("memtrimd_trim_runs_total{", 0) == 0 &&
          key.find("result=\"skipped\"") == std::string::npos) {
        n += value;
      }
    }
    return n;
  };
  ASSERT_TRUE(WaitFor(in_progress, 20s)) << m.log();
  // The trim cannot end while the target is stopped: every one of these
  // scrapes is served during it.
  for (int i = 0; i < 5; ++i) {
    HttpResponse r = Curl(m.url());
    ASSERT_EQ(r.status, 200) << "scrape " << i + 1 << " failed during the trim";
    Series s = ParseExposition(r.body);
    ASSERT_EQ(Find(s, "memtrimd_target_up"), 1.0) << r.body;
    ASSERT_EQ(trims(s), 0.0) << "a trim was counted while its target was stopped\n" << r.body;
  }
  ASSERT_TRUE(in_progress()) << m.log();
  stopped.Continue();
  Series s;
  ASSERT_TRUE(WaitFor(
      [&] {
        s = m.Scrape();
        return trims(s) > 0;
      },
      60s))
      << "the trim did not end after the target ran again\n"
      << m.log();
  EXPECT_EQ(Find(s, "memtrimd_trim_runs_total", {"success", "scheduled"}), 1.0) << m.log();
  EXPECT_GT(Find(s, "memtrimd_trim_last_reclaimed_bytes", {"rss_swap"}).value_or(0),
            32.0 * (1 << 20));
}

TEST_F(FaultTest, HundredTargetRestartsLeaveNoDescriptorsThreadsOrMemoryBehind) {
  const std::string tag = "restart100-" + Str(getpid());
  // Two HTTP workers: each worker that has served keeps its stack pages
  // (about 25 KiB, bounded by --web.max-connections), which over 100 scrapes
  // would add up to 0.8 MiB with 32 of them and hide what this test
  // looks for, memory that grows with every target.
  Memtrimd m({"--target.match=fragmenter.*" + tag, "--sample.interval=100ms",
              "--smaps.interval=100ms", "--trim.interval=1s", "--trim.jitter=0",
              "--web.max-connections=2"});
  ASSERT_TRUE(m.started()) << m.log();
  const pid_t self = m.process().pid();
  const std::vector<std::string> args = {"--threads",   "1", "--rounds", "1",
                                         "--burst-mib", "1", "--tag",    tag};
  // One life of a target: started, picked, read by every collector, killed.
  auto one_life = [&](const std::function<void()>& while_selected) {
    Process t = StartAgentFragmenter(args);
    ASSERT_TRUE(t.running());
    const std::string pid = PidLabel(t.pid());
    ASSERT_TRUE(WaitFor(
        [&] {
          Series s = m.Scrape();
          return Find(s, "memtrimd_glibc_arena_heaps", {pid}).has_value() &&
                 Find(s, "memtrimd_glibc_malloc_arenas", {pid}).has_value();
        },
        20s))
        << "target " << t.pid() << " not picked up\n"
        << m.log();
    while_selected();
    t.Kill();
    RemoveStaleAgentSocket(t.pid());
  };
  struct Usage {
    std::size_t fds = 0;
    uint64_t threads = 0, rss_kb = 0;
  };
  // Measured with a target selected and read, after the scrape that showed
  // it: descriptors of a sample or scrape still in flight settle first.
  auto measure = [&](Usage& u) {
    u.threads = LastingThreads(self);
    u.rss_kb = StatusValue(self, "VmRSS").value_or(0);
    u.fds = CountFds(self);
  };
  Usage first, last;
  // The first life also warms up what is made once (civetweb's buffers, the
  // first exposition, the collectors' reused storage).
  one_life([&] { measure(first); });
  ASSERT_FALSE(HasFatalFailure());
  for (int i = 1; i < 99; ++i) {
    one_life([] {});
    ASSERT_FALSE(HasFatalFailure()) << "life " << i + 1;
  }
  one_life([&] {
    EXPECT_TRUE(WaitFor(
        [&] {
          measure(last);
          return last.fds <= first.fds;
        },
        10s))
        << last.fds << " descriptors after 100 targets, " << first.fds << " after the first";
  });
  ASSERT_FALSE(HasFatalFailure());
  std::cout << "memtrimd after the first target: " << first.fds << " fds, " << first.threads
            << " threads, " << first.rss_kb << " kB RSS; after the 100th: " << last.fds << " fds, "
            << last.threads << " threads, " << last.rss_kb << " kB RSS\n";
  EXPECT_TRUE(m.process().running());
  EXPECT_EQ(last.threads, first.threads);
  EXPECT_EQ(LogHas(m.log(), {"target exited"}), true);
  if (RunsWithAsan(self)) {
    std::cout << "memtrimd runs with AddressSanitizer: its quarantine keeps freed memory, "
                 "RSS not compared\n";
    return;
  }
  // 1 MiB of slack: glibc's free lists in memtrimd's two arenas and the
  // exposition's buffers settle at sizes that depend on the order of frees,
  // not on how many targets came and went; a leak of even 10 KiB per target
  // would show as 1 MiB.
  EXPECT_LE(last.rss_kb, first.rss_kb + 1024)
      << "VmRSS " << first.rss_kb << " kB -> " << last.rss_kb << " kB over 100 targets";
}

}  // namespace
}  // namespace memtrimd::testing
