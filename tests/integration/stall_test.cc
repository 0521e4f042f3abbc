// A target that cannot answer must not stall memtrimd: a SIGSTOPped agent
// target or a JVM whose attach listener cannot answer leaves the sample
// interval and /healthz alone; SIGTERM ends memtrimd while a trim (scheduled
// or through the API) waits on a stopped target; a zombie target counts as
// exited, and a --target.match successor is picked; a smaps read of a
// process that exited is not published; a target whose files sit on a FUSE
// filesystem that answers late or never holds only its own read, and so does
// one that waits on a FUSE file behind its own mapping.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "collectors/glibc/glibc_heap_collector.h"
#include "collectors/procfs/target_reader.h"
#include "collectors/sample.h"
#include "tests/integration/harness.h"
#include "tests/integration/json_value.h"
#include "tests/integration/node_agent.h"
#include "tests/integration/web_fixtures.h"

namespace memtrimd::testing {
namespace {

namespace fs = std::filesystem;

std::string Str(pid_t pid) { return std::to_string(pid); }
std::string PidLabel(pid_t pid) { return "pid=\"" + Str(pid) + "\""; }

// Whether a scrape shows `pid` as a watched target (its info series).
bool Watches(const Series& s, pid_t pid) {
  return Find(s, "memtrimd_target_info", {PidLabel(pid)}).has_value();
}

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

  // SamplesKeepComing for `more` samples; prints the oldest sample seen,
  // for `what`.
  static void ExpectSamplesKeepComing(const Memtrimd& m, int more, const std::string& what) {
    double max_age = 0;
    EXPECT_TRUE(SamplesKeepComing(m, more, &max_age)) << m.log();
    std::cout << what << ": sample age at most " << max_age << " s\n";
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
  ExpectSamplesKeepComing(late, 3, "agent target stopped, memtrimd started after");
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
    ExpectSamplesKeepComing(m, 6, home + " stopped");
    EXPECT_EQ(Find(m.Scrape(), "memtrimd_target_up"), 1.0);

    Memtrimd late(flags);
    ASSERT_TRUE(late.started()) << late.log();
    EXPECT_EQ(Curl(late.url("/healthz")).status, 200) << late.log();
    ExpectSamplesKeepComing(late, 3, home + " stopped, memtrimd started after");
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
  ASSERT_TRUE(WaitFor([&] { return Watches(m.Scrape(), first_child.pid); }, 20s)) << m.log();
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
        return Find(s, "memtrimd_target_up") == 1.0 && Watches(s, second_child.pid);
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
// network filesystem. With `file_args` (DATA_MIB READ_LOG) it holds one file,
// "data", whose reads are the ones answered late or never. Kills its server
// by pid and unmounts whatever happens.
class StuckFilesystem {
 public:
  StuckFilesystem(const TempDir& dir, long delay_ms, const std::vector<std::string>& file_args = {})
      : mount_(dir / "stuck") {
    fs::create_directories(mount_);
    const std::string ready = dir / "stuck.ready";
    std::vector<std::string> argv = {WorkloadBin("stuck_fuse"), mount_, ready,
                                     std::to_string(delay_ms)};
    argv.insert(argv.end(), file_args.begin(), file_args.end());
    server_ = Process(argv, ErrTo(dir / "stuck.err"));
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
               Find(s, "memtrimd_targets_watched") == 2.0 && Watches(s, innocent_.pid());
      },
      30s))
      << m.log();
  EXPECT_TRUE(LogHas(m.log(), {"target read outlasted its deadline", "pid=" + Str(victim_.pid())}))
      << m.log();
  EXPECT_EQ(Curl(m.url("/healthz")).status, 200);
  ExpectSamplesKeepComing(m, 5, "beside a target whose read never ends");
  // The innocent target is read at every tick: its entry is the latest
  // sample's own, not one carried over.
  for (int i = 0; i < 3; ++i) {
    auto [innocent_seq, report_seq] = ReadSequences(m, innocent_.pid());
    EXPECT_EQ(innocent_seq, report_seq);
  }
  Series s = m.Scrape();
  EXPECT_FALSE(Watches(s, victim_.pid())) << "the stuck target has no sample to show yet";
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
  ASSERT_TRUE(WaitFor([&] { return Watches(m.Scrape(), victim_.pid()); }, 90s)) << m.log();
  EXPECT_TRUE(LogHas(m.log(), {"target read outlasted its deadline", "pid=" + Str(victim_.pid())}))
      << m.log();
  ExpectSamplesKeepComing(m, 5, "beside a target whose reads take seconds");
  auto [innocent_seq, report_seq] = ReadSequences(m, innocent_.pid());
  EXPECT_EQ(innocent_seq, report_seq);
}

// The threads (tids) the FUSE server logged a READ of its file for, one per
// READ, in order (complete lines only: the server may be writing one).
std::vector<pid_t> ReadRequesters(const std::string& log) {
  std::vector<pid_t> tids;
  const std::string text = ReadFile(log);
  for (std::size_t at = 0, end; (end = text.find('\n', at)) != std::string::npos; at = end + 1) {
    tids.push_back(static_cast<pid_t>(std::atol(text.c_str() + at)));
  }
  return tids;
}

// /report's "read_stalled_seconds" of target `pid` (0 when absent, -1 when
// the target is not in the report).
double ReadStalledSeconds(const Memtrimd& m, pid_t pid) {
  std::optional<JsonValue> r = ParseJson(Curl(m.url("/report?format=json")).body);
  if (!r || !r->Get("targets")) return -1;
  for (const JsonValue& t : r->Get("targets")->items) {
    const JsonValue* p = t.Get("pid");
    if (!p || p->Int() != pid) continue;
    const JsonValue* stalled = t.Get("read_stalled_seconds");
    return stalled ? stalled->Number() : 0;
  }
  return -1;
}

// Tasks of `pid` in uninterruptible sleep ("D": a thread waiting for the
// mmap lock, or for a page locked while a READ brings it). /proc/<pid>/task/<tid>/stat takes no
// mmap lock.
int BlockedTasks(pid_t pid) {
  int blocked = 0;
  std::error_code ec;
  for (const fs::directory_entry& task :
       fs::directory_iterator("/proc/" + Str(pid) + "/task", ec)) {
    const std::string stat = ReadFile(task.path() / "stat");
    const std::size_t comm_end = stat.rfind(')');
    if (comm_end != std::string::npos && stat.compare(comm_end, 4, ") D ") == 0) ++blocked;
  }
  return blocked;
}

// memtrimd's threads named `name`.
int ThreadsNamed(pid_t pid, const std::string& name) {
  int n = 0;
  std::error_code ec;
  for (const fs::directory_entry& task :
       fs::directory_iterator("/proc/" + Str(pid) + "/task", ec)) {
    n += ReadFile(task.path() / "comm") == name + "\n" ? 1 : 0;
  }
  return n;
}

// A FUSE file behind a target's mapping (issue 23's variation): the target
// (tests/workloads/fuse_fault) maps "data" of a FUSE filesystem whose server
// never answers a READ; one of its threads waits inside the kernel for the
// file's first page while another maps and unmaps (a writer on its mmap
// lock). Beside it an innocent fragmenter; memtrimd watches both in node
// mode, smaps (and with it the arena heaps) read at every tick. memtrimd
// reads none of the file's contents (smaps, pagemap and the heap headers
// never fault a file page in): every READ the server logs is the target's
// own.
class FuseMappingTest : public StallTest {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to mount a FUSE filesystem";
    if (!fs::exists("/dev/fuse")) GTEST_SKIP() << "no /dev/fuse";
  }
  // `touch_args`: fuse_fault's options for how and when it reads the page.
  // memtrimd is started too unless `start_memtrimd` is false
  // (StartMemtrimd then). `sites`: both programs run with the agent
  // preloaded and memtrimd samples their allocation sites.
  void StartScene(const std::vector<std::string>& touch_args, bool start_memtrimd = true,
                  bool sites = false) {
    sites_ = sites;
    fuse_ = std::make_unique<StuckFilesystem>(dir_, -1, std::vector<std::string>{"4", reads_});
    ASSERT_TRUE(fuse_->ok()) << ReadFile(dir_ / "stuck.err");
    const std::string ready = dir_ / "fault.ready";
    std::vector<std::string> argv = {WorkloadBin("fuse_fault"), "--file", fuse_->path() + "/data",
                                     "--ready-file", ready};
    argv.insert(argv.end(), touch_args.begin(), touch_args.end());
    SpawnOptions o = ErrTo(dir_ / "fault.err");
    if (sites) o.env = {std::string("LD_PRELOAD=") + AGENT_LIB};
    target_ = Process(argv, o);
    ASSERT_TRUE(WaitFor([&] { return fs::exists(ready) || !target_.running(); }, 20s) &&
                target_.running())
        << ReadFile(dir_ / "fault.err");
    SpawnOptions io;
    if (sites) io.env = {std::string("LD_PRELOAD=") + AGENT_LIB};
    innocent_ = StartFragmenter(
        dir_, {"--threads", "2", "--rounds", "1", "--burst-mib", "8", "--keep-permille", "1000"},
        "", io);
    ASSERT_TRUE(innocent_.running());
    if (start_memtrimd) StartMemtrimd();
  }
  // Node mode watching both; `rule`: a sidecar's --target.* flag instead.
  void StartMemtrimd(const std::string& rule = "") {
    std::vector<std::string> mode = {"--targets=node",
                                     "--targets.match=(fragmenter|fuse_fault).*" + dir_.path(),
                                     "--targets.min-rss=0", "--discovery.interval=500ms"};
    if (!rule.empty()) mode = {rule};
    mode.insert(mode.end(), {"--sample.interval=1s", "--smaps.interval=1s", "--trim.interval=0"});
    if (sites_) mode.insert(mode.end(), {"--collector.sites", "--sites.interval=500ms"});
    m_ = std::make_unique<Memtrimd>(mode);
    ASSERT_TRUE(m_->started()) << m_->log();
  }
  // The process stuck (its mmap lock held by its own READ) before memtrimd
  // starts with the rule `rule_of` gives once it runs (none: node mode).
  void StartAfterTheProcessIsStuck(const std::function<std::string()>& rule_of = nullptr) {
    StartScene({"--through-proc-mem"}, /*start_memtrimd=*/false);
    ASSERT_FALSE(HasFatalFailure());
    ASSERT_TRUE(TargetWaitsOnItsRead()) << ReadFile(dir_ / "stuck.err");
    reads_before_ = ReadRequesters(reads_);
    ExpectOnlyTargetReads(reads_before_);
    StartMemtrimd(rule_of ? rule_of() : "");
  }
  // `n` processes of nobody stuck the same way (others_): the first one's
  // READ unanswered, the others waiting for that page with their own mmap
  // lock held, each with its mapping thread queued behind.
  void StartStuckProcessesOfNobody(int n) {
    const std::string shared = dir_ / "nobody";
    fs::create_directories(shared);
    fs::permissions(shared, fs::perms::all);
    fuse_ = std::make_unique<StuckFilesystem>(dir_, -1, std::vector<std::string>{"4", reads_});
    ASSERT_TRUE(fuse_->ok()) << ReadFile(dir_ / "stuck.err");
    for (int i = 0; i < n; ++i) {
      const std::string ready = shared + "/ready." + std::to_string(i);
      SpawnOptions o = ErrTo(shared + "/err." + std::to_string(i));
      o.uid = kNobodyUid;
      o.gid = kNobodyUid;
      others_.emplace_back(
          std::vector<std::string>{WorkloadBin("fuse_fault"), "--file", fuse_->path() + "/data",
                                   "--ready-file", ready, "--through-proc-mem"},
          o);
      ASSERT_TRUE(WaitFor([&] { return fs::exists(ready) || !others_.back().running(); }, 20s) &&
                  others_.back().running())
          << ReadFile(shared + "/err." + std::to_string(i));
    }
    // Each one's mapping thread waits in the kernel for the mmap lock (and
    // so do the others' reading threads, for the page the first one's READ
    // brings).
    ASSERT_TRUE(WaitFor(
        [&] {
          for (const Process& p : others_) {
            if (BlockedTasks(p.pid()) < 1) return false;
          }
          return true;
        },
        20s));
    ASSERT_EQ(ReadRequesters(reads_).size(), 1u) << "one READ, for the first of them";
  }
  // Waits until the target's READ reached the server; false if it did not.
  bool TargetWaitsOnItsRead() {
    return WaitFor([&] { return !ReadRequesters(reads_).empty(); }, 20s);
  }
  // Every READ logged came from one of the target's threads.
  void ExpectOnlyTargetReads(const std::vector<pid_t>& tids) {
    for (pid_t tid : tids) {
      EXPECT_TRUE(fs::exists("/proc/" + Str(target_.pid()) + "/task/" + Str(tid)))
          << "READ for thread " << tid << ", not one of the target's";
    }
  }
  // Both targets watched and shown, the target's resident memory (its 16
  // MiB in the main arena) among its figures.
  bool BothShown(const Series& s) {
    std::optional<double> rss = Find(s, "memtrimd_target_resident_memory_bytes",
                                     {PidLabel(target_.pid()), "kind=\"anon\""});
    return Find(s, "memtrimd_targets_watched") == 2.0 && rss && *rss > 16.0 * (1 << 20) &&
           Watches(s, innocent_.pid());
  }

  const std::string reads_ = dir_ / "reads.log";
  bool sites_ = false;
  std::vector<pid_t> reads_before_;  // StartAfterTheProcessIsStuck
  // Declared before the filesystem, so destroyed after it: a process with a
  // thread held by the FUSE server can be reaped only once that server is gone.
  std::unique_ptr<Memtrimd> m_;
  Process target_;
  std::vector<Process> others_;  // further stuck processes (another user's)
  std::unique_ptr<StuckFilesystem> fuse_;
  Process innocent_;
};

// A page fault on the file, its READ never answered. The kernel here (6.18)
// gives up the target's mmap lock (and the mapping's own lock) before it
// waits for a file page's I/O in a fault, and takes it again when retrying
// the fault after the I/O: the target's other thread keeps mapping and
// unmapping, and smaps answers at once. So the target is read at every tick
// like any other, and nothing stalls. The READ log shows memtrimd caused no
// READ.
TEST_F(FuseMappingTest, TargetFaultingOnAFileThatNeverAnswersIsReadAsUsual) {
  StartScene({});
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_TRUE(TargetWaitsOnItsRead()) << ReadFile(dir_ / "stuck.err");
  const std::vector<pid_t> before = ReadRequesters(reads_);
  ExpectOnlyTargetReads(before);
  Memtrimd& m = *m_;
  ASSERT_TRUE(WaitFor([&] { return BothShown(m.Scrape()); }, 30s)) << m.log();
  ExpectSamplesKeepComing(m, 5, "beside a target faulting on a FUSE file");
  // Both targets are read at every tick: their entries are the latest
  // sample's own.
  for (int i = 0; i < 3; ++i) {
    auto [innocent_seq, report_seq] = ReadSequences(m, innocent_.pid());
    EXPECT_EQ(innocent_seq, report_seq);
    auto [target_seq, report_seq2] = ReadSequences(m, target_.pid());
    EXPECT_EQ(target_seq, report_seq2);
  }
  Series s = m.Scrape();
  EXPECT_EQ(Find(s, "memtrimd_targets_read_stalled"), 0.0);
  // The mapping thread's arena heap, found in smaps and confirmed by its
  // header (process_vm_readv), with its blocks resident.
  EXPECT_GT(
      Find(s, "memtrimd_glibc_arena_heap_bytes", {PidLabel(target_.pid()), "state=\"resident\""})
          .value_or(0),
      0.0)
      << "the target's arena heap is read";
  EXPECT_EQ(ReadStalledSeconds(m, target_.pid()), 0.0);
  EXPECT_EQ(Curl(m.url("/healthz")).status, 200);
  // memtrimd read nothing of the file, and the target's READ is still
  // unanswered (its thread never got the byte).
  EXPECT_EQ(ReadRequesters(reads_), before);
  EXPECT_EQ(ReadFile(dir_ / "fault.err").find("read the file"), std::string::npos);
  ExpectExitsOnSigterm(m, "beside a target faulting on a FUSE file");
}

// The same page read through /proc/self/mem, started once memtrimd has read
// the target: the kernel faults it in for the remote access with the
// target's mmap lock held for read and cannot drop it (a remote access does
// not retry), so the other thread's next mmap waits for write, and every
// later reader of that lock (smaps, pagemap, the heap headers) waits behind
// it, for good. The target's read outlasts its deadline and is carried as
// read_stalled; the innocent target is read at every tick, /healthz answers
// and SIGTERM ends memtrimd (its stuck read waits killably for the lock).
// Were the target read on the sampling thread, no sample would come after
// the stall and /healthz would turn 503.
TEST_F(FuseMappingTest, TargetHoldingItsMmapLockOnAFuseReadHoldsOnlyItsOwnRead) {
  const std::string go = dir_ / "go";
  StartScene({"--through-proc-mem", "--go-file", go});
  ASSERT_FALSE(HasFatalFailure());
  Memtrimd& m = *m_;
  // Read once before it is stuck: it is then a watched target (the next
  // test finds it stuck).
  ASSERT_TRUE(WaitFor([&] { return BothShown(m.Scrape()); }, 30s)) << m.log();
  ASSERT_TRUE(ReadRequesters(reads_).empty());
  { std::ofstream(go.c_str()) << "go\n"; }
  ASSERT_TRUE(TargetWaitsOnItsRead()) << ReadFile(dir_ / "stuck.err");
  const std::vector<pid_t> before = ReadRequesters(reads_);
  ExpectOnlyTargetReads(before);
  ASSERT_TRUE(
      WaitFor([&] { return Find(m.Scrape(), "memtrimd_targets_read_stalled") == 1.0; }, 30s))
      << m.log();
  EXPECT_TRUE(LogHas(m.log(), {"target read outlasted its deadline", "pid=" + Str(target_.pid())}))
      << m.log();
  EXPECT_EQ(Curl(m.url("/healthz")).status, 200);
  ExpectSamplesKeepComing(m, 5, "beside a target whose mmap lock a FUSE read holds");
  for (int i = 0; i < 3; ++i) {
    auto [innocent_seq, report_seq] = ReadSequences(m, innocent_.pid());
    EXPECT_EQ(innocent_seq, report_seq);
    auto [target_seq, report_seq2] = ReadSequences(m, target_.pid());
    EXPECT_GE(target_seq, 0) << "the stuck target is still in the report";
    EXPECT_LT(target_seq, report_seq2) << "the stuck target's sample is carried";
  }
  EXPECT_GT(ReadStalledSeconds(m, target_.pid()), 0.0);
  EXPECT_EQ(Find(m.Scrape(), "memtrimd_targets_read_stalled"), 1.0);
  EXPECT_EQ(ReadRequesters(reads_), before);
  ExpectExitsOnSigterm(m, "beside a target whose mmap lock a FUSE read holds");
}

// Each thread of `pid` by name and its kernel stack (root reads them): where
// memtrimd's threads wait, printed when a wait test fails.
std::string KernelStacks(pid_t pid) {
  std::string out;
  std::error_code ec;
  for (const fs::directory_entry& task :
       fs::directory_iterator("/proc/" + Str(pid) + "/task", ec)) {
    out += ReadFile(task.path() / "comm") + ReadFile(task.path() / "stack") + "\n";
  }
  return out;
}

// When memtrimd reads /report's sites of target `pid` (their read_seconds),
// 0 while it has none.
double SitesReadSeconds(const Memtrimd& m, pid_t pid) {
  std::optional<JsonValue> r = ParseJson(Curl(m.url("/report?format=json")).body);
  if (!r || !r->Get("targets")) return 0;
  for (const JsonValue& t : r->Get("targets")->items) {
    const JsonValue* p = t.Get("pid");
    if (!p || p->Int() != pid) continue;
    const JsonValue* at = t.Path({"sites", "read_seconds"});
    return at ? at->Number() : 0;
  }
  return 0;
}

// The same stuck target, with the agent preloaded into it and into the
// innocent fragmenter, and memtrimd sampling both one's allocation sites
// (--collector.sites, node mode: one sites read builds at a time on the
// node). The stuck target's sites read waits in its pagemap and maps reads
// for good; it must not hold the node's builder while it does: the
// innocent's sites are read again and again.
TEST_F(FuseMappingTest, TargetHoldingItsMmapLockHoldsNoOtherTargetsSites) {
  const std::string go = dir_ / "go";
  StartScene({"--through-proc-mem", "--go-file", go}, true, /*sites=*/true);
  ASSERT_FALSE(HasFatalFailure());
  Memtrimd& m = *m_;
  ASSERT_TRUE(WaitFor(
      [&] {
        return BothShown(m.Scrape()) && SitesReadSeconds(m, target_.pid()) > 0 &&
               SitesReadSeconds(m, innocent_.pid()) > 0;
      },
      60s))
      << m.log();
  { std::ofstream(go.c_str()) << "go\n"; }
  ASSERT_TRUE(TargetWaitsOnItsRead()) << ReadFile(dir_ / "stuck.err");
  ASSERT_TRUE(
      WaitFor([&] { return Find(m.Scrape(), "memtrimd_targets_read_stalled") == 1.0; }, 30s))
      << m.log();
  const double stuck_at =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  // Reads of the innocent's sites that began after the target was stuck,
  // three of them: no one-time luck.
  double last = SitesReadSeconds(m, innocent_.pid());
  int fresh = 0;
  ASSERT_TRUE(WaitFor(
      [&] {
        const double at = SitesReadSeconds(m, innocent_.pid());
        if (at > stuck_at && at > last) {
          ++fresh;
          last = at;
        }
        return fresh >= 3;
      },
      60s))
      << "the innocent's sites stopped at " << last << " (stuck at " << stuck_at << ")\n"
      << m.log() << KernelStacks(m.process().pid());
  EXPECT_EQ(Curl(m.url("/healthz")).status, 200);
  EXPECT_EQ(ReadRequesters(reads_).size(), 1u) << "memtrimd caused no READ";
  ExpectExitsOnSigterm(m, "beside a target whose sites read waits on its mmap lock");
}

// The same process already stuck when memtrimd starts: node discovery's first
// look at it (maps, cmdline, environ) waits for the lock too. It runs on a
// thread of its own (ProcessLook), so the process is counted as
// read_stalled and not watched, while the innocent target is found and
// sampled, /healthz answers and SIGTERM ends memtrimd. On the sampling thread
// the first scan never ended: the port never opened.
TEST_F(FuseMappingTest, ProcessAlreadyHoldingItsMmapLockWhenFoundHoldsOnlyItsOwnLook) {
  StartAfterTheProcessIsStuck();
  ASSERT_FALSE(HasFatalFailure());
  const std::vector<pid_t>& before = reads_before_;
  Memtrimd& m = *m_;
  // Another test's stuck process may be on the node too: at least this one.
  const auto stalled = [](const Series& s) {
    return Find(s, "memtrimd_targets_skipped", {"reason=\"read_stalled\""}).value_or(0);
  };
  ASSERT_TRUE(WaitFor(
      [&] {
        Series s = m.Scrape();
        return Watches(s, innocent_.pid()) && stalled(s) >= 1.0;
      },
      30s))
      << m.log();
  EXPECT_TRUE(LogHas(m.log(), {"processes whose first read has not ended"})) << m.log();
  EXPECT_EQ(Curl(m.url("/healthz")).status, 200);
  ExpectSamplesKeepComing(m, 5, "beside a process found with its mmap lock held");
  Series s = m.Scrape();
  EXPECT_FALSE(Watches(s, target_.pid())) << "not watched while its first look waits";
  EXPECT_EQ(Find(s, "memtrimd_targets_watched"), 1.0);
  EXPECT_GE(stalled(s), 1.0);
  EXPECT_EQ(ReadRequesters(reads_), before);
  ExpectExitsOnSigterm(m, "beside a process found with its mmap lock held");
}

// A sidecar whose --target.match rule reads the command line of every
// process it can see, the stuck one among them: that read waits for the
// lock on a thread of its own for at most 200 ms, the process is passed
// over (logged), and the match, the innocent fragmenter, is found and
// sampled. On the sampling thread the first search never ended.
TEST_F(FuseMappingTest, SidecarMatchPassesOverAProcessWhoseCommandLineDoesNotCome) {
  StartAfterTheProcessIsStuck([&] { return "--target.match=fragmenter.*" + dir_.path(); });
  ASSERT_FALSE(HasFatalFailure());
  Memtrimd& m = *m_;
  ASSERT_TRUE(WaitFor([&] { return Watches(m.Scrape(), innocent_.pid()); }, 30s)) << m.log();
  EXPECT_TRUE(LogHas(m.log(), {"processes whose command line did not come in time"})) << m.log();
  EXPECT_EQ(Curl(m.url("/healthz")).status, 200);
  ExpectSamplesKeepComing(m, 3, "sidecar matching beside a process found with its mmap lock held");
  EXPECT_EQ(Find(m.Scrape(), "memtrimd_targets_watched"), 1.0);
  EXPECT_EQ(ReadRequesters(reads_), reads_before_);
  ExpectExitsOnSigterm(m, "sidecar matching beside a process found with its mmap lock held");
}

// A sidecar told to watch the stuck process itself (--target.pid): the
// search's read of its maps waits for good on a thread of its own. memtrimd
// says why it has no target, keeps publishing samples (/healthz answers),
// starts no second search, and SIGTERM ends it.
TEST_F(FuseMappingTest, SidecarWhoseTargetHoldsItsMmapLockSaysSoAndStaysResponsive) {
  StartAfterTheProcessIsStuck([&] { return "--target.pid=" + Str(target_.pid()); });
  ASSERT_FALSE(HasFatalFailure());
  Memtrimd& m = *m_;
  ASSERT_TRUE(WaitFor(
      [&] {
        std::optional<JsonValue> r = ParseJson(Curl(m.url("/report?format=json")).body);
        const JsonValue* why = r ? r->Get("no_target_reason") : nullptr;
        return why && why->text.rfind("the search for the target has run", 0) == 0;
      },
      30s))
      << m.log();
  EXPECT_TRUE(LogHas(m.log(), {"no target", "the search for the target has run"})) << m.log();
  EXPECT_EQ(Curl(m.url("/healthz")).status, 200);
  ExpectSamplesKeepComing(m, 3, "sidecar whose target holds its mmap lock");
  Series s = m.Scrape();
  EXPECT_EQ(Find(s, "memtrimd_target_up"), 0.0);
  EXPECT_EQ(Find(s, "memtrimd_targets_watched"), 0.0);
  // One search thread, however many ticks passed.
  EXPECT_EQ(ThreadsNamed(m.process().pid(), "memtrimd-select"), 1);
  EXPECT_EQ(ReadRequesters(reads_), reads_before_);
  ExpectExitsOnSigterm(m, "sidecar whose target holds its mmap lock");
}

// Ten processes of one unprivileged user stuck the same way (the first one's
// READ unanswered, the others waiting for that page with their own mmap lock
// held, each with its mapping thread queued behind): discovery's looks at
// them that do not end hold at most 4 of memtrimd's threads (kLooksPerUid),
// however many scans pass; every one of the ten is counted as read_stalled,
// and the innocent target is found and sampled. So is a healthy process of
// the same user started after them: past the cap, a process none of whose
// threads waits uninterruptibly is looked at anyway (before, the user's
// stuck processes hid it for good). Root's own stuck processes (another case
// running beside this one) may hold up to 4 more threads.
TEST_F(FuseMappingTest, StuckProcessesOfOneUserHoldAtMostFourThreadsAndHideNoOtherProcess) {
  constexpr int kStuck = 10;
  StartStuckProcessesOfNobody(kStuck);
  ASSERT_FALSE(HasFatalFailure());
  const std::string shared = dir_ / "nobody";
  SpawnOptions as_nobody = ErrTo(shared + "/healthy.err");
  as_nobody.uid = kNobodyUid;
  as_nobody.gid = kNobodyUid;
  Process healthy(
      {FragmenterBin(), "--quiet", "--ready-file", shared + "/healthy.ready", "--threads", "2",
       "--rounds", "1", "--burst-mib", "8", "--keep-permille", "1000"},
      as_nobody);
  ASSERT_TRUE(
      WaitFor([&] { return fs::exists(shared + "/healthy.ready") || !healthy.running(); }, 20s) &&
      healthy.running())
      << ReadFile(shared + "/healthy.err");
  innocent_ = StartFragmenter(
      dir_, {"--threads", "2", "--rounds", "1", "--burst-mib", "8", "--keep-permille", "1000"});
  ASSERT_TRUE(innocent_.running());
  StartMemtrimd();
  ASSERT_FALSE(HasFatalFailure());
  Memtrimd& m = *m_;
  ASSERT_TRUE(WaitFor(
      [&] {
        Series s = m.Scrape();
        return Watches(s, innocent_.pid()) && Watches(s, healthy.pid()) &&
               Find(s, "memtrimd_targets_skipped", {"reason=\"read_stalled\""}).value_or(0) >=
                   kStuck;
      },
      30s))
      << m.log();
  // Several more scans (every 500 ms) while samples keep coming.
  ExpectSamplesKeepComing(m, 4, "beside ten processes of one user found with their mmap lock held");
  const int looks = ThreadsNamed(m.process().pid(), "memtrimd-look");
  std::cout << "threads left on stuck looks: " << looks << "\n";
  EXPECT_GE(looks, 4) << "the user's first four looks wait";
  EXPECT_LE(looks, 8) << "at most 4 for the user's ten, and 4 for root's";
  EXPECT_EQ(Curl(m.url("/healthz")).status, 200);
  EXPECT_EQ(ReadRequesters(reads_).size(), 1u) << "memtrimd caused no READ";
  ExpectExitsOnSigterm(m, "beside ten processes of one user found with their mmap lock held");
}

// A sidecar's --target.match search waits 500 ms in all for command lines
// that do not come, and keeps at most 8 such reads running. Ten stuck
// processes between a small match (read first: lower pid) and a larger one
// spend both: a search whose wait ran out picks nothing and goes again,
// passing over the stuck ones it knows at once, and past the 8 reads a new
// process none of whose threads waits uninterruptibly is still read, so the
// larger match is taken. Before, the processes after the spent wait were
// passed over and the sidecar took the smaller match for good (and past 8
// reads, every new process was passed over).
TEST_F(FuseMappingTest,
       SidecarMatchTakesTheLargestMatchBesideTenProcessesWhoseCommandLinesDoNotCome) {
  // The small match: the innocent fragmenter of the other cases.
  innocent_ = StartFragmenter(
      dir_, {"--threads", "2", "--rounds", "1", "--burst-mib", "8", "--keep-permille", "1000"});
  ASSERT_TRUE(innocent_.running());
  StartStuckProcessesOfNobody(10);
  ASSERT_FALSE(HasFatalFailure());
  Process large = StartFragmenter(
      dir_, {"--threads", "2", "--rounds", "1", "--burst-mib", "64", "--keep-permille", "1000"});
  ASSERT_TRUE(large.running());
  // The scan reads /proc in pid order; a wrapped pid counter would put the
  // large match first, and the case would not be what it says.
  for (const Process& p : others_) {
    if (!(innocent_.pid() < p.pid() && p.pid() < large.pid())) {
      GTEST_SKIP() << "pids wrapped: " << innocent_.pid() << ", " << p.pid() << ", " << large.pid();
    }
  }
  // The truth: the large match holds more (VmRSS, what the rule compares).
  const auto vm_rss = [](pid_t pid) {
    StatusNumbers n = ReadStatusIndependently(pid);
    return n.rss_anon + n.rss_file + n.rss_shmem;
  };
  const uint64_t small_rss = vm_rss(innocent_.pid());
  const uint64_t large_rss = vm_rss(large.pid());
  ASSERT_GT(large_rss, small_rss + 32 * (1u << 20));
  StartMemtrimd("--target.match=fragmenter.*" + dir_.path());
  ASSERT_FALSE(HasFatalFailure());
  Memtrimd& m = *m_;
  ASSERT_TRUE(WaitFor(
      [&] {
        Series s = m.Scrape();
        return Watches(s, large.pid()) || Watches(s, innocent_.pid());
      },
      30s))
      << m.log();
  Series s = m.Scrape();
  EXPECT_TRUE(Watches(s, large.pid())) << m.log();
  EXPECT_FALSE(Watches(s, innocent_.pid())) << "the smaller match, read before the wait ran out";
  EXPECT_TRUE(LogHas(m.log(), {"were not read in this search"})) << m.log();
  EXPECT_EQ(Curl(m.url("/healthz")).status, 200);
  EXPECT_EQ(ReadRequesters(reads_).size(), 1u) << "memtrimd caused no READ";
  ExpectExitsOnSigterm(m, "sidecar matching beside ten processes with their mmap lock held");
}

}  // namespace
}  // namespace memtrimd::testing
