// A JVM run as a uid with no passwd entry (runAsUser in a pod) has no
// hsperfdata file (HotSpot names its directory after the user name): on
// every JDK found, memtrimd names that cause, not the flags; the agent
// preloaded in it still tells that the JVM finished starting (JDK 17 too)
// and answers the buffer pools. Controls: -XX:-UsePerfData (the flag is the
// cause; on JDK 17 the agent still refuses), -XX:+PerfDisableSharedMem (the
// flag is named; the agent answers), and a JVM run as a named user (its
// file is read, nothing missing).

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "collectors/agent/agent_client.h"
#include "collectors/agent/jvm_buffers.h"
#include "collectors/procfs/target_reader.h"
#include "tests/integration/harness.h"
#include "tests/integration/json_value.h"
#include "tests/integration/node_agent.h"

namespace memtrimd::testing {
namespace {

namespace fs = std::filesystem;

class NamelessJvmTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!fs::exists(GetParam() + "/bin/java")) GTEST_SKIP() << "no JDK at " << GetParam();
    if (!IsRoot()) GTEST_SKIP() << "needs root: the JVMs run as other uids";
    if (RunCommand({"setpriv", "--version"}).exit_code != 0) GTEST_SKIP() << "no setpriv";
  }

  void TearDown() override {
    for (pid_t pid : started_) RemoveStaleAgentSocket(pid);
  }

  // BufferPools as `uid` with the agent preloaded and `flags`; waits for its
  // ready file (the pools' own figures).
  Process Start(uid_t uid, const std::string& name, std::vector<std::string> flags = {}) {
    ready_ = shared_ / (name + ".ready");
    std::vector<std::string> argv = AsUser(uid);
    argv.insert(argv.end(),
                {"env", std::string("LD_PRELOAD=") + AGENT_LIB, GetParam() + "/bin/java"});
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), {"-Xmx64m", "-cp", shared_.classes(), "BufferPools", "--ready-file",
                             ready_, "--direct", "3", "--direct-bytes", "4096"});
    SpawnOptions o;
    o.cwd = shared_ / "";
    Process p(argv, o);
    started_.push_back(p.pid());
    bool ok = WaitFor([&] { return fs::exists(ready_) || !p.running(); }, 90s) && p.running();
    EXPECT_TRUE(ok) << name << " did not start";
    if (!ok) p.Kill();
    return p;
  }

  // The only child of the setpriv/env chain is the JVM itself (both exec).
  static bool HasPerfFile(pid_t pid) {
    for (const auto& e : fs::directory_iterator("/proc/" + std::to_string(pid) + "/root/tmp")) {
      if (e.path().filename().string().rfind("hsperfdata_", 0) == 0 &&
          fs::exists(e.path() / std::to_string(pid))) {
        return true;
      }
    }
    return false;
  }

  // inspect's "why" for a missing figure, "" when not missing.
  static std::string MissingWhy(pid_t pid, const std::string& figure) {
    RunResult r = RunCommand({MemtrimdBin(), "inspect", "--pid", std::to_string(pid), "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::optional<JsonValue> j = ParseJson(r.out);
    EXPECT_TRUE(j.has_value()) << r.out;
    if (!j) return "";
    if (const JsonValue* m = j->Get("missing")) {
      for (const JsonValue& item : m->items) {
        const JsonValue* what = item.Get("figure");
        const JsonValue* why = item.Get("why");
        if (what != nullptr && what->text == figure && why != nullptr) return why->text;
      }
    }
    return "";
  }

  // The agent's jvm_buffers answer, or its error text.
  static Result<JvmBuffers> Pools(pid_t pid) {
    Result<Target> t = procfs::ReadTarget("/proc", pid);
    if (!t.ok()) return t.status();
    Result<std::string> body = agent::AgentCommand(*t, "jvm_buffers");
    if (!body.ok()) return body.status();
    return agent::ParseJvmBuffers(*body);
  }

  SharedDir shared_;
  std::string ready_;
  std::vector<pid_t> started_;
};

TEST_P(NamelessJvmTest, UidWithoutNameIsTheCauseAndTheAgentStillKnowsTheJvmStarted) {
  Process jvm = Start(kNamelessUid, "nameless");
  ASSERT_TRUE(jvm.running());
  // The fact itself: no file for a uid without a name.
  ASSERT_FALSE(HasPerfFile(jvm.pid()));
  std::string why = MissingWhy(jvm.pid(), "GC counters");
  EXPECT_NE(why.find("uid " + std::to_string(kNamelessUid) + " has no user name"),
            std::string::npos)
      << why;
  EXPECT_EQ(why.find("UsePerfData"), std::string::npos) << why;
  EXPECT_EQ(why.find("PerfDisableSharedMem"), std::string::npos) << why;
  // The agent finds the JVM's perf memory without the file, on JDK 17 too.
  Result<JvmBuffers> b = Pools(jvm.pid());
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(std::to_string(b->direct.count), ReadKeyValueFile(ready_)["pool.direct.count"]);
  EXPECT_TRUE(jvm.running());
}

TEST_P(NamelessJvmTest, PerfDataOffIsNamedAndJdk17StaysRefused) {
  Process jvm = Start(kNamelessUid, "noperf", {"-XX:-UsePerfData"});
  ASSERT_TRUE(jvm.running());
  std::string why = MissingWhy(jvm.pid(), "GC counters");
  EXPECT_NE(why.find("-XX:-UsePerfData (seen in command line)"), std::string::npos) << why;
  EXPECT_EQ(why.find("no user name"), std::string::npos) << why;
  Result<JvmBuffers> b = Pools(jvm.pid());
  if (JdkFeature(GetParam()) >= 21) {
    EXPECT_TRUE(b.ok()) << b.status().message();
  } else {
    // No perf memory at all: the JVM's start cannot be told; never attached.
    ASSERT_FALSE(b.ok());
    EXPECT_NE(b.status().message().find("cannot tell whether the JVM has finished starting"),
              std::string::npos)
        << b.status().message();
  }
  EXPECT_TRUE(jvm.running());
}

TEST_P(NamelessJvmTest, SharedMemOffIsNamedForANamedUser) {
  Process jvm = Start(kNobodyUid, "noshared", {"-XX:+PerfDisableSharedMem"});
  ASSERT_TRUE(jvm.running());
  ASSERT_FALSE(HasPerfFile(jvm.pid()));
  std::string why = MissingWhy(jvm.pid(), "GC counters");
  EXPECT_NE(why.find("-XX:+PerfDisableSharedMem (seen in command line)"), std::string::npos) << why;
  EXPECT_EQ(why.find("no user name"), std::string::npos) << why;
  Result<JvmBuffers> b = Pools(jvm.pid());
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(std::to_string(b->direct.count), ReadKeyValueFile(ready_)["pool.direct.count"]);
}

TEST_P(NamelessJvmTest, NamedUserHasItsFileAndNothingMissing) {
  Process jvm = Start(kNobodyUid, "named");
  ASSERT_TRUE(jvm.running());
  ASSERT_TRUE(HasPerfFile(jvm.pid()));
  EXPECT_EQ(MissingWhy(jvm.pid(), "GC counters"), "");
  Result<JvmBuffers> b = Pools(jvm.pid());
  EXPECT_TRUE(b.ok()) << b.status().message();
}

INSTANTIATE_TEST_SUITE_P(Jdks, NamelessJvmTest, ::testing::ValuesIn(FindJdkHomes()),
                         [](const ::testing::TestParamInfo<std::string>& home) {
                           return JdkTestName(home.param);
                         });

}  // namespace
}  // namespace memtrimd::testing
