// Arena heaps that grow while memtrimd reads them are still counted: the
// glibc collector (with heap_info confirmation, as the daemon runs it)
// sampled 100 times while arena_grower's threads grow their heaps finds at
// least the heaps the workload counts itself, less one, and rejects none.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "collectors/glibc/glibc_heap_collector.h"
#include "collectors/procfs/target_reader.h"
#include "collectors/sample.h"
#include "tests/integration/harness.h"

namespace memtrimd::testing {
namespace {

namespace fs = std::filesystem;

struct GrowerCount {
  std::size_t heaps = 0;  // distinct 64 MiB regions holding its live arena chunks
  uint64_t held_bytes = 0;
};

GrowerCount ReadCount(const std::string& path) {
  GrowerCount c;
  std::ifstream in(path);
  in >> c.heaps >> c.held_bytes;
  return c;
}

TEST(GrowingHeapsTest, HeapsThatGrowBetweenTheTwoReadsAreCounted) {
  TempDir dir;
  const std::string ready = dir.path() + "/grower.ready";
  const std::string count = dir.path() + "/grower.count";
  Process p({WorkloadBin("arena_grower"), "--ready-file", ready, "--count-file", count, "--threads",
             "8", "--mib-per-thread", "256", "--step-kib", "256", "--pace-us", "1000"});
  ASSERT_TRUE(WaitFor([&] { return fs::exists(ready) || !p.running(); }, 30s));
  ASSERT_TRUE(p.running());
  Result<Target> t = procfs::ReadTarget("/proc", p.pid());
  ASSERT_TRUE(t.ok()) << t.status().message();

  glibc::GlibcHeapCollector collector({});  // heap_info confirmation on
  const GrowerCount first = ReadCount(count);
  std::size_t confirmed_total = 0;
  for (int i = 0; i < 100; ++i) {
    SCOPED_TRACE("sample " + std::to_string(i));
    // Read before the sample: the workload's heaps only grow in number, so
    // every heap it counted exists when smaps is read.
    const GrowerCount truth = ReadCount(count);
    TargetSample s;
    Status st = collector.Collect(*t, s);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_TRUE(s.glibc.has_value());
    EXPECT_GE(s.glibc->heaps.size() + 1, truth.heaps);
    EXPECT_EQ(s.glibc->rejected, 0u);
    confirmed_total += s.glibc->confirmed;
  }
  const GrowerCount last = ReadCount(count);
  // The heaps were growing while they were sampled, and the headers were read.
  EXPECT_GT(last.held_bytes, first.held_bytes);
  EXPECT_GT(confirmed_total, 0u);
}

}  // namespace
}  // namespace memtrimd::testing
