// memtrimd loading its agent into a running JVM (--jvm.load-agent), on every
// JDK under /usr/lib/jvm: a JVM started without LD_PRELOAD gets its buffer
// pools, temporary buffer cache and malloc statistics read as if the agent
// had been preloaded (equal to what tests/workloads/BufferPools.java's own
// BufferPoolMXBeans said); without the flag nothing is loaded; a second
// memtrimd finds the agent there and loads nothing (mapped once); a JVM with
// -XX:-EnableDynamicAgentLoading refuses, and memtrimd says so once in its
// log and in /report; MEMTRIMD_AGENT_LOAD=0 opts a JVM out; the agent
// refuses a load that asks for another version and a second copy of itself
// (the JVM unloads the refused library); as the node agent into a JVM of
// another user with a /tmp of its own; a noexec /tmp refused before any
// copy, and --jvm.agent-path loading from where it is.

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "collectors/agent/agent_protocol.h"
#include "collectors/agent/client/agent_client.h"
#include "collectors/jvm/agent_load.h"
#include "collectors/jvm/attach_client.h"
#include "collectors/procfs/target_reader.h"
#include "tests/integration/buffer_pools_workload.h"
#include "tests/integration/harness.h"
#include "tests/integration/json_value.h"
#include "tests/integration/node_agent.h"

namespace memtrimd::testing {
namespace {

namespace fs = std::filesystem;

std::map<std::string, uint64_t> ReadTruth(const std::string& path) {
  std::map<std::string, uint64_t> out;
  for (const auto& [k, v] : ReadKeyValueFile(path)) out[k] = std::stoull(v);
  return out;
}

Target TargetOf(pid_t pid) {
  Result<Target> t = procfs::ReadTarget("/proc", pid);
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.ok() ? *t : Target{};
}

// The first target of /report?format=json, or nullopt.
std::optional<JsonValue> TargetReport(const Memtrimd& m) {
  std::optional<JsonValue> report = ParseJson(Curl(m.url("/report?format=json")).body);
  if (!report) return std::nullopt;
  const JsonValue* targets = report->Get("targets");
  if (targets == nullptr || targets->items.empty()) return std::nullopt;
  return targets->items[0];
}

std::string Text(const JsonValue& v, std::initializer_list<std::string_view> path) {
  const JsonValue* x = v.Path(path);
  return x != nullptr ? x->text : "";
}

int64_t Int(const JsonValue& v, std::initializer_list<std::string_view> path) {
  const JsonValue* x = v.Path(path);
  return x != nullptr && x->Int() ? *x->Int() : -1;
}

// Every mapping of a file named libmemtrimd_agent.so in the process: the
// distinct paths (without " (deleted)") and how many executable mappings.
struct AgentMappings {
  std::set<std::string> paths;
  int executable = 0;
};
AgentMappings AgentMappingsOf(pid_t pid) {
  AgentMappings out;
  std::ifstream in("/proc/" + std::to_string(pid) + "/maps");
  std::string line;
  while (std::getline(in, line)) {
    const std::string deleted = " (deleted)";
    if (line.size() > deleted.size() &&
        line.compare(line.size() - deleted.size(), deleted.size(), deleted) == 0) {
      line.resize(line.size() - deleted.size());
    }
    std::size_t slash = line.rfind('/');
    if (slash == std::string::npos || line.substr(slash + 1) != "libmemtrimd_agent.so") continue;
    out.paths.insert(line.substr(line.find('/')));
    if (line.find(" r-xp ") != std::string::npos) ++out.executable;
  }
  return out;
}

int Count(const std::string& text, const std::string& part) {
  int n = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// Names of memtrimd's load directories in the JVM's /tmp (here the host's).
std::set<std::string> LoadDirs() {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator("/tmp")) {
    std::string name = e.path().filename();
    if (name.rfind(".memtrimd-agent.", 0) == 0) out.insert(name);
  }
  return out;
}

class AgentLoadTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!fs::exists(GetParam() + "/bin/java")) GTEST_SKIP() << "no JDK at " << GetParam();
    dirs_before_ = LoadDirs();
  }

  void TearDown() override {
    for (pid_t pid : started_) RemoveStaleAgentSocket(pid);
    // Nothing of memtrimd's left in the JVM's /tmp. Another test running
    // beside this one may be loading the agent into a JVM of its own (its
    // directory lives for the load): a directory of this test's stays, one of
    // another's goes within seconds.
    std::set<std::string> now;
    WaitFor(
        [&] {
          now = LoadDirs();
          return std::includes(dirs_before_.begin(), dirs_before_.end(), now.begin(), now.end());
        },
        20s);
    EXPECT_TRUE(std::includes(dirs_before_.begin(), dirs_before_.end(), now.begin(), now.end()))
        << "left in /tmp: " << [&] {
             std::string names;
             for (const std::string& n : now) {
               if (!dirs_before_.contains(n)) names += n + " ";
             }
             return names;
           }();
  }

  // BufferPools without the agent; waits for its ready file.
  Process StartBufferPools(std::vector<std::string> env = {},
                           std::vector<std::string> jvm_flags = {}) {
    ready_ = dir_ / "BufferPools.ready";
    std::vector<std::string> argv = {GetParam() + "/bin/java"};
    argv.insert(argv.end(), jvm_flags.begin(), jvm_flags.end());
    std::vector<std::string> rest = BufferPoolsArgs(ready_, dir_.path());
    argv.insert(argv.end(), rest.begin(), rest.end());
    SpawnOptions o;
    o.env = env;
    o.stderr_path = dir_ / "jvm.stderr";
    o.stdout_path = dir_ / "jvm.stdout";
    stderr_ = o.stderr_path;
    Process p(argv, o);
    started_.push_back(p.pid());
    bool ok =
        WaitFor([&] { return fs::exists(ready_) || !p.running(); }, 90s) && fs::exists(ready_);
    if (!ok) p.Kill();
    return p;
  }

  // memtrimd watching `pid`, sampling every second.
  static std::vector<std::string> Flags(pid_t pid, bool load,
                                        const std::string& smaps_interval = "1s") {
    std::vector<std::string> f = {"--target.pid=" + std::to_string(pid), "--sample.interval=1s",
                                  "--smaps.interval=" + smaps_interval, "--trim.interval=0"};
    if (load) f.push_back("--jvm.load-agent");
    return f;
  }

  // Polls /report until `done` holds for the target (20 s); the last one.
  static std::optional<JsonValue> WaitReport(const Memtrimd& m,
                                             const std::function<bool(const JsonValue&)>& done) {
    std::optional<JsonValue> last;
    WaitFor(
        [&] {
          last = TargetReport(m);
          return last && done(*last);
        },
        20s);
    return last;
  }

  TempDir dir_;
  std::string ready_;
  std::string stderr_;
  std::vector<pid_t> started_;
  std::set<std::string> dirs_before_;
};

TEST_P(AgentLoadTest, LoadedOnceIntoAJvmStartedWithoutIt) {
  Process jvm = StartBufferPools();
  ASSERT_TRUE(jvm.running()) << ReadFile(stderr_);
  std::map<std::string, uint64_t> truth = ReadTruth(ready_);
  ASSERT_TRUE(truth.count("pool.direct.count")) << ready_;
  ASSERT_TRUE(AgentMappingsOf(jvm.pid()).paths.empty());

  // Without the flag: the JVM is read through its attach socket, and
  // nothing is loaded.
  {
    Memtrimd m(Flags(jvm.pid(), false));
    ASSERT_TRUE(m.started()) << m.log();
    std::optional<JsonValue> r = WaitReport(m, [](const JsonValue& t) {
      return Text(t, {"jvm", "version"}) != "";
    });
    ASSERT_TRUE(r) << m.log();
    EXPECT_EQ(r->Path({"jvm", "agent_load"}), nullptr);
    EXPECT_NE(Text(*r, {"jvm", "buffer_pools_missing"}).find("--jvm.load-agent"),
              std::string::npos);
    EXPECT_TRUE(AgentMappingsOf(jvm.pid()).paths.empty());
    EXPECT_EQ(m.log().find("agent loaded"), std::string::npos) << m.log();
  }

  // With it: loaded, and the agent collector reads the JVM's own figures.
  // Under a --smaps.interval far longer than the test (the agent collector's
  // interval too): memtrimd knows the agent it loaded from the sample the
  // load is reported in, reads it at once after the load rather than an
  // interval later, and its profile answers; the account comes from a smaps
  // read made right after the target was found.
  std::string loaded_from;
  {
    std::vector<std::string> flags = Flags(jvm.pid(), true, "10m");
    flags.push_back("--collector.sites");
    Memtrimd m(flags);
    ASSERT_TRUE(m.started()) << m.log();
    std::optional<JsonValue> first = WaitReport(m, [](const JsonValue& t) {
      return t.Path({"jvm", "agent_load"}) != nullptr;
    });
    ASSERT_TRUE(first) << m.log();
    EXPECT_EQ(Text(*first, {"jvm", "agent_load", "result"}), "loaded");
    EXPECT_NE(first->Get("agent"), nullptr) << "the agent memtrimd loaded is not known";
    EXPECT_EQ(Text(*first, {"jvm", "buffer_pools_missing"}).find("not preloaded"),
              std::string::npos)
        << Text(*first, {"jvm", "buffer_pools_missing"});
    HttpResponse profile;
    EXPECT_TRUE(WaitFor(
        [&] {
          profile = Curl(m.url("/debug/pprof/heap"));
          return profile.status == 200;
        },
        20s))
        << profile.status << " " << profile.body << m.log();
    std::optional<JsonValue> r = WaitReport(m, [](const JsonValue& t) {
      return t.Path({"jvm", "buffer_pools"}) != nullptr && t.Get("malloc") != nullptr &&
             t.Get("rss_account") != nullptr;
    });
    ASSERT_TRUE(r && r->Path({"jvm", "buffer_pools"})) << m.log();
    EXPECT_NE(r->Get("rss_account"), nullptr) << m.log();
    EXPECT_NE(r->Get("agent"), nullptr);
    EXPECT_EQ(Text(*r, {"jvm", "agent_load", "result"}), "loaded");
    loaded_from = Text(*r, {"jvm", "agent_load", "text"});
    const JsonValue& j = *r->Get("jvm");
    EXPECT_EQ(Int(j, {"buffer_pools", "direct", "count"}),
              static_cast<int64_t>(truth["pool.direct.count"]));
    EXPECT_EQ(Int(j, {"buffer_pools", "direct", "total_capacity_bytes"}),
              static_cast<int64_t>(truth["pool.direct.capacity"]));
    EXPECT_EQ(Int(j, {"buffer_pools", "direct", "memory_used_bytes"}),
              static_cast<int64_t>(truth["pool.direct.used"]));
    EXPECT_EQ(Int(j, {"buffer_pools", "mapped", "total_capacity_bytes"}),
              static_cast<int64_t>(kMapBytes));
    EXPECT_EQ(Int(j, {"buffer_pools", "mapped", "count"}),
              static_cast<int64_t>(truth["pool.mapped.count"]));
    // Every reader's whole read is cached (the JDK's own small reads may
    // add a buffer of their own, as in agent_jvm_test.cc).
    const int64_t cached = int64_t{kReaders} * kReadBytes;
    EXPECT_GE(Int(j, {"temp_buffer_cache_bytes"}), cached);
    EXPECT_LE(Int(j, {"temp_buffer_cache_bytes"}), cached + 64 * 1024);
    // Malloc statistics: the agent's answer (on 21+ the jvm collector's
    // System.native_heap_info takes precedence in the report).
    EXPECT_TRUE(agent::AgentCommand(TargetOf(jvm.pid()), "malloc_info").ok());
    EXPECT_GT(Int(*r, {"malloc", "system_bytes"}), 0);
    if (JdkFeature(GetParam()) < 21) {
      EXPECT_EQ(Text(*r, {"malloc", "source"}), "agent");
    }
    EXPECT_EQ(Count(m.log(), "msg=\"agent loaded into the JVM\""), 1) << m.log();
  }
  // Loaded from memtrimd's copy in the JVM's /tmp, which is gone: the
  // mapping shows it deleted, and memtrimd still finds the agent by it.
  EXPECT_NE(loaded_from.find("/tmp/.memtrimd-agent."), std::string::npos) << loaded_from;
  AgentMappings once = AgentMappingsOf(jvm.pid());
  ASSERT_EQ(once.paths.size(), 1u);
  EXPECT_EQ(once.executable, 1);
  EXPECT_FALSE(fs::exists(*once.paths.begin()));
  EXPECT_TRUE(agent::HasAgent(TargetOf(jvm.pid())));

  // A second memtrimd finds it there: not loaded again, still read.
  {
    Memtrimd m(Flags(jvm.pid(), true));
    ASSERT_TRUE(m.started()) << m.log();
    std::optional<JsonValue> r = WaitReport(m, [](const JsonValue& t) {
      return t.Path({"jvm", "agent_load"}) != nullptr && t.Path({"jvm", "buffer_pools"}) != nullptr;
    });
    ASSERT_TRUE(r) << m.log();
    EXPECT_EQ(Text(*r, {"jvm", "agent_load", "result"}), "present") << m.log();
    EXPECT_EQ(Int(*r, {"jvm", "buffer_pools", "direct", "count"}),
              static_cast<int64_t>(truth["pool.direct.count"]));
  }
  AgentMappings after = AgentMappingsOf(jvm.pid());
  EXPECT_EQ(after.paths, once.paths);
  EXPECT_EQ(after.executable, 1);

  // The JVM goes on. JDK 21+ prints JEP 451's warning once, for the one
  // load; 17 prints nothing.
  EXPECT_TRUE(jvm.running());
  const std::string err = ReadFile(stderr_);
  if (JdkFeature(GetParam()) >= 21) {
    EXPECT_EQ(Count(err, "WARNING: A JVM TI agent has been loaded dynamically ("), 1) << err;
  } else {
    EXPECT_EQ(err, "");
  }
}

TEST_P(AgentLoadTest, RefusedWhereDynamicLoadingIsOff) {
  Process jvm = StartBufferPools({}, {"-XX:-EnableDynamicAgentLoading"});
  ASSERT_TRUE(jvm.running()) << ReadFile(stderr_);
  Memtrimd m(Flags(jvm.pid(), true));
  ASSERT_TRUE(m.started()) << m.log();
  // The agent collector's reason names the refusal from its next run on.
  std::optional<JsonValue> r = WaitReport(m, [](const JsonValue& t) {
    return Text(t, {"jvm", "buffer_pools_missing"}).find("memtrimd's load") != std::string::npos;
  });
  ASSERT_TRUE(r) << m.log();
  EXPECT_EQ(Text(*r, {"jvm", "agent_load", "result"}), "refused");
  EXPECT_NE(Text(*r, {"jvm", "agent_load", "text"}).find("-XX:-EnableDynamicAgentLoading"),
            std::string::npos);
  EXPECT_NE(Text(*r, {"jvm", "buffer_pools_missing"}).find("-XX:-EnableDynamicAgentLoading"),
            std::string::npos);
  // Said once, though every sample reads the outcome.
  WaitFor([&] { return Count(m.log(), "msg=\"agent not loaded into the JVM\"") > 0; }, 5s);
  EXPECT_EQ(Count(m.log(), "msg=\"agent not loaded into the JVM\""), 1) << m.log();
  EXPECT_NE(m.log().find("result=refused"), std::string::npos) << m.log();
  // The JVM unharmed: running, nothing mapped, its attach socket answers.
  EXPECT_TRUE(jvm.running());
  EXPECT_TRUE(AgentMappingsOf(jvm.pid()).paths.empty());
  RunResult version =
      RunCommand({MemtrimdBin(), "jcmd", "--pid", std::to_string(jvm.pid()), "VM.version"});
  EXPECT_EQ(version.exit_code, 0) << version.err;
}

TEST_P(AgentLoadTest, OptedOutAndTheAgentsOwnRefusals) {
  Process jvm = StartBufferPools({"MEMTRIMD_AGENT_LOAD=0"});
  ASSERT_TRUE(jvm.running()) << ReadFile(stderr_);
  {
    Memtrimd m(Flags(jvm.pid(), true));
    ASSERT_TRUE(m.started()) << m.log();
    std::optional<JsonValue> r = WaitReport(m, [](const JsonValue& t) {
      return t.Path({"jvm", "agent_load"}) != nullptr;
    });
    ASSERT_TRUE(r) << m.log();
    EXPECT_EQ(Text(*r, {"jvm", "agent_load", "result"}), "opted_out");
    EXPECT_NE(Text(*r, {"jvm", "agent_load", "text"}).find("MEMTRIMD_AGENT_LOAD=0"),
              std::string::npos);
  }
  EXPECT_TRUE(AgentMappingsOf(jvm.pid()).paths.empty());

  // The agent itself refuses a load asking for another version, and the
  // JVM then unloads it: nothing stays mapped, no agent thread runs.
  Target t = TargetOf(jvm.pid());
  Result<jvm::AttachResponse> answer =
      jvm::ExecuteAttach(t, "load", AGENT_LIB, "true", "version=99");
  ASSERT_TRUE(answer.ok()) << answer.status().message();
  jvm::AgentLoadOutcome o = jvm::ParseLoadAnswer(*answer, AGENT_LIB);
  EXPECT_EQ(o.result, jvm::AgentLoadResult::kRefused) << o.text;
  EXPECT_NE(o.text.find("is not agent version " + std::to_string(AGENT_PROTOCOL_VERSION)),
            std::string::npos)
      << o.text;
  EXPECT_TRUE(AgentMappingsOf(jvm.pid()).paths.empty());
  EXPECT_FALSE(agent::HasAgent(t));
  EXPECT_TRUE(jvm.running());

  // Loaded by hand, then a copy from another path: the agent runs once per
  // process, so the copy refuses (return code 3) and is unloaded again.
  answer = jvm::ExecuteAttach(t, "load", AGENT_LIB, "true",
                              AGENT_ATTACH_VERSION_OPTION + std::to_string(AGENT_PROTOCOL_VERSION));
  ASSERT_TRUE(answer.ok()) << answer.status().message();
  EXPECT_TRUE(jvm::ParseLoadAnswer(*answer, AGENT_LIB).Loaded()) << answer->output;
  fs::create_directory(dir_ / "copy");
  const std::string copy = dir_ / "copy/libmemtrimd_agent.so";
  fs::copy_file(AGENT_LIB, copy);
  answer = jvm::ExecuteAttach(t, "load", copy, "true",
                              AGENT_ATTACH_VERSION_OPTION + std::to_string(AGENT_PROTOCOL_VERSION));
  ASSERT_TRUE(answer.ok()) << answer.status().message();
  EXPECT_EQ(jvm::ParseLoadAnswer(*answer, copy).result, jvm::AgentLoadResult::kPresent)
      << answer->output;
  AgentMappings mapped = AgentMappingsOf(jvm.pid());
  EXPECT_EQ(mapped.paths, std::set<std::string>{AGENT_LIB});
  EXPECT_EQ(mapped.executable, 1);
  // One agent thread, and it answers.
  int agent_threads = 0;
  for (const auto& task : fs::directory_iterator("/proc/" + std::to_string(jvm.pid()) + "/task")) {
    agent_threads += ReadFile(task.path() / "comm") == "memtrimd-agent\n";
  }
  EXPECT_EQ(agent_threads, 1);
  EXPECT_TRUE(agent::AgentCommand(t, "jvm_buffers").ok());
  EXPECT_TRUE(jvm.running());
}

// As the node agent (root with its three capabilities only) into a JVM of
// another user (nobody) in its own pid and mount namespace with a /tmp of
// its own: the copy goes into that /tmp through /proc/<pid>/root, root's
// and readable by the JVM's user, and is gone after the load.
TEST_P(AgentLoadTest, NodeAgentIntoAJvmWithItsOwnTmp) {
  if (!IsRoot()) GTEST_SKIP() << "needs root: the JVM runs as another user";
  if (RunCommand({"setpriv", "--version"}).exit_code != 0) GTEST_SKIP() << "no setpriv";
  SharedDir shared;
  const std::string ready = shared / "ns.ready";
  NamespacedJvm jvm(kNobodyUid,
                    {GetParam() + "/bin/java", "-cp", shared.classes(), "BufferPools",
                     "--ready-file", ready, "--dir", shared / "", "--direct",
                     std::to_string(kDirect), "--direct-bytes", std::to_string(kDirectBytes)},
                    dir_ / "ns.out");
  ASSERT_GT(jvm.pid(), 0);
  started_.push_back(jvm.pid());
  ASSERT_TRUE(WaitFor([&] { return fs::exists(ready) || !jvm.unshare().running(); }, 90s) &&
              fs::exists(ready));
  std::map<std::string, uint64_t> truth = ReadTruth(ready);
  const std::string jvm_tmp = "/proc/" + std::to_string(jvm.pid()) + "/root/tmp";

  Memtrimd m(WrapWith{NodeAgentCaps()}, Flags(jvm.pid(), true));
  ASSERT_TRUE(m.started()) << m.log();
  std::optional<JsonValue> r = WaitReport(m, [](const JsonValue& t) {
    return t.Path({"jvm", "buffer_pools"}) != nullptr;
  });
  ASSERT_TRUE(r && r->Path({"jvm", "buffer_pools"})) << m.log();
  EXPECT_EQ(Text(*r, {"jvm", "agent_load", "result"}), "loaded");
  EXPECT_EQ(Int(*r, {"jvm", "buffer_pools", "direct", "count"}),
            static_cast<int64_t>(truth["pool.direct.count"]));
  EXPECT_EQ(Int(*r, {"jvm", "buffer_pools", "direct", "memory_used_bytes"}),
            static_cast<int64_t>(truth["pool.direct.used"]));
  AgentMappings mapped = AgentMappingsOf(jvm.pid());
  ASSERT_EQ(mapped.paths.size(), 1u);
  EXPECT_EQ(mapped.paths.begin()->rfind("/tmp/.memtrimd-agent.", 0), 0u) << *mapped.paths.begin();
  // Nothing left in the JVM's own /tmp but its own files and the agent's
  // socket.
  for (const auto& e : fs::directory_iterator(jvm_tmp)) {
    EXPECT_NE(e.path().filename().string().rfind(".memtrimd-agent.", 0), 0u) << e.path();
  }
}

// A JVM whose /tmp is mounted noexec could not map the library from there:
// memtrimd says so and copies nothing; the JVM is left as it was. With
// --jvm.agent-path it loads from the path given.
TEST_P(AgentLoadTest, NoexecTmpRefusedThenAgentPathLoads) {
  if (!IsRoot()) GTEST_SKIP() << "needs root: mounts a tmpfs in a mount namespace";
  SharedDir shared;
  const std::string ready = shared / "noexec.ready";
  std::string script = "mount -t tmpfs -o noexec none /tmp && exec " + GetParam() +
                       "/bin/java -cp " + shared.classes() + " BufferPools --ready-file " + ready +
                       " --direct 1 --direct-bytes 4096";
  Process unshare({"unshare", "--mount", "--fork", "--kill-child", "sh", "-c", script});
  pid_t pid = -1;
  ASSERT_TRUE(WaitFor([&] { return fs::exists(ready) || !unshare.running(); }, 90s) &&
              fs::exists(ready));
  pid = OnlyChild(unshare.pid());
  ASSERT_GT(pid, 0);
  started_.push_back(pid);
  // The JVM by its pid on every way out (--kill-child is only a backstop).
  struct KillJvm {
    pid_t pid;
    std::string start;
    ~KillJvm() {
      if (StartTicks(pid) == start) ::kill(pid, SIGKILL);
    }
  } kill_jvm{pid, StartTicks(pid)};
  Memtrimd m(Flags(pid, true));
  ASSERT_TRUE(m.started()) << m.log();
  std::optional<JsonValue> r = WaitReport(m, [](const JsonValue& t) {
    return t.Path({"jvm", "agent_load"}) != nullptr;
  });
  ASSERT_TRUE(r) << m.log();
  EXPECT_EQ(Text(*r, {"jvm", "agent_load", "result"}), "failed");
  EXPECT_NE(Text(*r, {"jvm", "agent_load", "text"}).find("mounted noexec"), std::string::npos)
      << Text(*r, {"jvm", "agent_load", "text"});
  EXPECT_TRUE(AgentMappingsOf(pid).paths.empty());
  for (const auto& e : fs::directory_iterator("/proc/" + std::to_string(pid) + "/root/tmp")) {
    EXPECT_NE(e.path().filename().string().rfind(".memtrimd-agent.", 0), 0u) << e.path();
  }
  EXPECT_TRUE(unshare.running());

  // What the refusal advises: --jvm.agent-path, a path the JVM can map (here
  // a copy of the build's file in the shared directory, which its mount
  // namespace shares: the build tree itself may lie under the /tmp this JVM
  // no longer sees): loaded from there, nothing copied.
  const std::string agent_path = shared / "libmemtrimd_agent.so";
  fs::copy_file(AGENT_LIB, agent_path, fs::copy_options::overwrite_existing);
  fs::permissions(agent_path,
                  fs::perms::owner_all | fs::perms::group_read | fs::perms::others_read);
  Memtrimd again(
      [&] {
        std::vector<std::string> f = Flags(pid, true);
        f.push_back("--jvm.agent-path=" + agent_path);
        return f;
      }(),
      {});
  ASSERT_TRUE(again.started()) << again.log();
  r = WaitReport(again, [](const JsonValue& t) { return t.Path({"jvm", "buffer_pools"}); });
  ASSERT_TRUE(r && r->Path({"jvm", "buffer_pools"})) << again.log();
  EXPECT_EQ(Text(*r, {"jvm", "agent_load", "text"}), "loaded into the JVM from " + agent_path);
  EXPECT_EQ(AgentMappingsOf(pid).paths, std::set<std::string>{agent_path});
  unshare.Kill();
}

INSTANTIATE_TEST_SUITE_P(Jdks, AgentLoadTest, ::testing::ValuesIn(FindJdkHomes()),
                         [](const ::testing::TestParamInfo<std::string>& home) {
                           return JdkTestName(home.param);
                         });

}  // namespace
}  // namespace memtrimd::testing
