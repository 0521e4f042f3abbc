// The target's malloc settings from its initial environment, read by the
// process collector from a real glibc program's /proc/<pid>/environ.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "collectors/procfs/process_collector.h"
#include "collectors/procfs/target_reader.h"
#include "collectors/sample.h"
#include "tests/integration/harness.h"

namespace memtrimd::testing {
namespace {

TEST(MallocEnvTest, ProgramStartedWithMallocSettings) {
  TempDir dir;
  SpawnOptions o;
  // Two tunables: glibc cuts this value at the ':' in the target's memory.
  const std::string tunables =
      "glibc.malloc.trim_threshold=131072:glibc.malloc.mmap_threshold=65536";
  o.env = {"MALLOC_ARENA_MAX=2", "GLIBC_TUNABLES=" + tunables};
  Process p = StartFragmenter(dir, {"--threads", "2", "--rounds", "1", "--burst-mib", "4"}, "", o);
  ASSERT_TRUE(p.running());
  Result<Target> t = procfs::ReadTarget("/proc", p.pid());
  ASSERT_TRUE(t.ok()) << t.status().message();

  procfs::ProcessCollector collector;
  TargetSample s;
  ASSERT_TRUE(collector.Collect(*t, s).ok());
  ASSERT_TRUE(s.malloc_env.has_value());
  EXPECT_EQ(s.malloc_env->at("MALLOC_ARENA_MAX"), "2");
  EXPECT_EQ(s.malloc_env->at("GLIBC_TUNABLES"), tunables);

  // The settings are read once per target and carried: the next sample has them.
  TargetSample next;
  ASSERT_TRUE(collector.Collect(*t, next).ok());
  EXPECT_EQ(next.malloc_env, s.malloc_env);
}

TEST(MallocEnvTest, ProgramWithoutSettingsHasAnEmptySet) {
  TempDir dir;
  ::unsetenv("MALLOC_ARENA_MAX");  // not inherited from the test's own environment
  ::unsetenv("GLIBC_TUNABLES");
  Process p = StartFragmenter(dir, {"--threads", "2", "--rounds", "1", "--burst-mib", "4"});
  ASSERT_TRUE(p.running());
  Result<Target> t = procfs::ReadTarget("/proc", p.pid());
  ASSERT_TRUE(t.ok()) << t.status().message();
  procfs::ProcessCollector collector;
  TargetSample s;
  ASSERT_TRUE(collector.Collect(*t, s).ok());
  ASSERT_TRUE(s.malloc_env.has_value());  // read, and nothing set
  EXPECT_EQ(s.malloc_env->count("MALLOC_ARENA_MAX"), 0u);
  EXPECT_EQ(s.malloc_env->count("GLIBC_TUNABLES"), 0u);
}

}  // namespace
}  // namespace memtrimd::testing
