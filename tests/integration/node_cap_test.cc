// --targets.max in node mode: of the processes that match, the largest by
// RSS are watched and the rest are counted
// (memtrimd_targets_skipped{reason="targets_max"}), never dropped silently;
// when a watched one exits, the next discovery takes up one that waited.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/integration/harness.h"

namespace memtrimd::testing {
namespace {

std::string Pid(pid_t p) { return "pid=\"" + std::to_string(p) + "\""; }

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

}  // namespace
}  // namespace memtrimd::testing
