// --targets.max in node mode: of the processes that match, the largest by
// RSS are watched and the rest are counted
// (memtrimd_targets_skipped{reason="targets_max"}), never dropped silently;
// when a watched one exits, the next discovery takes up one that waited.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/integration/harness.h"

namespace memtrimd::testing {
namespace {

std::string Pid(pid_t p) { return "pid=\"" + std::to_string(p) + "\""; }
bool fs_exists(const std::string& path) { return std::filesystem::exists(path); }

TEST(NodeCapTest, TheLargestAreWatchedTheRestCountedAndOneTakenUpWhenRoomIsMade) {
  TempDir dir;
  // Each keeps all it allocates: 8, 24 and 48 MiB resident, in that order.
  std::vector<Process> programs;
  for (const char* mib : {"8", "24", "48"}) {
    programs.push_back(StartFragmenter(
        dir, {"--threads", "1", "--rounds", "1", "--burst-mib", mib, "--keep-permille", "1000"}));
    ASSERT_TRUE(programs.back().running()) << mib << " MiB";
  }
  const pid_t small = programs[0].pid(), middle = programs[1].pid(), large = programs[2].pid();
  ASSERT_LT(StatusValue(small, "VmRSS").value_or(0) + 8192,
            StatusValue(middle, "VmRSS").value_or(0));
  ASSERT_LT(StatusValue(middle, "VmRSS").value_or(0) + 8192,
            StatusValue(large, "VmRSS").value_or(0));

  Memtrimd m({"--targets=node", "--targets.match=" + dir.path(), "--targets.min-rss=0",
              "--targets.max=2", "--discovery.interval=500ms", "--sample.interval=200ms",
              "--trim.interval=0"});
  ASSERT_TRUE(m.started()) << m.log();
  Series s;
  ASSERT_TRUE(WaitFor(
      [&] {
        s = m.Scrape();
        return Find(s, "memtrimd_targets_watched") == 2.0 &&
               Find(s, "memtrimd_targets_skipped", {"reason=\"targets_max\""}) == 1.0;
      },
      30s))
      << m.log();
  EXPECT_EQ(Find(s, "memtrimd_target_up", {Pid(large)}), 1.0);
  EXPECT_EQ(Find(s, "memtrimd_target_up", {Pid(middle)}), 1.0);
  EXPECT_FALSE(Find(s, "memtrimd_target_up", {Pid(small)}).has_value());

  // Room for the one that waited.
  programs[2].Kill();
  ASSERT_TRUE(WaitFor(
      [&] {
        s = m.Scrape();
        return Find(s, "memtrimd_target_up", {Pid(small)}) == 1.0;
      },
      30s))
      << m.log();
  EXPECT_EQ(Find(s, "memtrimd_targets_watched"), 2.0);
  EXPECT_EQ(Find(s, "memtrimd_targets_skipped", {"reason=\"targets_max\""}), 0.0);
  EXPECT_EQ(Find(s, "memtrimd_target_up", {Pid(middle)}), 1.0);
  EXPECT_FALSE(Find(s, "memtrimd_target_up", {Pid(large)}).has_value());
  EXPECT_FALSE(Find(s, "memtrimd_target_resident_memory_bytes", {Pid(large)}).has_value());
}

// A flood of small processes that each map one shared file and read every
// page: each shows the file in its VmRSS (64 MiB), though the node holds the
// pages once and each holds almost nothing of its own. At --targets.max 3
// they must not push out a JVM and a glibc program that hold their memory
// alone (48 MiB kept by the fragmenter, less VmRSS than any of them); with
// the default floor they are not candidates at all; with room for everyone
// they are watched too. 40 of them (not the 300 the attack used: a 2-core
// machine runs this beside other tests).
class NodeCapFloodTest : public ::testing::TestWithParam<std::string> {};

TEST_P(NodeCapFloodTest, SharedFilePagesDoNotPushOutTheProgramsThatCostTheNode) {
  constexpr int kMappers = 40;
  TempDir dir;
  const std::string file = dir / "shared.bin";
  {
    std::string mib(1 << 20, 'x');
    std::string data;
    for (int i = 0; i < 64; ++i) data += mib;
    WriteFile(file, data);
  }
  std::vector<Process> mappers;
  for (int i = 0; i < kMappers; ++i) {
    const std::string ready = dir / ("mapper." + std::to_string(i) + ".ready");
    mappers.emplace_back(std::vector<std::string>{WorkloadBin("file_mapper"), "--file", file,
                                                  "--ready-file", ready});
    ASSERT_TRUE(WaitFor([&] { return fs_exists(ready) || !mappers.back().running(); }, 30s));
    ASSERT_TRUE(mappers.back().running());
  }
  Process frag = StartFragmenter(
      dir, {"--threads", "1", "--rounds", "1", "--burst-mib", "48", "--keep-permille", "1000"});
  ASSERT_TRUE(frag.running());
  Process jvm = StartJvm(dir, {"-Xmx64m"}, "GcLoop", {}, {}, GetParam());
  ASSERT_TRUE(jvm.running());

  // The flood as VmRSS ranks it: every mapper above the fragmenter (kB).
  const uint64_t frag_rss = StatusValue(frag.pid(), "VmRSS").value_or(0);
  for (const Process& m : mappers) {
    ASSERT_GT(StatusValue(m.pid(), "VmRSS").value_or(0), frag_rss + 8192);
    ASSERT_LT(StatusValue(m.pid(), "RssAnon").value_or(1u << 30), 4096u);
  }
  ASSERT_GE(StatusValue(frag.pid(), "RssAnon").value_or(0), 40u * 1024);

  const std::vector<std::string> base = {"--targets=node", "--targets.match=" + dir.path(),
                                         "--discovery.interval=500ms", "--sample.interval=500ms",
                                         "--trim.interval=0"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> flags = base;
    flags.insert(flags.end(), extra.begin(), extra.end());
    return flags;
  };
  {
    // No floor: all 42 match; the cap keeps the JVM, the fragmenter and one
    // mapper, and counts the rest.
    Memtrimd m(with({"--targets.min-rss=0", "--targets.max=3"}));
    ASSERT_TRUE(m.started()) << m.log();
    Series s;
    ASSERT_TRUE(WaitFor(
        [&] {
          s = m.Scrape();
          return Find(s, "memtrimd_targets_watched") == 3.0 &&
                 Find(s, "memtrimd_targets_skipped", {"reason=\"targets_max\""}) ==
                     double(kMappers - 1);
        },
        30s))
        << m.log();
    EXPECT_EQ(Find(s, "memtrimd_target_up", {Pid(jvm.pid())}), 1.0);
    EXPECT_EQ(Find(s, "memtrimd_target_up", {Pid(frag.pid())}), 1.0);
  }
  {
    // The default floor (32 MiB of anonymous RSS plus swap): the mappers are
    // no candidates; nothing is skipped.
    Memtrimd m(with({"--targets.max=3"}));
    ASSERT_TRUE(m.started()) << m.log();
    Series s;
    ASSERT_TRUE(WaitFor(
        [&] {
          s = m.Scrape();
          return Find(s, "memtrimd_target_up", {Pid(jvm.pid())}) == 1.0 &&
                 Find(s, "memtrimd_target_up", {Pid(frag.pid())}) == 1.0;
        },
        30s))
        << m.log();
    EXPECT_EQ(Find(s, "memtrimd_targets_watched"), 2.0);
    EXPECT_EQ(Find(s, "memtrimd_targets_skipped", {"reason=\"targets_max\""}), 0.0);
  }
  {
    // Room for all: the mappers are watched too (nothing is dropped for
    // being small).
    Memtrimd m(with({"--targets.min-rss=0", "--targets.max=" + std::to_string(kMappers + 2)}));
    ASSERT_TRUE(m.started()) << m.log();
    ASSERT_TRUE(WaitFor(
        [&] { return Find(m.Scrape(), "memtrimd_targets_watched") == double(kMappers + 2); }, 60s))
        << m.log();
  }
}

INSTANTIATE_TEST_SUITE_P(Jdks, NodeCapFloodTest, ::testing::ValuesIn(FindJdkHomes()),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           return JdkTestName(p.param);
                         });

}  // namespace
}  // namespace memtrimd::testing
