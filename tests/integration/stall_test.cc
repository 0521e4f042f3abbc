// A target that cannot answer must not stall memtrimd: a SIGSTOPped agent
// target or a JVM whose attach listener cannot answer leaves the sample
// interval and /healthz alone; SIGTERM ends memtrimd while a trim (scheduled
// or through the API) waits on a stopped target; a zombie target counts as
// exited, and a --target.match successor is picked; a smaps read of a
// process that exited is not published; a target whose files sit on a FUSE
// filesystem that answers late or never holds only its own read.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <sstream>

#include "collectors/glibc/glibc_heap_collector.h"
#include "collectors/procfs/target_reader.h"
#include "collectors/sample.h"
#include "tests/integration/harness.h"
#include "tests/integration/json_value.h"
#include "tests/integration/web_fixtures.h"

namespace memtrimd::testing {
namespace {

namespace fs = std::filesystem;

std::string Str(pid_t pid) { return std::to_string(pid); }
std::string PidLabel(pid_t pid) { return "pid=\"" + Str(pid) + "\""; }

// SIGKILLs a pid the test learned (a workload's child) when it goes out of
// scope, however the test ends.
struct KillOnExit {
  pid_t pid = 0;
  ~KillOnExit() {
    if (pid > 0) ::kill(pid, SIGKILL);
  }
};

// The sample interval every stall test runs with, and how far beyond it a
// sample's age may be seen by a scrape (scheduling on a busy machine). The
// stalled calls wait 6 s or more, well beyond the two together.
constexpr double kIntervalSeconds = 1.0;
constexpr double kSlackSeconds = 2.0;

// Scrapes until `more` further samples were published (or 60 s passed);
// every scrape must answer 200 with a sample no older than interval + slack
// (the first that does not ends the wait, as a failure). With `also`, waits
// for it to hold too. Returns whether all of that held.
bool SamplesKeepComing(const Memtrimd& m, int more, double* max_age,
                       const std::function<bool(const Series&)>& also = nullptr) {
  double first = -1;
  *max_age = 0;
  std::string failure;
  bool done = WaitFor(
      [&] {
        HttpResponse r = Curl(m.url());
        Series s = ParseExposition(r.body);
        std::optional<double> seq = Find(s, "memtrimd_samples_total");
        std::optional<double> age = Find(s, "memtrimd_sample_age_seconds");
        if (r.status != 200 || !seq || !age) {
          failure = "scrape answered " + std::to_string(r.status) + " without a sample";
          return true;
        }
        *max_age = std::max(*max_age, *age);
        if (*age > kIntervalSeconds + kSlackSeconds) {
          failure = "sample " + std::to_string(*seq) + " was " + std::to_string(*age) + " s old";
          return true;
        }
        if (first < 0) first = *seq;
        return *seq >= first + more && (!also || also(s));
      },
      60s);
  EXPECT_EQ(failure, "");
  return done && failure.empty();
}

class StallTest : public ::testing::Test {
 protected:
  Process StartAgentFragmenter() {
    SpawnOptions o;
    o.env = {std::string("LD_PRELOAD=") + AGENT_LIB};
    Process p =
        StartFragmenter(dir_, {"--threads", "2", "--rounds", "1", "--burst-mib", "4"}, "", o);
    agent_pids_.push_back(p.pid());
    return p;
  }
  void TearDown() override {
    for (pid_t pid : agent_pids_) {
      if (::kill(pid, 0) != 0) RemoveStaleAgentSocket(pid);
    }
    for (pid_t pid : jvm_pids_) {
      if (::kill(pid, 0) != 0) RemoveStaleJvmSocket(pid);
    }
  }
  // Sends SIGTERM and waits (up to 10 s, far above the 2 s memtrimd needs)
  // for memtrimd to exit; prints how long it took.
  void ExpectExitsOnSigterm(Memtrimd& m, const std::string& what) {
    auto t0 = std::chrono::steady_clock::now();
    ::kill(m.process().pid(), SIGTERM);
    std::optional<int> code = m.process().Wait(10s);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(code, 0) << what << "\n" << m.log();
    std::cout << what << ": memtrimd exited " << secs << " s after SIGTERM\n";
  }

  TempDir dir_;
  std::vector<pid_t> agent_pids_;
  std::vector<pid_t> jvm_pids_;
};

TEST_F(StallTest, StoppedAgentTargetDelaysNoSample) {
  Process frag = StartAgentFragmenter();
  ASSERT_TRUE(frag.running());
  // The sites collector too: its sampler is on in the target when it stops.
  const std::vector<std::string> flags = {"--target.pid=" + Str(frag.pid()),
                                          "--sample.interval=1s",
                                          "--smaps.interval=1s",
                                          "--jvm.command-timeout=6s",
                                          "--trim.interval=0",
                                          "--collector.sites",
                                          "--sites.interval=1s"};
  Memtrimd m(flags);
  ASSERT_TRUE(m.started()) << m.log();
  ASSERT_TRUE(WaitFor(
      [&] {
        Series s = m.Scrape();
        return Find(s, "memtrimd_collector_success", {"\"agent\""}) == 1.0 &&
               Find(s, "memtrimd_collector_success", {"\"sites\""}) == 1.0;
      },
      30s))
      << m.log();

  Stopped stop(frag.pid());
  ASSERT_TRUE(stop.ok());
  // Each agent query now waits out its 6 s deadline. Samples keep their
  // interval meanwhile, and the query's failure shows once it ends.
  double max_age = 0;
  EXPECT_TRUE(SamplesKeepComing(m, 8, &max_age, [](const Series& s) {
    return Find(s, "memtrimd_collector_success", {"\"agent\""}) == 0.0 &&
           Find(s, "memtrimd_collector_success", {"\"sites\""}) == 0.0;
  })) << m.log();
  std::cout << "agent target stopped: sample age at most " << max_age << " s\n";
  EXPECT_TRUE(LogHas(m.log(), {"collector failed", "collector=agent"})) << m.log();
  EXPECT_EQ(Find(m.Scrape(), "memtrimd_collector_success", {"\"glibc\""}), 1.0);

  // A memtrimd started while the target is stopped is healthy from its
  // first request on.
  Memtrimd late(flags);
  ASSERT_TRUE(late.started()) << late.log();
  EXPECT_EQ(Curl(late.url("/healthz")).status, 200) << late.log();
  EXPECT_TRUE(SamplesKeepComing(late, 3, &max_age)) << late.log();
  ExpectExitsOnSigterm(late, "agent query blocked on a stopped target");

  stop.Continue();
  EXPECT_TRUE(WaitFor(
      [&] {
        Series s = m.Scrape();
        return Find(s, "memtrimd_collector_success", {"\"agent\""}) == 1.0 &&
               Find(s, "memtrimd_collector_success", {"\"sites\""}) == 1.0;
      },
      30s))
      << m.log();
  EXPECT_TRUE(frag.running());
}

TEST_F(StallTest, JvmWhoseAttachCannotAnswerDelaysNoSample) {
  std::vector<std::string> homes = FindJdkHomes();
  if (homes.empty()) GTEST_SKIP() << "no JDK under /usr/lib/jvm";
  for (const std::string& home : homes) {
    SCOPED_TRACE(home);
    Process jvm = StartJvm(dir_, {}, "NativeChurn", {"--threads", "2", "--quiet"}, {}, home);
    jvm_pids_.push_back(jvm.pid());
    ASSERT_TRUE(jvm.running());
    // A long command deadline: while the JVM is stopped, a jvm run stays
    // blocked for the whole test. A long smaps interval: the Java heap's
    // range, which the jvm collector finds after the first smaps read, must
    // reach the breakdown without waiting for the next one.
    const std::vector<std::string> flags = {
        "--target.pid=" + Str(jvm.pid()), "--sample.interval=1s",      "--jvm.interval=1s",
        "--smaps.interval=10m",           "--jvm.command-timeout=30s", "--trim.interval=0"};
    Memtrimd m(flags);
    ASSERT_TRUE(m.started()) << m.log();
    // The attach listener is up once a jvm run has succeeded.
    ASSERT_TRUE(WaitFor(
        [&] { return Find(m.Scrape(), "memtrimd_collector_success", {"\"jvm\""}) == 1.0; }, 60s))
        << m.log();
    EXPECT_TRUE(WaitFor(
        [&] {
          return Find(m.Scrape(), "memtrimd_rss_breakdown_bytes", {"java_heap"}).value_or(0) > 0;
        },
        20s))
        << m.log();

    Stopped stop(jvm.pid());
    ASSERT_TRUE(stop.ok());
    double max_age = 0;
    EXPECT_TRUE(SamplesKeepComing(m, 6, &max_age)) << m.log();
    std::cout << home << " stopped: sample age at most " << max_age << " s\n";
    EXPECT_EQ(Find(m.Scrape(), "memtrimd_target_up"), 1.0);

    Memtrimd late(flags);
    ASSERT_TRUE(late.started()) << late.log();
    EXPECT_EQ(Curl(late.url("/healthz")).status, 200) << late.log();
    EXPECT_TRUE(SamplesKeepComing(late, 3, &max_age)) << late.log();
    ExpectExitsOnSigterm(late, home + ": attach blocked on a stopped JVM");
    ExpectExitsOnSigterm(m, home + ": attach blocked on a stopped JVM (running)");
  }
}

TEST_F(StallTest, SigtermEndsMemtrimdWhileAScheduledTrimWaitsOnAStoppedTarget) {
  Process frag = StartAgentFragmenter();
  ASSERT_TRUE(frag.running());
  Memtrimd m({"--target.pid=" + Str(frag.pid()), "--sample.interval=200ms", "--trim.interval=1s",
              "--trim.jitter=0", "--trim.timeout=60s"});
  ASSERT_TRUE(m.started()) << m.log();
  ASSERT_TRUE(WaitFor(
      [&] {
        return Find(m.Scrape(), "memtrimd_trim_runs_total", {"success", "scheduled"}).value_or(0) >=
               1;
      },
      30s))
      << m.log();
  Stopped stop(frag.pid());
  ASSERT_TRUE(stop.ok());
  // The next trim starts and waits on the stopped target (up to 60 s).
  ASSERT_TRUE(WaitFor(
      [&] {
        return Curl(m.url("/report?format=json")).body.find("\"in_progress\":true") !=
               std::string::npos;
      },
      30s))
      << m.log();
  ExpectExitsOnSigterm(m, "scheduled trim blocked on a stopped target");
  EXPECT_TRUE(LogHas(m.log(), {"trim abandoned at shutdown"})) << m.log();
}

TEST_F(StallTest, SigtermEndsMemtrimdWhileAnApiTrimWaitsOnAStoppedTarget) {
  Process frag = StartAgentFragmenter();
  ASSERT_TRUE(frag.running());
  TempDir web;
  Memtrimd m({"--target.pid=" + Str(frag.pid()), "--web.enable-trim-api",
              "--web.config.file=" + WriteBasicAuthConfig(web), "--sample.interval=200ms",
              "--trim.timeout=60s"});
  ASSERT_TRUE(m.started()) << m.log();
  Stopped stop(frag.pid());
  ASSERT_TRUE(stop.ok());
  const std::string reply = dir_ / "reply";
  SpawnOptions o;
  o.stdout_path = reply;
  Process post({"curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "90", "-X",
                "POST", "-u", "alice:secret", m.url("/api/v1/trim")},
               o);
  ASSERT_TRUE(WaitFor(
      [&] {
        return Curl(m.url("/report?format=json"), {"-u", "alice:secret"})
                   .body.find("\"in_progress\":true") != std::string::npos;
      },
      30s))
      << m.log();
  ExpectExitsOnSigterm(m, "API trim blocked on a stopped target");
  // The request was answered (503: shutting down) or cut off; never a trim.
  EXPECT_TRUE(post.Wait(10s).has_value());
  EXPECT_NE(ReadFile(reply), "200");
}

TEST_F(StallTest, ZombieTargetIsExitedAndAMatchSuccessorIsPicked) {
  const std::string bin = WorkloadBin("unreaped_child");
  ASSERT_TRUE(fs::exists(bin)) << bin << " is missing: build the unreaped_child target";
  const std::string tag = "zombie-" + Str(getpid());
  int n = 0;
  // The parent never reaps its child; the child's pid comes from the ready
  // file.
  auto start = [&](KillOnExit& child) {
    const std::string ready = dir_ / ("child." + Str(++n) + ".ready");
    Process parent({bin, "--tag", tag, "--ready-file", ready});
    if (WaitFor([&] { return fs::exists(ready) || !parent.running(); }, 30s) && parent.running()) {
      child.pid = static_cast<pid_t>(std::stol(ReadFile(ready)));
    }
    return parent;
  };
  KillOnExit first_child;
  Process first = start(first_child);
  ASSERT_GT(first_child.pid, 0);
  Memtrimd m({"--target.match=child-" + tag, "--sample.interval=200ms", "--smaps.interval=200ms",
              "--trim.interval=0"});
  ASSERT_TRUE(m.started()) << m.log();
  ASSERT_TRUE(WaitFor(
      [&] {
        return Find(m.Scrape(), "memtrimd_target_info", {PidLabel(first_child.pid)}).has_value();
      },
      20s))
      << m.log();
  Result<Target> target = procfs::ReadTarget("/proc", first_child.pid);
  ASSERT_TRUE(target.ok()) << target.status().message();

  ::kill(first_child.pid, SIGKILL);
  ASSERT_TRUE(WaitFor([&] { return ProcessState(first_child.pid) == 'Z'; }, 10s));
  // Exited: target_up 0 and none of its series, though its pid and start
  // time are still in /proc.
  Series s;
  ASSERT_TRUE(WaitFor(
      [&] {
        s = m.Scrape();
        return Find(s, "memtrimd_target_up") == 0.0;
      },
      10s))
      << m.log();
  for (const auto& [key, value] : s) {
    EXPECT_EQ(key.find(PidLabel(first_child.pid)), std::string::npos) << key;
  }
  EXPECT_TRUE(LogHas(m.log(), {"target exited", "pid=" + Str(first_child.pid)})) << m.log();
  EXPECT_EQ(ProcessState(first_child.pid), 'Z')
      << "still a zombie: the exit was seen, not the reaping";

  // A smaps read of the zombie is empty; it is discarded, not published.
  glibc::GlibcHeapOptions g;
  g.confirm_with_heap_info = false;
  glibc::GlibcHeapCollector heaps(g);
  TargetSample sample;
  Status read = heaps.Collect(*target, sample);
  EXPECT_EQ(read.code(), ErrorCode::kNotFound) << read.message();
  EXPECT_FALSE(sample.glibc.has_value());

  // The next matching process is picked.
  KillOnExit second_child;
  Process second = start(second_child);
  ASSERT_GT(second_child.pid, 0);
  EXPECT_TRUE(WaitFor(
      [&] {
        s = m.Scrape();
        return Find(s, "memtrimd_target_up") == 1.0 &&
               Find(s, "memtrimd_target_info", {PidLabel(second_child.pid)}).has_value();
      },
      20s))
      << m.log();
}

SpawnOptions ErrTo(const std::string& path) {
  SpawnOptions o;
  o.stderr_path = path;
  return o;
}

// A FUSE filesystem (tests/workloads/stuck_fuse) served by root with
// allow_other, its lookups answered after `delay_ms` or never (-1): a hung
// network filesystem. Kills its server by pid and unmounts whatever happens.
class StuckFilesystem {
 public:
  StuckFilesystem(const TempDir& dir, long delay_ms) : mount_(dir / "stuck") {
    fs::create_directories(mount_);
    const std::string ready = dir / "stuck.ready";
    server_ = Process({WorkloadBin("stuck_fuse"), mount_, ready, std::to_string(delay_ms)},
                      ErrTo(dir / "stuck.err"));
    ok_ =
        WaitFor([&] { return fs::exists(ready) || !server_.running(); }, 20s) && server_.running();
  }
  ~StuckFilesystem() { Stop(); }
  StuckFilesystem(const StuckFilesystem&) = delete;
  StuckFilesystem& operator=(const StuckFilesystem&) = delete;
  bool ok() const { return ok_; }
  const std::string& path() const { return mount_; }
  // Ends the server: every request it holds fails, and the mount goes.
  void Stop() {
    server_.Kill();
    ::umount2(mount_.c_str(), MNT_DETACH);
  }

 private:
  std::string mount_;
  Process server_;
  bool ok_ = false;
};

// The fragmenter in a mount namespace of its own whose /sys/fs/cgroup is
// `over` (a bind mount): memtrimd's cgroup reads of it look up paths there.
Process StartFragmenterOver(const TempDir& dir, const std::string& over, const std::string& ready) {
  const std::string cmd = "mount --bind '" + over + "' /sys/fs/cgroup && exec '" + FragmenterBin() +
                          "' --threads 2 --rounds 1 --burst-mib 8 --keep-permille 1000 "
                          "--quiet --ready-file '" +
                          ready + "'";
  Process p({"unshare", "--mount", "--propagation", "private", "--", "sh", "-c", cmd},
            ErrTo(dir / "over.err"));
  if (!WaitFor([&] { return fs::exists(ready) || !p.running(); }, 30s)) p.Kill();
  return p;
}

// The /report?format=json member "sample_sequence" of target `pid`, and the
// report's own "sequence".
std::pair<int64_t, int64_t> ReadSequences(const Memtrimd& m, pid_t pid) {
  std::optional<JsonValue> r = ParseJson(Curl(m.url("/report?format=json")).body);
  if (!r || !r->Get("sequence") || !r->Get("targets")) return {-1, -2};
  int64_t target = -1;
  for (const JsonValue& t : r->Get("targets")->items) {
    const JsonValue* p = t.Get("pid");
    const JsonValue* seq = t.Get("sample_sequence");
    if (p && p->Int() == pid && seq) target = seq->Int().value_or(-1);
  }
  return {target, r->Get("sequence")->Int().value_or(-2)};
}

class StuckReadTest : public StallTest {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to mount a FUSE filesystem";
    if (!fs::exists("/dev/fuse")) GTEST_SKIP() << "no /dev/fuse";
  }
  // The FUSE filesystem answering lookups after `delay_ms` (-1: never), the
  // fragmenter whose /sys/fs/cgroup it is (victim_), a second fragmenter
  // beside it (innocent_), and memtrimd watching both in node mode at a 1 s
  // sample interval.
  void StartScene(long delay_ms) {
    fuse_ = std::make_unique<StuckFilesystem>(dir_, delay_ms);
    ASSERT_TRUE(fuse_->ok()) << ReadFile(dir_ / "stuck.err");
    victim_ = StartFragmenterOver(dir_, fuse_->path(), dir_ / "victim.ready");
    ASSERT_TRUE(victim_.running()) << ReadFile(dir_ / "over.err");
    innocent_ = StartFragmenter(
        dir_, {"--threads", "2", "--rounds", "1", "--burst-mib", "8", "--keep-permille", "1000"});
    ASSERT_TRUE(innocent_.running());
    m_ = std::make_unique<Memtrimd>(std::vector<std::string>{
        "--targets=node", "--targets.match=fragmenter.*" + dir_.path(), "--targets.min-rss=0",
        "--discovery.interval=500ms", "--sample.interval=1s", "--trim.interval=0"});
    ASSERT_TRUE(m_->started()) << m_->log();
  }

  // Declared before the filesystem, so destroyed after it: a memtrimd whose
  // read the FUSE server holds can be reaped only once that server is gone.
  std::unique_ptr<Memtrimd> m_;
  std::unique_ptr<StuckFilesystem> fuse_;
  Process victim_;
  Process innocent_;
};

// A target whose cgroup files sit on a filesystem whose server never answers:
// the read that looks them up never ends (the kernel lets nothing end a FUSE
// request its server has taken). Only that target waits: the other target is
// read at every tick, samples keep their interval, /healthz answers, and
// SIGTERM stops memtrimd (whose last thread can leave the kernel's wait only
// when the server goes: the process exits then, with 0).
TEST_F(StuckReadTest, TargetOnAFilesystemThatNeverAnswersHoldsOnlyItsOwnRead) {
  StartScene(-1);
  ASSERT_FALSE(HasFatalFailure());
  Memtrimd& m = *m_;
  ASSERT_TRUE(WaitFor(
      [&] {
        Series s = m.Scrape();
        return Find(s, "memtrimd_targets_read_stalled") == 1.0 &&
               Find(s, "memtrimd_targets_watched") == 2.0 &&
               Find(s, "memtrimd_target_info", {PidLabel(innocent_.pid())}).has_value();
      },
      30s))
      << m.log();
  EXPECT_TRUE(LogHas(m.log(), {"target read outlasted its deadline", "pid=" + Str(victim_.pid())}))
      << m.log();
  EXPECT_EQ(Curl(m.url("/healthz")).status, 200);
  double max_age = 0;
  EXPECT_TRUE(SamplesKeepComing(m, 5, &max_age)) << m.log();
  std::cout << "beside a target whose read never ends: sample age at most " << max_age << " s\n";
  // The innocent target is read at every tick: its entry is the latest
  // sample's own, not one carried over.
  for (int i = 0; i < 3; ++i) {
    auto [innocent_seq, report_seq] = ReadSequences(m, innocent_.pid());
    EXPECT_EQ(innocent_seq, report_seq);
  }
  Series s = m.Scrape();
  EXPECT_FALSE(Find(s, "memtrimd_target_info", {PidLabel(victim_.pid())}).has_value())
      << "the stuck target has no sample to show yet";
  EXPECT_EQ(Find(s, "memtrimd_targets_read_stalled"), 1.0);

  ::kill(m.process().pid(), SIGTERM);
  EXPECT_TRUE(WaitFor([&] { return LogHas(m.log(), {"msg=stopped"}); }, 10s)) << m.log();
  fuse_->Stop();
  EXPECT_EQ(m.process().Wait(20s), 0) << m.log();
}

// Lookups answered after 3 s each (a slow network filesystem): the target's
// reads end late, their figures are published when they do, and no tick
// waits for them once the first ran late.
TEST_F(StuckReadTest, SlowFilesystemDelaysOnlyItsOwnTarget) {
  StartScene(3000);
  ASSERT_FALSE(HasFatalFailure());
  Memtrimd& m = *m_;
  // The slow target's read ends at last, and its figures appear.
  ASSERT_TRUE(WaitFor(
      [&] {
        return Find(m.Scrape(), "memtrimd_target_info", {PidLabel(victim_.pid())}).has_value();
      },
      90s))
      << m.log();
  EXPECT_TRUE(LogHas(m.log(), {"target read outlasted its deadline", "pid=" + Str(victim_.pid())}))
      << m.log();
  double max_age = 0;
  EXPECT_TRUE(SamplesKeepComing(m, 5, &max_age)) << m.log();
  std::cout << "beside a target whose reads take seconds: sample age at most " << max_age << " s\n";
  auto [innocent_seq, report_seq] = ReadSequences(m, innocent_.pid());
  EXPECT_EQ(innocent_seq, report_seq);
}

}  // namespace
}  // namespace memtrimd::testing
