// memtrimd against real JVMs: Debian's OpenJDK 17 always, and every other
// JDK under /usr/lib/jvm. Attach without jcmd, NMT on and off, a private
// /tmp, JVMs that must never be signalled, and the direct buffer cache.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "tests/integration/harness.h"

namespace memtrimd::testing {
namespace {

namespace fs = std::filesystem;

struct Jdk {
  std::string home;
  int feature = 0;
  std::string name;  // for test names
};

void PrintTo(const Jdk& j, std::ostream* os) { *os << j.home; }

// Every distinct JDK under /usr/lib/jvm, Debian's 17 first.
std::vector<Jdk> FindJdks() {
  std::vector<Jdk> out;
  for (const std::string& home : FindJdkHomes()) {
    out.push_back({home, JdkFeature(home), JdkTestName(home)});
  }
  return out;
}

class JvmTest : public ::testing::TestWithParam<Jdk> {
 protected:
  void SetUp() override {
    if (!fs::exists(GetParam().home + "/bin/java")) GTEST_SKIP() << "no JDK at " << GetParam().home;
  }

  // Starts a Java workload and waits for its ready file.
  Process StartJava(const std::vector<std::string>& jvm_flags, const std::string& main_class,
                    std::vector<std::string> args, SpawnOptions o = {},
                    const std::string& ready_dir = "") {
    std::string ready = (ready_dir.empty() ? dir_.path() : ready_dir) + "/" + main_class + "." +
                        std::to_string(++count_) + ".ready";
    std::vector<std::string> argv = {GetParam().home + "/bin/java"};
    argv.insert(argv.end(), jvm_flags.begin(), jvm_flags.end());
    argv.insert(argv.end(), {"-cp", JAVA_WORKLOADS_CLASSPATH, main_class, "--ready-file", ready});
    argv.insert(argv.end(), args.begin(), args.end());
    return StartAndWait(argv, ready, o);
  }

  Process StartAndWait(const std::vector<std::string>& argv, const std::string& ready,
                       SpawnOptions o) {
    Process p(argv, o);
    bool ok = WaitFor([&] { return fs::exists(ready) || !p.running(); }, 90s) && fs::exists(ready);
    if (!ok) p.Kill();
    return p;
  }

  RunResult Jcmd(pid_t pid, std::vector<std::string> command) {
    std::vector<std::string> argv = {MemtrimdBin(), "jcmd", "--pid", std::to_string(pid)};
    argv.insert(argv.end(), command.begin(), command.end());
    return RunCommand(argv);
  }

  TempDir dir_;
  int count_ = 0;
};

TEST_P(JvmTest, JcmdRunsDiagnosticCommandsWithoutAJvm) {
  Process jvm = StartJava({}, "NativeChurn", {"--threads", "2", "--quiet"});
  ASSERT_TRUE(jvm.running());
  RunResult v = Jcmd(jvm.pid(), {"VM.version"});
  EXPECT_EQ(v.exit_code, 0) << v.err;
  EXPECT_NE(v.out.find("JDK " + std::to_string(GetParam().feature)), std::string::npos) << v.out;
  // Options of the command pass through ("-all" is not memtrimd's).
  RunResult flags = Jcmd(jvm.pid(), {"VM.flags", "-all"});
  EXPECT_EQ(flags.exit_code, 0) << flags.err;
  EXPECT_NE(flags.out.find("MaxHeapSize"), std::string::npos);
  RunResult bad = Jcmd(jvm.pid(), {"No.Such.Command"});
  EXPECT_EQ(bad.exit_code, 1) << bad.out << bad.err;
  // The trigger file is gone afterwards.
  EXPECT_FALSE(fs::exists("/proc/" + std::to_string(jvm.pid()) + "/cwd/.attach_pid" +
                          std::to_string(jvm.pid())));
  EXPECT_TRUE(jvm.running());
}

TEST_P(JvmTest, DaemonReportsNmtHeapSettingsAndBreakdown) {
  Process jvm = StartJava({"-XX:NativeMemoryTracking=summary", "-Xmx256m"}, "NativeChurn",
                          {"--threads", "4", "--quiet"});
  ASSERT_TRUE(jvm.running());
  const std::string pid = "pid=\"" + std::to_string(jvm.pid()) + "\"";
  Memtrimd m({"--target.pid=" + std::to_string(jvm.pid()), "--sample.interval=200ms",
              "--smaps.interval=300ms", "--jvm.interval=300ms"});
  ASSERT_TRUE(m.started()) << m.log();
  Series s;
  ASSERT_TRUE(WaitFor(
      [&] {
        s = m.Scrape();
        // outside_nmt: once NMT and a smaps read are of one moment (a
        // churning JVM's RSS may move between them).
        return Find(s, "memtrimd_jvm_nmt_committed_bytes", {"category=\"Java Heap\""}) &&
               Find(s, "memtrimd_rss_breakdown_bytes", {"java_heap"}) &&
               Find(s, "memtrimd_rss_account_bytes", {"part=\"outside_nmt\""});
      },
      30s))
      << m.log() << "\n"
      << Curl(m.url("/report")).body;
  EXPECT_EQ(Find(s, "memtrimd_jvm_attachable"), 1.0);
  EXPECT_EQ(Find(s, "memtrimd_collector_success", {"\"jvm\""}), 1.0);
  EXPECT_FALSE(Find(s, "memtrimd_jvm_risk", {"nmt_off"}).has_value()) << "a setting, not a risk";
  EXPECT_TRUE(Find(s, "memtrimd_jvm_setting_info", {"NativeMemoryTracking", "summary"}));
  EXPECT_TRUE(Find(s, "memtrimd_jvm_setting_info", {"MaxHeapSize", "268435456"}));
  EXPECT_EQ(Find(s, "memtrimd_jvm_nmt_reserved_bytes", {"category=\"Java Heap\""}), 268435456.0);
  EXPECT_GT(Find(s, "memtrimd_jvm_heap_committed_bytes").value_or(0), 0);
  EXPECT_GT(Find(s, "memtrimd_jvm_heap_used_bytes").value_or(0), 0);
  EXPECT_TRUE(Find(s, "memtrimd_rss_account_bytes", {"part=\"outside_nmt\""}).has_value());
  // The direct pool needs the agent inside the JVM; NMT Other is not it.
  EXPECT_FALSE(Find(s, "memtrimd_jvm_direct_memory_bytes").has_value());
  EXPECT_EQ(Find(s, "memtrimd_jvm_direct_memory_limit_bytes"), 268435456.0)
      << "MaxDirectMemorySize unset: the limit is the max heap";
  EXPECT_TRUE(Find(s, "memtrimd_target_info", {"runtime=\"jvm\"", "jvm_version=\""}));
  EXPECT_FALSE(Find(s, "memtrimd_target_info", {"jvm_version=\"\""}).has_value());
  EXPECT_GT(Find(s, "memtrimd_rss_breakdown_bytes", {"java_heap"}).value_or(0), 0);

  // /report?format=json: the breakdown adds up exactly to the smaps read,
  // and that read to the status RSS memtrimd read in the same sample within
  // 2%. A JVM that is still warming up can grow by more than that during
  // one smaps read (slower under sanitizers), so samples are polled until
  // one is within 2%; every one must add up exactly.
  std::string json;
  double total = 0, rss = 0;
  bool every_read_adds_up = true;
  auto field = [&](const std::string& key) -> double {
    std::smatch mm;
    std::regex re("\"" + key + "\":(-?[0-9]+)");
    return std::regex_search(json, mm, re) ? std::stod(mm[1]) : -1;
  };
  bool close = WaitFor(
      [&] {
        std::string report = Curl(m.url("/report?format=json")).body;
        std::size_t at = report.find("\"rss_breakdown\":{");
        if (at == std::string::npos) return false;
        json = report.substr(at, report.find('}', at) - at);
        total = field("total_bytes");
        double parts = field("file_bytes") + field("java_heap_bytes") +
                       field("glibc_arena_heaps_bytes") + field("glibc_main_arena_bytes") +
                       field("other_anonymous_bytes");
        if (total <= 0 || parts != total) every_read_adds_up = false;
        rss = field("status_rss_bytes");
        return rss > 0 && std::fabs(total - rss) / rss < 0.02;
      },
      30s);
  EXPECT_TRUE(every_read_adds_up) << json;
  EXPECT_TRUE(close) << total << " vs " << rss << " in the last read: " << json;
  // The text report says the same in words.
  std::string text = Curl(m.url("/report")).body;
  EXPECT_NE(text.find("Where the RSS is"), std::string::npos) << text;
  EXPECT_NE(text.find(" + NMT-known native "), std::string::npos) << text;
}

TEST_P(JvmTest, NmtOffIsASettingNotAnError) {
  Process jvm = StartJava({}, "NativeChurn", {"--threads", "2", "--quiet"});
  ASSERT_TRUE(jvm.running());
  Memtrimd m({"--target.pid=" + std::to_string(jvm.pid()), "--sample.interval=200ms",
              "--jvm.interval=300ms"});
  ASSERT_TRUE(m.started()) << m.log();
  Series s;
  ASSERT_TRUE(WaitFor(
      [&] {
        s = m.Scrape();
        return Find(s, "memtrimd_jvm_setting_info", {"NativeMemoryTracking"}).has_value();
      },
      30s))
      << m.log();
  // A setting: advice, not a risk.
  EXPECT_FALSE(Find(s, "memtrimd_jvm_risk", {"nmt_off"}).has_value());
  EXPECT_EQ(Find(s, "memtrimd_collector_success", {"\"jvm\""}), 1.0);
  EXPECT_TRUE(Find(s, "memtrimd_jvm_setting_info", {"NativeMemoryTracking", "\"off\""}));
  EXPECT_FALSE(Find(s, "memtrimd_jvm_nmt_committed_bytes", {"Java Heap"}).has_value());
  EXPECT_FALSE(Find(s, "memtrimd_rss_account_bytes", {"part=\"outside_nmt\""}).has_value());
  EXPECT_GT(Find(s, "memtrimd_jvm_heap_committed_bytes").value_or(0), 0);
  std::string report = Curl(m.url("/report")).body;
  EXPECT_NE(report.find("Native Memory Tracking is off"), std::string::npos) << report;
}

TEST_P(JvmTest, JvmWithItsOwnMountNamespaceAndPrivateTmp) {
  if (!IsRoot()) GTEST_SKIP() << "needs root for a mount namespace";
  // Everything the JVM needs must live outside /tmp, which its own tmpfs
  // hides (the build tree itself may be under /tmp): its classes and its
  // ready file go to /dev/shm, a separate mount both sides see.
  std::string outside = "/dev/shm/memtrimd-jvm-test-" + std::to_string(getpid());
  fs::create_directories(outside);
  fs::copy(JAVA_WORKLOADS_CLASSPATH, outside, fs::copy_options::recursive);
  std::string ready = outside + "/ready";
  std::string java = GetParam().home + "/bin/java";
  Process jvm = StartAndWait({"unshare", "--mount", "--propagation", "private", "sh", "-c",
                              "mount -t tmpfs none /tmp && exec " + java + " -cp " + outside +
                                  " NativeChurn --threads 2 --quiet --ready-file " + ready},
                             ready, {});
  if (!jvm.running()) {
    fs::remove_all(outside);
    GTEST_SKIP() << "cannot make a private mount namespace here";
  }
  RunResult v = Jcmd(jvm.pid(), {"VM.version"});
  EXPECT_EQ(v.exit_code, 0) << v.err;
  EXPECT_NE(v.out.find("JDK"), std::string::npos);
  // Its socket lives in its /tmp, not in ours. (Ours may hold a stale
  // socket of the same name, left by an earlier JVM that had this pid and
  // was killed: pids are reused, so compare the files, not the names.)
  const std::string name = "/tmp/.java_pid" + std::to_string(jvm.pid());
  struct stat theirs {};
  ASSERT_EQ(::stat(("/proc/" + std::to_string(jvm.pid()) + "/root" + name).c_str(), &theirs), 0);
  struct stat ours {};
  if (::stat(name.c_str(), &ours) == 0) {
    EXPECT_FALSE(ours.st_dev == theirs.st_dev && ours.st_ino == theirs.st_ino)
        << name << " in our /tmp is the JVM's own socket";
  }
  jvm.Kill();
  fs::remove_all(outside);
}

TEST_P(JvmTest, DisabledAttachMechanismIsNeverSignalled) {
  for (bool via_env : {false, true}) {
    SCOPED_TRACE(via_env ? "JAVA_TOOL_OPTIONS" : "command line");
    SpawnOptions o;
    o.stdout_path = dir_ / ("stdout." + std::to_string(via_env));
    std::vector<std::string> flags;
    if (via_env) {
      o.env = {"JAVA_TOOL_OPTIONS=-XX:+DisableAttachMechanism"};
    } else {
      flags = {"-XX:+DisableAttachMechanism"};
    }
    Process jvm = StartJava(flags, "NativeChurn", {"--threads", "1", "--quiet"}, o);
    ASSERT_TRUE(jvm.running());
    RunResult r = Jcmd(jvm.pid(), {"VM.version"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("attach disabled"), std::string::npos) << r.err;
    // Not signalled: still running, and no thread dump on its stdout.
    EXPECT_TRUE(jvm.running());
    EXPECT_EQ(ReadFile(o.stdout_path).find("Full thread dump"), std::string::npos);

    Memtrimd m({"--target.pid=" + std::to_string(jvm.pid()), "--sample.interval=200ms",
                "--jvm.interval=300ms"});
    ASSERT_TRUE(m.started()) << m.log();
    Series s;
    ASSERT_TRUE(WaitFor(
        [&] { return (s = m.Scrape(), Find(s, "memtrimd_jvm_attachable").has_value()); }, 20s));
    EXPECT_EQ(Find(s, "memtrimd_jvm_attachable"), 0.0);
    EXPECT_EQ(Find(s, "memtrimd_collector_success", {"\"jvm\""}), 0.0);
    EXPECT_GT(Find(s, "memtrimd_jvm_heap_committed_bytes").value_or(0), 0)
        << "hsperfdata still works without attach";
    EXPECT_NE(Curl(m.url("/report"))
                  .body.find("not attachable: attach: not signalling: attach "
                             "disabled"),
              std::string::npos);
    EXPECT_TRUE(jvm.running());
    EXPECT_EQ(ReadFile(o.stdout_path).find("Full thread dump"), std::string::npos);
  }
}

TEST_P(JvmTest, ReducedSignalsJvmIsNotKilled) {
  Process jvm = StartJava({"-Xrs"}, "NativeChurn", {"--threads", "1", "--quiet"});
  ASSERT_TRUE(jvm.running());
  RunResult r = Jcmd(jvm.pid(), {"VM.version"});
  // With -Xrs the listener starts with the JVM, so attach works without a
  // signal; if it did not, memtrimd must refuse rather than send SIGQUIT.
  if (r.exit_code != 0) {
    EXPECT_NE(r.err.find("-Xrs"), std::string::npos) << r.err;
  }
  EXPECT_TRUE(jvm.running()) << "memtrimd killed a -Xrs JVM";
  ASSERT_FALSE(jvm.Wait(500ms).has_value()) << "the JVM exited";
}

TEST_P(JvmTest, DirectBufferCacheGrowthIsMeasuredAndAdvised) {
  if (GetParam().feature < 18)
    GTEST_SKIP() << "JDK " << GetParam().feature << " reads in small chunks";
  const int threads = 8, mib = 4;
  for (bool bounded : {false, true}) {
    SCOPED_TRACE(bounded ? "bounded" : "unbounded");
    std::vector<std::string> flags = {"-XX:NativeMemoryTracking=summary"};
    if (bounded) flags.push_back("-Djdk.nio.maxCachedBufferSize=262144");
    Process jvm = StartJava(
        flags, "DirectBufferRead",
        {"--threads", std::to_string(threads), "--mib", std::to_string(mib), "--dir", dir_.path()});
    ASSERT_TRUE(jvm.running());
    Memtrimd m({"--target.pid=" + std::to_string(jvm.pid()), "--sample.interval=200ms",
                "--jvm.interval=300ms"});
    ASSERT_TRUE(m.started()) << m.log();
    Series s;
    ASSERT_TRUE(WaitFor(
        [&] {
          s = m.Scrape();
          return Find(s, "memtrimd_jvm_nmt_committed_bytes", {"category=\"Other\""}) &&
                 Find(s, "memtrimd_jvm_risk", {"nio_cache_unbounded"}).has_value();
        },
        30s))
        << m.log();
    // NMT Other: the cached temporary buffers (nothing else in this program).
    double direct = *Find(s, "memtrimd_jvm_nmt_committed_bytes", {"category=\"Other\""});
    double expected = static_cast<double>(threads) * mib * (1 << 20);
    // The risk is a share of a limit: 32 MiB (at most: NMT Other, no agent
    // here) of a direct limit of the max heap (a quarter of this machine's
    // memory) and no container limit is no threat now. The unset property
    // is advice, in /report apart from the risks.
    EXPECT_EQ(Find(s, "memtrimd_jvm_risk", {"nio_cache_unbounded"}), 0.0);
    std::string report = Curl(m.url("/report")).body;
    const bool advised =
        report.find("advice (nio_cache_unbounded): set -Djdk.nio.maxCachedBufferSize") !=
        std::string::npos;
    EXPECT_EQ(advised, !bounded) << report;
    EXPECT_EQ(report.find("RISK nio_cache_unbounded"), std::string::npos) << report;
    if (bounded) {
      EXPECT_LT(direct, expected / 4) << "the bounded cache should stay small";
      EXPECT_TRUE(Find(s, "memtrimd_jvm_setting_info", {"jdk.nio.maxCachedBufferSize", "262144"}));
    } else {
      EXPECT_GE(direct, 0.9 * expected);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Jdks, JvmTest, ::testing::ValuesIn(FindJdks()),
                         [](const ::testing::TestParamInfo<Jdk>& jdk) { return jdk.param.name; });

}  // namespace
}  // namespace memtrimd::testing
