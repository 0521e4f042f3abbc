// SIGQUIT only where the attach listener will answer, and the attach
// trigger file always removed: against real JVMs of every JDK under
// /usr/lib/jvm.
//
// A SIGQUIT to a JVM whose attach is disabled prints a full thread dump into
// the application's output. Attach can be disabled from an @argfile,
// -XX:VMOptionsFile=, -XX:Flags=, a quoted JAVA_TOOL_OPTIONS or
// JDK_JAVA_OPTIONS=@file; with and without hsperfdata (-XX:-UsePerfData)
// memtrimd must see it and never signal. Where it cannot see it (the argfile
// changed after the JVM started, and no hsperfdata), it signals once and
// never again. And when the JVM dies while memtrimd waits for its socket,
// the trigger file memtrimd created is still removed.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <tuple>

#include "tests/integration/harness.h"

namespace memtrimd::testing {
namespace {

namespace fs = std::filesystem;

struct Jdk {
  std::string home;
  std::string name;  // for test names
};

void PrintTo(const Jdk& j, std::ostream* os) { *os << j.home; }

// Every distinct JDK under /usr/lib/jvm, Debian's 17 first.
std::vector<Jdk> FindJdks() {
  std::vector<Jdk> out;
  for (const std::string& home : FindJdkHomes()) out.push_back({home, JdkTestName(home)});
  return out;
}

std::string Str(pid_t pid) { return std::to_string(pid); }

std::size_t Count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}

// How attach is disabled.
enum class Source { kArgFile, kVmOptionsFile, kFlagsFile, kQuotedToolOptions, kJdkOptionsArgFile };

std::string SourceName(Source s) {
  switch (s) {
    case Source::kArgFile:
      return "argfile";
    case Source::kVmOptionsFile:
      return "VMOptionsFile";
    case Source::kFlagsFile:
      return "Flags";
    case Source::kQuotedToolOptions:
      return "quoted_JAVA_TOOL_OPTIONS";
    case Source::kJdkOptionsArgFile:
      return "JDK_JAVA_OPTIONS_argfile";
  }
  return "?";
}

class AttachSignalBase {
 protected:
  // Starts NativeChurn with `java_home`, working directory `cwd`, its stdout
  // in `stdout_path`; waits for its ready file.
  Process StartJava(const std::string& java_home, std::vector<std::string> jvm_flags,
                    SpawnOptions o) {
    const std::string ready = dir_ / ("ready." + std::to_string(++count_));
    std::vector<std::string> argv = {java_home + "/bin/java"};
    argv.insert(argv.end(), jvm_flags.begin(), jvm_flags.end());
    argv.insert(argv.end(), {"-cp", JAVA_WORKLOADS_CLASSPATH, "NativeChurn", "--threads", "1",
                             "--quiet", "--ready-file", ready});
    Process p(argv, o);
    bool ok = WaitFor([&] { return fs::exists(ready) || !p.running(); }, 90s) && fs::exists(ready);
    if (!ok) p.Kill();
    jvms_.push_back(p.pid());
    return p;
  }

  // Runs memtrimd's daemon against `pid` until it has sampled `samples`
  // times (the jvm collector every 200 ms); returns its /report.
  std::string RunDaemon(pid_t pid, double samples) {
    Memtrimd m({"--target.pid=" + Str(pid), "--sample.interval=200ms", "--jvm.interval=200ms",
                "--smaps.interval=1s", "--trim.interval=0"});
    EXPECT_TRUE(m.started()) << m.log();
    if (!m.started()) return "";
    EXPECT_TRUE(WaitFor(
        [&] { return Find(m.Scrape(), "memtrimd_samples_total").value_or(0) >= samples; }, 90s))
        << m.log();
    EXPECT_EQ(Find(m.Scrape(), "memtrimd_jvm_attachable"), 0.0);
    return Curl(m.url("/report")).body;
  }

  void RemoveStaleSockets() {
    for (pid_t pid : jvms_) {
      if (::kill(pid, 0) != 0) RemoveStaleJvmSocket(pid);
    }
  }

  TempDir dir_;
  int count_ = 0;
  std::vector<pid_t> jvms_;
};

// ---------------------------------------------------------------------------
// Attach disabled through each source, with and without hsperfdata: never a
// thread dump, and memtrimd says why it does not attach.

class DisabledAttachTest : public AttachSignalBase,
                           public ::testing::TestWithParam<std::tuple<Jdk, Source, bool>> {
 protected:
  void TearDown() override { RemoveStaleSockets(); }
};

TEST_P(DisabledAttachTest, NeverGetsAThreadDump) {
  const auto& [jdk, source, perf_data] = GetParam();
  const std::string cwd = dir_ / "cwd";
  fs::create_directory(cwd);
  SpawnOptions o;
  o.cwd = cwd;
  o.stdout_path = dir_ / "jvm.out";
  std::vector<std::string> flags;
  if (!perf_data) flags.push_back("-XX:-UsePerfData");
  // Relative names are the JVM's working directory's; memtrimd must read
  // them there, not in its own.
  switch (source) {
    case Source::kArgFile:
      WriteFile(cwd + "/jvm.args", "# JVM options\n-Xmx64m\n'-XX:+DisableAttachMechanism'\n");
      flags.push_back("@jvm.args");
      break;
    case Source::kVmOptionsFile:
      WriteFile(dir_ / "vm.options", "-Xmx64m \"-XX:+DisableAttachMechanism\"\n");
      flags.push_back("-XX:VMOptionsFile=" + dir_ / "vm.options");
      break;
    case Source::kFlagsFile:
      WriteFile(cwd + "/hotspot.flags", "# flags\n+DisableAttachMechanism\n");
      flags.push_back("-XX:Flags=hotspot.flags");
      break;
    case Source::kQuotedToolOptions:
      o.env.push_back("JAVA_TOOL_OPTIONS=-Dx='a b' \"-XX:+DisableAttachMechanism\"");
      break;
    case Source::kJdkOptionsArgFile:
      WriteFile(dir_ / "jdk.args", "-XX:+DisableAttachMechanism\n");
      o.env.push_back("JDK_JAVA_OPTIONS=@" + dir_ / "jdk.args");
      break;
  }
  Process jvm = StartJava(jdk.home, flags, o);
  ASSERT_TRUE(jvm.running()) << ReadFile(o.stdout_path);

  RunResult r = RunCommand({MemtrimdBin(), "jcmd", "--pid", Str(jvm.pid()), "VM.version"});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.err.find("not signalling: attach disabled"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(perf_data ? "seen in the JVM's hsperfdata" : "seen in "), std::string::npos)
      << r.err;

  // Many jvm intervals of the daemon: each would have been two SIGQUITs.
  std::string report = RunDaemon(jvm.pid(), 12);
  EXPECT_NE(report.find("not signalling: attach disabled"), std::string::npos) << report;
  EXPECT_TRUE(jvm.running());
  const std::string out = ReadFile(o.stdout_path);
  EXPECT_EQ(Count(out, "Full thread dump"), 0u) << out.substr(0, 2000);
  EXPECT_FALSE(fs::exists(fs::symlink_status(cwd + "/.attach_pid" + Str(NsPid(jvm.pid())))));
}

std::string DisabledName(const ::testing::TestParamInfo<std::tuple<Jdk, Source, bool>>& info) {
  return std::get<0>(info.param).name + "_" + SourceName(std::get<1>(info.param)) +
         (std::get<2>(info.param) ? "_hsperfdata" : "_no_hsperfdata");
}

INSTANTIATE_TEST_SUITE_P(
    AllJdks, DisabledAttachTest,
    ::testing::Combine(::testing::ValuesIn(FindJdks()),
                       ::testing::Values(Source::kArgFile, Source::kVmOptionsFile,
                                         Source::kFlagsFile, Source::kQuotedToolOptions,
                                         Source::kJdkOptionsArgFile),
                       ::testing::Bool()),
    DisabledName);

// ---------------------------------------------------------------------------
// Per JDK: the backstop, and the trigger file when the JVM dies mid-attach.

class AttachSignalTest : public AttachSignalBase, public ::testing::TestWithParam<Jdk> {
 protected:
  void TearDown() override { RemoveStaleSockets(); }
};

TEST_P(AttachSignalTest, AJvmWhoseListenerDoesNotComeUpIsSignalledOnce) {
  // The argfile disabled attach (and hsperfdata) when the JVM started, and
  // was rewritten since: memtrimd reads the new text, cannot know, signals.
  // The listener does not come up; that must be the only thread dump.
  const std::string cwd = dir_ / "cwd";
  fs::create_directory(cwd);
  SpawnOptions o;
  o.cwd = cwd;
  o.stdout_path = dir_ / "jvm.out";
  WriteFile(cwd + "/jvm.args", "-XX:+DisableAttachMechanism -XX:-UsePerfData\n");
  Process jvm = StartJava(GetParam().home, {"@jvm.args"}, o);
  ASSERT_TRUE(jvm.running()) << ReadFile(o.stdout_path);
  WriteFile(cwd + "/jvm.args", "-Xmx64m\n");

  std::string report = RunDaemon(jvm.pid(), 25);
  EXPECT_NE(report.find("signals a JVM at most once"), std::string::npos) << report;
  EXPECT_TRUE(jvm.running());
  const std::string out = ReadFile(o.stdout_path);
  EXPECT_EQ(Count(out, "Full thread dump"), 1u)
      << "one signal, then never again (0 would mean the test did not reach the backstop)";
  EXPECT_FALSE(fs::exists(fs::symlink_status(cwd + "/.attach_pid" + Str(NsPid(jvm.pid())))));
}

TEST_P(AttachSignalTest, TriggerFileIsRemovedWhenTheJvmDiesMidAttach) {
  for (const char* command : {"jcmd", "trim"}) {
    SCOPED_TRACE(command);
    const std::string cwd = dir_ / (std::string("cwd.") + command);
    fs::create_directory(cwd);
    SpawnOptions o;
    o.cwd = cwd;
    o.stdout_path = dir_ / (std::string("jvm.out.") + command);
    Process jvm = StartJava(GetParam().home, {}, o);
    ASSERT_TRUE(jvm.running());
    const std::string trigger = cwd + "/.attach_pid" + Str(NsPid(jvm.pid()));
    // Stopped, the JVM cannot start its listener: memtrimd creates the
    // trigger, signals, and waits for the socket (3 s) while the JVM dies.
    ::kill(jvm.pid(), SIGSTOP);
    ASSERT_TRUE(WaitFor([&] { return ProcessState(jvm.pid()) == 'T'; }, 10s));
    std::vector<std::string> argv = {MemtrimdBin(), command, "--pid", Str(jvm.pid())};
    if (std::string(command) == "jcmd") argv.push_back("VM.version");
    SpawnOptions mo;
    mo.stdout_path = dir_ / (std::string("memtrimd.out.") + command);
    mo.stderr_path = dir_ / (std::string("memtrimd.err.") + command);
    Process memtrimd(argv, mo);
    ASSERT_TRUE(WaitFor([&] { return fs::exists(fs::symlink_status(trigger)); }, 20s))
        << ReadFile(mo.stderr_path);
    jvm.Kill();
    std::optional<int> code = memtrimd.Wait(30s);
    ASSERT_TRUE(code.has_value());
    EXPECT_NE(*code, 0);
    EXPECT_FALSE(fs::exists(fs::symlink_status(trigger)))
        << "the trigger file outlived the JVM; a later JVM with pid " << jvm.pid()
        << " would take kill -3 for an attach request";
  }
}

std::string JdkName(const ::testing::TestParamInfo<Jdk>& info) { return info.param.name; }

INSTANTIATE_TEST_SUITE_P(AllJdks, AttachSignalTest, ::testing::ValuesIn(FindJdks()), JdkName);

}  // namespace
}  // namespace memtrimd::testing
