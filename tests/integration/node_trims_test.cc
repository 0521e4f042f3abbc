// Trims across a node (memtrimd --targets=node): only the targets that opted
// in (MEMTRIMD_TRIM=1), or all but those that opted out with
// --trim.targets=all; the node-wide --trim.max-per-minute cap, under which a
// due trim waits (counted once as deferred) instead of running; never two
// trims at once; each target's skips counted under its own pid. And one
// target's stall (a SIGSTOPped JVM whose attach waits out its deadline)
// delays no other target's sample, and one target whose trim would block
// (an opted-in fake JVM naming a FIFO as its @argfile) stops no other
// target's trims.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/integration/harness.h"
#include "tests/integration/web_fixtures.h"

namespace memtrimd::testing {
namespace {

namespace fs = std::filesystem;

std::string Pid(pid_t p) { return "pid=\"" + std::to_string(p) + "\""; }

// Start and end (seconds, from the log's ts and duration_seconds) of every
// "trim done" line.
std::vector<std::pair<double, double>> TrimIntervals(const std::string& log) {
  std::vector<std::pair<double, double>> out;
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find("msg=\"trim done\"") == std::string::npos) continue;
    // ts=2026-12-01T03:10:32.888Z: seconds of the day are enough here.
    std::size_t t = line.find("ts=");
    std::size_t d = line.find("duration_seconds=");
    if (t == std::string::npos || d == std::string::npos) continue;
    int hh = std::atoi(line.c_str() + t + 14), mm = std::atoi(line.c_str() + t + 17);
    double ss = std::atof(line.c_str() + t + 20);
    double end = hh * 3600.0 + mm * 60.0 + ss;
    double duration = std::atof(line.c_str() + d + 17);
    out.emplace_back(end - duration, end);
  }
  std::sort(out.begin(), out.end());
  return out;
}

class NodeTrimsTest : public ::testing::Test {
 protected:
  Process StartTarget(std::vector<std::string> env) {
    SpawnOptions o;
    o.env = std::move(env);
    o.env.push_back(std::string("LD_PRELOAD=") + AGENT_LIB);
    Process p =
        StartFragmenter(dir_, {"--threads", "4", "--rounds", "1", "--burst-mib", "8"}, "", o);
    agent_pids_.push_back(p.pid());
    return p;
  }
  void TearDown() override {
    for (pid_t pid : agent_pids_) {
      if (::kill(pid, 0) != 0) RemoveStaleAgentSocket(pid);
    }
  }
  std::vector<std::string> NodeFlags(const std::string& trim_interval = "1s") const {
    return {"--targets=node",      "--targets.match=" + dir_.path(),
            "--targets.min-rss=0", "--sample.interval=200ms",
            "--smaps.interval=1s", "--trim.interval=" + trim_interval,
            "--trim.jitter=0",     "--discovery.interval=1s"};
  }

  TempDir dir_;
  std::vector<pid_t> agent_pids_;
};

TEST_F(NodeTrimsTest, OnlyOptedInTargetsAreTrimmedAndTheNodeCapMakesTheRestWait) {
  Process a = StartTarget({"MEMTRIMD_TRIM=1"});
  Process b = StartTarget({"MEMTRIMD_TRIM=1"});
  Process silent = StartTarget({});
  ASSERT_TRUE(a.running() && b.running() && silent.running());
  std::vector<std::string> flags = NodeFlags();
  flags.push_back("--trim.max-per-minute=1");
  Memtrimd m(flags);
  ASSERT_TRUE(m.started()) << m.log();
  auto successes = [&](const Series& s, pid_t p) {
    return Find(s, "memtrimd_trim_runs_total", {Pid(p), "result=\"success\""}).value_or(0);
  };
  Series s;
  // One of the two opted-in targets is trimmed; the other, due a second
  // later, waits for the minute to pass: deferred, not trimmed, not skipped.
  ASSERT_TRUE(WaitFor(
      [&] {
        s = m.Scrape();
        pid_t waiting = successes(s, a.pid()) > 0 ? b.pid() : a.pid();
        return successes(s, a.pid()) + successes(s, b.pid()) >= 1 &&
               Find(s, "memtrimd_trim_runs_total",
                    {Pid(waiting), "result=\"deferred\"", "reason=\"node_rate_limit\""}) == 1.0 &&
               Find(s, "memtrimd_trim_runs_total",
                    {Pid(silent.pid()), "result=\"skipped\"", "reason=\"not_opted_in\""})
                       .value_or(0) >= 1;
      },
      60s))
      << m.log();
  EXPECT_EQ(successes(s, a.pid()) + successes(s, b.pid()), 1.0);
  EXPECT_EQ(successes(s, silent.pid()), 0.0);
  EXPECT_FALSE(Find(s, "memtrimd_trim_reclaimed_bytes_total", {Pid(silent.pid())}).has_value());
  // The deferral is counted once per wait, not once per engine tick: five
  // more samples (1 s, four engine ticks), still inside the minute.
  const double seq = Find(s, "memtrimd_samples_total").value_or(0);
  ASSERT_TRUE(WaitFor(
      [&] {
        s = m.Scrape();
        return Find(s, "memtrimd_samples_total").value_or(0) >= seq + 5;
      },
      30s));
  pid_t waiting = successes(s, a.pid()) > 0 ? b.pid() : a.pid();
  EXPECT_EQ(Find(s, "memtrimd_trim_runs_total",
                 {Pid(waiting), "result=\"deferred\"", "reason=\"node_rate_limit\""}),
            1.0);
  EXPECT_EQ(successes(s, waiting), 0.0);
}

TEST_F(NodeTrimsTest, TrimTargetsAllTrimsEveryoneButTheOptedOutOneAtATime) {
  Process a = StartTarget({});
  Process b = StartTarget({});
  Process out = StartTarget({"MEMTRIMD_TRIM=0"});
  ASSERT_TRUE(a.running() && b.running() && out.running());
  std::vector<std::string> flags = NodeFlags();
  flags.insert(flags.end(), {"--trim.targets=all", "--trim.max-per-minute=0"});
  Memtrimd m(flags);
  ASSERT_TRUE(m.started()) << m.log();
  Series s;
  ASSERT_TRUE(WaitFor(
      [&] {
        s = m.Scrape();
        return Find(s, "memtrimd_trim_runs_total", {Pid(a.pid()), "result=\"success\""})
                       .value_or(0) >= 2 &&
               Find(s, "memtrimd_trim_runs_total", {Pid(b.pid()), "result=\"success\""})
                       .value_or(0) >= 2 &&
               Find(s, "memtrimd_trim_runs_total",
                    {Pid(out.pid()), "result=\"skipped\"", "reason=\"not_opted_in\""})
                       .value_or(0) >= 1;
      },
      60s))
      << m.log();
  EXPECT_FALSE(
      Find(s, "memtrimd_trim_runs_total", {Pid(out.pid()), "result=\"success\""}).has_value());
  // Never two at once: no two trims' [start, end] overlap.
  std::vector<std::pair<double, double>> trims = TrimIntervals(m.log());
  ASSERT_GE(trims.size(), 4u) << m.log();
  for (std::size_t i = 1; i < trims.size(); ++i) {
    EXPECT_LE(trims[i - 1].second, trims[i].first + 0.002) << "trims " << i - 1 << " and " << i;
  }
}

TEST_F(NodeTrimsTest, AStoppedJvmDelaysNoOtherTargetsSample) {
  Process frag = StartTarget({});
  ASSERT_TRUE(frag.running());
  Process jvm = StartJvm(dir_, {"-Xmx64m"}, "GcLoop", {});
  ASSERT_TRUE(jvm.running());
  std::vector<std::string> flags = NodeFlags("0");
  flags.insert(flags.end(),
               {"--jvm.interval=1s", "--jvm.command-timeout=30s", "--metrics.detail=all"});
  Memtrimd m(flags);
  ASSERT_TRUE(m.started()) << m.log();
  ASSERT_TRUE(WaitFor(
      [&] {
        return Find(m.Scrape(), "memtrimd_collector_success",
                    {Pid(jvm.pid()), "collector=\"jvm\""}) == 1.0;
      },
      60s))
      << m.log();
  Stopped stop(jvm.pid());
  ASSERT_TRUE(stop.ok());
  // For 6 s (the stopped JVM's attach waits up to 30 s): every scrape has a
  // fresh sample, the running program's smaps are at most an interval old,
  // and its agent keeps answering; the stopped JVM stays watched.
  double first = -1;
  std::string failure;
  bool done = WaitFor(
      [&] {
        Series s = m.Scrape();
        std::optional<double> seq = Find(s, "memtrimd_samples_total");
        std::optional<double> age = Find(s, "memtrimd_sample_age_seconds");
        std::optional<double> smaps = Find(s, "memtrimd_smaps_age_seconds", {Pid(frag.pid())});
        if (!seq || !age || !smaps) {
          failure = "no sample";
          return true;
        }
        if (*age > 2.0 || *smaps > 3.0) {
          failure = "sample " + std::to_string(*age) + " s, smaps of the running program " +
                    std::to_string(*smaps) + " s old";
          return true;
        }
        if (first < 0) first = *seq;
        return *seq >= first + 30;
      },
      60s);
  EXPECT_TRUE(done && failure.empty()) << failure << "\n" << m.log();
  Series s = m.Scrape();
  EXPECT_EQ(Find(s, "memtrimd_target_up", {Pid(jvm.pid())}), 1.0);
  EXPECT_EQ(Find(s, "memtrimd_collector_success", {Pid(frag.pid()), "collector=\"agent\""}), 1.0);
  EXPECT_EQ(Curl(m.url("/healthz")).status, 200);
}

// What the incident page's history holds for `pid`: its points and the
// snapshot sequences of the first and last.
struct PageHistory {
  long samples = -1, first = -1, last = -1;
};
PageHistory HistoryOnPage(const Memtrimd& m, pid_t pid) {
  HttpResponse r = Curl(m.url("/?pid=" + std::to_string(pid)));
  std::smatch match;
  PageHistory h;
  static const std::regex charts(
      R"re(<div class="charts" data-samples="(\d+)" data-first-sequence="(\d+)" data-last-sequence="(\d+)")re");
  if (r.status == 200 && std::regex_search(r.body, match, charts)) {
    h = {std::stol(match[1]), std::stol(match[2]), std::stol(match[3])};
  }
  return h;
}

TEST_F(NodeTrimsTest, ATrimRereadsTheTrimmedTargetOnly) {
  // After a trim memtrimd publishes extra samples of the trimmed target (its
  // smaps, then its fresh malloc statistics). The other targets are not
  // read in those: their last sample is carried over, and their history
  // gets no point for them.
  Process trimmed = StartTarget({"MEMTRIMD_TRIM=1"});
  Process other = StartTarget({});
  ASSERT_TRUE(trimmed.running() && other.running());
  std::vector<std::string> flags = NodeFlags();
  flags.push_back("--trim.max-per-minute=0");
  Memtrimd m(flags);
  ASSERT_TRUE(m.started()) << m.log();
  auto successes = [&](const Series& s) {
    return Find(s, "memtrimd_trim_runs_total", {Pid(trimmed.pid()), "result=\"success\""})
        .value_or(0);
  };
  Series s;
  ASSERT_TRUE(WaitFor(
      [&] {
        s = m.Scrape();
        return successes(s) >= 3;
      },
      60s))
      << m.log();
  const double trims = successes(s);
  // Three more samples, so the last trim's extra ones are in.
  const double seq = Find(s, "memtrimd_samples_total").value_or(0);
  ASSERT_TRUE(WaitFor(
      [&] { return Find(m.Scrape(), "memtrimd_samples_total").value_or(0) >= seq + 3; }, 30s));
  PageHistory t = HistoryOnPage(m, trimmed.pid());
  PageHistory o = HistoryOnPage(m, other.pid());
  ASSERT_GT(t.samples, 0);
  ASSERT_GT(o.samples, 0);
  // The trimmed target is read in every sample: a point for each.
  EXPECT_EQ(t.samples, t.last - t.first + 1);
  // The other one misses at least one sample per trim, and it is watched
  // throughout: its last point is as recent as the trimmed target's.
  EXPECT_LE(static_cast<double>(o.samples), static_cast<double>(o.last - o.first + 1) - trims)
      << o.samples << " points over sequences " << o.first << ".." << o.last << ", " << trims
      << " trims";
  EXPECT_GE(o.last, t.last - 1);
  EXPECT_EQ(Find(m.Scrape(), "memtrimd_target_up", {Pid(other.pid())}), 1.0);
}

// An opted-in fake JVM of another user answers attach until told to stop,
// then removes its socket; its command line names a FIFO as a java launcher
// @argfile. Its next trim finds no listener, and before a SIGQUIT memtrimd
// reads the JVM's options, the argfile among them: opened without O_NONBLOCK
// that open blocked the one trim thread for good. Now the FIFO is refused at
// once (options unknown: no signal), and a trim that hangs anyway is given
// up at its deadline: the other target's scheduled trims go on and a manual
// trim of it is served, not 409.
TEST_F(NodeTrimsTest, ATargetWhoseArgfileIsAFifoStopsNoOtherTargetsTrims) {
  if (!IsRoot()) GTEST_SKIP() << "needs root: the fake JVM runs as another user";
  constexpr uid_t kNobody = 65534;
  Process frag = StartTarget({});
  ASSERT_TRUE(frag.running());
  const std::string sub = dir_ / "fake-jvm";
  fs::create_directory(sub);
  fs::permissions(sub, fs::perms::all);
  const std::string fifo = sub + "/jvm.args";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  const std::string stop = sub + "/stop";
  const std::string ready = sub + "/ready";
  const std::string out = sub + "/out";
  SpawnOptions o;
  o.uid = kNobody;
  o.gid = kNobody;
  o.stdout_path = out;
  // The argfile first: the launcher expands @files only before the main class.
  Process fake({WorkloadBin("attach_server"), "@" + fifo, "--path", "/tmp/.java_pid%p",
                "--fake-libjvm", sub, "--sigquit-log", "--stop-file", stop, "--ready-file", ready},
               o);
  ASSERT_TRUE(WaitFor([&] { return fs::exists(ready) || !fake.running(); }, 10s));
  ASSERT_TRUE(fake.running());
  ScopedUnlink socket{"/tmp/.java_pid" + std::to_string(fake.pid())};

  TempDir web;
  std::vector<std::string> flags = NodeFlags();
  flags.insert(flags.end(),
               {"--trim.targets=all", "--trim.max-per-minute=0", "--trim.max-interval=2s",
                "--web.enable-trim-api", "--web.config.file=" + WriteBasicAuthConfig(web)});
  Memtrimd m(flags);
  ASSERT_TRUE(m.started()) << m.log();
  const std::vector<std::string> alice = {"-u", "alice:secret"};
  auto scrape = [&] { return ParseExposition(Curl(m.url(), alice).body); };
  auto runs = [](const Series& s, pid_t pid, const std::string& result) {
    return Find(s, "memtrimd_trim_runs_total", {Pid(pid), "result=\"" + result + "\""}).value_or(0);
  };
  // The jvm collector has attached once (so the engine will trim it), then
  // the fake lets its listener go.
  ASSERT_TRUE(WaitFor(
      [&] { return Find(scrape(), "memtrimd_jvm_attachable", {Pid(fake.pid())}) == 1.0; }, 30s))
      << m.log();
  WriteFile(stop, "");
  ASSERT_TRUE(
      WaitFor([&] { return ReadFile(out).find("stopped serving") != std::string::npos; }, 10s));
  const double fake_failures = runs(scrape(), fake.pid(), "failure");
  // The fake's next trim reaches the argfile and fails at once, and the
  // fragmenter's trims go on after it.
  double frag_after = 0;
  ASSERT_TRUE(WaitFor(
      [&] {
        Series s = scrape();
        if (frag_after == 0 && runs(s, fake.pid(), "failure") > fake_failures) {
          frag_after = runs(s, frag.pid(), "success") + 1;  // no 0: "not yet"
        }
        return frag_after != 0 && runs(s, frag.pid(), "success") + 1 >= frag_after + 2;
      },
      60s))
      << m.log();
  EXPECT_TRUE(LogHas(m.log(), {"trim failed", std::to_string(fake.pid()), "not a regular file"}))
      << m.log();
  // One trim runs at a time on the node, and scheduled trims come every 2 s
  // here: a manual trim that meets one is answered 409 (and, after three, the
  // API's rate limit 429). Tried until neither; a trim thread held by the
  // fake would answer 409 until the deadline.
  HttpResponse manual;
  EXPECT_TRUE(WaitFor(
      [&] {
        manual = Curl(m.url("/api/v1/trim?pid=" + std::to_string(frag.pid())),
                      {"-X", "POST", "-u", "alice:secret"});
        return manual.status != 409 && manual.status != 429;
      },
      60s));
  EXPECT_EQ(manual.status, 200) << manual.body;
  // No SIGQUIT: options memtrimd cannot read mean no signal.
  EXPECT_EQ(ReadFile(out).find("sigquit"), std::string::npos) << ReadFile(out);
  EXPECT_TRUE(fake.running());
}

}  // namespace
}  // namespace memtrimd::testing
