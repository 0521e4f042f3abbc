// The preload agent inside real JVMs (every JDK under /usr/lib/jvm): its
// "jvm_buffers" answer against the JVM's own BufferPoolMXBean figures, which
// tests/workloads/BufferPools.java writes into its ready file; the "agent"
// collector filling TargetSample::jvm_buffers (or saying why not); the JVM
// unharmed afterwards, with no memtrimd thread left in its thread dump; the
// switch MEMTRIMD_AGENT_JVM=0; and a program that is not a JVM.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "collectors/agent/client/agent_client.h"
#include "collectors/agent/client/agent_collector.h"
#include "collectors/agent/client/jvm_buffers.h"
#include "collectors/jvm/malloc_info.h"
#include "collectors/procfs/target_reader.h"
#include "collectors/sample.h"
#include "tests/integration/buffer_pools_workload.h"
#include "tests/integration/harness.h"

namespace memtrimd::testing {
namespace {

namespace fs = std::filesystem;
using agent::AgentCommand;

// "key=value" lines.
std::map<std::string, uint64_t> ReadKeyValues(const std::string& path) {
  std::map<std::string, uint64_t> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::size_t eq = line.find('=');
    if (eq != std::string::npos) out[line.substr(0, eq)] = std::stoull(line.substr(eq + 1));
  }
  return out;
}

Target TargetOf(pid_t pid) {
  Result<Target> t = procfs::ReadTarget("/proc", pid);
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.ok() ? *t : Target{};
}

class AgentJvmTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!fs::exists(GetParam() + "/bin/java")) GTEST_SKIP() << "no JDK at " << GetParam();
  }

  void TearDown() override {
    for (pid_t pid : started_) RemoveStaleAgentSocket(pid);
  }

  // BufferPools with the agent preloaded (unless `preload` is false) and
  // `env`; waits for its ready file. `runtime_default`: under Kubernetes'
  // RuntimeDefault seccomp rules (tests/workloads/runtime_default, which
  // execs env with the environment, so that only the JVM loads the agent).
  Process StartBufferPools(std::vector<std::string> env = {}, bool preload = true,
                           std::vector<std::string> jvm_flags = {}, bool runtime_default = false) {
    if (preload) env.push_back(std::string("LD_PRELOAD=") + AGENT_LIB);
    ready_ = dir_ / ("BufferPools." + std::to_string(++count_) + ".ready");
    std::vector<std::string> argv = {GetParam() + "/bin/java"};
    argv.insert(argv.end(), jvm_flags.begin(), jvm_flags.end());
    std::vector<std::string> rest = BufferPoolsArgs(ready_, dir_.path());
    argv.insert(argv.end(), rest.begin(), rest.end());
    if (runtime_default) {
      std::vector<std::string> wrapped = {WorkloadBin("runtime_default"), "env"};
      wrapped.insert(wrapped.end(), env.begin(), env.end());
      wrapped.insert(wrapped.end(), argv.begin(), argv.end());
      argv = std::move(wrapped);
      env.clear();
    }
    SpawnOptions o;
    o.env = env;
    o.stderr_path = dir_ / ("stderr." + std::to_string(count_));
    o.stdout_path = dir_ / ("stdout." + std::to_string(count_));
    stderr_ = o.stderr_path;
    stdout_ = o.stdout_path;
    Process p(argv, o);
    started_.push_back(p.pid());
    bool ok =
        WaitFor([&] { return fs::exists(ready_) || !p.running(); }, 90s) && fs::exists(ready_);
    if (!ok) p.Kill();
    return p;
  }

  RunResult ThreadDump(pid_t pid) {
    return RunCommand({MemtrimdBin(), "jcmd", "--pid", std::to_string(pid), "Thread.print"});
  }

  TempDir dir_;
  std::string ready_;
  std::string stderr_;
  std::string stdout_;
  int count_ = 0;
  std::vector<pid_t> started_;
};

TEST_P(AgentJvmTest, PoolsAndCacheAreTheJvmsOwnFigures) {
  Process jvm = StartBufferPools();
  ASSERT_TRUE(jvm.running()) << ReadFile(stderr_);
  std::map<std::string, uint64_t> truth = ReadKeyValues(ready_);
  ASSERT_TRUE(truth.count("pool.direct.count") && truth.count("pool.mapped.count")) << ready_;
  Target t = TargetOf(jvm.pid());
  ASSERT_EQ(t.runtime, Runtime::kJvm);

  // Twice: the agent attaches and detaches per request.
  for (int round = 0; round < 2; ++round) {
    Result<std::string> body = AgentCommand(t, "jvm_buffers");
    ASSERT_TRUE(body.ok()) << body.status().message();
    Result<JvmBuffers> b = agent::ParseJvmBuffers(*body);
    ASSERT_TRUE(b.ok()) << b.status().message() << "\n" << *body;
    // The workload is idle: exactly what its BufferPoolMXBeans said.
    EXPECT_EQ(b->direct.count, truth["pool.direct.count"]);
    EXPECT_EQ(b->direct.total_capacity, truth["pool.direct.capacity"]);
    EXPECT_EQ(b->direct.memory_used, truth["pool.direct.used"]);
    EXPECT_EQ(b->mapped.count, truth["pool.mapped.count"]);
    EXPECT_EQ(b->mapped.total_capacity, truth["pool.mapped.capacity"]);
    EXPECT_EQ(b->mapped.memory_used, truth["pool.mapped.used"]);
    EXPECT_EQ(b->mapped.total_capacity, static_cast<uint64_t>(kMapBytes));
    EXPECT_GE(b->direct.count, static_cast<uint64_t>(kDirect));
    // Every reader caches its whole read. The JDK's own small reads (8 KiB
    // chunks, seen on 25) may add a buffer or two of their own.
    ASSERT_TRUE(b->temp_cache_bytes.has_value()) << *body;
    const uint64_t cached = uint64_t{kReaders} * kReadBytes;
    EXPECT_GE(*b->temp_cache_bytes, cached);
    EXPECT_LE(*b->temp_cache_bytes, cached + 64 * 1024);
    EXPECT_GE(*b->temp_cache_buffers, static_cast<uint64_t>(kReaders));
    EXPECT_LE(*b->temp_cache_buffers, static_cast<uint64_t>(kReaders) + 4);
  }

  // The JVM goes on, answers its attach socket, and its thread dump shows
  // the workload's threads but no memtrimd thread: the agent detached.
  EXPECT_TRUE(jvm.running());
  RunResult dump = ThreadDump(jvm.pid());
  ASSERT_EQ(dump.exit_code, 0) << dump.err;
  EXPECT_NE(dump.out.find("\"reader-0\""), std::string::npos) << dump.out;
  EXPECT_EQ(dump.out.find("memtrimd-agent"), std::string::npos) << dump.out;
  // Nothing printed by the JVM (no dynamic-agent warning, no JNI complaint).
  EXPECT_EQ(ReadFile(stderr_), "");
}

// What the JVM prints on the agent's thread while it is attached (here the
// attach itself logged by -Xlog:os+thread, and -Xcheck:jni's checks) goes to
// the agent thread's stdout: never into memtrimd's connection, and -Xcheck:jni
// finds nothing to warn about.
// Under Kubernetes' RuntimeDefault seccomp rules (a restricted pod) the JVM
// starts (clone3 refused, its threads made with clone) and the agent in it
// reads the same figures: the agent needs no call that profile refuses.
TEST_P(AgentJvmTest, PoolsUnderTheRuntimeDefaultProfile) {
  Process jvm = StartBufferPools({}, true, {}, true);
  ASSERT_TRUE(jvm.running()) << ReadFile(stderr_);
  const std::string status = ReadFile("/proc/" + std::to_string(jvm.pid()) + "/status");
  EXPECT_NE(status.find("Seccomp:\t2\n"), std::string::npos) << status;
  std::map<std::string, uint64_t> truth = ReadKeyValues(ready_);
  Target t = TargetOf(jvm.pid());
  Result<std::string> body = AgentCommand(t, "jvm_buffers");
  ASSERT_TRUE(body.ok()) << body.status().message();
  Result<JvmBuffers> b = agent::ParseJvmBuffers(*body);
  ASSERT_TRUE(b.ok()) << b.status().message() << "\n" << *body;
  EXPECT_EQ(b->direct.count, truth["pool.direct.count"]);
  EXPECT_EQ(b->direct.memory_used, truth["pool.direct.used"]);
  EXPECT_EQ(b->mapped.total_capacity, static_cast<uint64_t>(kMapBytes));
  ASSERT_TRUE(b->temp_cache_bytes.has_value()) << *body;
  EXPECT_GE(*b->temp_cache_bytes, uint64_t{kReaders} * kReadBytes);
  EXPECT_TRUE(AgentCommand(t, "malloc_info").ok());
  // The agent said nothing (it started), nor did the JVM.
  EXPECT_EQ(ReadFile(stderr_), "");
}

TEST_P(AgentJvmTest, JvmOutputOnTheAgentThreadStaysOutOfTheAnswer) {
  Process jvm = StartBufferPools({}, true, {"-Xcheck:jni", "-Xlog:os+thread=info"});
  ASSERT_TRUE(jvm.running()) << ReadFile(stderr_);
  Target t = TargetOf(jvm.pid());
  for (int round = 0; round < 2; ++round) {
    Result<std::string> body = AgentCommand(t, "jvm_buffers");
    ASSERT_TRUE(body.ok()) << body.status().message();
    Result<JvmBuffers> b = agent::ParseJvmBuffers(*body);
    ASSERT_TRUE(b.ok()) << b.status().message() << "\n" << *body;
    EXPECT_EQ(b->direct.count, ReadKeyValues(ready_)["pool.direct.count"]);
  }
  EXPECT_TRUE(jvm.running());
  std::string out = ReadFile(stdout_) + ReadFile(stderr_);
  EXPECT_EQ(out.find("WARNING"), std::string::npos) << out;
}

TEST_P(AgentJvmTest, CollectorFillsTheBufferPoolsAndMallocStatistics) {
  Process jvm = StartBufferPools();
  ASSERT_TRUE(jvm.running()) << ReadFile(stderr_);
  std::map<std::string, uint64_t> truth = ReadKeyValues(ready_);
  agent::AgentMallocCollector collector(agent::AgentOptions{});
  TargetSample sample;
  Status st = collector.Collect(TargetOf(jvm.pid()), sample);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_TRUE(sample.agent_loaded);
  ASSERT_TRUE(sample.jvm_buffers.has_value()) << sample.jvm_buffers_missing;
  EXPECT_EQ(sample.jvm_buffers_missing, "");
  EXPECT_EQ(sample.jvm_buffers->direct.memory_used, truth["pool.direct.used"]);
  EXPECT_EQ(sample.jvm_buffers->mapped.memory_used, truth["pool.mapped.used"]);
  EXPECT_NE(sample.jvm_buffers->read_at, std::chrono::system_clock::time_point{});
  // malloc_info through the agent: on JDK 17 the only source of it.
  ASSERT_TRUE(sample.malloc.has_value());
  EXPECT_EQ(MallocSourceName(sample.malloc->source), "agent");
  EXPECT_FALSE(sample.malloc->info.arenas.empty());
}

TEST_P(AgentJvmTest, SwitchedOffInTheJvmSaysSo) {
  Process jvm = StartBufferPools({"MEMTRIMD_AGENT_JVM=0"});
  ASSERT_TRUE(jvm.running()) << ReadFile(stderr_);
  Target t = TargetOf(jvm.pid());
  agent::AgentFailure failure = agent::AgentFailure::kNone;
  Result<std::string> body = AgentCommand(t, "jvm_buffers", {}, &failure);
  ASSERT_FALSE(body.ok()) << *body;
  EXPECT_EQ(failure, agent::AgentFailure::kAnswer);
  EXPECT_NE(body.status().message().find("MEMTRIMD_AGENT_JVM=0"), std::string::npos)
      << body.status().message();

  agent::AgentMallocCollector collector(agent::AgentOptions{});
  TargetSample sample;
  EXPECT_TRUE(collector.Collect(t, sample).ok());
  EXPECT_FALSE(sample.jvm_buffers.has_value());
  EXPECT_NE(sample.jvm_buffers_missing.find("MEMTRIMD_AGENT_JVM=0"), std::string::npos)
      << sample.jvm_buffers_missing;
  EXPECT_TRUE(sample.malloc.has_value());  // the rest of the agent still works
  EXPECT_TRUE(jvm.running());
}

TEST_P(AgentJvmTest, JvmWithoutTheAgentSaysWhatGivesThePools) {
  Process jvm = StartBufferPools({}, /*preload=*/false);
  ASSERT_TRUE(jvm.running()) << ReadFile(stderr_);
  agent::AgentMallocCollector collector(agent::AgentOptions{});
  TargetSample sample;
  EXPECT_TRUE(collector.Collect(TargetOf(jvm.pid()), sample).ok());
  EXPECT_FALSE(sample.agent_loaded);
  EXPECT_FALSE(sample.jvm_buffers.has_value());
  EXPECT_NE(sample.jvm_buffers_missing.find("LD_PRELOAD"), std::string::npos)
      << sample.jvm_buffers_missing;
}

// Asked again and again from the moment the agent's socket appears, while
// the JVM starts: every answer before the first full one says the JVM is not
// there yet (never a half-created VM attached to), and the JVM starts
// normally.
TEST_P(AgentJvmTest, AskedWhileTheJvmStarts) {
  std::vector<std::string> argv = {GetParam() + "/bin/java",
                                   "-cp",
                                   JAVA_WORKLOADS_CLASSPATH,
                                   "BufferPools",
                                   "--ready-file",
                                   dir_ / "starting.ready",
                                   "--direct",
                                   "1",
                                   "--direct-bytes",
                                   "4096"};
  SpawnOptions o;
  o.env = {std::string("LD_PRELOAD=") + AGENT_LIB};
  o.stderr_path = dir_ / "starting.stderr";
  Process jvm(argv, o);
  started_.push_back(jvm.pid());
  std::map<std::string, int> early;
  bool answered = false;
  ASSERT_TRUE(WaitFor(
      [&] {
        if (!jvm.running()) return true;
        Result<Target> t = procfs::ReadTarget("/proc", jvm.pid());
        if (!t.ok()) return false;
        agent::AgentFailure failure = agent::AgentFailure::kNone;
        Result<std::string> body = AgentCommand(*t, "jvm_buffers", {}, &failure);
        if (body.ok()) {
          answered = agent::ParseJvmBuffers(*body).ok();
          return true;
        }
        if (failure == agent::AgentFailure::kAnswer) ++early[body.status().message()];
        return false;
      },
      90s));
  for (const auto& [why, n] : early) {
    EXPECT_TRUE(why.find("not a JVM") != std::string::npos ||
                why.find("still starting") != std::string::npos)
        << why << " (" << n << " times)";
  }
  EXPECT_TRUE(answered);
  EXPECT_TRUE(WaitFor([&] { return fs::exists(dir_ / "starting.ready") || !jvm.running(); }, 90s));
  EXPECT_TRUE(jvm.running()) << ReadFile(dir_ / "starting.stderr");
}

// Without hsperfdata the agent cannot see the JVM's own "started" mark; it
// trusts JNI_GetCreatedJavaVMs only where the JDK returns finished VMs alone
// (21+, JDK-8308341) and otherwise says why it does not attach.
TEST_P(AgentJvmTest, WithoutHsperfdataOnlyJdk21AndLaterAreTrusted) {
  const int feature = JdkFeature(GetParam());
  ASSERT_GT(feature, 0) << "no JAVA_VERSION in " << GetParam() << "/release";
  ready_ = dir_ / "noperf.ready";
  SpawnOptions o;
  o.env = {std::string("LD_PRELOAD=") + AGENT_LIB};
  Process jvm({GetParam() + "/bin/java", "-XX:-UsePerfData", "-cp", JAVA_WORKLOADS_CLASSPATH,
               "BufferPools", "--ready-file", ready_, "--direct", "2", "--direct-bytes", "4096"},
              o);
  started_.push_back(jvm.pid());
  ASSERT_TRUE(WaitFor([&] { return fs::exists(ready_) || !jvm.running(); }, 90s) &&
              fs::exists(ready_));
  Result<std::string> body = AgentCommand(TargetOf(jvm.pid()), "jvm_buffers");
  if (feature >= 21) {
    ASSERT_TRUE(body.ok()) << body.status().message();
    Result<JvmBuffers> b = agent::ParseJvmBuffers(*body);
    ASSERT_TRUE(b.ok()) << b.status().message();
    EXPECT_EQ(b->direct.count, ReadKeyValues(ready_)["pool.direct.count"]);
  } else {
    ASSERT_FALSE(body.ok()) << *body;
    EXPECT_NE(body.status().message().find("-XX:-UsePerfData"), std::string::npos)
        << body.status().message();
  }
  EXPECT_TRUE(jvm.running());
}

INSTANTIATE_TEST_SUITE_P(Jdks, AgentJvmTest, ::testing::ValuesIn(FindJdkHomes()),
                         [](const ::testing::TestParamInfo<std::string>& home) {
                           return JdkTestName(home.param);
                         });

TEST(AgentNotJvmTest, AProgramThatIsNotAJvmAnswersNotAJvm) {
  TempDir dir;
  const std::string ready = dir / "fragmenter.ready";
  SpawnOptions o;
  o.env = {std::string("LD_PRELOAD=") + AGENT_LIB};
  Process p({FragmenterBin(), "--quiet", "--threads", "2", "--ready-file", ready}, o);
  ASSERT_TRUE(WaitFor([&] { return fs::exists(ready) || !p.running(); }, 60s) && fs::exists(ready));
  Target t = TargetOf(p.pid());
  auto arenas = [&] {
    Result<std::string> xml = AgentCommand(t, "malloc_info");
    EXPECT_TRUE(xml.ok()) << xml.status().message();
    Result<jvm::MallocInfo> info = jvm::ParseMallocInfo(xml.ok() ? *xml : "");
    return info.ok() ? info->arenas.size() : std::size_t{0};
  };
  const std::size_t before = arenas();
  agent::AgentFailure failure = agent::AgentFailure::kNone;
  Result<std::string> body = AgentCommand(t, "jvm_buffers", {}, &failure);
  ASSERT_FALSE(body.ok()) << *body;
  EXPECT_EQ(failure, agent::AgentFailure::kAnswer);
  EXPECT_NE(body.status().message().find("not a JVM"), std::string::npos)
      << body.status().message();
  // Still serving, and the answer cost the program no arena: the agent
  // thread looked for libjvm.so without a failing dlsym (which mallocs).
  EXPECT_GT(before, 0u);
  EXPECT_EQ(arenas(), before);
  EXPECT_TRUE(p.running());
  pid_t pid = p.pid();
  p.Kill();
  RemoveStaleAgentSocket(pid);
}

}  // namespace
}  // namespace memtrimd::testing
