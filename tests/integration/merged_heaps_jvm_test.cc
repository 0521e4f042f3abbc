// A JVM holding 3000 Deflaters and 3000 Inflaters that are never ended
// (tests/workloads/ZlibHolder.java): zlib's memory, which NMT cannot see, in
// glibc arena heaps, some of which the kernel merges into one mapping. On
// every JDK found:
//   - memtrimd's arena heaps (inspect --json) equal the test's own header
//     walk (heap_walk.h: each arena's top, then its prev links; resident
//     pages from pagemap): the same count, resident bytes within two pages
//     a heap;
//   - "outside NMT" grows as the truth does, within 5 %: the truth is the
//     growth of RSS (smaps_rollup) less the growth of NMT's committed total
//     (the JDK's own jcmd), with the Java heap fixed and touched from the
//     start (-Xms = -Xmx, AlwaysPreTouch), so the heap cannot move either.
// Each JDK runs twice: as is, and with MALLOC_TOP_PAD_=64 MiB. As is, the
// heaps merged on OpenJDK 17 (Debian's zlib: some heaps filled to exactly
// 64 MiB) but not on Temurin 25 (its bundled zlib's blocks left the top page
// of every heap PROT_NONE, so no two heaps were both rw-p up to their
// boundary). With the top pad glibc makes every new heap read+write in full
// at once, and neighbouring heaps merge on every JDK: that run must show
// merged heaps. And once per JDK without ptrace access to the JVM.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/harness.h"
#include "tests/integration/heap_walk.h"
#include "tests/integration/json_value.h"

namespace memtrimd::testing {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kPage = 4096;

struct Jdk {
  std::string home;
  std::string name;
  bool top_pad = false;  // MALLOC_TOP_PAD_=64 MiB: merged heaps on every JDK
};

std::vector<Jdk> Jdks() {
  std::vector<Jdk> out;
  for (const std::string& home : FindJdkHomes()) {
    out.push_back({home, JdkTestName(home), false});
    out.push_back({home, JdkTestName(home) + "_top_pad", true});
  }
  return out;
}

// Rss of /proc/<pid>/smaps_rollup, in bytes.
uint64_t RolledUpRss(pid_t pid) {
  std::istringstream in(ReadFile("/proc/" + std::to_string(pid) + "/smaps_rollup"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Rss:", 0) == 0) return std::stoull(line.substr(4)) * 1024;
  }
  return 0;
}

// NMT's committed total from the JDK's own jcmd ("Total: reserved=..KB, committed=..KB").
std::optional<uint64_t> NmtCommitted(const std::string& home, pid_t pid) {
  RunResult r = RunCommand(
      {home + "/bin/jcmd", std::to_string(pid), "VM.native_memory", "summary", "scale=KB"});
  std::smatch m;
  std::regex total(R"(Total: reserved=\d+KB, committed=(\d+)KB)");
  if (r.exit_code != 0 || !std::regex_search(r.out, m, total)) return std::nullopt;
  return std::stoull(m[1]) * 1024;
}

int64_t IntAt(const JsonValue& j, std::initializer_list<std::string_view> path) {
  const JsonValue* v = j.Path(path);
  return v != nullptr && v->Int() ? *v->Int() : -1;
}

std::optional<JsonValue> Inspect(pid_t pid) {
  RunResult r = RunCommand({MemtrimdBin(), "inspect", "--pid", std::to_string(pid), "--json"});
  if (r.exit_code != 0) return std::nullopt;
  return ParseJson(r.out);
}

class MergedHeapsJvmTest : public ::testing::TestWithParam<Jdk> {
 protected:
  // ZlibHolder on this JDK, holding 3000 Deflaters and Inflaters once told
  // to (ready + ".go"); started and idle when this returns (ready + ".base").
  Process StartZlibHolder(const std::string& ready, SpawnOptions o) {
    o.stderr_path = dir_ / "zlib.err";
    Process jvm({GetParam().home + "/bin/java", "-XX:NativeMemoryTracking=summary", "-Xms64m",
                 "-Xmx64m", "-XX:+AlwaysPreTouch", "-cp", JAVA_WORKLOADS_CLASSPATH, "ZlibHolder",
                 "--count", "3000", "--threads", "1", "--ready-file", ready},
                o);
    EXPECT_TRUE(WaitFor([&] { return fs::exists(ready + ".base") || !jvm.running(); }, 90s) &&
                jvm.running())
        << ReadFile(dir_ / "zlib.err");
    return jvm;
  }
  TempDir dir_;
};

TEST_P(MergedHeapsJvmTest, ZlibMemoryInMergedHeapsIsCountedAndOutsideNmt) {
  const std::string ready = dir_ / "zlib.ready";
  SpawnOptions o;
  if (GetParam().top_pad) o.env = {"MALLOC_TOP_PAD_=67108864"};
  Process jvm = StartZlibHolder(ready, o);
  ASSERT_TRUE(jvm.running());

  // Before: the JVM started and idle.
  std::optional<JsonValue> before = Inspect(jvm.pid());
  ASSERT_TRUE(before);
  const std::optional<uint64_t> nmt_before = NmtCommitted(GetParam().home, jvm.pid());
  const uint64_t rss_before = RolledUpRss(jvm.pid());
  ASSERT_TRUE(nmt_before);

  WriteFile(ready + ".go", "");
  ASSERT_TRUE(WaitFor([&] { return fs::exists(ready) || !jvm.running(); }, 120s) && jvm.running())
      << ReadFile(dir_ / "zlib.err");

  // A pair of walks around memtrimd's read that agree (a JIT compiler
  // thread may still move a page of its own arena just after start).
  HeapWalk walk;
  std::optional<JsonValue> after;
  for (int attempt = 0; attempt < 10; ++attempt) {
    HeapWalk first = WalkArenaHeaps(jvm.pid());
    after = Inspect(jvm.pid());
    walk = WalkArenaHeaps(jvm.pid());
    ASSERT_EQ(walk.error, "");
    const uint64_t moved = walk.resident > first.resident ? walk.resident - first.resident
                                                          : first.resident - walk.resident;
    if (after && first.heaps.size() == walk.heaps.size() && moved <= 16 * kPage) break;
  }
  ASSERT_TRUE(after);
  const uint64_t rss_after = RolledUpRss(jvm.pid());
  const std::optional<uint64_t> nmt_after = NmtCommitted(GetParam().home, jvm.pid());
  ASSERT_TRUE(nmt_after);

  // Merged heaps, which the old shape rule (the harness's CountHeaps) misses.
  const std::size_t exact_shape = CountHeaps(ReadSmapsIndependently(jvm.pid())).count;
  if (GetParam().top_pad) {
    ASSERT_GT(walk.heaps.size(), exact_shape) << "no heap in a merged mapping";
    EXPECT_GT(IntAt(*after, {"glibc", "arena_heaps_merged"}), 0);
  }

  EXPECT_EQ(IntAt(*after, {"glibc", "arena_heaps"}), static_cast<int64_t>(walk.heaps.size()));
  EXPECT_EQ(IntAt(*after, {"glibc", "arena_heaps_confirmed"}),
            static_cast<int64_t>(walk.heaps.size()));
  const int64_t resident = IntAt(*after, {"glibc", "arena_heap_resident_bytes"});
  const auto slack = static_cast<int64_t>(2 * kPage * walk.heaps.size());
  EXPECT_LE(std::llabs(resident - static_cast<int64_t>(walk.resident)), slack)
      << resident << " vs the walk's " << walk.resident;

  const double truth = static_cast<double>(rss_after) - static_cast<double>(rss_before) -
                       (static_cast<double>(*nmt_after) - static_cast<double>(*nmt_before));
  const double mine = static_cast<double>(IntAt(*after, {"rss_account", "outside_nmt_bytes"}) -
                                          IntAt(*before, {"rss_account", "outside_nmt_bytes"}));
  ASSERT_GT(truth, 100.0 * (1 << 20)) << "zlib memory should be hundreds of MiB";
  EXPECT_LE(std::fabs(mine - truth), 0.05 * truth)
      << "outside NMT grew " << mine << ", truth " << truth << " (RSS " << rss_before << " -> "
      << rss_after << ", NMT committed " << *nmt_before << " -> " << *nmt_after << ")";
  std::cout << "[ JDK " << GetParam().name << " ] heaps " << walk.heaps.size() << " ("
            << walk.heaps.size() - exact_shape << " merged), resident " << walk.resident
            << " (memtrimd " << resident << "), outside NMT growth " << mine << " vs truth "
            << truth << "\n";
}

// Without ptrace access: the JVM runs as another uid, memtrimd with that
// uid as its effective (file system) uid but another real uid, so it reads
// smaps and pagemap and attaches, but process_vm_readv is refused (as under
// Yama's ptrace_scope=1 for a sidecar). Only the heaps of their own mapping
// are counted (by shape), no merged heap and not the Java heap, and the
// reason is shown. With the top pad, so that heaps merge on every JDK.
TEST_P(MergedHeapsJvmTest, WithoutPtraceAccessOnlyHeapsOfTheirOwnMappingAreCounted) {
  if (!GetParam().top_pad) GTEST_SKIP() << "run once per JDK, with the top pad";
  if (!IsRoot()) GTEST_SKIP() << "needs root to run the JVM and memtrimd as other uids";
  constexpr uid_t kUid = 65534;
  fs::permissions(dir_.path(), fs::perms::all);
  const std::string ready = dir_ / "zlib.ready";
  SpawnOptions o;
  o.env = {"MALLOC_TOP_PAD_=67108864"};
  o.uid = kUid;
  o.gid = kUid;
  Process jvm = StartZlibHolder(ready, o);
  ASSERT_TRUE(jvm.running());
  WriteFile(ready + ".go", "");
  ASSERT_TRUE(WaitFor([&] { return fs::exists(ready) || !jvm.running(); }, 120s) && jvm.running())
      << ReadFile(dir_ / "zlib.err");

  RunResult r = RunCommand(AsUidWithoutPtrace(
      kUid - 1, kUid, {MemtrimdBin(), "inspect", "--pid", std::to_string(jvm.pid()), "--json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::optional<JsonValue> j = ParseJson(r.out);
  ASSERT_TRUE(j) << r.out;
  const HeapWalk walk = WalkArenaHeaps(jvm.pid());
  ASSERT_EQ(walk.error, "");
  // The walk's heaps of their own mapping (the old shape), read plainly.
  std::vector<RawMapping> maps = ReadSmapsIndependently(jvm.pid());
  std::size_t own = 0;
  for (const WalkedHeap& h : walk.heaps) {
    for (std::size_t i = 0; i < maps.size(); ++i) {
      if (maps[i].start != h.start || maps[i].perms != "rw-p") continue;
      uint64_t reached = maps[i].end;
      for (std::size_t k = i + 1; k < maps.size() && reached < h.start + (64ull << 20); ++k) {
        if (maps[k].start != reached || maps[k].perms != "---p") break;
        reached = maps[k].end;
      }
      if (maps[i].end <= h.start + (64ull << 20) && reached == h.start + (64ull << 20)) ++own;
    }
  }
  ASSERT_LT(own, walk.heaps.size()) << "no heap in a merged mapping";
  const JsonValue* why = j->Path({"glibc", "heap_headers_unread"});
  ASSERT_NE(why, nullptr) << r.out;
  EXPECT_NE(why->text.find("process_vm_readv"), std::string::npos) << why->text;
  EXPECT_EQ(IntAt(*j, {"glibc", "arena_heaps"}), static_cast<int64_t>(own));
  EXPECT_EQ(IntAt(*j, {"glibc", "arena_heaps_merged"}), 0);
  EXPECT_GE(IntAt(*j, {"glibc", "arena_heap_candidates_uncounted"}),
            static_cast<int64_t>(walk.heaps.size() - own));
  std::cout << "[ JDK " << GetParam().name << ", no ptrace ] heaps " << walk.heaps.size()
            << ", of their own mapping " << own << "; memtrimd counted "
            << IntAt(*j, {"glibc", "arena_heaps"}) << ", left uncounted "
            << IntAt(*j, {"glibc", "arena_heap_candidates_uncounted"}) << "\n";
}

INSTANTIATE_TEST_SUITE_P(Jdks, MergedHeapsJvmTest, ::testing::ValuesIn(Jdks()),
                         [](const ::testing::TestParamInfo<Jdk>& i) { return i.param.name; });

}  // namespace
}  // namespace memtrimd::testing
