// The target's malloc settings from /proc/<pid>/environ (MallocEnvFrom).
#include <gtest/gtest.h>

#include <string>

#include "collectors/procfs/malloc_env.h"
#include "tests/unit/fixtures.h"

namespace memtrimd::procfs {
namespace {

using namespace std::string_literals;

TEST(MallocEnvTest, RecordedEnviron) {
  // Started with GLIBC_TUNABLES=glibc.malloc.trim_threshold=131072:
  // glibc.malloc.mmap_threshold=65536; glibc cut it at the ':' in the block.
  std::string block = test::ReadFixture("proc/malloc_env/environ");
  ASSERT_NE(block.find("131072\0glibc.malloc.mmap_threshold"s), std::string::npos);
  MallocEnv env = MallocEnvFrom(block);
  MallocEnv want = {
      {"GLIBC_TUNABLES", "glibc.malloc.trim_threshold=131072:glibc.malloc.mmap_threshold=65536"},
      {"MALLOC_ARENA_MAX", "2"},       // not MALLOC_ARENA_MAX_X=9
      {"MALLOC_CHECK_", ""},           // set, empty
      {"MALLOC_TOP_PAD_", "1048576"},  // not XMALLOC_TOP_PAD_=1
      {"MALLOC_TRIM_THRESHOLD_", "262144"},
  };
  EXPECT_EQ(env, want);
}

TEST(MallocEnvTest, TunablesAsGlibcLeavesThem) {
  // The three shapes glibc 2.36 left in /proc for these GLIBC_TUNABLES values
  // (it writes a NUL after each tunable it accepted, unless last):
  //   bogus=1:arena_max=2:trim_threshold=5, arena_max=2:foo=3:top_pad=7, arena_max=2
  auto tunables = [](const std::string& block) {
    MallocEnv env = MallocEnvFrom(block);
    auto it = env.find("GLIBC_TUNABLES");
    return it == env.end() ? "<unset>"s : it->second;
  };
  EXPECT_EQ(tunables("A=1\0GLIBC_TUNABLES=glibc.malloc.bogus=1:glibc.malloc.arena_max=2\0"
                     "glibc.malloc.trim_threshold=5\0B=2\0"s),
            "glibc.malloc.bogus=1:glibc.malloc.arena_max=2:glibc.malloc.trim_threshold=5");
  // A rejected tunable without a dot starts the piece: it cannot be told
  // from a variable, and stays cut off.
  EXPECT_EQ(tunables("A=1\0GLIBC_TUNABLES=glibc.malloc.arena_max=2\0foo=3:glibc.malloc.top_pad=7\0"
                     "B=2\0"s),
            "glibc.malloc.arena_max=2");
  EXPECT_EQ(tunables("GLIBC_TUNABLES=glibc.malloc.arena_max=2\0B=2\0"s),
            "glibc.malloc.arena_max=2");
  // Pieces only join right after GLIBC_TUNABLES.
  EXPECT_EQ(tunables("GLIBC_TUNABLES=x\0B=2\0glibc.malloc.top_pad=7\0"s), "x");
  EXPECT_EQ(tunables("A=1\0"s), "<unset>");
}

TEST(MallocEnvTest, FirstWinsBoundedAndMalformed) {
  MallocEnv env = MallocEnvFrom(
      "MALLOC_ARENA_MAX=4\0MALLOC_ARENA_MAX=1\0MALLOC_MMAP_MAX_\0=5\0MALLOC_PERTURB_=165"s);
  EXPECT_EQ(env, (MallocEnv{{"MALLOC_ARENA_MAX", "4"}, {"MALLOC_PERTURB_", "165"}}));

  std::string long_value(10000, 'x');
  MallocEnv big = MallocEnvFrom("MALLOC_TOP_PAD_=" + long_value + "\0GLIBC_TUNABLES="s +
                                long_value + '\0' + "glibc.a.b=" + long_value);
  EXPECT_EQ(big["MALLOC_TOP_PAD_"], std::string(kMallocEnvValueMax, 'x'));
  EXPECT_EQ(big["GLIBC_TUNABLES"], std::string(kMallocEnvValueMax, 'x'));
  EXPECT_TRUE(MallocEnvFrom("").empty());
  EXPECT_TRUE(MallocEnvFrom("\0\0\0"s).empty());
}

}  // namespace
}  // namespace memtrimd::procfs
