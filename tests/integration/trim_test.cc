// Trimming through memtrimd: the agent backend on the fragmenting workload,
// the JVM backend on a JVM that churns native memory, the schedule and its
// backoff, the skip when the JVM trims itself, and the HTTP trim API.

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <regex>

#include "collectors/procfs/target_reader.h"
#include "daemon/trim/trim.h"
#include "daemon/trim/trim_heaps.h"
#include "tests/integration/harness.h"
#include "tests/integration/web_fixtures.h"

namespace memtrimd::testing {
namespace {

namespace fs = std::filesystem;

double JsonNumber(const std::string& json, const std::string& key) {
  std::smatch m;
  std::regex re("\"" + key + "\":(-?[0-9.e+]+)");
  return std::regex_search(json, m, re) ? std::stod(m[1]) : NAN;
}

uint64_t RssSwap(pid_t pid) {
  StatusNumbers s = ReadStatusIndependently(pid);
  return s.rss_anon + s.rss_file + s.rss_shmem + s.vm_swap;
}

const char* kJava17 = "/usr/lib/jvm/java-17-openjdk-amd64/bin/java";

class TrimTest : public ::testing::Test {
 protected:
  Process StartChurningJvm(std::vector<std::string> flags) {
    std::string ready = dir_ / ("jvm." + std::to_string(++count_) + ".ready");
    std::vector<std::string> argv = {kJava17};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), {"-cp", JAVA_WORKLOADS_CLASSPATH, "NativeChurn", "--threads", "12",
                             "--quiet", "--ready-file", ready});
    Process p(argv);
    if (!WaitFor([&] { return fs::exists(ready) || !p.running(); }, 90s) || !p.running()) p.Kill();
    return p;
  }
  TempDir dir_;
  int count_ = 0;
};

TEST_F(TrimTest, AgentTrimGivesBackMostOfTheArenaHeaps) {
  SpawnOptions o;
  o.env = {std::string("LD_PRELOAD=") + AGENT_LIB};
  Process frag =
      StartFragmenter(dir_, {"--threads", "8", "--rounds", "2", "--burst-mib", "16"}, "", o);
  ASSERT_TRUE(frag.running());
  IndependentHeaps before = CountHeaps(ReadSmapsIndependently(frag.pid()));
  uint64_t rss_before = RssSwap(frag.pid());
  RunResult r = RunCommand({MemtrimdBin(), "trim", "--pid", std::to_string(frag.pid()), "--json"});
  IndependentHeaps after = CountHeaps(ReadSmapsIndependently(frag.pid()));
  uint64_t rss_after = RssSwap(frag.pid());
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("\"backend\":\"agent\""), std::string::npos) << r.out;
  ASSERT_GT(before.resident, 32u << 20);
  EXPECT_LE(after.resident, before.resident / 2)
      << "arena heaps " << before.resident << " -> " << after.resident;
  double mine = static_cast<double>(rss_before) - static_cast<double>(rss_after);
  double theirs = JsonNumber(r.out, "reclaimed_rss_swap_bytes");
  EXPECT_LT(std::fabs(theirs - mine) / mine, 0.05) << theirs << " vs " << mine;
  EXPECT_GT(JsonNumber(r.out, "reported_bytes"), 0) << "the agent's own figure";
  // `trim --json` lists each arena heap before and after: as many as the
  // test's own smaps read found before the trim.
  std::size_t listed = 0;
  for (std::size_t at = r.out.find("\"before_resident_bytes\":"); at != std::string::npos;
       at = r.out.find("\"before_resident_bytes\":", at + 1)) {
    ++listed;
  }
  EXPECT_EQ(listed, before.count) << r.out;
}

// Each arena heap's resident bytes before and after a trim, from the same
// smaps reads as the arena total: the heaps after the trim sum to that total,
// and the fragmenter's heaps shrank.
TEST_F(TrimTest, PerHeapFiguresAddUpAndShowTheHeapsThatShrank) {
  SpawnOptions o;
  o.env = {std::string("LD_PRELOAD=") + AGENT_LIB};
  Process frag =
      StartFragmenter(dir_, {"--threads", "8", "--rounds", "2", "--burst-mib", "16"}, "", o);
  ASSERT_TRUE(frag.running());
  Result<Target> t = procfs::ReadTarget("/proc", frag.pid());
  ASSERT_TRUE(t.ok()) << t.status().message();
  TrimOptions options;
  options.backend = TrimBackendKind::kAgent;
  Result<TrimResult> r = TrimNow(*t, options);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(r->success) << r->error;
  ASSERT_TRUE(r->before.arena_resident_bytes.has_value());
  ASSERT_TRUE(r->after.arena_resident_bytes.has_value());
  ASSERT_GE(r->before.arena_heaps.size(), 8u);  // a heap per worker thread at least

  std::vector<HeapTrimDelta> heaps = PairHeaps(r->before, r->after);
  uint64_t sum_before = 0;
  uint64_t sum_after = 0;
  std::size_t shrank = 0;
  for (const HeapTrimDelta& h : heaps) {
    sum_before += h.before_resident.value_or(0);
    sum_after += h.after_resident.value_or(0);
    if (h.Change().value_or(0) < 0) ++shrank;
  }
  EXPECT_EQ(sum_before, *r->before.arena_resident_bytes);
  EXPECT_EQ(sum_after, *r->after.arena_resident_bytes);
  EXPECT_GE(shrank, 1u);
  EXPECT_LT(sum_after, sum_before);
}

// "trimmable" is what the next trim gives back, before a first trim (with a
// free main arena top, which malloc_trim gives back by lowering brk: an
// estimate once left it out, 181 MiB estimated, 218 MiB given) and after
// one, two and three trims, when malloc_info still lists every free chunk
// whose pages the trims dropped (an estimate once offered 117.6 MiB of
// them again, and the trim gave back 0). What went back is the test's own
// reading of /proc/<pid>/status around each trim (the idle workload changes
// nothing meanwhile). The allocator section's free memory and the RSS
// account's say the same.
TEST_F(TrimTest, TrimmableEstimateIsWhatTheNextTrimGivesBack) {
  SpawnOptions o;
  o.env = {std::string("LD_PRELOAD=") + AGENT_LIB};
  Process frag = StartFragmenter(
      dir_, {"--threads", "4", "--rounds", "1", "--burst-mib", "16", "--main-top-mib", "48"}, "",
      o);
  ASSERT_TRUE(frag.running());
  const std::string pid = std::to_string(frag.pid());
  double first_given = 0;
  for (int trim = 1; trim <= 4; ++trim) {
    SCOPED_TRACE("trim " + std::to_string(trim));
    RunResult inspect = RunCommand({MemtrimdBin(), "inspect", "--pid", pid, "--json"});
    ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
    // One malloc object, from the agent.
    EXPECT_EQ(inspect.out.find("\"malloc\":{\"source\":\"agent\""),
              inspect.out.rfind("\"malloc\":{"))
        << inspect.out;
    const double estimate = JsonNumber(inspect.out, "trimmable_estimate_bytes");
    ASSERT_FALSE(std::isnan(estimate)) << inspect.out;
    // One figure of free memory everywhere: the account's glibc free kept is
    // the allocator's free_kept, and what a release gives is the estimate.
    EXPECT_EQ(JsonNumber(inspect.out, "glibc_free_bytes"),
              JsonNumber(inspect.out, "free_kept_bytes"))
        << inspect.out;
    EXPECT_EQ(JsonNumber(inspect.out, "release_gives_bytes"), estimate) << inspect.out;
    EXPECT_LE(estimate, JsonNumber(inspect.out, "glibc_free_bytes")) << inspect.out;
    const uint64_t rss_before = RssSwap(frag.pid());
    RunResult r = RunCommand({MemtrimdBin(), "trim", "--pid", pid, "--json"});
    const uint64_t rss_after = RssSwap(frag.pid());
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    const double given = rss_before > rss_after ? static_cast<double>(rss_before - rss_after) : 0;
    if (trim == 1) {
      // The 48 MiB top went back (so this test can fail), and memtrimd
      // measured what went back.
      ASSERT_GT(given, 48.0 * (1 << 20)) << r.out;
      double reported = JsonNumber(r.out, "reclaimed_rss_swap_bytes");
      EXPECT_LT(std::fabs(reported - given) / given, 0.05) << reported << " vs " << given;
      first_given = given;
    }
    // Within 5 % of what the first trim gave back: before it, that is 5 % of
    // what it gives; after it, the estimate and the trim are both about 0.
    EXPECT_LE(std::fabs(estimate - given), 0.05 * first_given)
        << "estimate " << estimate << ", the trim gave back " << given << "\n"
        << inspect.out;
  }
}

TEST_F(TrimTest, AgentMallocInfoFeedsTheGlibcMallocMetrics) {
  SpawnOptions o;
  o.env = {std::string("LD_PRELOAD=") + AGENT_LIB};
  Process frag =
      StartFragmenter(dir_, {"--threads", "4", "--rounds", "1", "--burst-mib", "8"}, "", o);
  ASSERT_TRUE(frag.running());
  Memtrimd m({"--target.pid=" + std::to_string(frag.pid()), "--sample.interval=200ms",
              "--smaps.interval=200ms", "--trim.interval=0"});
  ASSERT_TRUE(m.started()) << m.log();
  Series s;
  ASSERT_TRUE(WaitFor(
      [&] {
        s = m.Scrape();
        return Find(s, "memtrimd_glibc_malloc_arenas").has_value();
      },
      10s))
      << m.log();
  // Four worker threads' arenas and the main arena.
  EXPECT_EQ(Find(s, "memtrimd_glibc_malloc_arenas"), 5.0);
  EXPECT_GT(Find(s, "memtrimd_glibc_malloc_system_bytes").value_or(0), 8.0 * (1 << 20));
  EXPECT_GT(Find(s, "memtrimd_glibc_malloc_free_bytes", {"rest"}).value_or(0), 0);
  EXPECT_TRUE(Find(s, "memtrimd_glibc_trimmable_estimate_bytes").has_value());
  EXPECT_EQ(Find(s, "memtrimd_collector_success", {"\"agent\""}), 1.0);
  RunResult inspect = RunCommand({MemtrimdBin(), "inspect", "--pid", std::to_string(frag.pid())});
  EXPECT_NE(inspect.out.find("backend: agent"), std::string::npos) << inspect.out;
  EXPECT_NE(inspect.out.find("through the agent"), std::string::npos) << inspect.out;
}

TEST_F(TrimTest, ScheduledTrimsUseTheAgentAndCountASkipWithoutIt) {
  SpawnOptions o;
  o.env = {std::string("LD_PRELOAD=") + AGENT_LIB};
  Process with =
      StartFragmenter(dir_, {"--threads", "4", "--rounds", "1", "--burst-mib", "8"}, "", o);
  Process without = StartFragmenter(dir_, {"--threads", "1", "--rounds", "1", "--burst-mib", "1"});
  ASSERT_TRUE(with.running() && without.running());
  const std::vector<std::string> flags = {"--sample.interval=200ms", "--trim.interval=1s",
                                          "--trim.jitter=0"};
  std::vector<std::string> a = flags, b = flags;
  a.push_back("--target.pid=" + std::to_string(with.pid()));
  b.push_back("--target.pid=" + std::to_string(without.pid()));
  Memtrimd m_with(a), m_without(b);
  ASSERT_TRUE(m_with.started() && m_without.started()) << m_with.log() << m_without.log();
  Series with_trimmed;
  EXPECT_TRUE(WaitFor(
      [&] {
        with_trimmed = m_with.Scrape();
        return Find(with_trimmed, "memtrimd_trim_runs_total", {"success", "scheduled"})
                   .value_or(0) >= 1;
      },
      15s))
      << m_with.log();
  // What the trims gave back in all: on a busy machine a second trim (one a
  // second) may come before the scrape, and it finds nothing left, so the
  // last trim's figure alone would be 0.
  EXPECT_GT(Find(with_trimmed, "memtrimd_trim_reclaimed_bytes_total").value_or(0), 1 << 20)
      << "runs: "
      << Find(with_trimmed, "memtrimd_trim_runs_total", {"success", "scheduled"}).value_or(0)
      << "\n"
      << m_with.log();
  // The last trim's own figure, from the same scrape: it is the whole total
  // when that scrape counted one trim (as it nearly always does; trims come
  // a second apart and the scrapes 20 ms apart).
  const double runs =
      Find(with_trimmed, "memtrimd_trim_runs_total", {"success", "scheduled"}).value_or(0);
  const std::optional<double> last =
      Find(with_trimmed, "memtrimd_trim_last_reclaimed_bytes", {"rss_swap"});
  ASSERT_TRUE(last.has_value()) << m_with.log();
  if (runs == 1) {
    EXPECT_EQ(*last, Find(with_trimmed, "memtrimd_trim_reclaimed_bytes_total").value_or(-1));
  }
  EXPECT_TRUE(WaitFor(
      [&] {
        return Find(m_without.Scrape(), "memtrimd_trim_runs_total", {"skipped", "no_agent"})
            .has_value();
      },
      15s))
      << m_without.log();
  EXPECT_EQ(Find(m_without.Scrape(), "memtrimd_trim_runs_total", {"success", "scheduled"}), 0.0);
}

TEST_F(TrimTest, ProgramWithoutAgentOrJvmCannotBeTrimmed) {
  Process frag = StartFragmenter(dir_, {"--threads", "1", "--rounds", "1", "--burst-mib", "1"});
  ASSERT_TRUE(frag.running());
  RunResult r = RunCommand({MemtrimdBin(), "trim", "--pid", std::to_string(frag.pid())});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("libmemtrimd_agent.so is not loaded"), std::string::npos) << r.err;
  EXPECT_TRUE(frag.running());
  RunResult inspect = RunCommand({MemtrimdBin(), "inspect", "--pid", std::to_string(frag.pid())});
  EXPECT_NE(inspect.out.find("no backend: not a JVM"), std::string::npos) << inspect.out;
}

TEST_F(TrimTest, JvmIsTrimmedOnScheduleAndBacksOffWhenTrimsStopPaying) {
  if (!fs::exists(kJava17)) GTEST_SKIP() << "no OpenJDK 17";
  Process jvm = StartChurningJvm({});
  ASSERT_TRUE(jvm.running());
  // One trim that pays, then trims that give back ~0: with one unproductive
  // run allowed, the interval doubles after the second trim.
  Memtrimd m({"--target.pid=" + std::to_string(jvm.pid()), "--sample.interval=200ms",
              "--jvm.interval=1s", "--trim.interval=1s", "--trim.jitter=0", "--trim.floor=256KiB",
              "--trim.unproductive-runs=1", "--trim.max-interval=8s"});
  ASSERT_TRUE(m.started()) << m.log();
  Series s;
  ASSERT_TRUE(WaitFor(
      [&] {
        s = m.Scrape();
        return Find(s, "memtrimd_trim_runs_total", {"success", "scheduled"}).value_or(0) >= 2;
      },
      30s))
      << m.log();
  EXPECT_GT(Find(s, "memtrimd_trim_reclaimed_bytes_total").value_or(0), 0) << m.log();
  EXPECT_TRUE(Find(s, "memtrimd_trim_last_reclaimed_bytes", {"reported"}).has_value())
      << "the JVM's own report is parsed";
  EXPECT_TRUE(Find(s, "memtrimd_trim_last_success_timestamp_seconds").has_value());
  EXPECT_GE(Find(s, "memtrimd_trim_duration_seconds_count").value_or(0), 2);
  // The second trim gave back ~0 (less than the floor): backoff.
  ASSERT_TRUE(WaitFor(
      [&] { return Find(m.Scrape(), "memtrimd_trim_interval_seconds").value_or(0) >= 2; }, 20s))
      << m.log();
  std::string log = m.log();
  EXPECT_NE(log.find("msg=\"trim done\""), std::string::npos);
  EXPECT_NE(log.find("backend=jvm"), std::string::npos);
  std::string report = Curl(m.url("/report")).body;
  EXPECT_NE(report.find("Trimming (backend auto)"), std::string::npos) << report;
  EXPECT_NE(report.find("jvm scheduled: gave back"), std::string::npos) << report;
}

TEST_F(TrimTest, JvmThatTrimsItselfIsSkippedUnlessForced) {
  if (!fs::exists(kJava17)) GTEST_SKIP() << "no OpenJDK 17";
  Process jvm =
      StartChurningJvm({"-XX:+UnlockExperimentalVMOptions", "-XX:TrimNativeHeapInterval=60000"});
  if (!jvm.running()) GTEST_SKIP() << "this JDK has no TrimNativeHeapInterval";
  Memtrimd m({"--target.pid=" + std::to_string(jvm.pid()), "--sample.interval=200ms",
              "--jvm.interval=500ms", "--trim.interval=1s", "--trim.jitter=0"});
  ASSERT_TRUE(m.started()) << m.log();
  Series s;
  ASSERT_TRUE(WaitFor(
      [&] {
        s = m.Scrape();
        return Find(s, "memtrimd_trim_runs_total", {"skipped", "jvm_trims_itself"}).has_value();
      },
      30s))
      << m.log();
  EXPECT_EQ(Find(s, "memtrimd_trim_runs_total", {"success", "scheduled"}), 0.0);
  // A setting: said as advice, not a risk.
  EXPECT_FALSE(Find(s, "memtrimd_jvm_risk", {"jvm_trims_itself"}).has_value());
  std::string report = Curl(m.url("/report")).body;
  EXPECT_NE(report.find("skip (jvm_trims_itself)"), std::string::npos) << report;
  EXPECT_NE(report.find("advice (jvm_trims_itself)"), std::string::npos) << report;
}

TEST_F(TrimTest, TrimApiIsOffByDefaultAndServesPostWhenEnabled) {
  SpawnOptions o;
  o.env = {std::string("LD_PRELOAD=") + AGENT_LIB};
  Process frag =
      StartFragmenter(dir_, {"--threads", "4", "--rounds", "1", "--burst-mib", "8"}, "", o);
  ASSERT_TRUE(frag.running());
  {
    Memtrimd off({"--target.pid=" + std::to_string(frag.pid())});
    ASSERT_TRUE(off.started()) << off.log();
    EXPECT_EQ(Curl(off.url("/api/v1/trim"), {"-X", "POST"}).status, 404);
  }
  TempDir web;
  Memtrimd on({"--target.pid=" + std::to_string(frag.pid()), "--web.enable-trim-api",
               "--web.config.file=" + WriteBasicAuthConfig(web), "--sample.interval=200ms"});
  ASSERT_TRUE(on.started()) << on.log();
  const std::vector<std::string> alice = {"-u", "alice:secret"};
  EXPECT_EQ(Curl(on.url("/api/v1/trim"), {"-X", "POST"}).status, 401) << "no credentials";
  EXPECT_EQ(Curl(on.url("/api/v1/trim"), {"-X", "POST", "-u", "alice:guess"}).status, 401);
  EXPECT_EQ(Curl(on.url("/api/v1/trim"), alice).status, 405) << "GET must not trim";
  HttpResponse r = Curl(on.url("/api/v1/trim"), {"-X", "POST", "-u", "alice:secret"});
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find("\"success\":true"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("\"trigger\":\"manual\""), std::string::npos) << r.body;
  Series s = ParseExposition(Curl(on.url(), alice).body);
  EXPECT_EQ(Find(s, "memtrimd_trim_runs_total", {"success", "manual"}), 1.0);
}

// A browser that has the credentials cached sends them with a form POST
// another site's page makes: refused by what the browser says of the page
// (Sec-Fetch-Site, else Origin). Clients that send neither header are served,
// three trims at once and then one every 10 s.
TEST_F(TrimTest, TrimApiRefusesOtherSitesPagesAndLimitsTheRate) {
  SpawnOptions o;
  o.env = {std::string("LD_PRELOAD=") + AGENT_LIB};
  Process frag =
      StartFragmenter(dir_, {"--threads", "2", "--rounds", "1", "--burst-mib", "4"}, "", o);
  ASSERT_TRUE(frag.running());
  TempDir web;
  Memtrimd m({"--target.pid=" + std::to_string(frag.pid()), "--web.enable-trim-api",
              "--web.config.file=" + WriteBasicAuthConfig(web), "--sample.interval=200ms"});
  ASSERT_TRUE(m.started()) << m.log();
  auto post = [&](std::vector<std::string> headers) {
    std::vector<std::string> args = {"-X", "POST", "-u", "alice:secret"};
    for (const std::string& h : headers) {
      args.push_back("-H");
      args.push_back(h);
    }
    return Curl(m.url("/api/v1/trim"), args);
  };
  const std::string self = "http://127.0.0.1:" + std::to_string(m.port());
  HttpResponse r = post({"Origin: https://evil.example", "Sec-Fetch-Site: cross-site"});
  EXPECT_EQ(r.status, 403) << r.body;
  EXPECT_EQ(post({"Origin: https://evil.example"}).status, 403) << "Origin alone";
  EXPECT_EQ(post({"Origin: " + self, "Sec-Fetch-Site: same-site"}).status, 403);
  EXPECT_EQ(post({"Origin: null"}).status, 403);
  Series s = ParseExposition(Curl(m.url(), {"-u", "alice:secret"}).body);
  EXPECT_EQ(Find(s, "memtrimd_trim_runs_total", {"success", "manual"}).value_or(0), 0.0)
      << "a refused request trims nothing";

  // memtrimd's own pages, then plain clients: three in a row, then 429.
  r = post({"Origin: " + self, "Sec-Fetch-Site: same-origin"});
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(post({}).status, 200);
  EXPECT_EQ(post({}).status, 200);
  r = post({});
  EXPECT_EQ(r.status, 429) << r.body;
  std::smatch retry;
  EXPECT_TRUE(std::regex_search(r.headers, retry, std::regex("Retry-After: ([0-9]+)")))
      << r.headers;
  if (!retry.empty()) {
    EXPECT_GE(std::stoi(retry[1]), 1);
    EXPECT_LE(std::stoi(retry[1]), 10);
  }
  s = ParseExposition(Curl(m.url(), {"-u", "alice:secret"}).body);
  EXPECT_EQ(Find(s, "memtrimd_trim_runs_total", {"success", "manual"}), 3.0);
}

// The trim API needs authentication wherever memtrimd listens, loopback
// included: any local process could trim the target otherwise.
TEST(TrimApi, RefusesToStartWithoutAuthentication) {
  TempDir dir;
  WriteFile(dir / "plain.yml", "http_server_config:\n  http2: false\n");
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{"--web.listen-address=127.0.0.1:0"},
        std::vector<std::string>{"--web.listen-address=0.0.0.0:0"},
        std::vector<std::string>{"--web.listen-address=127.0.0.1:0",
                                 "--web.config.file=" + (dir / "plain.yml")}}) {
    std::vector<std::string> argv = {MemtrimdBin(), "--web.enable-trim-api",
                                     "--target.pid=" + std::to_string(getpid())};
    argv.insert(argv.end(), extra.begin(), extra.end());
    RunResult r = RunCommand(argv);
    EXPECT_EQ(r.exit_code, 2) << extra.back();
    EXPECT_NE(r.err.find("--web.enable-trim-api needs authentication"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1);
  }
}

}  // namespace
}  // namespace memtrimd::testing
