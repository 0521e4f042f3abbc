// A JVM run as a uid with no passwd entry (runAsUser in a pod) has no
// hsperfdata file (HotSpot names its directory after the user name): on
// every JDK found, memtrimd reads the same counters from the JVM's memory
// and says so with the cause, which names the uid and not the flags; the
// counters follow a collection the test itself asks for, and the heap is
// GC.heap_info's; the agent preloaded in it still tells that the JVM
// finished starting (JDK 17 too) and answers the buffer pools. The memory
// read equals the file where there is one. Controls: -XX:-UsePerfData (the
// flag is the cause, no counters; on JDK 17 the agent still refuses),
// -XX:+PerfDisableSharedMem (the flag is named; counters from memory), and a
// JVM run as a named user (its file is read, nothing missing).

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <variant>
#include <vector>

#include "collectors/agent/client/agent_client.h"
#include "collectors/agent/client/jvm_buffers.h"
#include "collectors/common/file_reader.h"
#include "collectors/jvm/hsperfdata.h"
#include "collectors/jvm/jvm_text.h"
#include "collectors/jvm/perf_memory.h"
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
  // ready file (the pools' own figures). setpriv and env exec, so the
  // process started is the JVM itself.
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

  // The JVM's hsperfdata file as it sees it, "" when there is none.
  static std::string PerfFile(pid_t pid) {
    for (const auto& e : fs::directory_iterator("/proc/" + std::to_string(pid) + "/root/tmp")) {
      const fs::path file = e.path() / std::to_string(pid);
      if (e.path().filename().string().rfind("hsperfdata_", 0) == 0 && fs::exists(file)) {
        return file;
      }
    }
    return "";
  }

  static std::optional<JsonValue> Inspect(pid_t pid) {
    RunResult r = RunCommand({MemtrimdBin(), "inspect", "--pid", std::to_string(pid), "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::optional<JsonValue> j = ParseJson(r.out);
    EXPECT_TRUE(j.has_value()) << r.out;
    return j;
  }

  static std::string Text(const JsonValue& j, std::initializer_list<std::string_view> path) {
    const JsonValue* v = j.Path(path);
    return v != nullptr ? v->text : "";
  }

  // inspect's "why" for a missing figure, "" when not missing.
  static std::string MissingWhy(const JsonValue& j, const std::string& figure) {
    if (const JsonValue* m = j.Get("missing")) {
      for (const JsonValue& item : m->items) {
        if (Text(item, {"figure"}) == figure) return Text(item, {"why"});
      }
    }
    return "";
  }

  // Collections of the collectors whose name holds "full" (G1's full
  // collection pauses), from inspect's jvm.gc.
  static int64_t FullCollections(const JsonValue& j) {
    int64_t n = 0;
    if (const JsonValue* cs = j.Path({"jvm", "gc", "collectors"})) {
      for (const JsonValue& c : cs->items) {
        const JsonValue* count = c.Get("collections");
        if (Text(c, {"name"}).find("full") != std::string::npos && count != nullptr &&
            count->Int()) {
          n += *count->Int();
        }
      }
    }
    return n;
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

TEST_P(NamelessJvmTest, UidWithoutNameCountersFromMemoryAndTheAgentKnowsTheJvmStarted) {
  Process jvm = Start(kNamelessUid, "nameless");
  ASSERT_TRUE(jvm.running());
  // The fact itself: no file for a uid without a name.
  ASSERT_EQ(PerfFile(jvm.pid()), "");
  std::optional<JsonValue> before = Inspect(jvm.pid());
  ASSERT_TRUE(before.has_value());
  EXPECT_EQ(MissingWhy(*before, "GC counters"), "");
  EXPECT_EQ(Text(*before, {"jvm", "gc", "source"}), "memory");
  const std::string why = Text(*before, {"jvm", "gc", "no_file"});
  EXPECT_NE(why.find("uid " + std::to_string(kNamelessUid) + " has no user name"),
            std::string::npos)
      << why;
  EXPECT_EQ(why.find("UsePerfData"), std::string::npos) << why;
  EXPECT_EQ(why.find("PerfDisableSharedMem"), std::string::npos) << why;

  // Ground truth: one full collection the test asks for (the workload only
  // sleeps by now), and the heap as GC.heap_info gives it.
  const std::string pid = std::to_string(jvm.pid());
  RunResult gc = RunCommand({MemtrimdBin(), "jcmd", "--pid", pid, "GC.run"});
  ASSERT_EQ(gc.exit_code, 0) << gc.out << gc.err;
  std::optional<JsonValue> after = Inspect(jvm.pid());
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(FullCollections(*after), FullCollections(*before) + 1);
  RunResult hi = RunCommand({MemtrimdBin(), "jcmd", "--pid", pid, "GC.heap_info"});
  ASSERT_EQ(hi.exit_code, 0) << hi.err;
  Result<jvm::HeapInfo> heap = jvm::ParseGcHeapInfo(hi.out);
  ASSERT_TRUE(heap.ok()) << heap.status().message() << hi.out;
  const JsonValue* committed = after->Path({"jvm", "heap_committed_bytes"});
  ASSERT_TRUE(committed != nullptr && committed->Int()) << "no heap_committed_bytes";
  // hsperfdata.h: G1 on 17 pads each generation's counter by 8 bytes.
  EXPECT_NEAR(static_cast<double>(*committed->Int()), static_cast<double>(heap->committed_bytes),
              64);

  // The agent finds the JVM's perf memory without the file, on JDK 17 too.
  Result<JvmBuffers> b = Pools(jvm.pid());
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(std::to_string(b->direct.count), ReadKeyValueFile(ready_)["pool.direct.count"]);
  EXPECT_TRUE(jvm.running());
}

TEST_P(NamelessJvmTest, PerfDataOffIsNamedAndJdk17StaysRefused) {
  Process jvm = Start(kNamelessUid, "noperf", {"-XX:-UsePerfData"});
  ASSERT_TRUE(jvm.running());
  std::optional<JsonValue> j = Inspect(jvm.pid());
  ASSERT_TRUE(j.has_value());
  const std::string why = MissingWhy(*j, "GC counters");
  EXPECT_NE(why.find("-XX:-UsePerfData (seen in command line)"), std::string::npos) << why;
  EXPECT_EQ(why.find("no user name"), std::string::npos) << why;
  // There are no counters to read: not looked for in its memory.
  EXPECT_EQ(why.find("from its memory"), std::string::npos) << why;
  EXPECT_EQ(j->Path({"jvm", "gc"}), nullptr);
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
  ASSERT_EQ(PerfFile(jvm.pid()), "");
  std::optional<JsonValue> j = Inspect(jvm.pid());
  ASSERT_TRUE(j.has_value());
  EXPECT_EQ(MissingWhy(*j, "GC counters"), "");
  EXPECT_EQ(Text(*j, {"jvm", "gc", "source"}), "memory");
  const std::string why = Text(*j, {"jvm", "gc", "no_file"});
  EXPECT_NE(why.find("-XX:+PerfDisableSharedMem (seen in command line)"), std::string::npos) << why;
  EXPECT_EQ(why.find("no user name"), std::string::npos) << why;
  Result<JvmBuffers> b = Pools(jvm.pid());
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(std::to_string(b->direct.count), ReadKeyValueFile(ready_)["pool.direct.count"]);
}

TEST_P(NamelessJvmTest, NamedUserHasItsFileAndNothingMissing) {
  Process jvm = Start(kNobodyUid, "named");
  ASSERT_TRUE(jvm.running());
  ASSERT_NE(PerfFile(jvm.pid()), "");
  std::optional<JsonValue> j = Inspect(jvm.pid());
  ASSERT_TRUE(j.has_value());
  EXPECT_EQ(MissingWhy(*j, "GC counters"), "");
  EXPECT_EQ(Text(*j, {"jvm", "gc", "source"}), "file");
  EXPECT_EQ(j->Path({"jvm", "gc", "no_file"}), nullptr);
  Result<JvmBuffers> b = Pools(jvm.pid());
  EXPECT_TRUE(b.ok()) << b.status().message();
}

// The counters read from memory are the file's: the file is the JVM's perf
// memory mapped, so every name and string is the same, and so is every
// counter that does not move in a sleeping JVM.
TEST_P(NamelessJvmTest, MemoryReadEqualsTheFile) {
  Process jvm = Start(kNobodyUid, "compare");
  ASSERT_TRUE(jvm.running());
  Result<Target> t = procfs::ReadTarget("/proc", jvm.pid());
  ASSERT_TRUE(t.ok()) << t.status().message();
  Result<jvm::PerfMemoryLocation> where = jvm::FindPerfMemory(*t);
  ASSERT_TRUE(where.ok()) << where.status().message();
  Result<jvm::PerfData> memory = jvm::ReadPerfMemory(jvm::ProcessMemory(jvm.pid()), *where);
  ASSERT_TRUE(memory.ok()) << memory.status().message();
  const std::string file = PerfFile(jvm.pid());
  ASSERT_NE(file, "");
  Result<std::string> bytes = ReadSmallFile(file, 4u << 20);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  Result<jvm::PerfData> from_file = jvm::ParsePerfData(*bytes);
  ASSERT_TRUE(from_file.ok()) << from_file.status().message();
  ASSERT_EQ(memory->entries.size(), from_file->entries.size());
  std::size_t strings = 0, constants = 0;
  for (const auto& [name, value] : from_file->entries) {
    auto it = memory->entries.find(name);
    ASSERT_NE(it, memory->entries.end()) << name;
    if (std::holds_alternative<std::string>(value)) {
      EXPECT_EQ(it->second, value) << name;
      ++strings;
    } else if (name.ends_with(".maxCapacity") || name.ends_with(".invocations") ||
               name == "sun.os.hrt.frequency" || name == "sun.rt.createVmBeginTime" ||
               name == "sun.rt.createVmEndTime") {
      EXPECT_EQ(it->second, value) << name;
      ++constants;
    }
  }
  EXPECT_GT(strings, 10u);
  EXPECT_GT(constants, 5u);
  EXPECT_EQ(jvm::AttachSupportedFromPerfData(*memory), std::optional<bool>(true));
}

// The attach verdict before a SIGQUIT is the JVM's own also without the
// file: here attach is disabled by a flag memtrimd could read too, and the
// refusal must say it came from the JVM's counters (read from its memory),
// with no thread dump in the JVM's output.
TEST_P(NamelessJvmTest, AttachVerdictIsTheJvmsOwnWithoutTheFile) {
  const std::string out = shared_ / "disabled.out";
  ready_ = shared_ / "disabled.ready";
  std::vector<std::string> argv = AsUser(kNamelessUid);
  argv.insert(argv.end(),
              {GetParam() + "/bin/java", "-XX:+DisableAttachMechanism", "-Xmx64m", "-cp",
               shared_.classes(), "BufferPools", "--ready-file", ready_, "--direct", "1"});
  SpawnOptions o;
  o.cwd = shared_ / "";
  o.stdout_path = out;
  Process jvm(argv, o);
  started_.push_back(jvm.pid());
  ASSERT_TRUE(WaitFor([&] { return fs::exists(ready_) || !jvm.running(); }, 90s) && jvm.running());
  ASSERT_EQ(PerfFile(jvm.pid()), "");
  RunResult r =
      RunCommand({MemtrimdBin(), "jcmd", "--pid", std::to_string(jvm.pid()), "VM.version"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("seen in the JVM's hsperfdata"), std::string::npos) << r.err;
  EXPECT_EQ(ReadFile(out).find("Full thread dump"), std::string::npos);
  EXPECT_TRUE(jvm.running());
}

INSTANTIATE_TEST_SUITE_P(Jdks, NamelessJvmTest, ::testing::ValuesIn(FindJdkHomes()),
                         [](const ::testing::TestParamInfo<std::string>& home) {
                           return JdkTestName(home.param);
                         });

}  // namespace
}  // namespace memtrimd::testing
