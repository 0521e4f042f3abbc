// A process that runs another program keeps its pid and start time: a
// container's shell entrypoint that ends with `exec java ...` is the usual
// case. memtrimd must then watch what the process runs now (a JVM, with its
// comm and runtime), not what it read before the exec; in the sidecar with a
// fixed --target.pid and in node mode alike.
#include <gtest/gtest.h>
#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "tests/integration/harness.h"

namespace memtrimd::testing {
namespace {

namespace fs = std::filesystem;

std::string PidLabel(pid_t pid) { return "pid=\"" + std::to_string(pid) + "\""; }

// Whether `m` exports `pid` with this comm and runtime.
bool Shows(const Memtrimd& m, pid_t pid, const std::string& comm, const std::string& runtime) {
  Series s = m.Scrape();
  return Find(s, "memtrimd_target_info",
              {PidLabel(pid), "comm=\"" + comm + "\"", "runtime=\"" + runtime + "\""}) == 1.0;
}

TEST(ExecTest, AShellEntrypointThatExecsJavaIsWatchedAsTheJvmItBecomes) {
  TempDir dir;
  const std::string go = dir / "go";
  const std::string ready = dir / "jvm.ready";
  // sh waits for `go`, then becomes the JVM (same pid, same start time).
  Process p(
      {"/bin/sh", "-c",
       "while [ ! -e \"$1\" ]; do sleep 0.05; done; exec \"$2\" -Xms64m -Xmx64m -cp \"$3\" GcLoop "
       "--ready-file \"$4\"",
       "entrypoint", go, std::string(kJava17Home) + "/bin/java", JAVA_WORKLOADS_CLASSPATH, ready});
  ASSERT_TRUE(p.running());
  const pid_t pid = p.pid();

  Memtrimd sidecar(
      {"--target.pid=" + std::to_string(pid), "--sample.interval=200ms", "--trim.interval=0"});
  ASSERT_TRUE(sidecar.started()) << sidecar.log();
  Memtrimd node({"--targets=node", "--targets.match=" + dir.path(), "--targets.min-rss=0",
                 "--discovery.interval=300ms", "--sample.interval=200ms", "--trim.interval=0"});
  ASSERT_TRUE(node.started()) << node.log();

  // Before: the shell, a glibc program.
  EXPECT_TRUE(WaitFor([&] { return Shows(sidecar, pid, "sh", "glibc"); }, 30s)) << sidecar.log();
  EXPECT_TRUE(WaitFor([&] { return Shows(node, pid, "sh", "glibc"); }, 30s)) << node.log();

  WriteFile(go, "");
  ASSERT_TRUE(WaitFor([&] { return fs::exists(ready) || !p.running(); }, 90s));
  ASSERT_TRUE(p.running());
  ASSERT_EQ(ReadFile("/proc/" + std::to_string(pid) + "/comm"), "java\n");

  // After: the same pid as the JVM, and no longer as the shell.
  for (Memtrimd* m : {&sidecar, &node}) {
    SCOPED_TRACE(m == &sidecar ? "sidecar" : "node");
    EXPECT_TRUE(WaitFor([&] { return Shows(*m, pid, "java", "jvm"); }, 60s)) << m->log();
    EXPECT_FALSE(Shows(*m, pid, "sh", "glibc"));
    EXPECT_TRUE(LogHas(m->log(), {"target ran another program (exec)"})) << m->log();
    EXPECT_FALSE(LogHas(m->log(), {"target exited"})) << m->log();
    // Its JVM figures are read: through the attach listener (which was not
    // up yet when the JVM was first seen), and its heap from hsperfdata,
    // committed in full by -Xms64m -Xmx64m.
    EXPECT_TRUE(WaitFor(
        [&] {
          Series s = m->Scrape();
          return Find(s, "memtrimd_jvm_attachable", {PidLabel(pid)}) == 1.0 &&
                 Find(s, "memtrimd_jvm_heap_committed_bytes", {PidLabel(pid)}).value_or(0) >=
                     64.0 * (1 << 20);
        },
        60s))
        << m->log();
  }
  p.Kill();
}

}  // namespace
}  // namespace memtrimd::testing
